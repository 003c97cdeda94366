"""Coverage-gate role: is the question within the corpus at all? (A2RAG §III-B1).

The gate reads short summaries of the documents nearest to the question (their first sentence)
with their similarity scores, and abstains early for out-of-scope questions.

A rule holds over the model's verdict: a question whose proper names all occur in the nearest
documents is in scope (the prompt's own first rule), whatever the model says. A small model
judged "What is currently the primary filter of the .xz format used by XZ Utils?" out of scope
(coverage 0.05, no reason) with the XZ Utils documents in front of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from graphseek.agents.prompts.coverage import COVERAGE_SYSTEM, COVERAGE_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_summaries
from graphseek.agents.text import name_coverage, question_names
from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Reasoning


class CoverageVerdict(BaseModel):
    reason: Reasoning = Field(default="", description="Why, in one or two sentences.")
    coverage: float = Field(default=0.0, ge=0.0, le=1.0)
    in_scope: bool


class CoverageGate(Protocol):
    def assess(self, question: str, nearest: Sequence[Hit]) -> Step[CoverageVerdict]: ...


def overrule_out_of_scope(
    question: str, nearest: Sequence[Hit], verdict: CoverageVerdict
) -> CoverageVerdict:
    """The verdict, in scope when it says out of scope but the nearest documents (titles and
    text) hold every proper name of the question; a missing reason is said to be missing."""
    reason = verdict.reason.strip() or "the model gave no reason"
    names = question_names(question)
    texts = [f"{h.passage.title}\n{h.passage.text}" for h in nearest]
    if verdict.in_scope or not names or name_coverage(names, texts) < 1.0:
        return verdict.model_copy(update={"reason": reason})
    found = ", ".join(names)
    return CoverageVerdict(
        reason=f"the model judged it out of scope ({reason}), but the nearest documents "
        f"mention {found}: searched",
        coverage=verdict.coverage,
        in_scope=True,
    )


class LLMCoverageGate(StructuredRole):
    def assess(self, question: str, nearest: Sequence[Hit]) -> Step[CoverageVerdict]:
        user = COVERAGE_USER.format(question=question, summaries=render_summaries(nearest))
        out, usage = self.ask(CoverageVerdict, COVERAGE_SYSTEM, user)
        return Step(overrule_out_of_scope(question, nearest, out), usage)
