"""`naive`: one retrieval, one answer — the baseline every report is read against."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.graphs.common import add_finalize_answer, answer_or_abstain, draft_for, to_hits
from graphseek.graphs.entry import check_entry
from graphseek.state.context import Context
from graphseek.state.schema import DraftOutcome, InputState, NaiveState, NaiveUpdate, OutputState
from graphseek.tools.retrievers import resolve_index, retrieve


def retrieve_passages(state: NaiveState, runtime: Runtime[Context]) -> NaiveUpdate:
    """Retrieve the top-k passages for the question with the context's retriever."""
    check_entry(state, runtime)
    ctx = runtime.context
    hits = retrieve(resolve_index(ctx), state["question"], ctx.top_k, ctx.retriever)
    return {
        "passages": [to_evidence(h) for h in hits],
        "retrieved_ids": [h.passage.id for h in hits],
        "trace": ["retrieve_passages"],
    }


def generate_answer(state: NaiveState, runtime: Runtime[Context]) -> DraftOutcome:
    """The Librarian drafts the answer from the retrieved passages; low confidence abstains."""
    ctx = runtime.context
    draft, usage, error = draft_for(state["question"], to_hits(state.get("passages", [])), runtime)
    return answer_or_abstain(draft, usage, error, get_roles(ctx).threshold)


def build_naive() -> StateGraph[NaiveState, Context, InputState, OutputState]:
    builder = StateGraph(
        NaiveState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(retrieve_passages)
    builder.add_node(generate_answer)
    add_finalize_answer(builder)
    builder.add_edge(START, "retrieve_passages")
    builder.add_edge("retrieve_passages", "generate_answer")
    builder.add_edge("generate_answer", "finalize_answer")
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_naive().compile(name="naive")
