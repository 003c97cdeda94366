"""Context-filter role: keep only the passage excerpts that matter given What is Known (KAIR
§3.1 Contextual Filtering, eq. 3).

The policy selects; the node drops every selected segment that is not an exact substring of its
passage (`graphseek.agents.kair.enforce_exact_match`), whichever policy selected it, and never
leaves the context empty: when nothing is kept, the best-ranked passages stay whole
(`keep_best_ranked`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field

from graphseek.agents.kair import format_context, format_gaps, format_known
from graphseek.agents.prompts.context_filter import CONTEXT_FILTER_SYSTEM, CONTEXT_FILTER_USER
from graphseek.agents.roles import KnowledgeView, Segment, Step
from graphseek.agents.structured_role import PassageRole
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


class LLMContextFilter(PassageRole):
    max_chars = 8000

    def refine(
        self, view: KnowledgeView, candidates: Sequence[EvidenceItem]
    ) -> Step[list[Segment]]:
        user = CONTEXT_FILTER_USER.format(
            question=view.question,
            known=format_known(view.known),
            required=format_gaps(view.required, view.answers),
            candidates=format_context(candidates, self.max_chars),
        )
        out, usage = self.ask(ContextSelection, CONTEXT_FILTER_SYSTEM, user)
        segments = [
            Segment(passage_id=s.passage_id.strip().strip("[]"), text=s.text, score=1.0)
            for s in out.segments
        ]
        return Step(segments, usage)
