"""Drafter role: GraphSearch's logic drafting (§3.1.2, eq. 3).

It links the grounded sub-queries and their intermediate answers into one reasoning chain,
derives the answer from it, and exposes the chain's gaps for the verifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from graphseek.agents.prompts.drafter import DRAFTER_SYSTEM, DRAFTER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_steps
from graphseek.state.bounds import Name, Names, Sentences
from graphseek.state.models import Draft, SubQuestion
from graphseek.state.verdicts import LogicDraft


class LogicReply(BaseModel):
    chain: Sentences = Field(default_factory=list)
    gaps: Sentences = Field(default_factory=list)
    answer: Name = ""
    evidence: Names = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class Drafter(Protocol):
    def draft(
        self, question: str, plan: Sequence[SubQuestion], drafts: Sequence[Draft]
    ) -> Step[LogicDraft]: ...


class LLMDrafter(StructuredRole):
    def draft(
        self, question: str, plan: Sequence[SubQuestion], drafts: Sequence[Draft]
    ) -> Step[LogicDraft]:
        user = DRAFTER_USER.format(question=question, steps=render_steps(drafts))
        out, usage = self.ask(LogicReply, DRAFTER_SYSTEM, user)
        known = {e.passage_id for d in drafts for e in d.evidence}
        return Step(
            LogicDraft(
                chain=out.chain,
                answer=out.answer.strip(),
                evidence=[p for p in out.evidence if p in known],
                gaps=out.gaps,
                confidence=out.confidence,
            ),
            usage,
        )
