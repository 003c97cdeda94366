"""Context-filter role: keep only the passage excerpts that matter given What is Known (KAIR
§3.1 Contextual Filtering, eq. 3).

The policy selects; the node drops every selected segment that is not an exact substring of its
passage (`graphseek.agents.kair.enforce_exact_match`), whichever policy selected it, and never
leaves the context empty: when nothing is kept, the best-ranked passages stay whole
(`keep_best_ranked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from graphseek.agents.kair import format_context, format_gaps, format_known
from graphseek.agents.prompts.context_filter import CONTEXT_FILTER_SYSTEM, CONTEXT_FILTER_USER
from graphseek.agents.roles import KnowledgeView, Segment, Step
from graphseek.llm import invoke_structured
from graphseek.state.bounds import OBJECT_ITEMS, Name, Reasoning, first_items
from graphseek.state.models import EvidenceItem


class SelectedSegment(BaseModel):
    passage_id: Name
    text: Reasoning = Field(description="Copied word for word from the passage.")


class ContextSelection(BaseModel):
    reasoning: Reasoning = ""
    segments: Annotated[
        list[SelectedSegment],
        BeforeValidator(first_items(OBJECT_ITEMS)),
        Field(max_length=OBJECT_ITEMS),
    ] = Field(default_factory=list)


#: how many passages stay whole when the filter would keep none
KEEP_WHEN_EMPTY = 3


def keep_best_ranked(
    kept: Sequence[Segment], ranked: Sequence[EvidenceItem], k: int = KEEP_WHEN_EMPTY
) -> list[Segment]:
    """`kept`, or when it is empty the `k` first passages of `ranked` (best first), whole."""
    if kept:
        return list(kept)
    out: list[Segment] = []
    for item in ranked:
        if item.text and all(s.passage_id != item.passage_id for s in out):
            out.append(
                Segment(passage_id=item.passage_id, text=item.text.strip(), score=item.score)
            )
        if len(out) >= k:
            break
    return out


class LLMContextFilter:
    def __init__(
        self,
        model: Any,
        max_retries: int = 2,
        max_chars: int = 8000,
        callbacks: Sequence[Any] = (),
    ) -> None:
        self.model = model
        self.callbacks = list(callbacks)
        self.max_retries = max_retries
        self.max_chars = max_chars

    def refine(
        self, view: KnowledgeView, candidates: Sequence[EvidenceItem]
    ) -> Step[list[Segment]]:
        messages = [
            ("system", CONTEXT_FILTER_SYSTEM),
            (
                "human",
                CONTEXT_FILTER_USER.format(
                    question=view.question,
                    known=format_known(view.known),
                    required=format_gaps(view.required, view.answers),
                    candidates=format_context(candidates, self.max_chars),
                ),
            ),
        ]
        out, usage = invoke_structured(
            self.model,
            ContextSelection,
            messages,
            max_retries=self.max_retries,
            callbacks=self.callbacks,
        )
        segments = [
            Segment(passage_id=s.passage_id.strip().strip("[]"), text=s.text, score=1.0)
            for s in out.segments
        ]
        return Step(segments, usage)
