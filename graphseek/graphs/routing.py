"""Pure routing and budget functions. Routers decide escalation and stopping; nodes never loop."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from langgraph.runtime import Runtime
from langgraph.types import Send

from graphseek.agents.kair import open_gaps, ready_gaps
from graphseek.agents.text import fill_placeholders
from graphseek.state.context import Context
from graphseek.state.models import SubQuestion, Usage
from graphseek.state.schema import (
    AdaptiveState,
    ChannelTask,
    DeepSearchState,
    DualAgentState,
    KnowledgeAwareState,
    LibrarianTask,
    ReactState,
    RunState,
    Stage,
    SuggesterCache,
    SuggesterTask,
)

#: the node a router goes to when nothing more is to be done
Finish = Literal["finalize_answer"]
Next = TypeVar("Next", bound=str)


def budget_exhausted(usage: Usage | None, turn: int, context: Context) -> str | None:
    """The name of the first budget used up (turns, LLM calls, tokens), or None."""
    usage = usage or Usage()
    if turn >= context.max_turns:
        return f"turn budget exhausted ({turn}/{context.max_turns} turns)"
    if usage.llm_calls >= context.max_llm_calls:
        return f"LLM-call budget exhausted ({usage.llm_calls}/{context.max_llm_calls} calls)"
    if usage.total_tokens >= context.max_tokens:
        return f"token budget exhausted ({usage.total_tokens}/{context.max_tokens} tokens)"
    return None


def ready_steps(plan: Sequence[SubQuestion], step_answers: Mapping[str, str]) -> list[SubQuestion]:
    """Unanswered steps whose dependencies all have answers, with placeholders filled."""
    out = []
    for step in plan:
        if str(step.id) in step_answers:
            continue
        if all(str(d) in step_answers for d in step.depends_on):
            out.append(
                step.model_copy(update={"question": fill_placeholders(step.question, step_answers)})
            )
    return out


def failed(state: RunState) -> bool:
    """A node gave up (malformed LLM output after retries, out of scope, …)."""
    return state.get("next_action") == "abstain"


def route_unless_failed(next_node: Next) -> Callable[[RunState], Next | Finish]:
    """A router that goes on to `next_node`, or to `finalize_answer` once a node gave up."""

    def route(state: RunState) -> Next | Finish:
        return "finalize_answer" if failed(state) else next_node

    route.__name__ = f"route_to_{next_node}"
    return route


def route_plan(state: DualAgentState) -> list[Send] | Literal["decide_action", "finalize_answer"]:
    """After decomposition: send every independent step to the Librarian in parallel."""
    if failed(state):
        return "finalize_answer"
    steps = ready_steps(state.get("plan", []), state.get("step_answers", {}))
    if not steps:
        return "decide_action"
    return [Send("ask_librarian", LibrarianTask(question=s.question, step_id=s.id)) for s in steps]


def route_action(state: DualAgentState) -> list[Send] | Finish:
    """After the Seeker: fan its questions out to the Librarian, or finish."""
    pending = state.get("pending") or []
    if state.get("next_action") == "ask_librarian" and pending:
        return [Send("ask_librarian", task) for task in pending]
    return "finalize_answer"


# -- knowledge_aware (KAIR) -------------------------------------------------------------------


def suggester_tasks(state: KnowledgeAwareState, context: Context) -> list[Send]:
    """One `Send` to `suggest` per suggester (KAIR §3.3). Competitive suggesters work on their
    private caches; collaborative ones on the shared Known and Required, each given one
    searchable gap, round-robin."""
    shared = SuggesterCache(
        known=list(state.get("known", [])),
        required=list(state.get("required", [])),
        answers=dict(state.get("step_answers", {})),
        queries=list(state.get("query_history", [])),
    )
    private = state.get("suggester_caches", {})
    ready = ready_gaps(shared["required"], shared["answers"])
    sends = []
    for i in range(max(1, context.agents)):
        competitive = context.mode == "competitive"
        cache = private.get(str(i), shared) if competitive else shared
        assigned = [ready[i % len(ready)].id] if ready and not competitive else []
        task = SuggesterTask(
            suggester=i,
            question=state["question"],
            suggester_cache=cache,
            shared_context=list(state.get("refined_context", [])),
            assigned_gaps=assigned,
            round=state.get("turn", 0),
        )
        sends.append(Send("suggest", task))
    return sends


def route_knowledge(
    state: KnowledgeAwareState, runtime: Runtime[Context]
) -> list[Send] | Literal["plan_query", "compose_answer", "finalize_answer"]:
    """At the start and after each KAIR round: answer once Required is empty or a budget is
    spent (KAIR eq. 1, Algorithm 1 line 15); else run the next round with one agent
    (`mode="single"`) or with `agents` suggesters in parallel."""
    context = runtime.context
    if failed(state):
        return "finalize_answer"
    if not open_gaps(state.get("required", [])):
        return "compose_answer"
    if budget_exhausted(state.get("usage"), state.get("turn", 0), context):
        return "compose_answer"
    if context.mode == "single":
        return "plan_query"
    return suggester_tasks(state, context)


# -- adaptive (A2RAG §III), deep_search (GraphSearch §3), react (G-RAGent §2.2) ----------------

#: A2RAG's monotonic escalation: the stage node after each stage
NEXT_STAGE: dict[Stage, Literal["retrieve_bridge", "retrieve_ppr"]] = {
    "local": "retrieve_bridge",
    "bridge": "retrieve_ppr",
}


def route_escalation(
    state: AdaptiveState,
) -> Literal["retrieve_bridge", "retrieve_ppr", "generate_answer", "finalize_answer"]:
    """After a retrieval stage: answer once the sufficiency check passed or after the last
    stage (PPR); otherwise escalate local -> bridge -> ppr, each stage once per query."""
    if failed(state):
        return "finalize_answer"
    stage = state.get("diagnostics", {}).get("stage_reached", "ppr")
    escalate = NEXT_STAGE.get(stage)
    if state.get("sufficient") or escalate is None:
        return "generate_answer"
    return escalate


def route_verification(
    state: AdaptiveState, runtime: Runtime[Context]
) -> Literal["rewrite_query", "finalize_answer"]:
    """After Triple-Check (adaptive): finish when the answer passed; on a failure, rewrite and
    retry while retries (`max_retries`) and the budgets last, else finish (abstaining)."""
    verification = state.get("verification")
    if verification is None or verification.passed:
        return "finalize_answer"
    if state.get("retries", 0) >= runtime.context.max_retries:
        return "finalize_answer"
    if budget_exhausted(state.get("usage"), state.get("turn", 0), runtime.context):
        return "finalize_answer"
    return "rewrite_query"


def route_channels(
    state: DeepSearchState,
) -> list[Send] | Literal["draft_logic", "finalize_answer"]:
    """deep_search: send every grounded sub-query to both retrieval channels in parallel."""
    if failed(state):
        return "finalize_answer"
    pending = state.get("pending") or []
    if not pending:
        return "draft_logic"
    sends = []
    for task in pending:
        payload = ChannelTask(subquery=task["question"], step_id=task.get("step_id") or 0)
        sends.append(Send("semantic_search", payload))
        sends.append(Send("relational_search", payload))
    return sends


def unattempted_steps(state: DeepSearchState) -> list[SubQuestion]:
    """Plan steps not searched yet whose inputs are all answered."""
    attempted = {d.step_id for d in state.get("drafts", [])}
    answers = state.get("step_answers", {})
    return [
        s
        for s in state.get("plan", [])
        if s.id not in attempted and all(str(d) in answers for d in s.depends_on)
    ]


def route_subqueries(
    state: DeepSearchState, runtime: Runtime[Context]
) -> Literal["ground_queries", "draft_logic", "finalize_answer"]:
    """deep_search, after the intermediate answers: ground the next steps while some are ready
    and the budgets last, else draft the reasoning chain."""
    if failed(state):
        return "finalize_answer"
    if budget_exhausted(state.get("usage"), state.get("turn", 0), runtime.context):
        return "draft_logic"
    return "ground_queries" if unattempted_steps(state) else "draft_logic"


def route_evidence(
    state: DeepSearchState, runtime: Runtime[Context]
) -> Literal["expand_query", "finalize_answer"]:
    """deep_search, after evidence verification: accept, or expand the query on a reject while
    expansions (`max_retries`) and the budgets last, else finish (abstaining)."""
    verification = state.get("verification")
    if failed(state) and verification is None:
        return "finalize_answer"
    if verification is None or verification.passed:
        return "finalize_answer"
    if state.get("retries", 0) >= runtime.context.max_retries:
        return "finalize_answer"
    if budget_exhausted(state.get("usage"), state.get("turn", 0), runtime.context):
        return "finalize_answer"
    return "expand_query"


#: the node a loop's abstention goes to first when the run has readers (`graphseek.graphs.common.
#: read_observed`)
ReadObserved = Literal["read_observed"]


def reads_observed(state: Mapping[str, Any], runtime: Runtime[Context] | None) -> bool:
    """Whether a run's loop ended in an abstention that its cascade of readers (`Context.readers`)
    reads first: the run names readers, it abstained, the loop observed passages, and no draft
    of the question went through the cascade yet. No runtime (a state written by hand with
    `update_state`): no."""
    from graphseek.agents.registry import get_roles

    if runtime is None or state.get("next_action") != "abstain" or not state.get("passages"):
        return False
    if any(d.readings for d in state.get("drafts", [])):
        return False
    return bool(get_roles(runtime.context).readers)


def route_end(
    state: Mapping[str, Any], runtime: Runtime[Context] | None = None
) -> ReadObserved | Finish:
    """The end of a loop: `read_observed` when its abstention goes to the readers first
    (`reads_observed`), else `finalize_answer`."""
    return "read_observed" if reads_observed(state, runtime) else "finalize_answer"


def escalating(
    router: Callable[..., Any],
) -> Callable[..., Any]:
    """`router`, with its `finalize_answer` sent to `read_observed` where `route_end` says (the
    escalation's conditional edge, for topologies whose loop decides its own answer: react's
    thinker, knowledge_aware's rounds). `router` takes the state, or the state and the runtime."""
    import inspect

    takes_runtime = len(inspect.signature(router).parameters) > 1

    def route(state: Any, runtime: Runtime[Context] | None = None) -> Any:
        nxt = router(state, runtime) if takes_runtime else router(state)
        return route_end(state, runtime) if nxt == "finalize_answer" else nxt

    route.__name__ = getattr(router, "__name__", "route")
    return route


def route_thought(state: ReactState) -> Literal["act", "think", "finalize_answer"]:
    """react: FINISH (the `finish` tool; early stopping included), an answer (the reader's last
    word at the budget) or a failure ends the loop; tool calls go to the tools (`act`); a REASON
    step thinks again."""
    thought = state.get("thought")
    ended = failed(state) or state.get("next_action") == "answer"
    if ended or thought is None or thought.decision == "FINISH":
        return "finalize_answer"
    if thought.decision == "REASON":
        return "think"
    return "act"
