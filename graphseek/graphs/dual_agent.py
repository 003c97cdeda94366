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
Over an LLM Seeker's choice (`graphseek.agents.seeker`): a draft of the last hop whose evidence
states its answer, at confidence `GATE_CONFIDENCE` or more, ends the loop with that answer instead of
another Librarian round (the A2RAG gate), also when a budget ran out; questions already asked are
not sent again, and a round with nothing new ends with the best supported draft, or abstains
(both noted in `diagnostics.seeker_gate`). A role whose model failed and that fell back to its
offline policy (`on_model_failure="offline"`) is noted in `diagnostics.degraded`.
Sentence bridges (issue 57): when the run's retrieval bridges through sentences (retriever
"bridge", or `bridge_seeds` with higra or progressive), `decompose_question` keeps the entities
semantic bridging reaches from the question's (`state["bridges"]`, each with its sentence), and
the Seeker may ask a next hop about one: the offline Seeker when the hop's reader found no answer
or an unsure one, or to ask about its answer written longer (`graphseek.agents.offline.
bridges`); a model Seeker sees them in its prompt. Each question asked about a bridge is noted
in `diagnostics.bridges_followed`; an answer through one cites the bridge sentence's passage.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphseek.agents.registry import get_roles
from graphseek.agents.roles import SeekerView, diagnostics_of
from graphseek.agents.seeker import (
    GATE_CONFIDENCE,
    followed_bridges,
    new_questions,
    supported_draft,
)
from graphseek.errors import LLMError
from graphseek.graphs.common import abstain, add_finalize_answer, evidence_from_drafts
from graphseek.graphs.entry import check_entry
from graphseek.graphs.librarian_agent import librarian_agent
from graphseek.graphs.routing import (
    budget_exhausted,
    route_action,
    route_plan,
    route_unless_failed,
)
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem, SentenceBridge, SubQuestion
from graphseek.state.schema import (
    Abstention,
    Diagnostics,
    DualAgentState,
    DualAgentUpdate,
    InputState,
    LibrarianTask,
    OutputState,
)
from graphseek.tools.graph_context import question_bridges
from graphseek.tools.retrievers import resolve_index


def clarify_question(
    state: DualAgentState, runtime: Runtime[Context]
) -> DualAgentUpdate | Abstention:
    """Rewrite a question that does not start with a question word (App. P.1)."""
    check_entry(state, runtime)
    question = state["question"].strip()
    try:
        step = get_roles(runtime.context).clarifier.clarify(question)
    except LLMError as exc:
        return abstain("clarify_question", f"clarifier failed: {exc}", usage=error_usage(exc))
    update: DualAgentUpdate = {
        "clarified_question": step.value,
        "usage": step.usage,
        "trace": ["clarify_question"],
        "turn": 0,
    }
    return update | _diagnostics(diagnostics_of(step))


def decompose_question(
    state: DualAgentState, runtime: Runtime[Context]
) -> DualAgentUpdate | Abstention:
    """Break the clarified question into sub-questions with dependencies (App. P.2); when the
    run's retrieval bridges through sentences and a step depends on another, the entities
    bridging reaches from the question's, for the Seeker to offer as a next hop's subject."""
    question = state.get("clarified_question") or state["question"]
    try:
        step = get_roles(runtime.context).decomposer.decompose(question)
    except LLMError as exc:
        return abstain("decompose_question", f"decomposer failed: {exc}", usage=error_usage(exc))
    plan = step.value or [SubQuestion(id=1, question=question)]
    update: DualAgentUpdate = {"plan": plan, "usage": step.usage, "trace": ["decompose_question"]}
    if any(s.depends_on for s in plan):
        bridges = question_bridges(runtime.context, question)
        if bridges:
            update["bridges"] = bridges
    return update | _diagnostics(diagnostics_of(step))


def _diagnostics(diagnostics: Diagnostics) -> DualAgentUpdate:
    return {"diagnostics": diagnostics} if diagnostics else {}


def _answer_with(draft: Draft, drafts: list[Draft], plan: list[SubQuestion]) -> DualAgentUpdate:
    """Answer with a supported draft of the last hop, grounded in its evidence and in the best
    evidence of the steps before it."""
    ids = [e.passage_id for e in draft.evidence]
    for step in plan[:-1]:
        answered = [d for d in drafts if d.step_id == step.id and d.answer and d.evidence]
        if answered:
            ids.append(max(answered, key=lambda d: d.confidence).evidence[0].passage_id)
    return {
        "next_action": "answer",
        "answer": draft.answer.strip(),
        "evidence": evidence_from_drafts(drafts, list(dict.fromkeys(ids))),
    }


def _bridge_drafts(
    bridges: Sequence[SentenceBridge], cited: Sequence[str], ctx: Context
) -> list[Draft]:
    """The passages of the sentence bridges an answer cites, as drafts' evidence (the bridge
    sentence, the passage's text when the index has it)."""
    wanted = [b for b in bridges if b.passage_id in cited]
    if not wanted:
        return []
    index = resolve_index(ctx)
    items: list[EvidenceItem] = []
    for bridge in wanted:
        passage = index.get(bridge.passage_id) if bridge.passage_id in index else None
        items.append(
            EvidenceItem(
                passage_id=bridge.passage_id,
                title=passage.title if passage is not None else "",
                text=passage.text if passage is not None else bridge.sentence,
                sentence=bridge.sentence,
                context=bridge.sentence,
                span=bridge.entity,
            )
        )
    return [Draft(question="", answer="", evidence=items)]


def decide_action(state: DualAgentState, runtime: Runtime[Context]) -> DualAgentUpdate:
    """The Seeker: ask the Librarian again, answer with evidence, or abstain (App. Q); over an
    LLM Seeker, a supported draft of the last hop ends the loop and no question is asked twice."""
    ctx = runtime.context
    roles = get_roles(ctx)
    turn = state.get("turn", 0)
    drafts = state.get("drafts", [])
    question = state.get("clarified_question") or state["question"]
    plan = list(state.get("plan", []))
    answers = {k: str(v) for k, v in state.get("step_answers", {}).items()}
    # the A2RAG gate holds over a model's choice; the offline Seeker follows its own plan rules
    # (it answers once the last step is resolved and re-asks only weak or branching steps)
    gated = "seeker" not in roles.offline
    gate_at = max(roles.threshold, GATE_CONFIDENCE)
    exhausted = budget_exhausted(state.get("usage"), turn, ctx)
    if exhausted:
        best = supported_draft(question, plan, drafts, gate_at, answers) if gated else None
        if best is None:
            return {
                "next_action": "abstain",
                "abstain_reason": exhausted,
                "trace": ["decide_action"],
            }
        note = f"turn {turn}: {exhausted}; answered with the supported draft {best.answer!r}"
        return _answer_with(best, drafts, plan) | {
            "trace": ["decide_action"],
            "diagnostics": {"seeker_gate": [note]},
        }
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
        question=question,
        plan=plan,
        drafts=drafts,
        step_answers=dict(state.get("step_answers", {})),
        turn=turn,
        max_turns=ctx.max_turns,
        bridges=list(state.get("bridges", [])),
    )
    try:
        step = roles.seeker.decide(view)
    except LLMError as exc:
        return {
            "next_action": "abstain",
            "abstain_reason": f"seeker failed: {exc}",
            "usage": error_usage(exc),
            "trace": ["decide_action"],
            "turn": turn + 1,
        }
    action = step.value
    diagnostics: Diagnostics = diagnostics_of(step)
    update: DualAgentUpdate = {
        "next_action": action.action,
        "usage": step.usage,
        "trace": ["decide_action"],
        "turn": turn + 1,
        "history": [{"turn": turn + 1, "role": "seeker", **action.model_dump()}],
    }
    if action.action == "ask_librarian":
        questions, step_ids, repeated = new_questions(action, drafts)
        best = supported_draft(question, plan, drafts, gate_at, answers) if gated else None
        if best is not None:
            note = f"turn {turn + 1}: the supported draft {best.answer!r} ends the loop"
            update |= _answer_with(best, drafts, plan)
            diagnostics["seeker_gate"] = [note]
        elif not questions:
            asked = "; ".join(repeated)
            note = f"turn {turn + 1}: every question was asked before ({asked})"
            diagnostics["seeker_gate"] = [note]
            best = supported_draft(question, plan, drafts, roles.threshold, answers)
            if best is not None:
                update |= _answer_with(best, drafts, plan)
            else:
                update["next_action"] = "abstain"
                update["abstain_reason"] = (
                    f"the Seeker asked again only questions already asked ({asked}) and no "
                    "draft of the last step is supported by its evidence"
                )
        else:
            if repeated:
                diagnostics["seeker_gate"] = [
                    f"turn {turn + 1}: not asked again: {'; '.join(repeated)}"
                ]
            followed = followed_bridges(questions, step_ids, view, own_wording=gated)
            if followed:
                diagnostics["bridges_followed"] = [f"turn {turn + 1}: {f}" for f in followed]
            update["pending"] = [
                LibrarianTask(question=q, step_id=sid)
                for q, sid in zip(questions, step_ids, strict=True)
            ]
    elif action.action == "answer" and action.answer.strip():
        update["answer"] = action.answer.strip()
        # an answer through a sentence bridge cites the bridge's passage, which no draft read
        pool = [*drafts, *_bridge_drafts(view.bridges, action.evidence, ctx)]
        update["evidence"] = evidence_from_drafts(pool, action.evidence)
    else:
        update["next_action"] = "abstain"
        update["abstain_reason"] = action.reason or "the Seeker found no supported answer"
    return update | _diagnostics(diagnostics)


def build_dual_agent() -> StateGraph[DualAgentState, Context, InputState, OutputState]:
    builder = StateGraph(
        DualAgentState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(clarify_question)
    builder.add_node(decompose_question)
    # the Librarian: a tool-calling subgraph (search_evidence -> act -> ... -> draft_answer)
    builder.add_node("ask_librarian", librarian_agent)
    builder.add_node(decide_action)
    add_finalize_answer(builder)
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
