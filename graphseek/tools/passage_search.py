"""Passage search as the graph retrievers use it: the index's hybrid search with a query vector
reused (`passage_search_for`), and passage lookup by id (`passage_lookup_for`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from graphseek.knowledge.fusion import rrf

if TYPE_CHECKING:
    from graphseek.knowledge.passages import Passage
    from graphseek.knowledge.storage import IndexStore


# -- passage search -------------------------------------------------------------------------------


class PassageSearch(Protocol):
    """Ranks passages for a query: (passage id, score) pairs, best first."""

    def __call__(
        self, query: str, k: int, query_vector: np.ndarray | None = None
    ) -> list[tuple[str, float]]: ...


class IndexPassageSearch:
    """BM25 and dense fused by reciprocal rank (k=60), taking a query vector already computed so
    that one embedding serves every similarity. The graph retrievers' passage priors were tuned
    on this rank fusion, so it stays theirs; `Index.search(method="hybrid")` fuses the two
    lists' normalised scores instead (`graphseek.knowledge.fusion.convex`)."""

    def __init__(self, index: IndexStore) -> None:
        self.index = index

    def embed(self, query: str) -> np.ndarray:
        return np.asarray(self.index.embed([query])[0], dtype=np.float32)

    def __call__(
        self, query: str, k: int, query_vector: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        from graphseek.knowledge.index import RRF_K, hybrid_depth

        if not query.strip():
            return []
        depth = hybrid_depth(k)
        sparse = [h.passage.id for h in self.index.search(query, k=depth, method="bm25")]
        if query_vector is None:
            query_vector = self.embed(query)
        passages = self.index.passages
        dense = [passages[i].id for i, _ in self.index.dense_search(query_vector, depth)]
        return rrf([sparse, dense], k=RRF_K)[:k]


def passage_search_for(index: IndexStore) -> IndexPassageSearch:
    return IndexPassageSearch(index)


def passage_lookup_for(index: IndexStore) -> Callable[[str], Passage]:
    return index.get  # type: ignore[no-any-return]
