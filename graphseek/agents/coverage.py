"""Coverage-gate role: is the question within the corpus at all? (A2RAG §III-B1).

The gate reads short summaries of the documents nearest to the question (their first sentence)
with their similarity scores, and abstains early for out-of-scope questions.

A model's out-of-scope verdict is read a second time by the offline gate before the run abstains
(`graphseek.graphs.adaptive.gate_coverage`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from graphseek.agents.prompts.coverage import COVERAGE_SYSTEM, COVERAGE_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_summaries
from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Reasoning


class CoverageVerdict(BaseModel):
    reason: Reasoning = Field(default="", description="Why, in one or two sentences.")
    coverage: float = Field(default=0.0, ge=0.0, le=1.0)
    in_scope: bool


class CoverageGate(Protocol):
    def assess(self, question: str, nearest: Sequence[Hit]) -> Step[CoverageVerdict]: ...


class LLMCoverageGate(StructuredRole):
    def assess(self, question: str, nearest: Sequence[Hit]) -> Step[CoverageVerdict]:
        user = COVERAGE_USER.format(question=question, summaries=render_summaries(nearest))
        out, usage = self.ask(CoverageVerdict, COVERAGE_SYSTEM, user)
        return Step(out, usage)
