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
- `act`: a `ToolNode` runs the calls; the tools read the index from the runtime context and the
  suggester's index (its retriever, its query history) from the state. `search_gap` refuses a
  query already searched; tool errors come back as ToolMessages.
- `update_caches`: the passages the tools found are D_add; the knowledge updater turns them
  into Known facts and resolved gaps (KAIR eq. 5) and the round's `Proposal` is written (in
  collaborative mode the update also goes to the shared caches).

Routing is by conditional edges on the tool calls (`route_suggester`, `route_results`). The
messages (tool calls and results) are written to the parent state, so they show in Studio.
"""

from __future__ import annotations

import hashlib
import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from graphseek.agents.kair import is_repeat, open_gaps
from graphseek.agents.planner import LLMPlanner
from graphseek.agents.registry import get_roles
from graphseek.agents.roles import KnowledgeView, QueryPlan
from graphseek.agents.tool_calling import ToolsUnsupportedError
from graphseek.errors import BudgetExceededError, LLMError
from graphseek.graphs.common import error_usage, to_evidence
from graphseek.graphs.kair_steps import plan_new_query, update_from_hits
from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Names, Reasoning, Sentence
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
from graphseek.tools.lc_tools import (
    char_budget,
    format_passages,
    neighbors,
    ppr_search,
    search_entities,
    search_passages,
)
from graphseek.tools.retrievers import resolve_index, retrieve

#: the retrievers suggesters take turns with after the context's own (round-robin by index)
SUGGESTER_RETRIEVERS = ("bm25", "dense", "hybrid")
#: tool calls a suggester makes at most in one round (a failed call may be followed by another)
MAX_SEARCHES = 3
SEARCH_GAP = "search_gap"
STOP = "stop_searching"


def suggester_retriever(index: int, context: Context) -> str:
    """Suggester `index`'s retriever: the context's for suggester 0, then the others in turn."""
    pool = [context.retriever, *(r for r in SUGGESTER_RETRIEVERS if r != context.retriever)]
    return pool[index % len(pool)]


# -- tools --------------------------------------------------------------------------------------


class SearchGapArgs(BaseModel):
    query: Sentence = Field(
        description="The search query for the gap: never one from the query history."
    )
    gap_ids: Names = Field(
        default_factory=list, description="Ids of the open Required gaps the query serves."
    )


@tool(SEARCH_GAP, args_schema=SearchGapArgs, response_format="content_and_artifact")
def search_gap(
    query: str, runtime: ToolRuntime[Context], gap_ids: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    """Search the documents for the information an open Required gap asks for, with this
    suggester's retriever. Returns passages as [passage id] Title: text."""
    context = runtime.context
    state = runtime.state if isinstance(runtime.state, dict) else {}
    cache = state.get("suggester_cache") or {}
    query = " ".join(str(query).split())
    if not query:
        raise ToolException("the query is empty: give the words to search for")
    if is_repeat(query, cache.get("queries") or []):
        raise ToolException(f"{query!r} was already searched: reformulate the query")
    retriever = suggester_retriever(int(state.get("suggester") or 0), context)
    hits = retrieve(resolve_index(context), query, context.top_k, retriever)
    scores = [h.score for h in hits]
    text = format_passages([h.passage for h in hits], char_budget(context), scores)
    return text or "(nothing found)", {
        "passage_ids": [h.passage.id for h in hits],
        "scores": scores,
        "query": query,
        "gap_ids": [str(g) for g in gap_ids or []],
        "retriever": retriever,
    }


class StopArgs(BaseModel):
    reason: Reasoning = Field(default="", description="Why no search is left to make.")


@tool(STOP, args_schema=StopArgs)
def stop_searching(reason: str = "") -> str:
    """End this round without a search: nothing is left that a search could find."""
    return f"stopped: {reason or 'no search left'}"


def suggester_tools() -> list[BaseTool]:
    """A suggester's actions: its gap search, passage and graph search, and stopping."""
    return [search_gap, search_passages, search_entities, neighbors, ppr_search, stop_searching]


# -- state --------------------------------------------------------------------------------------


class SuggesterOutput(TypedDict):
    """What a suggester's round gives back to the parent graph (same keys and reducers as
    `graphseek.state.State`; `known`, `required` and `step_answers` in collaborative mode only)."""

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


def _tail(messages: list[AnyMessage]) -> tuple[AIMessage | None, list[ToolMessage]]:
    """The last model message and the tool results after it."""
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            results.append(message)
        elif isinstance(message, AIMessage):
            return message, results[::-1]
    return None, results[::-1]


# -- nodes --------------------------------------------------------------------------------------


def plan_search(state: SuggesterState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The suggester's next tool calls: the model's, or the offline / JSON plan's `search_gap`
    call; none when no new query can be made."""
    ctx = runtime.context
    index, searches = state["suggester"], state.get("searches", 0)
    view = _view(state, ctx)
    planner = get_roles(ctx).planner
    notes: list[str] = []
    usage = Usage()
    if isinstance(planner, LLMPlanner):
        try:
            step = planner.call_tools(view, list(state.get("messages", [])), suggester_tools())
        except ToolsUnsupportedError as exc:
            notes.append(f"suggester {index}: {exc}; the JSON path is used instead")
        except LLMError as exc:
            return _failed(index, exc)
        else:
            return {"messages": [step.value], "searches": searches + 1, "usage": step.usage}
    # the offline planner and the JSON path: one planned query, emitted as a search_gap call
    try:
        plan, usage, rejected = plan_new_query(planner, view, attempts=1 + ctx.max_retries)
    except LLMError as exc:
        failure = _failed(index, exc)
        if notes:
            failure["diagnostics"]["notes"] = notes
        return failure
    diagnostics: dict[str, Any] = {}
    if notes:
        diagnostics["notes"] = notes
    if rejected:
        diagnostics["rejected_queries"] = rejected
    update: dict[str, Any] = {"usage": usage, "searches": searches + 1, "plan_reason": plan.reason}
    if diagnostics:
        update["diagnostics"] = diagnostics
    if not plan.query:
        return update | {"messages": [AIMessage(content=plan.reason or "no new query")]}
    digest = hashlib.sha1(plan.query.encode()).hexdigest()[:8]  # deterministic, distinct
    call = {"name": SEARCH_GAP, "args": {"query": plan.query, "gap_ids": list(plan.gap_ids)},
            "id": f"suggester{index}-round{state['round'] + 1}-{digest}", "type": "tool_call"}  # fmt: skip
    return update | {"messages": [AIMessage(content=plan.reason, tool_calls=[call])]}


def _failed(index: int, exc: LLMError) -> dict[str, Any]:
    """A planner call that failed: the round ends with no query, its cause in the errors (a
    spent budget is named as such)."""
    label = "budget" if isinstance(exc, BudgetExceededError) else "planner"
    return {
        "usage": error_usage(exc),
        "plan_reason": f"{label}: {exc}",
        "diagnostics": {"errors": [f"suggester {index} planner: {exc}"]},
    }


def route_suggester(state: SuggesterState) -> Literal["act", "update_caches"]:
    """Tool calls other than `stop_searching` are run; stopping, no call, or a failed planner
    end the round (early finish)."""
    messages = list(state.get("messages", []))
    last = messages[-1] if messages else None
    if not isinstance(last, AIMessage) or not last.tool_calls:
        return "update_caches"
    if all(c["name"] == STOP for c in last.tool_calls):
        return "update_caches"
    return "act"


def route_results(state: SuggesterState) -> Literal["plan_search", "update_caches"]:
    """After the tools: every result an error (a repeated query, a failing graph tool) goes
    back to the planner, which can react, while searches are left; otherwise update."""
    _, results = _tail(list(state.get("messages", [])))
    failed = bool(results) and all(r.status == "error" for r in results)
    if failed and state.get("searches", 0) < MAX_SEARCHES:
        return "plan_search"
    return "update_caches"


def update_caches(state: SuggesterState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Known and Required of this suggester from the passages its tools found (eq. 5), and
    its proposal for the round (competitive: a proposal only; collaborative: the update also
    goes straight into the shared caches)."""
    ctx = runtime.context
    index = state["suggester"]
    cache = state["suggester_cache"]
    retriever = suggester_retriever(index, ctx)
    view = _view(state, ctx)
    last, results = _tail(list(state.get("messages", [])))
    calls = {str(c["id"]): c for c in (last.tool_calls if last else [])}
    hits, queries, gap_ids, notes = _found(results, calls, ctx)
    query = queries[0] if queries else ""
    errors = list(state.get("diagnostics", {}).get("errors") or [])
    entry: dict[str, Any] = {
        "turn": view.turn + 1,
        "role": f"suggester {index}",
        "retriever": retriever,
        "query": query,
        "reason": state.get("plan_reason") or (str(last.text)[:300] if last else ""),
        "rejected": list(state.get("diagnostics", {}).get("rejected_queries") or []),
        "tools": [r.name for r in results],
    }
    proposal = Proposal(suggester=index, query=query, retriever=retriever, passages=[],
                        cache=cache, open_gaps=len(open_gaps(cache["required"])),
                        known_facts=len(cache["known"]))  # fmt: skip
    update: dict[str, Any] = {"trace": ["suggest"]}
    new_errors: list[str] = []
    if query:
        plan = QueryPlan(query=query, gap_ids=tuple(gap_ids), reason=entry["reason"])
        accepted, usage, error = update_from_hits(get_roles(ctx), view, plan, hits)
        if error:
            new_errors.append(f"suggester {index} {error}")
        new_cache = SuggesterCache(
            known=merge_facts(cache["known"], accepted.facts),
            required=merge_gaps(cache["required"], accepted.gaps),
            answers={**cache["answers"], **accepted.answers},
            queries=append_unique(cache["queries"], queries),
        )
        proposal = Proposal(suggester=index, query=query, retriever=retriever,
                            passages=[to_evidence(h) for h in hits], cache=new_cache,
                            open_gaps=len(open_gaps(new_cache["required"])),
                            known_facts=len(new_cache["known"]))  # fmt: skip
        update |= {
            "usage": usage,
            "query_history": queries,
            "retrieved_ids": [h.passage.id for h in hits],
        }
        if ctx.mode == "collaborative":
            update |= {
                "known": accepted.facts,
                "required": accepted.gaps,
                "step_answers": accepted.answers,
            }
        entry |= {"facts": [f.text for f in accepted.facts], "resolved": accepted.resolved}
    elif not errors and not entry["reason"]:
        entry["reason"] = "no search made"
    entry["open_gaps"] = proposal["open_gaps"]
    diagnostics: dict[str, Any] = {}
    if new_errors:
        diagnostics["errors"] = new_errors
    if notes:
        diagnostics["notes"] = notes
    if diagnostics:
        update["diagnostics"] = diagnostics
    return update | {"proposals": [proposal], "history": [entry]}


def _found(
    results: list[ToolMessage], calls: dict[str, Any], context: Context
) -> tuple[list[Hit], list[str], list[str], list[str]]:
    """From the tool results: the passages found (best first, once each), the queries searched
    (for the history), the gap ids they served, and notes (tool errors, graph notes)."""
    index = resolve_index(context)
    hits: list[Hit] = []
    seen: set[str] = set()
    queries: list[str] = []
    gap_ids: list[str] = []
    notes: list[str] = []
    for message in results:
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        if message.status == "error":
            notes.append(f"{message.name}: {str(message.content)[:200]}")
            continue
        if not artifact.get("passage_ids"):
            continue
        call = calls.get(message.tool_call_id)
        args = dict(call.get("args") or {}) if call else {}
        query = str(artifact.get("query") or args.get("query") or args.get("entity") or "")
        if not query and args.get("entities"):
            query = ", ".join(str(e) for e in args["entities"])
        if query.strip():
            queries.append(" ".join(query.split()))
        gap_ids.extend(str(g) for g in artifact.get("gap_ids") or args.get("gap_ids") or [])
        scores = list(artifact.get("scores") or [])
        for i, pid in enumerate(artifact["passage_ids"]):
            if pid in seen or pid not in index:
                continue
            seen.add(pid)
            score = float(scores[i]) if i < len(scores) else 0.0
            hits.append(Hit(passage=index.get(pid), score=score, rank=len(hits) + 1))
    return hits, list(dict.fromkeys(queries)), list(dict.fromkeys(gap_ids)), notes


def build_suggester_agent() -> StateGraph[SuggesterState, Context, SuggesterTask, SuggesterOutput]:
    builder = StateGraph(
        SuggesterState,
        input_schema=SuggesterTask,
        output_schema=SuggesterOutput,
        context_schema=Context,
    )
    builder.add_node(plan_search)
    builder.add_node("act", ToolNode(suggester_tools(), handle_tool_errors=True))
    builder.add_node(update_caches)
    builder.add_edge(START, "plan_search")
    builder.add_conditional_edges("plan_search", route_suggester, ["act", "update_caches"])
    builder.add_conditional_edges("act", route_results, ["plan_search", "update_caches"])
    builder.add_edge("update_caches", END)
    return builder


suggester_agent = build_suggester_agent().compile(name="suggester")
