"""Dense search in pgvector for a `PostgresIndex` (`PgDenseIndex`), checked against its revision.

Exact (sequential scan) up to `HNSW_THRESHOLD` passages and HNSW (``hnsw.ef_search`` =
`HNSW_EF_SEARCH`) above, the same policy as the directory backend's FAISS index, so both return
the same top-k. A query runs in a snapshot that first compares the stored revision with the
index object's and raises `Stale` when another writer has committed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from graphseek.knowledge.dense import HNSW_EF_SEARCH, HNSW_THRESHOLD
from graphseek.knowledge.postgres.connection import read_meta, reconnecting, snapshot

if TYPE_CHECKING:
    from graphseek.knowledge.postgres.index import PostgresIndex


class Stale(Exception):
    """The stored revision is not the one this object holds (another writer committed)."""


class PgDenseIndex:
    """Dense search in pgvector for a `PostgresIndex` (its `DenseRanker`, as `DenseIndex` is a
    directory index's)."""

    def __init__(self, index: PostgresIndex) -> None:
        self._index = index

    @property
    def kind(self) -> str:
        return "pgvector-exact" if len(self) <= HNSW_THRESHOLD else "pgvector-hnsw"

    @property
    def dim(self) -> int:
        return int(self._index.manifest["embedder"]["dim"])

    def __len__(self) -> int:
        return len(self._index)

    @property
    def embeddings(self) -> np.ndarray:
        return self._index.embeddings

    def search(self, query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """For each query vector, the (position, cosine) pairs of the `k` nearest passages;
        `Stale` when the stored revision is not the index object's."""
        query_vectors = np.ascontiguousarray(query_vectors, dtype=np.float32)
        if query_vectors.ndim == 1:
            query_vectors = query_vectors[None, :]
        k = min(k, len(self))
        if k <= 0 or len(query_vectors) == 0:
            return [[] for _ in range(len(query_vectors))]
        index = self._index
        revision, position = index.revision, index._position_of_ord

        def read() -> list[list[tuple[int, float]]]:
            out = []
            with index._pool.connection() as conn, snapshot(conn):
                if read_meta(conn, "revision") != revision:
                    raise Stale
                if len(self) <= HNSW_THRESHOLD:
                    conn.execute("SET LOCAL enable_indexscan = off")  # exact, like IndexFlatIP
                else:
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(max(HNSW_EF_SEARCH, k))}")
                for vector in query_vectors:
                    rows = conn.execute(
                        "SELECT ord, 1 - (embedding <=> %(q)s) FROM passages "
                        "ORDER BY embedding <=> %(q)s LIMIT %(k)s",
                        {"q": vector, "k": k},
                    ).fetchall()
                    out.append([(position[int(o)], float(s)) for o, s in rows])
            return out

        return reconnecting(index.location, read)
