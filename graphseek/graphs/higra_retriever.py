"""`higra_retriever`: HiGraRetriever + Librarian, single step (HiGraAgent §4, §8).

retrieve_context (HiGraRetriever: top relations and the fused passages) → generate_answer (the
Librarian drafts from the passages with the relations as extra context; low confidence abstains)
→ finalize_answer.

Also here: `graph_draft`, the Librarian's draft from passages and relations, which `adaptive`,
`deep_search` and the Librarian subgraph (`graphseek.graphs.librarian_agent`) use too.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.errors import LLMError
from graphseek.graphs.common import (
    abstain,
    add_finalize_answer,
    answer_or_abstain,
    error_usage,
    to_hits,
)
from graphseek.graphs.entry import check_entry
from graphseek.graphs.graph_context import higra_context
from graphseek.graphs.routing import budget_exhausted
from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context
from graphseek.state.models import Draft, Usage
from graphseek.state.schema import (
    Abstention,
    DraftOutcome,
    HigraRetrieverState,
    HigraRetrieverUpdate,
    InputState,
    OutputState,
    RunUpdate,
)


def graph_draft(
    question: str,
    hits: Sequence[Hit],
    relations: Sequence[str],
    runtime: Runtime[Context],
    step_id: int | None = None,
) -> tuple[Draft, Usage, str | None]:
    """The Librarian's draft from passages and graph relations; a malformed reply after retries
    becomes an empty draft and an error message. A run with readers drafts through their
    escalation cascade (`graphseek.graphs.cascade`)."""
    if get_roles(runtime.context).readers:
        from graphseek.graphs.cascade import cascade_draft

        draft, usage = cascade_draft(question, list(hits), runtime, step_id, list(relations))
        return draft, usage, None
    try:
        step = get_roles(runtime.context).graph_librarian.draft(question, hits, relations)
    except LLMError as exc:
        return Draft(question=question, answer="", step_id=step_id), error_usage(exc), str(exc)
    draft = step.value.model_copy(update={"step_id": step_id, "question": question})
    return draft, step.usage, None


def notes(*texts: str) -> RunUpdate:
    """A diagnostics update recording non-empty notes."""
    kept = [t for t in texts if t]
    return {"diagnostics": {"notes": kept}} if kept else {}


def retrieve_context(state: HigraRetrieverState, runtime: Runtime[Context]) -> HigraRetrieverUpdate:
    """HiGraRetriever: seed entities, subgraph, PPR, rank fusion; the top relations and the
    combined passages (HiGraAgent §4.1-4.6)."""
    check_entry(state, runtime)
    found = higra_context(runtime.context, state["question"])
    return {
        "passages": [to_evidence(h) for h in found.hits],
        "graph_context": Overwrite(found.lines),
        "retrieved_ids": [h.passage.id for h in found.hits],
        "usage": found.usage,
        "trace": ["retrieve_context"],
        **notes(found.note),
    }


def generate_answer(
    state: HigraRetrieverState, runtime: Runtime[Context]
) -> DraftOutcome | Abstention:
    """The Librarian drafts the answer from the passages and relations; low confidence abstains."""
    ctx = runtime.context
    exhausted = budget_exhausted(state.get("usage"), 0, ctx)
    if exhausted:
        return abstain("generate_answer", exhausted)
    hits = to_hits(state.get("passages", []))
    draft, usage, error = graph_draft(
        state["question"], hits, state.get("graph_context", []), runtime
    )
    return answer_or_abstain(draft, usage, error, get_roles(ctx).threshold)


def build_higra_retriever() -> StateGraph[HigraRetrieverState, Context, InputState, OutputState]:
    builder = StateGraph(
        HigraRetrieverState,
        input_schema=InputState,
        output_schema=OutputState,
        context_schema=Context,
    )
    builder.add_node(retrieve_context)
    builder.add_node(generate_answer)
    add_finalize_answer(builder)
    builder.add_edge(START, "retrieve_context")
    builder.add_edge("retrieve_context", "generate_answer")
    builder.add_edge("generate_answer", "finalize_answer")
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_higra_retriever().compile(name="higra_retriever")
