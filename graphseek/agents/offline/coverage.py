"""Coverage gate, offline policy (A2RAG §III-B1 with retrieval scores as the coverage signal).

Coverage blends three signals of the documents nearest to the question (dense search, cosine
scores): the best similarity, the share of the question's names found in them, and whether they
hold a span of the answer type the question expects (the offline Librarian's candidates).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.coverage import CoverageVerdict
from graphseek.agents.offline.answer_types import expected_answer
from graphseek.agents.offline.chain import profile_of
from graphseek.agents.roles import Librarian, Step
from graphseek.agents.text import name_coverage, question_names
from graphseek.knowledge.passages import Hit

#: coverage below this is out of scope
COVERAGE_THRESHOLD = 0.45


class OfflineCoverageGate:
    def __init__(self, librarian: Librarian, threshold: float = COVERAGE_THRESHOLD) -> None:
        self.librarian = librarian
        self.threshold = threshold

    def assess(self, question: str, nearest: Sequence[Hit]) -> Step[CoverageVerdict]:
        if not nearest:
            return Step(
                CoverageVerdict(reason="No document is near.", coverage=0.0, in_scope=False)
            )
        similarity = max(0.0, min(1.0, max(h.score for h in nearest)))
        names = question_names(question)
        texts = [f"{h.passage.title}\n{h.passage.text}" for h in nearest]
        names_found = name_coverage(names, texts)
        typed = self._type_match(question, nearest)
        if names:
            coverage = 0.5 * similarity + 0.35 * names_found + 0.15 * typed
        else:
            coverage = 0.7 * similarity + 0.3 * typed
        coverage = round(coverage, 4)
        in_scope = coverage >= self.threshold
        found = f"{names_found:.0%} of its names found" if names else "no proper name in it"
        reason = (
            f"best similarity {similarity:.2f}, {found}, {'a' if typed else 'no'} span of the "
            f"expected answer type; coverage {coverage:.2f} {'>=' if in_scope else '<'} "
            f"{self.threshold:.2f}."
        )
        return Step(CoverageVerdict(reason=reason, coverage=coverage, in_scope=in_scope))

    def _type_match(self, question: str, nearest: Sequence[Hit]) -> float:
        qa = expected_answer(question, profile_of(self.librarian))
        if qa.kind in ("yesno", "choice") or qa.comparison is not None:
            return 1.0 if qa.options else 0.5
        rank = getattr(self.librarian, "rank_candidates", None)
        if rank is None:
            return 0.5
        return 1.0 if rank(question, nearest) else 0.0
