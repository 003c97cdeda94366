"""`deep_search`: GraphSearch's modular deep-searching pipeline (GraphSearch §3).

decompose_query (atomic sub-queries with #N references)
→ ground_queries (query grounding: references resolved from earlier answers)
→ semantic_search ‖ relational_search (the two channels, in parallel for every ready sub-query,
  `Send`) → refine_context (context refinement) → answer_subqueries (intermediate answers)
→ ground_queries … while steps become ready
→ draft_logic (logic drafting) → verify_evidence (accept / reject)
→ [reject, expansions left] expand_query (query expansion) → ground_queries …
→ finalize_answer: the accepted answer, or an abstention.

Budgets: `max_retries` bounds the expansions; `max_llm_calls`, `max_tokens` and `max_turns`
(grounding rounds) are checked before each model-calling node.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.agents.text import best_draft
from graphseek.errors import LLMError
from graphseek.graphs.common import (
    abstain,
    add_finalize_answer,
    evidence_from_drafts,
    to_hits,
)
from graphseek.graphs.entry import check_entry
from graphseek.graphs.graph_context import relational_channel, semantic_channel
from graphseek.graphs.higra_retriever import graph_draft
from graphseek.graphs.routing import (
    budget_exhausted,
    route_channels,
    route_evidence,
    route_subqueries,
    route_unless_failed,
    unattempted_steps,
)
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem, SubQuestion, Usage
from graphseek.state.schema import (
    Abstention,
    ChannelTask,
    DeepSearchState,
    DeepSearchUpdate,
    InputState,
    LibrarianTask,
    OutputState,
)
from graphseek.state.verdicts import ChannelResult, LogicDraft


def _best_by_step(drafts: list[Draft]) -> dict[int, Draft]:
    steps = {d.step_id for d in drafts if d.step_id is not None}
    out = {}
    for sid in steps:
        best = best_draft([d for d in drafts if d.step_id == sid])
        if best is not None:
            out[sid] = best
    return out


def decompose_query(
    state: DeepSearchState, runtime: Runtime[Context]
) -> DeepSearchUpdate | Abstention:
    """Query decomposition (§3.1.1): atomic sub-queries, later ones referring to earlier
    answers as #N."""
    check_entry(state, runtime)
    question = " ".join(state["question"].split())
    try:
        step = get_roles(runtime.context).decomposer.decompose(question)
    except LLMError as exc:
        return abstain("decompose_query", f"decomposer failed: {exc}", usage=error_usage(exc))
    plan = step.value or [SubQuestion(id=1, question=question)]
    return {
        "plan": plan,
        "usage": step.usage,
        "trace": ["decompose_query"],
        "turn": 0,
        "retries": 0,
        "pending": [],
    }


def ground_queries(
    state: DeepSearchState, runtime: Runtime[Context]
) -> DeepSearchUpdate | Abstention:
    """Query grounding (§3.1.1, eq. 2): the sub-queries to search this round (expansions, else
    the plan steps whose inputs are answered), their #N replaced by the earlier answers."""
    ctx = runtime.context
    turn = state.get("turn", 0)
    exhausted = budget_exhausted(state.get("usage"), turn, ctx)
    if exhausted:
        return abstain("ground_queries", exhausted)
    tasks = list(state.get("pending") or [])
    if not tasks:
        tasks = [LibrarianTask(question=s.question, step_id=s.id) for s in unattempted_steps(state)]
    answers = {k: str(v) for k, v in state.get("step_answers", {}).items() if v}
    plan = {s.id: s for s in state.get("plan", [])}
    earlier = [
        (sid, plan[sid].question if sid in plan else d.question, d.answer)
        for sid, d in sorted(_best_by_step(list(state.get("drafts", []))).items())
        if d.answer
    ]
    grounder = get_roles(ctx).grounder
    usage = Usage()
    grounded: list[LibrarianTask] = []
    for task in tasks:
        try:
            step = grounder.ground(task["question"], earlier, answers)
            text, usage = step.value, usage + step.usage
        except LLMError as exc:
            text, usage = task["question"], usage + error_usage(exc)
        grounded.append(LibrarianTask(question=text, step_id=task.get("step_id") or 0))
    return {
        "pending": grounded,
        "channel_results": Overwrite([]),
        "query_history": [t["question"] for t in grounded],
        "usage": usage,
        "turn": turn + 1,
        "trace": ["ground_queries"],
    }


def semantic_search(task: ChannelTask, runtime: Runtime[Context]) -> DeepSearchUpdate:
    """The semantic channel (§3.2): descriptive evidence from passages."""
    found = semantic_channel(runtime.context, task["subquery"])
    result = ChannelResult(
        step_id=task["step_id"],
        query=task["subquery"],
        channel="semantic",
        passages=[to_evidence(h) for h in found.hits],
    )
    return {
        "channel_results": [result],
        "retrieved_ids": [h.passage.id for h in found.hits],
        "trace": ["semantic_search"],
    }


def relational_search(task: ChannelTask, runtime: Runtime[Context]) -> DeepSearchUpdate:
    """The relational channel (§3.2): triples matching the sub-query's triple pattern, and the
    passages they come from."""
    found = relational_channel(runtime.context, task["subquery"])
    result = ChannelResult(
        step_id=task["step_id"],
        query=task["subquery"],
        channel="relational",
        passages=[to_evidence(h) for h in found.hits],
        triples=found.lines,
    )
    update: DeepSearchUpdate = {
        "channel_results": [result],
        "retrieved_ids": [h.passage.id for h in found.hits],
        "trace": ["relational_search"],
    }
    if found.note:
        update["diagnostics"] = {"notes": [f"relational: {found.note}"]}
    return update


def refine_context(state: DeepSearchState, runtime: Runtime[Context]) -> DeepSearchUpdate:
    """Context refinement (§3.1.1): per sub-query, keep the passages and triples of both
    channels that help answer it (skipped, keeping everything, once a budget is spent)."""
    ctx = runtime.context
    refiner = get_roles(ctx).refiner
    results = list(state.get("channel_results", []))
    usage = Usage()
    refined: list[ChannelResult] = []
    errors: list[str] = []
    for task in state.get("pending") or []:
        mine = [r for r in results if r.query == task["question"]]
        mine.sort(key=lambda r: r.channel != "semantic")
        pool: dict[str, EvidenceItem] = {}
        for r in mine:
            for e in r.passages:
                pool.setdefault(e.passage_id, e)
        triples = list(dict.fromkeys(t for r in mine for t in r.triples))
        passages, kept = list(pool.values()), triples
        if not budget_exhausted(usage + state.get("usage", Usage()), 0, ctx):
            try:
                step = refiner.refine(task["question"], to_hits(passages), triples)
                usage = usage + step.usage
                passages = [to_evidence(h) for h in step.value.hits]
                kept = step.value.triples
            except LLMError as exc:
                usage = usage + error_usage(exc)
                errors.append(f"refiner: {exc}")
        refined.append(
            ChannelResult(
                step_id=task.get("step_id") or 0,
                query=task["question"],
                channel="refined",
                passages=passages,
                triples=kept,
            )
        )
    update: DeepSearchUpdate = {
        "channel_results": Overwrite(refined),
        "usage": usage,
        "trace": ["refine_context"],
    }
    if errors:
        update["diagnostics"] = {"errors": errors}
    return update


def answer_subqueries(state: DeepSearchState, runtime: Runtime[Context]) -> DeepSearchUpdate:
    """Intermediate answers (§3.1.1): the Librarian answers each grounded sub-query from its
    refined context; an answer becomes the step's answer when it is the best supported one."""
    ctx = runtime.context
    best = _best_by_step(list(state.get("drafts", [])))
    usage = Usage()
    drafts: list[Draft] = []
    answers: dict[str, str] = {}
    lines: list[str] = []
    errors: list[str] = []
    for result in state.get("channel_results", []):
        if budget_exhausted(usage + state.get("usage", Usage()), 0, ctx):
            drafts.append(Draft(question=result.query, answer="", step_id=result.step_id))
            continue
        draft, spent, error = graph_draft(
            result.query, to_hits(result.passages), result.triples, runtime, result.step_id
        )
        usage = usage + spent
        drafts.append(draft)
        lines.extend(result.triples)
        if error:
            errors.append(f"librarian: {error}")
        previous = best.get(result.step_id)
        if draft.answer and (
            previous is None or not previous.answer or draft.confidence > previous.confidence
        ):
            answers[str(result.step_id)] = draft.answer
            best[result.step_id] = draft
    update: DeepSearchUpdate = {
        "drafts": drafts,
        "pending": [],
        "usage": usage,
        "trace": ["answer_subqueries"],
    }
    if answers:
        update["step_answers"] = answers
    if lines:
        update["graph_context"] = lines
    if errors:
        update["diagnostics"] = {"errors": errors}
    return update


def draft_logic(state: DeepSearchState, runtime: Runtime[Context]) -> DeepSearchUpdate | Abstention:
    """Logic drafting (§3.1.2, eq. 3): the reasoning chain from the sub-queries' answers to the
    question's answer, with its gaps."""
    ctx = runtime.context
    # the turn budget bounds the search rounds; drafting and verifying the chain stay allowed
    exhausted = budget_exhausted(state.get("usage"), 0, ctx)
    if exhausted:
        return abstain("draft_logic", exhausted)
    question = " ".join(state["question"].split())
    try:
        step = get_roles(ctx).drafter.draft(
            question, state.get("plan", []), list(state.get("drafts", []))
        )
    except LLMError as exc:
        return abstain("draft_logic", f"drafter failed: {exc}", usage=error_usage(exc))
    return {"logic_draft": step.value, "usage": step.usage, "trace": ["draft_logic"]}


def verify_evidence(state: DeepSearchState, runtime: Runtime[Context]) -> DeepSearchUpdate:
    """Evidence verification (§3.1.2, eq. 4): accept the draft's answer, or reject it with what
    is missing."""
    ctx = runtime.context
    logic = state.get("logic_draft") or LogicDraft()
    drafts = list(state.get("drafts", []))
    question = " ".join(state["question"].split())
    exhausted = budget_exhausted(state.get("usage"), 0, ctx)
    if exhausted:
        reason = f"{exhausted} before the draft was verified"
        return {**abstain("verify_evidence", reason), "verification": None}
    try:
        step = get_roles(ctx).evidence_verifier.verify(question, drafts, logic)
    except LLMError as exc:
        failed = abstain("verify_evidence", f"verifier failed: {exc}", usage=error_usage(exc))
        return {**failed, "verification": None}
    verdict = step.value
    update: DeepSearchUpdate = {
        "verification": verdict,
        "usage": step.usage,
        "trace": ["verify_evidence"],
        "history": [{"role": "verifier", "answer": logic.answer, **verdict.model_dump()}],
    }
    if verdict.passed:
        return update | {
            "next_action": "answer",
            "answer": logic.answer,
            "evidence": Overwrite(evidence_from_drafts(drafts, logic.evidence)),
        }
    return update | {
        "next_action": "abstain",
        "abstain_reason": f"evidence verification rejected the draft: {verdict.reason}",
        "diagnostics": {"failures": ["reject"]},
    }


def expand_query(
    state: DeepSearchState, runtime: Runtime[Context]
) -> DeepSearchUpdate | Abstention:
    """Query expansion (§3.1.2, eq. 5): new sub-queries aimed at the missing evidence; no new
    query ends the search (abstaining)."""
    ctx = runtime.context
    verification = state.get("verification")
    logic = state.get("logic_draft") or LogicDraft()
    retries = state.get("retries", 0) + 1
    question = " ".join(state["question"].split())
    plan = list(state.get("plan", []))
    try:
        step = get_roles(ctx).expander.expand(
            question,
            plan,
            list(state.get("drafts", [])),
            logic,
            verification,  # type: ignore[arg-type]
            list(state.get("query_history", [])),
        )
    except LLMError as exc:
        return abstain("expand_query", f"expander failed: {exc}", usage=error_usage(exc))
    new = step.value
    update: DeepSearchUpdate = {
        "usage": step.usage,
        "trace": ["expand_query"],
        "retries": retries,
        "diagnostics": {"retries": retries},
        "history": [{"role": "expander", "queries": [s.question for s in new]}],
    }
    if not new:
        reason = state.get("abstain_reason", "evidence verification rejected the draft")
        return update | {"next_action": "abstain", "abstain_reason": f"{reason}; no new query"}
    known = {s.id for s in plan}
    added = [s for s in new if s.id not in known]
    return update | {
        "pending": [LibrarianTask(question=s.question, step_id=s.id) for s in new],
        "plan": [*plan, *added],
        "next_action": "search",
    }


def build_deep_search() -> StateGraph[DeepSearchState, Context, InputState, OutputState]:
    builder = StateGraph(
        DeepSearchState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(decompose_query)
    builder.add_node(ground_queries)
    # the channels take a `Send` payload (one grounded sub-query), not the graph state
    add_channel: Any = builder.add_node
    add_channel(semantic_search, input_schema=ChannelTask)
    add_channel(relational_search, input_schema=ChannelTask)
    for node in (refine_context, answer_subqueries, draft_logic, verify_evidence, expand_query):
        builder.add_node(node)
    add_finalize_answer(builder)
    builder.add_edge(START, "decompose_query")
    builder.add_conditional_edges(
        "decompose_query",
        route_unless_failed("ground_queries"),
        ["ground_queries", "finalize_answer"],
    )
    builder.add_conditional_edges(
        "ground_queries",
        route_channels,
        ["semantic_search", "relational_search", "draft_logic", "finalize_answer"],
    )
    builder.add_edge("semantic_search", "refine_context")
    builder.add_edge("relational_search", "refine_context")
    builder.add_edge("refine_context", "answer_subqueries")
    builder.add_conditional_edges(
        "answer_subqueries", route_subqueries, ["ground_queries", "draft_logic", "finalize_answer"]
    )
    builder.add_conditional_edges(
        "draft_logic",
        route_unless_failed("verify_evidence"),
        ["verify_evidence", "finalize_answer"],
    )
    builder.add_conditional_edges(
        "verify_evidence", route_evidence, ["expand_query", "finalize_answer"]
    )
    builder.add_conditional_edges(
        "expand_query", route_unless_failed("ground_queries"), ["ground_queries", "finalize_answer"]
    )
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_deep_search().compile(name="deep_search")
