"""`dual_agent`: the Seeker–Librarian adaptive reasoning protocol (HiGraAgent §5, Algorithm 1).

clarify_question → decompose_question → ask_librarian (independent steps in parallel, `Send`;
each a tool-calling Librarian subgraph, `graphseek.graphs.librarian_agent`)
→ decide_action (the Seeker) → ask_librarian … until the Seeker answers or abstains, or a budget
(`max_turns`, `max_llm_calls`, `max_tokens`) runs out, or a Librarian's model call fails after
its retries (the Seeker abstains with the cause) → finalize_answer.
The Librarian's retriever is a context setting (`retriever="hybrid"`, `"higra"`, …); with
`"higra"` the HiGraRetriever's relations reach the Librarian as extra context.
Branching paths and multiple answers (App. G): the Seeker may ask a step again on each of an
uncertain upstream answer's candidates (the questions go out in parallel) and answer with every
supported answer (the offline Seeker branches on up to 2 candidates below confidence 0.5).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphseek.agents.registry import get_roles
from graphseek.agents.roles import SeekerView
from graphseek.errors import LLMError
from graphseek.graphs.common import error_usage, evidence_from_drafts, finalize_answer
from graphseek.graphs.librarian_agent import librarian_agent
from graphseek.graphs.routing import (
    budget_exhausted,
    route_action,
    route_plan,
    route_unless_failed,
)
from graphseek.state.context import Context
from graphseek.state.models import SubQuestion
from graphseek.state.schema import InputState, LibrarianTask, OutputState, State


def _failed(node: str, reason: str, exc: BaseException | None = None) -> dict[str, Any]:
    update = {"next_action": "abstain", "abstain_reason": reason, "trace": [node]}
    return update | ({"usage": error_usage(exc)} if exc is not None else {})


def clarify_question(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Rewrite a question that does not start with a question word (App. P.1)."""
    question = state["question"].strip()
    try:
        step = get_roles(runtime.context).clarifier.clarify(question)
    except LLMError as exc:
        return _failed("clarify_question", f"clarifier failed: {exc}", exc)
    return {
        "clarified_question": step.value,
        "usage": step.usage,
        "trace": ["clarify_question"],
        "turn": 0,
    }


def decompose_question(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Break the clarified question into sub-questions with dependencies (App. P.2)."""
    question = state.get("clarified_question") or state["question"]
    try:
        step = get_roles(runtime.context).decomposer.decompose(question)
    except LLMError as exc:
        return _failed("decompose_question", f"decomposer failed: {exc}", exc)
    plan = step.value or [SubQuestion(id=1, question=question)]
    return {"plan": plan, "usage": step.usage, "trace": ["decompose_question"]}


def decide_action(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """The Seeker: ask the Librarian again, answer with evidence, or abstain (App. Q)."""
    ctx = runtime.context
    turn = state.get("turn", 0)
    drafts = state.get("drafts", [])
    exhausted = budget_exhausted(state.get("usage"), turn, ctx)
    if exhausted:
        return {"next_action": "abstain", "abstain_reason": exhausted, "trace": ["decide_action"]}
    # a Librarian whose model call failed after its retries (server down, context overflow,
    # malformed replies, a spent budget): asking again would fail the same way, so the run
    # abstains with the cause (the first failure ends the run, so any failed draft is new)
    failures = [d.error for d in drafts if d.error]
    if failures:
        return {
            "next_action": "abstain",
            "abstain_reason": f"librarian failed: {failures[-1]}",
            "trace": ["decide_action"],
        }
    view = SeekerView(
        question=state.get("clarified_question") or state["question"],
        plan=state.get("plan", []),
        drafts=drafts,
        step_answers=dict(state.get("step_answers", {})),
        turn=turn,
        max_turns=ctx.max_turns,
    )
    try:
        step = get_roles(ctx).seeker.decide(view)
    except LLMError as exc:
        return {
            "next_action": "abstain",
            "abstain_reason": f"seeker failed: {exc}",
            "usage": error_usage(exc),
            "trace": ["decide_action"],
            "turn": turn + 1,
        }
    action = step.value
    update: dict[str, Any] = {
        "next_action": action.action,
        "usage": step.usage,
        "trace": ["decide_action"],
        "turn": turn + 1,
        "history": [{"turn": turn + 1, "role": "seeker", **action.model_dump()}],
    }
    if action.action == "ask_librarian":
        update["pending"] = [
            LibrarianTask(question=q, step_id=sid)
            for q, sid in zip(action.questions, action.step_ids, strict=False)
        ]
    elif action.action == "answer" and action.answer.strip():
        update["answer"] = action.answer.strip()
        update["evidence"] = evidence_from_drafts(drafts, action.evidence)
    else:
        update["next_action"] = "abstain"
        update["abstain_reason"] = action.reason or "the Seeker found no supported answer"
    return update


def build_dual_agent() -> StateGraph[State, Context, InputState, OutputState]:
    builder = StateGraph(
        State, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(clarify_question)
    builder.add_node(decompose_question)
    # the Librarian: a tool-calling subgraph (search_evidence -> act -> ... -> draft_answer)
    builder.add_node("ask_librarian", librarian_agent)
    builder.add_node(decide_action)
    builder.add_node(finalize_answer)
    builder.add_edge(START, "clarify_question")
    builder.add_conditional_edges(
        "clarify_question",
        route_unless_failed("decompose_question"),
        ["decompose_question", "finalize_answer"],
    )
    builder.add_conditional_edges(
        "decompose_question", route_plan, ["ask_librarian", "decide_action", "finalize_answer"]
    )
    builder.add_edge("ask_librarian", "decide_action")
    builder.add_conditional_edges(
        "decide_action", route_action, ["ask_librarian", "finalize_answer"]
    )
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_dual_agent().compile(name="dual_agent")
