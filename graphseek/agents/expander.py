"""Expander role: GraphSearch's query expansion (§3.1.2, eq. 5).

After the verifier rejects a draft, the expander writes new sub-queries that target the missing
evidence. A new query either retries a plan step (same step id: its answer replaces a weak one
when better supported) or adds a step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, Field

from graphseek.agents.prompts.expander import EXPANDER_SYSTEM, EXPANDER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_steps
from graphseek.agents.text import normalize
from graphseek.agents.verifier import render_logic
from graphseek.state.bounds import Reasoning, Sentences
from graphseek.state.models import Draft, SubQuestion
from graphseek.state.verdicts import LogicDraft, Verification


class ExpansionReply(BaseModel):
    reason: Reasoning = ""
    queries: Sentences = Field(default_factory=list)


class Expander(Protocol):
    def expand(
        self,
        question: str,
        plan: Sequence[SubQuestion],
        drafts: Sequence[Draft],
        logic: LogicDraft,
        verification: Verification,
        asked: Sequence[str],
    ) -> Step[list[SubQuestion]]:
        """New queries (never one of `asked`), each tagged with the plan step it serves."""
        ...


class LLMExpander(StructuredRole):
    def expand(
        self,
        question: str,
        plan: Sequence[SubQuestion],
        drafts: Sequence[Draft],
        logic: LogicDraft,
        verification: Verification,
        asked: Sequence[str],
    ) -> Step[list[SubQuestion]]:
        missing = verification.missing or [verification.reason or "(unspecified)"]
        user = EXPANDER_USER.format(
            question=question,
            steps=render_steps(drafts),
            draft=render_logic(logic),
            missing="\n".join(f"- {m}" for m in missing),
        )
        out, usage = self.ask(ExpansionReply, EXPANDER_SYSTEM, user)
        seen = {normalize(q) for q in asked}
        next_id = max((s.id for s in plan), default=0) + 1
        steps: list[SubQuestion] = []
        for text in out.queries:
            text = " ".join(text.replace("#", "").split())
            if not text or normalize(text) in seen:
                continue
            seen.add(normalize(text))
            steps.append(SubQuestion(id=next_id, question=text))
            next_id += 1
        return Step(steps, usage)
