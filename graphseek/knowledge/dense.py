"""Dense passage search: MiniLM embeddings in a FAISS inner-product index.

Up to `HNSW_THRESHOLD` vectors the index is exact (`IndexFlatIP`: a query over 100K vectors is
a few ms); above, an HNSW graph (`IndexHNSWFlat`, M=32, efSearch=128) keeps queries in
milliseconds at the cost of a slower build and approximate results.

Vectors are L2-normalised, so inner product = cosine similarity. Both the raw embeddings
(`embeddings.npy`, float32, one row per passage in corpus order) and the FAISS index
(`faiss.index`) are saved, so reopening an index never re-embeds a passage.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graphseek.knowledge.npy import save_blocks

logger = logging.getLogger(__name__)

EMBEDDINGS_FILE = "embeddings.npy"
FAISS_FILE = "faiss.index"
HNSW_THRESHOLD = 100_000
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128


def top_positions(scores: np.ndarray, k: int, *, positive: bool = True) -> list[int]:
    """Positions of the `k` highest scores (only > 0 when `positive`), best first, ties by
    position."""
    if k <= 0 or len(scores) == 0:
        return []
    candidates = np.flatnonzero(scores > 0) if positive else np.arange(len(scores))
    if len(candidates) > k:
        kth = np.partition(-scores[candidates], k - 1)[k - 1]
        candidates = candidates[-scores[candidates] <= kth]
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return [int(i) for i in candidates[order]]


class TextEncoder(Protocol):
    """What dense search needs from an embedder (`graphseek.knowledge.embedder.Embedder`)."""

    name: str
    dim: int

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray: ...


def encode_texts(
    encoder: TextEncoder,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    show_progress: bool = False,
    desc: str = "embedding passages",
    unit: str = "passage",
) -> np.ndarray:
    """Encode `texts` in blocks under one labelled progress bar; rows follow the order of `texts`.

    Texts are encoded longest first (less padding per batch) and put back in order. Memory
    beyond the output is one block of texts.
    """
    from graphseek.knowledge.progress import bar as progress_bar

    n = len(texts)
    out = np.zeros((n, encoder.dim), dtype=np.float32)
    order = sorted(range(n), key=lambda i: -len(texts[i]))
    block = max(batch_size * 16, 1)
    with progress_bar(desc, n, show_progress, unit=unit) as bar:
        for start in range(0, n, block):
            idx = order[start : start + block]
            out[idx] = encoder.encode([texts[i] for i in idx], batch_size=batch_size)
            bar.update(len(idx))
    return out


class RowFile(Protocol):
    """Rows kept in a file, read a block at a time (a build's passage vectors:
    `graphseek.knowledge.graph.memory.spool.SpilledArray`)."""

    shape: tuple[int, int]

    def __len__(self) -> int: ...

    def blocks(self, rows: int) -> Iterator[np.ndarray]: ...

    def load(self) -> np.ndarray: ...


Rows = np.ndarray | RowFile
"""Passage vectors: an array, or rows in a file."""

BLOCK_ROWS = 16_384
"""Rows of a `RowFile` added to an exact index, or saved, at a time."""


class DenseIndex:
    """An exact inner-product FAISS index over passage embeddings; results are row positions."""

    def __init__(self, faiss_index: Any, embeddings_path: Path | None = None) -> None:
        self._faiss = faiss_index
        self._embeddings_path = embeddings_path
        self._embeddings: np.ndarray | RowFile | None = None

    @classmethod
    def build(
        cls,
        vectors: np.ndarray | RowFile,
        *,
        hnsw_threshold: int | None = None,
        grown_from: str | Path | None = None,
        early: EarlyGraph | None = None,
    ) -> DenseIndex:
        """Exact `IndexFlatIP` up to `hnsw_threshold` vectors, `IndexHNSWFlat` above.

        `grown_from`: a saved index of the first of `vectors` (an index that grows at its end).
        When `vectors` need an HNSW graph, the saved index's graph (or, for an exact index
        growing past the threshold, the graph of its stored rows) gets only the new rows
        inserted (building the whole graph anew would take far longer);
        an exact index is built anew, in a fraction of a second, to the same index. `early`:
        that graph of `grown_from`, begun on a thread while the new rows were being computed
        (`early_graph`; one of another directory is not used). `hnsw_threshold` None: `HNSW_THRESHOLD`.

        `vectors` in a file (`RowFile`, float32) go into an exact index `BLOCK_ROWS` at a time
        and are saved from the file: the index holds the only copy in memory, not an array
        beside it. An HNSW graph is built from them whole
        (added in blocks it would link other neighbours)."""
        import faiss

        if hnsw_threshold is None:
            hnsw_threshold = HNSW_THRESHOLD
        if not isinstance(vectors, np.ndarray) and hasattr(vectors, "blocks"):  # a `RowFile`
            if len(vectors) <= hnsw_threshold:
                return cls._exact_from_file(vectors)
            vectors = vectors.load()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError(f"expected a 2-D array of vectors, got shape {vectors.shape}")
        if grown_from is not None and len(vectors) > hnsw_threshold:
            grown = cls._grown(Path(grown_from), vectors, early)
            if grown is not None:
                return grown
        index: Any
        if len(vectors) > hnsw_threshold:
            index = _hnsw_graph(vectors)
        else:
            index = faiss.IndexFlatIP(vectors.shape[1])
            index.add(vectors)
        dense = cls(index)
        dense._embeddings = vectors
        return dense

    @classmethod
    def _exact_from_file(cls, rows: RowFile) -> DenseIndex:
        """An `IndexFlatIP` of the float32 `rows`, added a block at a time (the same index)."""
        import faiss

        index = faiss.IndexFlatIP(rows.shape[1])
        # room for every row at once, then none used: the adds below fill it without the
        # reallocations (the old rows and the new, larger copy at once) of a growing vector
        index.codes.resize(len(rows) * index.code_size)
        index.codes.resize(0)
        for block in rows.blocks(BLOCK_ROWS):
            index.add(np.ascontiguousarray(block, dtype=np.float32))
        dense = cls(index)
        dense._embeddings = rows
        return dense

    @classmethod
    def _grown(
        cls, directory: Path, vectors: np.ndarray, early: EarlyGraph | None = None
    ) -> DenseIndex | None:
        """The HNSW graph of the index saved in `directory` (`saved_graph`, or `early`'s when
        it is of that directory) with the rows of `vectors` past its own added; None when there
        is none, or it is not of the same width and at most as many rows."""
        index = early.graph_for(directory) if early is not None else None
        if index is None:
            index = saved_graph(directory)
        if index is None or index.d != vectors.shape[1] or index.ntotal > len(vectors):
            return None
        index.add(vectors[index.ntotal :])
        dense = cls(index)
        dense._embeddings = vectors
        return dense

    def save(self, directory: str | Path) -> None:
        import faiss

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        rows = self._embeddings
        if rows is not None and not isinstance(rows, np.ndarray):
            # the same bytes as np.save; then `embeddings` are read back from the index
            save_blocks(
                directory / EMBEDDINGS_FILE, rows.blocks(BLOCK_ROWS), rows.shape, np.float32
            )
            self._embeddings = None
        else:
            np.save(directory / EMBEDDINGS_FILE, self.embeddings, allow_pickle=False)
        faiss.write_index(self._faiss, str(directory / FAISS_FILE))

    @classmethod
    def load(cls, directory: str | Path) -> DenseIndex:
        import faiss

        directory = Path(directory)
        index = faiss.read_index(str(directory / FAISS_FILE))
        if hasattr(index, "hnsw"):
            index.hnsw.efSearch = max(index.hnsw.efSearch, HNSW_EF_SEARCH)
        return cls(index, directory / EMBEDDINGS_FILE)

    @property
    def kind(self) -> str:
        """The FAISS index class: ``IndexFlatIP`` (exact) or ``IndexHNSWFlat``."""
        return type(self._faiss).__name__

    @property
    def dim(self) -> int:
        return int(self._faiss.d)

    def __len__(self) -> int:
        return int(self._faiss.ntotal)

    @property
    def embeddings(self) -> np.ndarray:
        """The passage vectors, shape (passages, dim), read-only: those built from when they were
        an array; else read on first use (memory-mapped from an opened index's file, copied
        out of the FAISS index of one built from a file and saved, read from that file before
        it is saved)."""
        rows = self._embeddings
        if rows is not None and not isinstance(rows, np.ndarray):
            rows = rows.load()  # rows in a file: read when asked
            rows.setflags(write=False)
        if rows is None:
            if self._embeddings_path is None:
                rows = self._faiss.reconstruct_n(0, len(self))
                rows.setflags(write=False)
            else:
                rows = np.load(self._embeddings_path, mmap_mode="r")
        self._embeddings = rows
        return rows

    def search(self, query_vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """For each query vector, the (position, cosine) pairs of the `k` nearest passages."""
        query_vectors = np.ascontiguousarray(query_vectors, dtype=np.float32)
        if query_vectors.ndim == 1:
            query_vectors = query_vectors[None, :]
        k = min(k, len(self))
        if k <= 0 or len(query_vectors) == 0:
            return [[] for _ in range(len(query_vectors))]
        scores, ids = self._faiss.search(query_vectors, k)
        return [
            [(int(i), float(s)) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
            for row_ids, row_scores in zip(ids, scores, strict=True)
        ]


def _hnsw_graph(vectors: np.ndarray) -> Any:
    """An `IndexHNSWFlat` (M, efConstruction and efSearch as above) holding `vectors`."""
    import faiss

    index = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = HNSW_EF_SEARCH
    index.add(vectors)
    return index


def _stored_rows(directory: Path) -> int | None:
    """How many embeddings the index saved in `directory` stores (None: none readable)."""
    try:
        return int(np.load(directory / EMBEDDINGS_FILE, mmap_mode="r").shape[0])
    except (OSError, ValueError):
        return None


def saved_graph(directory: Path, *, threads: int | None = None) -> Any | None:
    """The HNSW graph of the index saved in `directory`, holding exactly its stored
    embeddings: its own graph, or for an exact index the graph of its embeddings built here
    (an index growing past `HNSW_THRESHOLD` inserts its new rows into the graph of what it
    stored, as every later growth does). None when there is no readable index, or its rows
    are not its stored embeddings. `threads`: FAISS's OpenMP threads for the build, set for
    the calling thread only (`early_graph`'s worker)."""
    import faiss

    path = directory / FAISS_FILE
    stored = _stored_rows(directory)
    if not path.is_file() or stored is None:
        return None
    try:
        index = faiss.read_index(str(path))
    except RuntimeError:
        return None
    if index.ntotal != stored:
        return None
    if hasattr(index, "hnsw"):
        return index
    if not isinstance(index, faiss.IndexFlatIP):
        return None
    dim = index.d
    del index  # the exact index's copy of the rows, before the graph makes its own
    rows = np.load(directory / EMBEDDINGS_FILE, mmap_mode="r")  # read by the graph's add
    if rows.ndim != 2 or rows.shape[1] != dim:
        return None
    if threads is not None:
        faiss.omp_set_num_threads(threads)
    return _hnsw_graph(np.ascontiguousarray(rows, dtype=np.float32))


def early_threads() -> int:
    """OpenMP threads for `early_graph`'s worker: all of FAISS's but one, at least one (on a
    machine of many cores one thread would make the add wait for the graph)."""
    import faiss

    return max(1, int(faiss.omp_get_max_threads()) - 1)


@dataclass(frozen=True)
class EarlyGraph:
    """The HNSW graph of the index saved in `directory`, being built on a thread
    (`early_graph`)."""

    directory: Path
    future: Future[Any]

    def graph_for(self, directory: Path) -> Any | None:
        """The graph, waited for, when it is of the index in `directory` (else None)."""
        if directory.resolve() != self.directory:
            return None
        return self.future.result()

    def settle(self) -> None:
        """Wait for the thread, its result or error ignored: an add that failed waits here,
        still holding the index's lock, so the thread never reads a directory another writer
        is replacing."""
        wait([self.future])


def early_graph(
    directory: str | Path, total: int, *, hnsw_threshold: int | None = None
) -> EarlyGraph | None:
    """Begin, on a thread of its own, the HNSW graph that an add growing the index saved in
    `directory` to `total` rows will insert its new rows into (`DenseIndex.build(...,
    early=...)`), when that add takes an exact index past `hnsw_threshold`: the graph of the
    stored rows takes seconds, which the add's extraction, alignment and linking, mostly on one
    core, leave room for. None otherwise (the saved index
    is already a graph, read in a fraction of a second, or stays exact). The worker uses all
    but one of FAISS's OpenMP threads (`early_threads`: one here), leaving a core to the add
    (a graph of the same rows as `saved_graph` builds with all of them; with several threads
    the order of insertions within a level, so the links, may vary)."""
    if hnsw_threshold is None:
        hnsw_threshold = HNSW_THRESHOLD
    directory = Path(directory).resolve()
    stored = _stored_rows(directory)
    if stored is None or not stored <= hnsw_threshold < total:
        return None
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="graphseek-hnsw")
    future = executor.submit(saved_graph, directory, threads=early_threads())
    executor.shutdown(wait=False)
    return EarlyGraph(directory, future)
