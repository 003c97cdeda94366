"""Failure-aware rewrite, offline policy (A2RAG §III-B3).

Three rewrites, tried in an order that depends on the failed check, the first new one wins:

- drop satisfied constraints: when the evidence already answers the earlier hops of a multi-hop
  question, ask only the last hop with their answers filled in ("Where did Ada Lovelace's father
  die?" -> "Where did Lord Byron die?");
- align names: replace a partial name by the fuller name the graph or the evidence uses;
- rephrase a one-hop question (relation named differently, entity first).

Relevance failures try aligned names first; grounding and adequacy failures the dropped
constraints first. When none is new, the query comes back unchanged (the workflow then stops).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.chain import ANSWERED, profile_of, resolve_chain
from graphseek.agents.offline.seeker import rephrase
from graphseek.agents.roles import Librarian, Step
from graphseek.agents.text import align_names, as_hits, normalize
from graphseek.state.models import EvidenceItem

ORDER = {
    "relevance": ("align", "drop", "rephrase"),
    "grounding": ("drop", "align", "rephrase"),
    "adequacy": ("drop", "rephrase", "align"),
}


class OfflineQueryRewriter:
    def __init__(self, librarian: Librarian, threshold: float = ANSWERED) -> None:
        self.librarian = librarian
        self.threshold = threshold

    def rewrite(
        self,
        question: str,
        query: str,
        failure: str,
        answer: str,
        evidence: Sequence[EvidenceItem],
        previous: Sequence[str],
        names: Sequence[str] = (),
    ) -> Step[str]:
        tried = {normalize(q) for q in [*previous, query]}
        for kind in ORDER.get(failure, ORDER["adequacy"]):
            candidate = self._candidate(kind, query, evidence, names)
            if candidate and normalize(candidate) not in tried:
                return Step(candidate)
        return Step(query)

    def _candidate(
        self, kind: str, query: str, evidence: Sequence[EvidenceItem], names: Sequence[str]
    ) -> str | None:
        if kind == "align":
            return align_names(query, [*names, *(e.title for e in evidence)])
        if kind == "drop":
            chain = resolve_chain(self.librarian, query, as_hits(evidence), self.threshold)
            return chain.remaining_hop()
        return rephrase(query, profile_of(self.librarian))
