"""`knowledge_aware`: knowledge-aware iterative retrieval (KAIR §3, Algorithm 1, §3.3).

Each agent keeps the KAIR caches: What is Known (`known`: facts with their passage ids), What is
Required (`required`: information gaps, resolved or open), the query history (`query_history`)
and the refined context D (`refined_context`: segments that are exact substrings of their
passages).

    initialize_caches → round → round → … → compose_answer → finalize_answer

- `initialize_caches`: the planner sets up Required from the question (Algorithm 1 line 1; the
  first round's query then plays the part of the initial retrieval, lines 4-8).
- Every agent searches by calling tools (`graphseek.graphs.kair_steps`): its planner, with the
  actions bound (`search_gap(query, gap_ids)` with the agent's retriever; entity search,
  neighbours, PPR expansion, passage search; `stop_searching` to finish early), replies with tool
  calls, and a `ToolNode` runs them. `search_gap` refuses a query already searched with an error
  `ToolMessage`; a round whose calls all failed goes back to the planner, which reacts (at most
  `MAX_SEARCHES` calls a round). The offline planner, and a model that cannot call tools (noted
  in `diagnostics.notes`; the planner is asked again with the rejected queries listed), emit the
  same `search_gap` call. The tool calls and results are in `messages`, so Studio shows them.
- A round with one agent (`mode="single"`, Algorithm 1 lines 11-14): `plan_query` (the next
  query from Known, Required and the history, as tool calls) → `retrieve_documents` (the
  `ToolNode`; the single agent searches with the context's retriever) → `update_knowledge`
  (only supported, relevant facts enter Known, eq. 5, and only facts stated in the passage
  they cite: the others are noted in `diagnostics.unstated_facts`; resolved gaps leave
  Required) → `filter_context` (D ∪ new passages re-filtered against Known, eq. 3; when the
  filter keeps nothing, the best-ranked passages stay whole, noted in `diagnostics.notes`).
- A round with suggesters (`mode="competitive" | "collaborative"`, `agents=N`, §3.3): `suggest`
  runs each suggester in parallel (`Send`) as the same tool-calling agent in a subgraph
  (`graphseek.graphs.suggester_agent`: plan_search → act → update_caches), each with its own
  retriever (the context's first, then bm25 / dense / hybrid, round-robin). `select_proposal`
  then either picks the proposal with the fewest open gaps (competitive, eq. 6; ties: more Known
  facts, then the lower suggester index) whose caches become the shared ones, or (collaborative:
  suggesters read and write one shared Known and Required, merged by the reducers) pools the
  passages; `filter_context` refines the shared context with them.
- `route_knowledge` after every round: Required empty → `compose_answer` (KAIR eq. 1, line 15;
  in competitive mode as soon as one suggester has closed every gap); a budget spent
  (`max_turns` rounds, `max_llm_calls`, `max_tokens`) → `compose_answer`, which abstains while
  gaps are open; otherwise the next round.
- `compose_answer`: the answerer reads Known and the refined context and answers with the
  passage ids that ground it, or abstains.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graphseek.agents.context_filter import keep_best_ranked
from graphseek.agents.kair import (
    enforce_exact_match,
    fill_gap,
    open_gaps,
    segments_to_context,
)
from graphseek.agents.knowledge_updater import keep_stated, observed_texts
from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.agents.roles import KnowledgeView, QueryPlan, Segment, diagnostics_of
from graphseek.errors import LLMError
from graphseek.graphs.common import abstain, add_finalize_answer, add_read_observed
from graphseek.graphs.entry import check_entry
from graphseek.graphs.kair_steps import (
    MAX_SEARCHES,
    STOP,
    kair_tool_node,
    next_search,
    no_progress,
    plan_new_query,
    read_results,
    round_messages,
    searches_failed,
    searches_made,
    update_from_hits,
)
from graphseek.graphs.routing import (
    budget_exhausted,
    escalating,
    route_end,
    route_knowledge,
    route_unless_failed,
)
from graphseek.graphs.suggester_agent import (
    SUGGESTER_RETRIEVERS,
    suggester_agent,
    suggester_retriever,
)
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage
from graphseek.state.schema import (
    Abstention,
    Diagnostics,
    InputState,
    KnowledgeAwareState,
    KnowledgeAwareUpdate,
    OutputState,
    PlannedQuery,
    SuggesterCache,
    SuggesterTask,
)
from graphseek.tools.retrievers import resolve_index

log = logging.getLogger(__name__)

MODES = ("single", "competitive", "collaborative")
__all__ = [
    "MODES",
    "SUGGESTER_RETRIEVERS",
    "build_knowledge_aware",
    "graph",
    "plan_new_query",
    "suggester_retriever",
]


# -- helpers ----------------------------------------------------------------------------------


def _shared_view(state: KnowledgeAwareState, context: Context) -> KnowledgeView:
    return KnowledgeView(
        question=state["question"],
        known=state.get("known", []),
        required=state.get("required", []),
        answers=dict(state.get("step_answers", {})),
        query_history=state.get("query_history", []),
        refined_context=state.get("refined_context", []),
        turn=state.get("turn", 0),
        max_turns=context.max_turns,
    )


def _candidates(
    context: Sequence[EvidenceItem], passages: Sequence[EvidenceItem]
) -> tuple[list[EvidenceItem], dict[str, EvidenceItem]]:
    """D ∪ D_add for filtering: the refined context's segments (a passage retrieved again comes
    whole, in its place), then the new passages; and each passage id's whole-text item."""
    new = {p.passage_id: p for p in passages}
    candidates: list[EvidenceItem] = []
    sources: dict[str, EvidenceItem] = {}
    for item in [*context, *passages]:
        whole = new.get(item.passage_id)
        if whole is not None:
            if item.passage_id not in sources:
                candidates.append(whole)
                sources[item.passage_id] = whole
            continue
        candidates.append(item)
        sources.setdefault(item.passage_id, item)
    return candidates, sources


def _evidence(
    ids: Sequence[str], state: KnowledgeAwareState, context: Context
) -> list[EvidenceItem]:
    """Evidence items for passage ids retrieved during the run (refined segments first)."""
    seen = set(state.get("retrieved_ids", []))
    pool: dict[str, EvidenceItem] = {}
    for item in [*state.get("refined_context", []), *state.get("passages", [])]:
        pool.setdefault(item.passage_id, item)
    out: list[EvidenceItem] = []
    for pid in dict.fromkeys(ids):
        if pid not in seen:
            continue
        found = pool.get(pid)
        if found is None:
            try:
                p = resolve_index(context).get(pid)
            except (KeyError, ValueError, AttributeError):
                continue
            found = EvidenceItem(passage_id=p.id, title=p.title, text=p.text)
        out.append(found)
    return out


# -- nodes ------------------------------------------------------------------------------------


def initialize_caches(
    state: KnowledgeAwareState, runtime: Runtime[Context]
) -> KnowledgeAwareUpdate | Abstention:
    """Empty Known, history and context; Required from the planner (Algorithm 1 line 1)."""
    check_entry(state, runtime)
    ctx = runtime.context
    if ctx.mode not in MODES:
        raise ValueError(
            f"Unknown knowledge_aware mode {ctx.mode!r}; use one of {', '.join(MODES)}."
        )
    if ctx.agents < 1:
        raise ValueError(f"knowledge_aware needs agents >= 1, got {ctx.agents}.")
    question = state["question"].strip()
    try:
        step = get_roles(ctx).planner.initial_gaps(question)
    except LLMError as exc:
        return abstain("initialize_caches", f"planner failed: {exc}", usage=error_usage(exc))
    gaps = step.value
    update: KnowledgeAwareUpdate = {
        "known": Overwrite([]),
        "required": Overwrite(gaps),
        "query_history": Overwrite([]),
        "step_answers": Overwrite({}),
        "proposals": Overwrite([]),
        "refined_context": [],
        "passages": [],
        "turn": 0,
        "next_action": "plan",
        "usage": step.usage,
        "trace": ["initialize_caches"],
        "history": [{"turn": 0, "role": "planner", "required": [g.description for g in gaps]}],
    }
    if ctx.mode == "competitive":
        update["suggester_caches"] = Overwrite(
            {
                str(i): SuggesterCache(known=[], required=list(gaps), answers={}, queries=[])
                for i in range(max(1, ctx.agents))
            }
        )
    return update


def plan_query(
    state: KnowledgeAwareState, runtime: Runtime[Context]
) -> KnowledgeAwareUpdate | Abstention:
    """The next search from Known, Required and the query history (eq. 2), as tool calls;
    never a repeat (the tool refuses one, the JSON planner is asked again)."""
    ctx = runtime.context
    view = _shared_view(state, ctx)
    messages = list(state.get("messages", []))
    stalled = no_progress(get_roles(ctx).planner, messages)
    if stalled:  # a model repeating itself (its repeats answered with their earlier results)
        stop: Diagnostics = {"no_progress_stop": stalled}
        return abstain("plan_query", f"{stalled} (early stop)", diagnostics=stop)
    step = next_search(
        get_roles(ctx).planner,
        view,
        round_messages(messages),
        attempts=1 + ctx.max_retries,
        call_id=f"agent-round{view.turn + 1}",
    )
    if step.error is not None:
        return abstain("plan_query", f"planner failed: {step.error}", usage=step.usage)
    calls = step.message.tool_calls if step.message is not None else []
    search = next((c for c in calls if c["name"] != STOP), None)
    args = dict(search.get("args") or {}) if search else {}
    query = " ".join(str(args.get("query") or args.get("entity") or "").split())
    gap_ids = [str(g) for g in args.get("gap_ids") or []]
    update: KnowledgeAwareUpdate = {
        "usage": step.usage,
        "trace": ["plan_query"],
        "history": [
            {
                "turn": view.turn + 1,
                "role": "planner",
                "query": query,
                "tool": search["name"] if search else "",
                "gap_ids": gap_ids,
                "reason": step.reason,
                "rejected": step.rejected,
            }
        ],
    }
    if step.message is not None:
        update["messages"] = [step.message]
    diagnostics: Diagnostics = {}
    if step.notes:
        diagnostics["notes"] = step.notes
    if step.rejected:
        diagnostics["rejected_queries"] = step.rejected
    if diagnostics:
        update["diagnostics"] = diagnostics
    if search is None:
        gaps = len(open_gaps(view.required))
        why = step.reason or "the planner made no search"
        return update | {
            "next_action": "abstain",
            "abstain_reason": f"no new query for the {gaps} open gap(s): {why}",
        }
    planned = PlannedQuery(query=query, gap_ids=gap_ids, reason=step.reason)
    return update | {"next_action": "retrieve", "planned_query": planned}


def route_search(state: KnowledgeAwareState) -> Literal["plan_query", "update_knowledge"]:
    """After the tools (`retrieve_documents`): every call failed (a refused repeat, a failing
    graph tool) → the planner again, while the round has searches left; else the update."""
    messages = list(state.get("messages", []))
    if searches_failed(messages) and searches_made(messages) < MAX_SEARCHES:
        return "plan_query"
    return "update_knowledge"


def update_knowledge(
    state: KnowledgeAwareState, runtime: Runtime[Context]
) -> KnowledgeAwareUpdate | Abstention:
    """Known and Required from the passages the tools found (D_add) and the refined context
    (eq. 5)."""
    ctx = runtime.context
    view = _shared_view(state, ctx)
    found = read_results(list(state.get("messages", [])), ctx)
    planned = state.get("planned_query") or PlannedQuery(query="", gap_ids=[], reason="")
    query = found.queries[0] if found.queries else ""
    diagnostics: Diagnostics = {}
    if found.notes:
        diagnostics["notes"] = found.notes
    if found.rejected:
        diagnostics["rejected_queries"] = found.rejected
    if not query:  # every search of the round failed
        why = "; ".join(found.notes or [f"refused: {q}" for q in found.rejected]) or "no result"
        failure = abstain("update_knowledge", f"no search succeeded this round ({why})")
        return failure | ({"diagnostics": diagnostics} if diagnostics else {})
    gap_ids = tuple(found.gap_ids or planned["gap_ids"])
    plan = QueryPlan(query, gap_ids, planned["reason"])
    accepted, usage, error = update_from_hits(get_roles(ctx), view, plan, found.hits)
    # only facts stated in the passages they cite (the hits and the refined context)
    stated = keep_stated(accepted, observed_texts([*found.hits, *view.refined_context]))
    accepted = stated.update
    if stated.dropped:
        diagnostics["unstated_facts"] = stated.dropped
    update: KnowledgeAwareUpdate = {
        "passages": [to_evidence(h) for h in found.hits],
        "retrieved_ids": [h.passage.id for h in found.hits],
        "query_history": found.queries,
        "known": accepted.facts,
        "required": accepted.gaps,
        "step_answers": accepted.answers,
        "usage": usage,
        "trace": ["update_knowledge"],
        "history": [
            {
                "turn": view.turn + 1,
                "role": "knowledge_updater",
                "query": query,
                "passages": [h.passage.id for h in found.hits],
                "facts": [f.text for f in accepted.facts],
                "resolved": accepted.resolved,
                "rejected": accepted.rejected,
            }
        ],
    }
    if error:
        diagnostics["errors"] = [error]
    if diagnostics:
        update["diagnostics"] = diagnostics
    return update


def filter_context(state: KnowledgeAwareState, runtime: Runtime[Context]) -> KnowledgeAwareUpdate:
    """Re-filter D ∪ D_add against the updated Known (eq. 3): kept segments must be exact
    substrings of their passage; the round ends here."""
    ctx = runtime.context
    turn = state.get("turn", 0) + 1
    candidates, sources = _candidates(state.get("refined_context", []), state.get("passages", []))
    texts = {pid: item.text for pid, item in sources.items()}
    diagnostics: Diagnostics = {"rounds": turn}
    usage = Usage()
    try:
        step = get_roles(ctx).context_filter.refine(_shared_view(state, ctx), candidates)
        segments, usage = step.value, step.usage
        diagnostics |= diagnostics_of(step)
    except LLMError as exc:
        # keep what was refined before and the new passages whole
        log.warning("context filter failed: %s", exc)
        usage = error_usage(exc)
        diagnostics["errors"] = [f"context filter: {exc}"]
        segments = [Segment(passage_id=c.passage_id, text=c.sentence or c.text) for c in candidates]
    kept, dropped = enforce_exact_match(segments, texts)
    if dropped:
        diagnostics["dropped_segments"] = dropped
    if not kept and candidates:
        # never drop every retrieved passage: the new ones (retrieval order) first, whole
        ranked = [*state.get("passages", []), *candidates]
        kept = keep_best_ranked(kept, ranked)
        note = f"context filter kept nothing: the {len(kept)} best-ranked passage(s) kept whole"
        diagnostics["notes"] = [*diagnostics.get("notes", []), note]
    return {
        "refined_context": segments_to_context(kept, sources),
        "turn": turn,
        "usage": usage,
        "trace": ["filter_context"],
        "diagnostics": diagnostics,
    }


def select_proposal(state: KnowledgeAwareState, runtime: Runtime[Context]) -> KnowledgeAwareUpdate:
    """Competitive: the proposal with the fewest open gaps wins (eq. 6; ties: more Known facts,
    then the lower index); its caches become the shared Known and Required and its passages go
    on to the filter. Collaborative: the suggesters' passages are pooled."""
    ctx = runtime.context
    proposals = sorted(state.get("proposals", []), key=lambda p: p["suggester"])
    active = [p for p in proposals if p["query"]]
    update: KnowledgeAwareUpdate = {"proposals": Overwrite([]), "trace": ["select_proposal"]}
    if ctx.mode == "competitive":
        update["suggester_caches"] = {str(p["suggester"]): p["cache"] for p in proposals}
    if not active:
        errors = state.get("diagnostics", {}).get("errors", [])
        why = f" (last error: {errors[-1]})" if errors else ""
        return update | {
            "next_action": "abstain",
            "abstain_reason": f"no suggester could plan a new query for the open gaps{why}",
        }
    if ctx.mode == "competitive":
        winner = min(active, key=lambda p: (p["open_gaps"], -p["known_facts"], p["suggester"]))
        cache = winner["cache"]
        return update | {
            "known": Overwrite(list(cache["known"])),
            "required": Overwrite(list(cache["required"])),
            "step_answers": Overwrite(dict(cache["answers"])),
            "passages": list(winner["passages"]),
            "next_action": "filter",
            "diagnostics": {"suggester_winners": [winner["suggester"]]},
            "history": [
                {
                    "turn": state.get("turn", 0) + 1,
                    "role": "selector",
                    "winner": winner["suggester"],
                    "open_gaps": {p["suggester"]: p["open_gaps"] for p in active},
                }
            ],
        }
    pooled: dict[str, EvidenceItem] = {}
    for p in active:
        for item in p["passages"]:
            pooled.setdefault(item.passage_id, item)
    return update | {"passages": list(pooled.values()), "next_action": "filter"}


def compose_answer(
    state: KnowledgeAwareState, runtime: Runtime[Context]
) -> KnowledgeAwareUpdate | Abstention:
    """The answerer over Known and the refined context, with evidence passage ids; an explicit
    abstention while Required still has open gaps (the budget ended the search)."""
    ctx = runtime.context
    remaining = open_gaps(state.get("required", []))
    if remaining:
        why = (
            budget_exhausted(state.get("usage"), state.get("turn", 0), ctx)
            or state.get("abstain_reason")
            or "the search stopped"
        )
        answers = dict(state.get("step_answers", {}))
        gaps = "; ".join(fill_gap(g.description, answers) for g in remaining)
        return abstain(
            "compose_answer", f"{why}; {len(remaining)} Required gap(s) still open: {gaps}"
        )
    try:
        step = get_roles(ctx).answerer.answer(_shared_view(state, ctx))
    except LLMError as exc:
        return abstain("compose_answer", f"answerer failed: {exc}", usage=error_usage(exc))
    final = step.value
    if not final.answer.strip():
        return abstain("compose_answer", final.reason or "the answerer abstained", usage=step.usage)
    evidence = _evidence(final.passage_ids, state, ctx)
    if not evidence:  # no usable citation: the passages behind Known
        evidence = _evidence([p for f in state.get("known", []) for p in f.passage_ids], state, ctx)
    if not evidence:
        return abstain(
            "compose_answer",
            f"the answer {final.answer!r} cites no retrieved passage",
            usage=step.usage,
        )
    return {
        "next_action": "answer",
        "answer": final.answer.strip(),
        "evidence": evidence,
        "usage": step.usage,
        "trace": ["compose_answer"],
        "history": [
            {
                "role": "answerer",
                "answer": final.answer,
                "passage_ids": [e.passage_id for e in evidence],
                "reason": final.reason,
            }
        ],
    }


def build_knowledge_aware() -> StateGraph[KnowledgeAwareState, Context, InputState, OutputState]:
    builder = StateGraph(
        KnowledgeAwareState,
        input_schema=InputState,
        output_schema=OutputState,
        context_schema=Context,
    )
    builder.add_node(initialize_caches)
    builder.add_node(plan_query)
    # the single agent's actions: the same tools as the suggesters' (`kair_tools`)
    builder.add_node("retrieve_documents", kair_tool_node())
    builder.add_node(update_knowledge)
    builder.add_node("suggest", suggester_agent, input_schema=SuggesterTask)
    builder.add_node(select_proposal)
    builder.add_node(filter_context)
    builder.add_node(compose_answer)
    add_read_observed(builder)
    add_finalize_answer(builder)
    rounds = ["plan_query", "suggest", "compose_answer", "read_observed", "finalize_answer"]
    builder.add_edge(START, "initialize_caches")
    builder.add_conditional_edges("initialize_caches", escalating(route_knowledge), rounds)
    builder.add_conditional_edges(
        "plan_query",
        escalating(route_unless_failed("retrieve_documents")),
        ["retrieve_documents", "read_observed", "finalize_answer"],
    )
    builder.add_conditional_edges(
        "retrieve_documents", route_search, ["plan_query", "update_knowledge"]
    )
    builder.add_conditional_edges(
        "update_knowledge",
        route_unless_failed("filter_context"),
        ["filter_context", "finalize_answer"],
    )
    builder.add_edge("suggest", "select_proposal")
    builder.add_conditional_edges(
        "select_proposal",
        route_unless_failed("filter_context"),
        ["filter_context", "finalize_answer"],
    )
    builder.add_conditional_edges("filter_context", escalating(route_knowledge), rounds)
    builder.add_conditional_edges("compose_answer", route_end, ["read_observed", "finalize_answer"])
    builder.add_edge("finalize_answer", END)
    return builder


#: a round takes four supersteps (three with suggesters): LangGraph's default limit of 25 would
#: cut a run with the default `max_turns=6` short, so the compiled graph allows about 24 rounds
RECURSION_LIMIT = 100

graph = (
    build_knowledge_aware()
    .compile(name="knowledge_aware")
    .with_config(recursion_limit=RECURSION_LIMIT)
)
