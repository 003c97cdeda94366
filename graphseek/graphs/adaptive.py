"""`adaptive`: A2RAG's adaptive control loop around its agentic retriever (A2RAG §III).

gate_coverage (summarized-KB gating: abstain when the corpus does not cover the question)
→ retrieve_local → [insufficient] retrieve_bridge → [insufficient] retrieve_ppr (the progressive
retriever's stages; a sufficiency check after each stage decides escalation, a conditional edge)
→ generate_answer → triple_check (relevance, grounding, adequacy)
→ [failed, retries left] rewrite_query (failure-aware) → retrieve_local …
→ finalize_answer: the verified answer, or an abstention.

Budgets: `max_retries` bounds the rewrites; `max_llm_calls`, `max_tokens` and `max_turns`
(answer attempts) are checked before every model call. Diagnostics record the coverage score,
the stage where retrieval ended (`stage_reached`), every stage visited, the Triple-Check
failures in order and the retries.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graphseek.agents.coverage import CoverageVerdict
from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.agents.sufficiency import SufficiencyVerdict
from graphseek.agents.text import normalize
from graphseek.errors import LLMError
from graphseek.graphs.common import (
    abstain,
    add_finalize_answer,
    error_usage,
    reader_agrees,
    to_hits,
)
from graphseek.graphs.entry import check_entry
from graphseek.graphs.graph_context import progressive_stage
from graphseek.graphs.higra_retriever import graph_draft
from graphseek.graphs.routing import (
    budget_exhausted,
    route_escalation,
    route_unless_failed,
    route_verification,
)
from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem
from graphseek.state.schema import (
    Abstention,
    AdaptiveState,
    AdaptiveUpdate,
    InputState,
    OutputState,
    Stage,
)
from graphseek.state.verdicts import Verification
from graphseek.tools.retrievers import resolve_index, retrieve


def gate_coverage(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate | Abstention:
    """Summarized-KB gating (§III-B1): the coverage role reads the summaries (first sentences)
    of the nearest documents and their similarity; out-of-scope questions abstain here."""
    check_entry(state, runtime)
    ctx = runtime.context
    question = " ".join(state["question"].split())
    nearest = retrieve(resolve_index(ctx), question, ctx.top_k, "dense")
    start: AdaptiveUpdate = {
        "query": question,
        "retries": 0,
        "turn": 0,
        "query_history": [question],
    }
    try:
        step = get_roles(ctx).coverage.assess(question, nearest)
    except LLMError as exc:
        return abstain("gate_coverage", f"coverage gate failed: {exc}", usage=error_usage(exc))
    verdict = step.value
    if not verdict.in_scope and "coverage" not in get_roles(ctx).offline:
        verdict = _second_gate(question, nearest, verdict, ctx)
    update: AdaptiveUpdate = {
        **start,
        "usage": step.usage,
        "trace": ["gate_coverage"],
        "diagnostics": {"coverage": verdict.coverage},
        "history": [{"role": "coverage", **verdict.model_dump()}],
    }
    if not verdict.in_scope:
        update |= {
            "next_action": "abstain",
            "abstain_reason": f"out of scope (coverage {verdict.coverage:.2f}): {verdict.reason}",
        }
    return update


def _second_gate(
    question: str, nearest: list[Hit], verdict: CoverageVerdict, ctx: Context
) -> CoverageVerdict:
    """A model's out-of-scope verdict, read a second time by the offline gate (similarity, the
    question's names in the nearest documents, a span of the expected answer type): the question
    is searched when the offline gate finds it in scope, the model's verdict kept in the reason.
    Sending a question away takes both readings. A weak model judged the .xz question out of
    scope (coverage 0.05, no reason) with the XZ Utils documents nearest. A missing reason is
    said to be missing."""
    why = verdict.reason.strip() or "the model gave no reason"
    gate = get_roles(ctx).offline_gate()
    if gate is not None:
        second = gate.assess(question, nearest).value
        if second.in_scope:
            return CoverageVerdict(
                reason=f"the model judged it out of scope ({why}), but the offline gate reads "
                f"it in scope: {second.reason}",
                coverage=verdict.coverage,
                in_scope=True,
            )
    return verdict.model_copy(update={"reason": why})


def _retrieve_stage(
    stage: Stage, state: AdaptiveState, runtime: Runtime[Context]
) -> AdaptiveUpdate:
    """One stage of the progressive retriever, then the stage-wise sufficiency check (skipped
    after the last stage, which always ends retrieval)."""
    ctx = runtime.context
    node = f"retrieve_{stage}"
    query = state.get("query") or state["question"]
    first = stage == "local"
    found = progressive_stage(
        ctx,
        stage,
        query,
        previous=None if first else state.get("retrieval"),
        hits=[] if first else to_hits(state.get("passages", [])),
    )
    update: AdaptiveUpdate = {
        "retrieval": found.state,
        "passages": [to_evidence(h) for h in found.hits],
        "graph_context": Overwrite(found.lines) if first else found.lines,
        "retrieved_ids": [h.passage.id for h in found.hits],
        "sufficient": False,
        "trace": [node],
        "diagnostics": {
            "stage_reached": stage,
            "stages_visited": [stage],
            **({"notes": [f"{stage}: {found.note}"]} if found.note else {}),
        },
    }
    if stage == "ppr":
        return update
    exhausted = budget_exhausted(state.get("usage"), state.get("turn", 0), ctx)
    if exhausted:
        return update | {"next_action": "abstain", "abstain_reason": exhausted}
    graph = [*(state.get("graph_context", []) if not first else []), *found.lines]
    try:
        step = get_roles(ctx).sufficiency.check(query, found.hits, graph, stage)
        verdict, usage = step.value, step.usage
    except LLMError as exc:  # an unusable check escalates, as an insufficient one would
        verdict = SufficiencyVerdict(reason=f"sufficiency check failed: {exc}", sufficient=False)
        usage = error_usage(exc)
        update["diagnostics"]["errors"] = [f"sufficiency: {exc}"]
    update |= {
        "sufficient": verdict.sufficient,
        "usage": usage,
        "history": [
            {"role": "sufficiency", "stage": stage, "query": query, **verdict.model_dump()}
        ],
    }
    return update


def retrieve_local(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate:
    """Stage 1 (§III-C1): the 1-hop neighbourhood of the query's entity seeds."""
    return _retrieve_stage("local", state, runtime)


def retrieve_bridge(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate:
    """Stage 2 (§III-C2): bridge entities near several seeds, and short paths to them."""
    return _retrieve_stage("bridge", state, runtime)


def retrieve_ppr(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate:
    """Stage 3 (§III-C3): degree-normalised PPR, top nodes mapped back to their passages."""
    return _retrieve_stage("ppr", state, runtime)


def generate_answer(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate | Abstention:
    """Answer the current query from the evidence passages, relations as extra context."""
    ctx = runtime.context
    turn = state.get("turn", 0)
    exhausted = budget_exhausted(state.get("usage"), turn, ctx)
    if exhausted:
        return abstain("generate_answer", exhausted)
    query = state.get("query") or state["question"]
    hits = to_hits(state.get("passages", []))
    draft, usage, error = graph_draft(query, hits, state.get("graph_context", []), runtime)
    update: AdaptiveUpdate = {
        "drafts": [draft],
        "usage": usage,
        "turn": turn + 1,
        "trace": ["generate_answer"],
        "answer": draft.answer,
        "evidence": Overwrite(draft.evidence),
    }
    if error:
        update |= {"next_action": "abstain", "abstain_reason": f"librarian failed: {error}"}
    return update


def triple_check(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate:
    """Triple-Check (§III-B2): relevance, grounding and adequacy of the answer against its
    evidence; the first failed check is the failure type."""
    ctx = runtime.context
    # the turn budget bounds answer attempts (generate_answer); the answer in hand is verified
    exhausted = budget_exhausted(state.get("usage"), 0, ctx)
    if exhausted:
        reason = f"{exhausted} before the answer was verified"
        return {**abstain("triple_check", reason), "verification": None}
    query = state.get("query") or state["question"]
    answer = state.get("answer", "")
    evidence = list(state.get("evidence", [])) or list(state.get("passages", []))
    try:
        step = get_roles(ctx).triple_checker.check(query, answer, evidence)
    except LLMError as exc:
        reason = f"Triple-Check failed: {exc}"
        return {**abstain("triple_check", reason, usage=error_usage(exc)), "verification": None}
    verdict = step.value
    if not verdict.passed and "triple_checker" not in get_roles(ctx).offline:
        verdict = _second_reading(query, answer, evidence, verdict, ctx)
    update: AdaptiveUpdate = {
        "verification": verdict,
        "usage": step.usage,
        "trace": ["triple_check"],
        "history": [
            {"role": "triple_check", "query": query, "answer": answer, **verdict.model_dump()}
        ],  # fmt: skip
    }
    drafts = state.get("drafts", [])
    threshold = get_roles(ctx).threshold
    confidence = drafts[-1].confidence if drafts else 0.0
    if verdict.passed and confidence < threshold:
        # the checks found the answer in its evidence, but the reader's own support is too weak
        # to tell the user: an adequacy failure, which the rewrite loop may still overcome
        return update | {
            "next_action": "abstain",
            "abstain_reason": f"the answer {answer!r} is too weakly supported (confidence "
            f"{confidence:.2f} < {threshold:.2f})",
            "diagnostics": {"failures": ["adequacy"]},
        }
    if verdict.passed:
        return update | {"next_action": "answer"}
    return update | {
        "next_action": "abstain",
        "abstain_reason": f"the answer {answer!r} failed Triple-Check on {verdict.failure}: "
        f"{verdict.reason}",
        "diagnostics": {"failures": [verdict.failure or "unknown"]},
    }


def _second_reading(
    query: str, answer: str, evidence: list[EvidenceItem], verdict: Verification, ctx: Context
) -> Verification:
    """A model's failed Triple-Check, unless it failed the answer on relevance or grounding and
    the offline reader, reading the same evidence, gives the same answer at its operating point
    (`reader_agrees`): then the answer passes, the model's verdict kept in the reason. A weak
    model failed "LZMA2" on relevance, with no reason, for the .xz question its passage answers.
    A missing reason is said to be missing."""
    why = verdict.reason.strip() or "the model gave no reason"
    if verdict.failure in ("relevance", "grounding"):
        agreed = reader_agrees(query, answer, evidence, ctx)
        if agreed is not None:
            return Verification(
                passed=True,
                reason=f"the model failed it on {verdict.failure} ({why}), but the offline "
                f"reader reads the same answer from its evidence (confidence {agreed:.2f})",
            )
    return verdict.model_copy(update={"reason": why})


def rewrite_query(state: AdaptiveState, runtime: Runtime[Context]) -> AdaptiveUpdate | Abstention:
    """Failure-aware rewrite (§III-B3): rewrite the query by the failed check, then retrieve
    again; a rewrite that repeats a tried query ends the loop (abstaining)."""
    ctx = runtime.context
    verification = state.get("verification")
    failure = verification.failure if verification is not None else "adequacy"
    query = state.get("query") or state["question"]
    previous = list(state.get("query_history", []))
    names = [part for line in state.get("graph_context", []) for part in line.split(" | ")[::2]]
    retries = state.get("retries", 0) + 1
    try:
        step = get_roles(ctx).rewriter.rewrite(
            state["question"],
            query,
            failure or "adequacy",
            state.get("answer", ""),
            list(state.get("passages", [])),
            previous,
            names,
        )
    except LLMError as exc:
        return abstain("rewrite_query", f"rewriter failed: {exc}", usage=error_usage(exc))
    new = " ".join(step.value.split())
    update: AdaptiveUpdate = {
        "usage": step.usage,
        "trace": ["rewrite_query"],
        "retries": retries,
        "diagnostics": {"retries": retries},
        "history": [{"role": "rewriter", "failure": failure, "from": query, "to": new}],
    }
    if not new or normalize(new) in {normalize(q) for q in [*previous, query]}:
        reason = state.get("abstain_reason", "the answer failed Triple-Check")
        return update | {
            "next_action": "abstain",
            "abstain_reason": f"{reason}; no new rewrite of the query",
        }
    return update | {"query": new, "query_history": [new], "next_action": "retrieve"}


def build_adaptive() -> StateGraph[AdaptiveState, Context, InputState, OutputState]:
    builder = StateGraph(
        AdaptiveState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    for node in (
        gate_coverage,
        retrieve_local,
        retrieve_bridge,
        retrieve_ppr,
        generate_answer,
        triple_check,
        rewrite_query,
    ):
        builder.add_node(node)
    add_finalize_answer(builder)
    builder.add_edge(START, "gate_coverage")
    builder.add_conditional_edges(
        "gate_coverage",
        route_unless_failed("retrieve_local"),
        ["retrieve_local", "finalize_answer"],
    )
    builder.add_conditional_edges(
        "retrieve_local",
        route_escalation,
        ["retrieve_bridge", "generate_answer", "finalize_answer"],
    )
    builder.add_conditional_edges(
        "retrieve_bridge", route_escalation, ["retrieve_ppr", "generate_answer", "finalize_answer"]
    )
    builder.add_conditional_edges(
        "retrieve_ppr", route_escalation, ["generate_answer", "finalize_answer"]
    )
    builder.add_conditional_edges(
        "generate_answer", route_unless_failed("triple_check"), ["triple_check", "finalize_answer"]
    )
    builder.add_conditional_edges(
        "triple_check", route_verification, ["rewrite_query", "finalize_answer"]
    )
    builder.add_conditional_edges(
        "rewrite_query",
        route_unless_failed("retrieve_local"),
        ["retrieve_local", "finalize_answer"],
    )
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_adaptive().compile(name="adaptive")
