"""Context refinement, offline policy (GraphSearch §3.1.1): keep the passages and triples that
mention the sub-query's names or share its words, best first."""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.refiner import FALLBACK_PASSAGES, RefinedContext
from graphseek.agents.roles import Step
from graphseek.agents.text import content_words, name_coverage, overlap, question_names
from graphseek.knowledge.passages import Hit

MAX_PASSAGES = 5
MAX_TRIPLES = 15


class OfflineContextRefiner:
    def refine(
        self, query: str, hits: Sequence[Hit], triples: Sequence[str]
    ) -> Step[RefinedContext]:
        words = content_words(query)
        names = question_names(query)
        scored: list[tuple[float, int, Hit]] = []
        for position, hit in enumerate(hits):
            text = f"{hit.passage.title}\n{hit.passage.text}"
            names_found = name_coverage(names, [text]) if names else 0.0
            score = overlap(words, text) + names_found + 0.5 / (1 + position)
            if overlap(words, text) > 0 or names_found > 0:
                scored.append((score, position, hit))
        scored.sort(key=lambda t: (-t[0], t[1]))
        kept = [h for _, _, h in scored[:MAX_PASSAGES]] or list(hits[:FALLBACK_PASSAGES])
        kept = [h.model_copy(update={"rank": i}) for i, h in enumerate(kept, 1)]
        kept_triples = [
            t for t in triples if overlap(words, t) > 0 or (names and name_coverage(names, [t]))
        ][:MAX_TRIPLES]
        return Step(RefinedContext(kept, kept_triples))
