"""The Librarian with graph context, offline policy: the offline Librarian on the passages,
hop by hop for a multi-hop question.

A question whose grammar-based plan has several steps ("When did Ingrid Halvorsen's father
die?") is answered step by step over the same passages, each step's answer filled into the
next (`resolve_chain` with no confidence floor); the draft is the last step's, its confidence the
weakest step's, its evidence every step's. One-step, comparison and yes/no questions, and chains
that break (a step without any answer), are drafted whole. The relations shaped which passages
were retrieved; the extractive drafting reads the passages only.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.chain import plan_for, profile_of, resolve_chain
from graphseek.agents.roles import Librarian, Step
from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft, EvidenceItem


class OfflineGraphLibrarian:
    def __init__(self, librarian: Librarian) -> None:
        self.librarian = librarian

    def draft(
        self, question: str, hits: Sequence[Hit], relations: Sequence[str] = ()
    ) -> Step[Draft]:
        plan, whole = plan_for(question, profile_of(self.librarian))
        if whole or len(plan) < 2 or not hits:
            return self.librarian.draft(question, hits)
        chain = resolve_chain(self.librarian, question, hits, threshold=0.0)
        final = chain.final
        if not chain.resolved or final is None or not final.answer:
            return self.librarian.draft(question, hits)
        drafts = [chain.drafts[s.id] for s in chain.plan if s.id in chain.drafts]
        evidence: list[EvidenceItem] = []
        for d in [final, *drafts[:-1]]:
            evidence.extend(e for e in d.evidence if e.passage_id not in
                            {x.passage_id for x in evidence})  # fmt: skip
        return Step(
            final.model_copy(
                update={
                    "question": question,
                    "evidence": evidence,
                    "confidence": min(d.confidence for d in drafts),
                }
            )
        )
