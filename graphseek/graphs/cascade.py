"""The escalation cascade of readers (`Context.readers`): a subgraph that drafts one
(sub-)question from the evidence a run found, cheapest reader first.

    START → read → (the answer stands, or no reader is left) → END
                 ↘ (the reader passed) → read …

- `read`: the next reader (`graphseek.agents.readers.Reader`: the offline reader, or a model
  reading the best sentences) drafts from the same passages and relations; `judge` decides
  whether its answer stands (an answer, grounded in the passages read, at or above the reader's
  calibrated point) or why it passes the question on. Its `Reading` (reader, outcome, reason,
  usage) is recorded.
- `route_reading`: the conditional edge of the escalation: back to `read` for the next reader
  when the last one passed, else the end. The last reader's pass is an abstention: its draft
  is kept as a guess (an abstention shows its sentence) with confidence 0.

A settled draft's confidence is mapped from its reader's scale onto the run's (its point onto
the run's draft threshold, `rescale_confidence`), so the topology decides on it as on any draft.
Nodes that draft call `cascade_draft`, which runs this graph when the run names readers; it is
compiled once and appears in Studio as a subgraph of the node that drafts.
"""

from __future__ import annotations

import operator
from typing import Annotated, Literal, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graphseek.agents.readers import judge
from graphseek.agents.registry import get_roles, thresholds
from graphseek.agents.structured_role import rescale_confidence
from graphseek.agents.text import as_hits
from graphseek.errors import LLMError
from graphseek.knowledge.passages import Hit
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem, Reading, Usage
from graphseek.state.reducers import add_usage


class CascadeState(TypedDict):
    """One question read by the cascade: its evidence, the reader at turn, the readings so far
    and the draft that stands (or the last reader's guess)."""

    question: str
    step_id: NotRequired[int | None]
    passages: list[EvidenceItem]
    relations: NotRequired[list[str]]
    turn: NotRequired[int]  # the index of the next reader
    draft: NotRequired[Draft]
    settled: NotRequired[bool]
    readings: NotRequired[Annotated[list[Reading], operator.add]]
    usage: NotRequired[Annotated[Usage, add_usage]]


class CascadeUpdate(TypedDict, total=False):
    """What `read` writes: the next reader's turn, the draft, whether it stands, its reading."""

    turn: int
    draft: Draft
    settled: bool
    readings: list[Reading]
    usage: Usage


def read(state: CascadeState, runtime: Runtime[Context]) -> CascadeUpdate:
    """The next reader drafts the question; `judge` says whether its answer stands."""
    ctx = runtime.context
    readers = get_roles(ctx).readers
    turn = state.get("turn", 0)
    reader = readers[turn]
    question = state["question"]
    hits = as_hits(state.get("passages", []))
    try:
        step = reader.policy.draft(question, hits, list(state.get("relations", [])))
        draft, usage = step.value, step.usage
    except LLMError as exc:
        draft, usage = Draft(question=question, answer="", error=str(exc)), error_usage(exc)
    draft = draft.model_copy(update={"question": question, "step_id": state.get("step_id")})
    point, run_threshold = thresholds(ctx)
    earlier = [r.answer for r in state.get("readings", [])]
    draft, reason = judge(reader, question, draft, hits, point, earlier)
    last = turn + 1 >= len(readers)
    outcome: Literal["answered", "passed", "abstained"] = (
        "answered" if not reason else "abstained" if last else "passed"
    )
    reading = Reading(
        reader=reader.name,
        outcome=outcome,
        answer=draft.answer,
        confidence=draft.confidence,
        threshold=reader.point,
        reason=reason,
        usage=usage,
    )
    if reason:  # passed: below every point, whatever the reader's own confidence
        shown = draft.model_copy(update={"confidence": 0.0, "candidate_confidences": []})
    else:
        shown = draft.model_copy(
            update={
                "confidence": rescale_confidence(draft.confidence, reader.point, run_threshold),
                "candidate_confidences": [
                    rescale_confidence(c, reader.point, run_threshold)
                    for c in draft.candidate_confidences
                ],
            }
        )
    return {
        "turn": turn + 1,
        "draft": shown,
        "settled": not reason,
        "readings": [reading],
        "usage": usage,
    }


def route_reading(state: CascadeState, runtime: Runtime[Context]) -> Literal["read", "__end__"]:
    """Escalate: the next reader reads when the last one passed and one is left."""
    if state.get("settled") or state.get("turn", 0) >= len(get_roles(runtime.context).readers):
        return "__end__"
    return "read"


def build_cascade() -> StateGraph[CascadeState, Context, CascadeState, CascadeState]:
    builder = StateGraph(CascadeState, context_schema=Context)
    builder.add_node(read)
    builder.add_edge(START, "read")
    builder.add_conditional_edges("read", route_reading, ["read", END])
    return builder


cascade = build_cascade().compile(name="cascade")


def cascade_draft(
    question: str,
    hits: list[Hit],
    runtime: Runtime[Context],
    step_id: int | None = None,
    relations: list[str] | None = None,
) -> tuple[Draft, Usage]:
    """The draft of `question` from `hits` by the run's cascade of readers, its `readings` on
    it, and the cost of every reader that read it."""
    from graphseek.agents.reading.evidence import to_evidence

    out = cascade.invoke(
        {
            "question": question,
            "step_id": step_id,
            "passages": [to_evidence(h) for h in hits],
            "relations": list(relations or []),
        },
        context=runtime.context,
    )
    draft: Draft = out["draft"]
    draft = draft.model_copy(update={"readings": list(out.get("readings", []))})
    return draft, out.get("usage") or Usage()
