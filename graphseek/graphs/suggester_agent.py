"""A knowledge_aware suggester as a tool-calling agent: the `suggest` node of `knowledge_aware`
(a subgraph run once per suggester and round, in parallel through `Send`; KAIR §3.3).

    plan_search → act (ToolNode) → update_caches
         ↑________________|  (every result an error: the suggester reacts, at most
                              `MAX_SEARCHES` calls a round)

- `plan_search`: the suggester decides its search as tool calls. With a tool-calling model, the
  planner (`search_gap`, the graph tools and `stop_searching` bound, `suggester_tools()`) reads
  its caches and its calls so far; the offline planner, and a model that cannot call tools (the
  JSON path, noted in the diagnostics), plan a query that is not a repeat (`plan_new_query`)
  and emit it as the same `search_gap` call. No call, or `stop_searching`, ends the round
  early with no query.
- `act`: a `ToolNode` runs the calls (`graphseek.graphs.kair_steps.kair_tools`, the same actions
  as the single agent's); the tools read the index from the runtime context and the suggester's
  index (its retriever, its query history) from the state. `search_gap` refuses a query already
  searched; tool errors come back as ToolMessages.
- `update_caches`: the passages the tools found are D_add; the knowledge updater turns them
  into Known facts and resolved gaps (KAIR eq. 5) and the round's `Proposal` is written (in
  collaborative mode the update also goes to the shared caches).

Routing is by conditional edges on the tool calls (`route_suggester`, `route_results`). The
messages (tool calls and results) are written to the parent state, so they show in Studio.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graphseek.agents.kair import open_gaps
from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.agents.roles import KnowledgeView, QueryPlan
from graphseek.graphs.kair_steps import (
    MAX_SEARCHES,
    SUGGESTER_RETRIEVERS,
    kair_tool_node,
    next_search,
    read_results,
    searches_failed,
    suggester_retriever,
    update_from_hits,
)
from graphseek.state.context import Context
from graphseek.state.models import Fact, Gap, Usage
from graphseek.state.reducers import (
    add_usage,
    append_unique,
    merge_dicts,
    merge_facts,
    merge_gaps,
)
from graphseek.state.schema import Diagnostics, Proposal, SuggesterCache, SuggesterTask

__all__ = [
    "SUGGESTER_RETRIEVERS",
    "build_suggester_agent",
    "route_results",
    "route_suggester",
    "suggester_agent",
    "suggester_retriever",
]


class SuggesterOutput(TypedDict):
    """What a suggester's round gives back to the parent graph (same keys and reducers as
    `graphseek.state.schema.KnowledgeAwareState`; `known`, `required` and `step_answers` in collaborative mode only)."""

    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    proposals: NotRequired[Annotated[list[Proposal], operator.add]]
    usage: NotRequired[Annotated[Usage, add_usage]]
    trace: NotRequired[Annotated[list[str], operator.add]]
    history: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    query_history: NotRequired[Annotated[list[str], append_unique]]
    retrieved_ids: NotRequired[Annotated[list[str], append_unique]]
    known: NotRequired[Annotated[list[Fact], merge_facts]]
    required: NotRequired[Annotated[list[Gap], merge_gaps]]
    step_answers: NotRequired[Annotated[dict[str, Any], merge_dicts]]
    diagnostics: NotRequired[Annotated[Diagnostics, merge_dicts]]


class SuggesterState(SuggesterTask, SuggesterOutput):
    """One suggester's round: its task, what it returns, and its tool calls this round."""

    searches: NotRequired[int]
    plan_reason: NotRequired[str]


class SuggesterUpdate(TypedDict, total=False):
    """What a suggester node returns: a partial `SuggesterState`."""

    messages: list[AnyMessage]
    proposals: list[Proposal]
    usage: Usage
    trace: list[str]
    history: list[dict[str, Any]]
    query_history: list[str]
    retrieved_ids: list[str]
    known: list[Fact]
    required: list[Gap]
    step_answers: dict[str, Any]
    diagnostics: Diagnostics
    searches: int
    plan_reason: str


def _view(state: SuggesterState, context: Context) -> KnowledgeView:
    cache = state["suggester_cache"]
    return KnowledgeView(
        question=state["question"],
        known=cache["known"],
        required=cache["required"],
        answers=cache["answers"],
        query_history=cache["queries"],
        refined_context=state["shared_context"],
        agent=state["suggester"],
        agents=max(1, context.agents),
        assigned_gaps=state["assigned_gaps"],
        turn=state["round"],
        max_turns=context.max_turns,
    )


def plan_search(state: SuggesterState, runtime: Runtime[Context]) -> SuggesterUpdate:
    """The suggester's next tool calls: the model's, or the offline / JSON plan's `search_gap`
    call; none when no new query can be made (or the planner failed)."""
    ctx = runtime.context
    index = state["suggester"]
    step = next_search(
        get_roles(ctx).planner,
        _view(state, ctx),
        list(state.get("messages", [])),
        attempts=1 + ctx.max_retries,
        call_id=f"suggester{index}-round{state['round'] + 1}",
        label=f"suggester {index} planner",
    )
    update: SuggesterUpdate = {
        "usage": step.usage,
        "searches": state.get("searches", 0) + 1,
        "plan_reason": step.reason,
    }
    diagnostics: Diagnostics = {}
    if step.notes:
        diagnostics["notes"] = step.notes
    if step.rejected:
        diagnostics["rejected_queries"] = step.rejected
    if step.error is not None:
        diagnostics["errors"] = [step.reason]
    if diagnostics:
        update["diagnostics"] = diagnostics
    if step.message is not None:
        update["messages"] = [step.message]
    return update


def route_suggester(state: SuggesterState) -> Literal["act", "update_caches"]:
    """Tool calls other than `stop_searching` are run; stopping, no call, or a failed planner
    end the round (early finish)."""
    messages = list(state.get("messages", []))
    last = messages[-1] if messages else None
    calls = getattr(last, "tool_calls", None) or []
    if any(c["name"] != "stop_searching" for c in calls):
        return "act"
    return "update_caches"


def route_results(state: SuggesterState) -> Literal["plan_search", "update_caches"]:
    """After the tools: every result an error (a repeated query, a failing graph tool) goes
    back to the planner, which can react, while searches are left; otherwise update."""
    failed = searches_failed(list(state.get("messages", [])))
    if failed and state.get("searches", 0) < MAX_SEARCHES:
        return "plan_search"
    return "update_caches"


def update_caches(state: SuggesterState, runtime: Runtime[Context]) -> SuggesterUpdate:
    """Known and Required of this suggester from the passages its tools found (eq. 5), and
    its proposal for the round (competitive: a proposal only; collaborative: the update also
    goes straight into the shared caches)."""
    ctx = runtime.context
    index = state["suggester"]
    cache = state["suggester_cache"]
    retriever = suggester_retriever(index, ctx)
    view = _view(state, ctx)
    found = read_results(list(state.get("messages", [])), ctx)
    query = found.queries[0] if found.queries else ""
    entry: dict[str, Any] = {
        "turn": view.turn + 1,
        "role": f"suggester {index}",
        "retriever": retriever,
        "query": query,
        "reason": state.get("plan_reason") or ("" if query else "no search made"),
        "rejected": [*state.get("diagnostics", {}).get("rejected_queries", []), *found.rejected],
    }
    proposal = Proposal(suggester=index, query=query, retriever=retriever, passages=[],
                        cache=cache, open_gaps=len(open_gaps(cache["required"])),
                        known_facts=len(cache["known"]))  # fmt: skip
    update: SuggesterUpdate = {"trace": ["suggest"]}
    diagnostics: Diagnostics = {}
    if query:
        plan = QueryPlan(query=query, gap_ids=tuple(found.gap_ids), reason=entry["reason"])
        accepted, usage, error = update_from_hits(get_roles(ctx), view, plan, found.hits)
        if error:
            diagnostics["errors"] = [f"suggester {index} {error}"]
        new_cache = SuggesterCache(
            known=merge_facts(cache["known"], accepted.facts),
            required=merge_gaps(cache["required"], accepted.gaps),
            answers={**cache["answers"], **accepted.answers},
            queries=append_unique(cache["queries"], found.queries),
        )
        proposal = Proposal(suggester=index, query=query, retriever=retriever,
                            passages=[to_evidence(h) for h in found.hits], cache=new_cache,
                            open_gaps=len(open_gaps(new_cache["required"])),
                            known_facts=len(new_cache["known"]))  # fmt: skip
        update |= {
            "usage": usage,
            "query_history": found.queries,
            "retrieved_ids": [h.passage.id for h in found.hits],
        }
        if ctx.mode == "collaborative":
            update |= {
                "known": accepted.facts,
                "required": accepted.gaps,
                "step_answers": accepted.answers,
            }
        entry |= {"facts": [f.text for f in accepted.facts], "resolved": accepted.resolved}
    entry["open_gaps"] = proposal["open_gaps"]
    if found.notes:
        diagnostics["notes"] = found.notes
    if found.rejected:
        diagnostics["rejected_queries"] = found.rejected
    if diagnostics:
        update["diagnostics"] = diagnostics
    return update | {"proposals": [proposal], "history": [entry]}


def build_suggester_agent() -> StateGraph[SuggesterState, Context, SuggesterTask, SuggesterOutput]:
    builder = StateGraph(
        SuggesterState,
        input_schema=SuggesterTask,
        output_schema=SuggesterOutput,
        context_schema=Context,
    )
    builder.add_node(plan_search)
    builder.add_node("act", kair_tool_node())
    builder.add_node(update_caches)
    builder.add_edge(START, "plan_search")
    builder.add_conditional_edges("plan_search", route_suggester, ["act", "update_caches"])
    builder.add_conditional_edges("act", route_results, ["plan_search", "update_caches"])
    builder.add_edge("update_caches", END)
    return builder


suggester_agent = build_suggester_agent().compile(name="suggester")
