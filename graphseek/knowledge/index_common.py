"""What both index backends share, written once over the hooks each implements (`IndexCommon`).

A backend's index class (the directory's `graphseek.knowledge.index.Index`, PostgreSQL's
`graphseek.knowledge.postgres.index.PostgresIndex`) subclasses `IndexCommon` and no other
backend's class, and supplies what it stores its own way:

- state: ``_manifest`` (the manifest dict), ``_passages`` (corpus order), ``_graph_reads``
  (one of `graphseek.knowledge.storage.GRAPH_READS`);
- rankers: ``_bm25`` (a `SparseRanker`: bm25s in both backends) and ``_dense`` (a
  `DenseRanker`: FAISS, or pgvector);
- `location_text`, `has_graph`, `embeddings`, `dense_search`, `sync`, `open_graph_store`,
  `graph_neighbourhood`, `add_documents`, `delete_documents`, and ``_store_graph(build)``
  (one write of the backend: `build` a graph store into a folder, then keep it and rewrite the
  manifest).

`IndexCommon` gives the rest of `graphseek.knowledge.storage.IndexStore` on top of them:
lookups by id, the recorded embedder, search (BM25, dense, and the two fused by a convex
combination of their normalised scores, `HYBRID_WEIGHTS`), the graph store's lifetime and
`ensure_graph`, and the bookkeeping of a deletion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, get_args

import numpy as np

from graphseek.errors import CorpusError
from graphseek.knowledge import embedders
from graphseek.knowledge.dense import TextEncoder
from graphseek.knowledge.fusion import convex
from graphseek.knowledge.index_build import (
    HYBRID_WEIGHTS,
    RRF_K,
    build_graph_into,
    check_graph_options,
    resolve_embedder,
)
from graphseek.knowledge.passages import Hit, Passage

if TYPE_CHECKING:
    from graphseek.knowledge.graph.store import GraphStore

SearchMethod = Literal["bm25", "dense", "hybrid"]
SEARCH_METHODS: tuple[str, ...] = get_args(SearchMethod)

#: bm25s's parameters, the same in every backend (so both score a query alike)
BM25_PARAMS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene"}


def hybrid_depth(k: int) -> int:
    """How many candidates each of BM25 and dense contributes to hybrid fusion for top-k."""
    return max(k * 4, 20)


class SparseRanker(Protocol):
    """The lexical ranking of an index's passages (`graphseek.knowledge.sparse.BM25Index`)."""

    def search(self, query: str, k: int) -> list[tuple[int, float]]: ...


class DenseRanker(Protocol):
    """The dense ranking of an index's passages (`graphseek.knowledge.dense.DenseIndex`, or
    pgvector's `graphseek.knowledge.postgres.dense.PgDenseIndex`)."""

    @property
    def embeddings(self) -> np.ndarray: ...
    def search(self, query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]: ...


class IndexCommon:
    """The part of `IndexStore` both backends share (see the module docstring for the hooks a
    backend supplies)."""

    #: how the graph retrievers read the graph unless the index is opened with ``graph_reads=``
    default_graph_reads = "whole"

    _manifest: dict[str, Any]
    _graph_reads: str

    if TYPE_CHECKING:  # the backend's hooks (attributes or cached properties of its own)

        @property
        def _passages(self) -> list[Passage]: ...
        @_passages.setter
        def _passages(self, value: list[Passage]) -> None: ...
        @property
        def _bm25(self) -> SparseRanker: ...
        @property
        def _dense(self) -> DenseRanker: ...
        @property
        def location_text(self) -> str: ...
        @property
        def has_graph(self) -> bool: ...
        def open_graph_store(self) -> GraphStore: ...
        def _store_graph(self, build: Callable[[Path], None]) -> dict[str, Any] | None: ...

    # ------------------------------------------------------------------------- passages

    @cached_property
    def _by_id(self) -> dict[str, int]:
        return {p.id: i for i, p in enumerate(self._passages)}

    @property
    def manifest(self) -> dict[str, Any]:
        return self._manifest

    @property
    def passages(self) -> list[Passage]:
        """Every passage, in corpus order (position i = row i of `embeddings`)."""
        return self._passages

    def __len__(self) -> int:
        return len(self._passages)

    def __contains__(self, passage_id: object) -> bool:
        return passage_id in self._by_id

    def get(self, passage_id: str) -> Passage:
        """The passage with this id; KeyError if the index has none."""
        try:
            return self._passages[self._by_id[passage_id]]
        except KeyError:
            raise KeyError(
                f"No passage with id {passage_id!r} in the index at {self.location_text}"
            ) from None

    def position(self, passage_id: str) -> int:
        """The corpus position (row in `embeddings`) of a passage id; KeyError if unknown."""
        self.get(passage_id)
        return self._by_id[passage_id]

    @property
    def revision(self) -> str:
        """Changes whenever the index is rewritten (build, add or delete documents, a graph
        added): caches of derived structures (graph views, retrievers) key on it."""
        return str(self._manifest.get("revision") or self._manifest.get("created", ""))

    # ------------------------------------------------------------------------- embedder

    @property
    def embedder(self) -> TextEncoder:
        """The embedder of this index's passages and queries (the recorded one, made on first
        use)."""
        return self._encoder

    @cached_property
    def _encoder(self) -> TextEncoder:
        """The recorded embedder (`embedders.embedder_for_record`), checked against the
        manifest's name and dim."""
        built = self._manifest["embedder"]
        encoder = embedders.embedder_for_record(built)
        embedders.check_embedder(built, encoder, self.location_text)
        return encoder

    def use_embedder(self, embedder: str | TextEncoder) -> Self:
        """Embed queries with `embedder` (a spec or an encoder), after checking it is the one
        the index was built with; returns this index."""
        encoder = resolve_embedder(embedder, dim=self._manifest["embedder"]["dim"])
        embedders.check_embedder(self._manifest["embedder"], encoder, self.location_text)
        self.__dict__["_encoder"] = encoder
        return self

    def embed(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Embed texts with the index's embedder: float32, L2-normalised, one row per text."""
        return self._encoder.encode(list(texts), batch_size=batch_size)

    # ---------------------------------------------------------------------------- search

    def search(self, query: str, k: int = 5, method: SearchMethod = "hybrid") -> list[Hit]:
        """The `k` best passages for `query` (ranks from 1, higher scores better).

        `bm25` scores are BM25 (only passages sharing a term), `dense` scores are cosine
        similarities, `hybrid` scores fuse the two: each list's scores (its best `hybrid_depth(k)`)
        min-max normalised onto [0, 1] and combined with `HYBRID_WEIGHTS`
        (`graphseek.knowledge.fusion.convex`), so a rare word's exact match keeps its lead.
        """
        return self.search_many([query], k=k, method=method)[0]

    def search_many(
        self, queries: Sequence[str], k: int = 5, method: SearchMethod = "hybrid"
    ) -> list[list[Hit]]:
        """`search` for several queries, embedding them in one batch."""
        if method not in SEARCH_METHODS:
            raise ValueError(
                f"Unknown search method {method!r}; choose one of {', '.join(SEARCH_METHODS)}."
            )
        if isinstance(queries, str):
            raise TypeError("search_many takes a list of queries; use search() for one query")
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        results: list[list[Hit]] = [[] for _ in queries]
        active = [i for i, q in enumerate(queries) if q and q.strip()]
        if not active:
            return results
        depth = k if method != "hybrid" else hybrid_depth(k)
        sparse: list[list[tuple[int, float]]] = []
        dense: list[list[tuple[int, float]]] = []
        if method in ("bm25", "hybrid"):
            sparse = [self._bm25.search(queries[i], depth) for i in active]
        if method in ("dense", "hybrid"):
            vectors = self.embed([queries[i] for i in active])
            dense = self._dense.search(vectors, depth)
        for j, i in enumerate(active):
            if method == "bm25":
                ranked = sparse[j]
            elif method == "dense":
                ranked = dense[j]
            else:
                fused = convex([sparse[j], dense[j]], HYBRID_WEIGHTS)
                ranked = fused[:k]
            results[i] = [
                Hit(passage=self._passages[pos], score=score, rank=rank)
                for rank, (pos, score) in enumerate(ranked[:k], start=1)
            ]
        return results

    # ----------------------------------------------------------------------------- graph

    @property
    def graph_reads(self) -> str:
        """How the graph retrievers read this index's graph: ``"whole"`` (loaded into memory
        once per revision) or ``"neighbourhood"`` (`graph_neighbourhood()` per query); a
        directory index's default is ``"whole"``, PostgreSQL's ``"neighbourhood"``."""
        return self._graph_reads

    @cached_property
    def graph(self) -> GraphStore:
        """The knowledge-graph store (`GraphStore`), opened on first use (`open_graph_store`).

        Raises `IndexNotFoundError` when the index was built without one."""
        return self.open_graph_store()

    def ensure_graph(
        self, *, show_progress: bool = False, graph_options: Mapping[str, Any] | None = None
    ) -> Self:
        """Build the knowledge graph into this index if it has none (passages are not
        re-embedded) and record it in the manifest, as one write of the backend
        (`_store_graph`)."""
        if self.has_graph:
            return self
        check_graph_options(self._encoder, graph_options)

        def build(graph_dir: Path) -> None:
            build_graph_into(self._passages, graph_dir, show_progress, graph_options)

        manifest = self._store_graph(build)
        if manifest is not None:
            self._take_state(manifest, self._passages)
        return self

    def _close_graph(self) -> None:
        store = self.__dict__.pop("graph", None)
        if store is not None:
            store.close()

    # --------------------------------------------------------------------------- updates

    def _take_state(self, manifest: dict[str, Any], passages: list[Passage]) -> None:
        """This object is the index of `manifest` and `passages` from now on (its graph store
        closed; the backend's other state is the caller's)."""
        self._close_graph()
        self._manifest = manifest
        self._passages = passages
        self.__dict__.pop("_by_id", None)  # made again from these passages when first needed

    def _kept_positions(self, drop: set[str]) -> list[int] | None:
        """The positions of the passages a deletion of `drop` keeps (None: nothing to delete);
        `KeyError` for unknown ids, `CorpusError` when none would be left."""
        unknown = sorted(drop - set(self._by_id))
        if unknown:
            raise KeyError(
                f"No passages with ids {unknown[:5]} in the index at {self.location_text}"
            )
        if not drop:
            return None
        keep = [i for i, p in enumerate(self._passages) if p.id not in drop]
        if not keep:
            raise CorpusError("Deleting these passages would leave the index empty.")
        return keep


__all__ = [
    "BM25_PARAMS",
    "HYBRID_WEIGHTS",
    "RRF_K",
    "SEARCH_METHODS",
    "DenseRanker",
    "IndexCommon",
    "SearchMethod",
    "SparseRanker",
    "hybrid_depth",
]
