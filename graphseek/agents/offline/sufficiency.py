"""Sufficiency check, offline policy: the evidence suffices when the question's plan resolves
over it step by step, each step answered by the offline Librarian with enough confidence (an
answer-type match near the question's words in a well-ranked passage)."""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.chain import ANSWERED, resolve_chain
from graphseek.agents.roles import Librarian, Step
from graphseek.agents.sufficiency import SufficiencyVerdict
from graphseek.knowledge.passages import Hit


class OfflineSufficiencyChecker:
    def __init__(self, librarian: Librarian, threshold: float = ANSWERED) -> None:
        self.librarian = librarian
        self.threshold = threshold

    def check(
        self, question: str, hits: Sequence[Hit], graph: Sequence[str], stage: str
    ) -> Step[SufficiencyVerdict]:
        chain = resolve_chain(self.librarian, question, hits, self.threshold)
        if chain.resolved:
            steps = "; ".join(f"{chain.filled[s.id]} -> {chain.answers[str(s.id)]}"
                              for s in chain.plan if s.id in chain.filled)  # fmt: skip
            return Step(SufficiencyVerdict(reason=f"Resolved: {steps}.", sufficient=True))
        reason = f"After the {stage} stage, no confident answer to: {'; '.join(chain.missing)}."
        return Step(SufficiencyVerdict(reason=reason, missing=chain.missing, sufficient=False))
