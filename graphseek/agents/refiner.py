"""Refiner role: GraphSearch's context refinement (§3.1.1).

Filters what the two channels retrieved for one sub-query down to the passages and triples that
help answer it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, Field

from graphseek.agents.formatting import PASSAGE_CHARS, with_passages
from graphseek.agents.prompts.refiner import REFINER_SYSTEM, REFINER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_lines
from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Names, Reasoning, Sentences

#: what a refinement keeps when the model keeps nothing usable
FALLBACK_PASSAGES = 3


@dataclass(frozen=True)
class RefinedContext:
    hits: list[Hit]
    triples: list[str]


class RefinerReply(BaseModel):
    reason: Reasoning = ""
    passage_ids: Names = Field(default_factory=list)
    triples: Sentences = Field(default_factory=list)


class ContextRefiner(Protocol):
    def refine(
        self, query: str, hits: Sequence[Hit], triples: Sequence[str]
    ) -> Step[RefinedContext]: ...


class LLMContextRefiner(StructuredRole):
    def refine(
        self, query: str, hits: Sequence[Hit], triples: Sequence[str]
    ) -> Step[RefinedContext]:
        if not hits and not triples:
            return Step(RefinedContext([], []))
        user = with_passages(
            self.model, REFINER_SYSTEM, REFINER_USER, hits, PASSAGE_CHARS,
            query=query, triples=render_lines(triples),
        )  # fmt: skip
        out, usage = self.ask(RefinerReply, REFINER_SYSTEM, user)
        by_id = {h.passage.id: h for h in hits}
        kept = [by_id[p] for p in dict.fromkeys(out.passage_ids) if p in by_id]
        allowed = {" ".join(t.split()): t for t in triples}
        kept_triples = [
            allowed[k] for k in (" ".join(t.split()) for t in out.triples) if k in allowed
        ]
        if not kept:
            kept = list(hits[:FALLBACK_PASSAGES])
        return Step(RefinedContext(kept, kept_triples), usage)
