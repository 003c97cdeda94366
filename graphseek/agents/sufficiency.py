"""Sufficiency role: after each retrieval stage, is the evidence enough to stop? (A2RAG §III-C).

It drives escalation only; it does not certify the answer (that is Triple-Check's job).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from graphseek.agents.formatting import PASSAGE_CHARS, with_evidence
from graphseek.agents.prompts.sufficiency import SUFFICIENCY_SYSTEM, SUFFICIENCY_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_lines
from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Reasoning, Sentences


class SufficiencyVerdict(BaseModel):
    reason: Reasoning = ""
    missing: Sentences = Field(default_factory=list)
    sufficient: bool


class SufficiencyChecker(Protocol):
    def check(
        self, question: str, hits: Sequence[Hit], graph: Sequence[str], stage: str
    ) -> Step[SufficiencyVerdict]: ...


class LLMSufficiencyChecker(StructuredRole):
    def check(
        self, question: str, hits: Sequence[Hit], graph: Sequence[str], stage: str
    ) -> Step[SufficiencyVerdict]:
        user = with_evidence(
            self.model, SUFFICIENCY_SYSTEM, SUFFICIENCY_USER, hits, PASSAGE_CHARS, "sentences",
            question=question, stage=stage, graph=render_lines(graph),
        )  # fmt: skip
        out, usage = self.ask(SufficiencyVerdict, SUFFICIENCY_SYSTEM, user)
        return Step(out, usage)
