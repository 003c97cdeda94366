"""The passage index: passages, BM25, dense vectors and a manifest in one directory.

Layout of an index directory::

    manifest.json     written last; its presence marks a complete index
    passages.jsonl    one Passage per line, corpus order (row i of every other file)
    bm25/             bm25s arrays, vocabulary and parameters
    dense/            embeddings.npy (float32, L2-normalised) and faiss.index (IndexFlatIP)
    graph/            the HiGra knowledge graph (optional: `Index.build(..., graph=True)`,
                      `graphseek index` builds it unless `--no-graph`), see graphseek.knowledge.graph

The manifest records every other file's size and SHA-256 (and a ``.npy``'s shape):
`Index.open` checks each file's size and format against it and against the manifest's counts,
in milliseconds, so a truncated, damaged or missing file is one line naming it
(`graphseek.knowledge.integrity`); `graphseek stats --verify` compares the checksums.

`Index.build` (and `add_documents` / `delete_documents`) write through
`graphseek.knowledge.atomic.atomic_directory`: into a ``.<name>.building-*`` sibling swapped into
place only when everything, the manifest last, is on disk, under a lock so two builders of one
index cannot collide; on any error (Ctrl-C included) the building directory is removed and a
previous index at the same path is left as it was, and the next builder of that path removes
what a killed one left behind. `Index.open` reads the manifest and the
passages; BM25, FAISS and the embedder are loaded on first use, and passages are never
re-embedded.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import numpy as np

from graphseek.errors import (
    IndexBusyError,
    IndexChangedError,
    IndexFormatError,
    IndexNotFoundError,
)
from graphseek.knowledge import embedders
from graphseek.knowledge.atomic import atomic_directory, file_stamp, hold, recover
from graphseek.knowledge.background import Background
from graphseek.knowledge.dense import (
    HNSW_THRESHOLD,
    DenseIndex,
    EarlyGraph,
    Rows,
    TextEncoder,
    early_graph,
    top_positions,
)
from graphseek.knowledge.embedders import passage_vectors
from graphseek.knowledge.index_build import (
    FORMAT_NAME,
    FORMAT_VERSION,
    GRAPH_DIR,
    GraphAddition,
    check_graph_options,
    check_passages,
    corpus_vectors,
    delete_from_graph,
    manifest_record,
    prepare_build,
    read_passages,
    resolve_embedder,
)
from graphseek.knowledge.index_common import (
    BM25_PARAMS,
    HYBRID_WEIGHTS,
    RRF_K,
    SEARCH_METHODS,
    IndexCommon,
    SearchMethod,
    hybrid_depth,
)
from graphseek.knowledge.integrity import (
    INTEGRITY,
    check_index,
    integrity_record,
    rebuild_hint,
    record_files,
    recorded_files,
)
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.sharded import sharding_for
from graphseek.knowledge.sparse import BM25Index
from graphseek.knowledge.storage import (
    DIRECTORY,
    IndexStore,
    backend_for,
    check_graph_reads,
    local_path,
)

if TYPE_CHECKING:
    from graphseek.knowledge.graph.store import SQLiteGraphStore
    from graphseek.knowledge.graph.store.neighbourhood import DirectoryNeighbourhood

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
PASSAGES_FILE = "passages.jsonl"
BM25_DIR = "bm25"
DENSE_DIR = "dense"
RESERVED_NAMES = frozenset({MANIFEST_FILE, PASSAGES_FILE, BM25_DIR, DENSE_DIR})


OPEN_TRIES = 5
"""How many versions `Index.open` tries to read whole before it gives up (each try ends early
only when a writer swapped a new version in while the try read the old)."""

T = TypeVar("T")


def version_stamp(directory: Path) -> tuple[int, int] | None:
    """The identity of the version written at `directory` now: its manifest's inode and
    modification time (a writer swaps in a new directory, or replaces the manifest, so both
    change); None when there is none. `directory` may also be the manifest file itself."""
    return file_stamp(directory if directory.is_file() else directory / MANIFEST_FILE)


class Index(IndexCommon):
    """A searchable passage index stored in one directory. Build with `Index.build`, reopen with
    `Index.open`. What it shares with the PostgreSQL backend (lookups, search, the embedder,
    `ensure_graph`) is `IndexCommon`'s; the files are its own."""

    #: how the graph retrievers read the graph unless `Index.open(..., graph_reads=)` says
    #: otherwise (`graphseek.knowledge.storage.GRAPH_READS`)
    default_graph_reads = "whole"

    def __init__(
        self,
        path: Path,
        manifest: dict[str, Any],
        passages: list[Passage] | None,
        *,
        bm25: BM25Index | None = None,
        dense: DenseIndex | None = None,
        graph_reads: str | None = None,
    ) -> None:
        """`passages`: the index's, in corpus order; None: read from its passage file when
        first needed (a build from a spooled corpus holds none of them)."""
        self._graph_reads = check_graph_reads(graph_reads or self.default_graph_reads)
        self._path = path
        self._manifest = manifest
        # the version this object reads: its files are read lazily, so each read checks that
        # no writer swapped another version in since (`_read`)
        self._stamp = version_stamp(path)
        if passages is not None:
            self._passages = passages
        if bm25 is not None:
            self.__dict__["_bm25"] = bm25
        if dense is not None:
            self.__dict__["_dense"] = dense

    @cached_property
    def _passages(self) -> list[Passage]:
        return _read_passages(self._path / PASSAGES_FILE, rebuild_hint(self._path, self._manifest))

    # ----------------------------------------------------------------------------- building

    @classmethod
    def build(
        cls,
        passages: Iterable[Passage] | str | Path,
        path: str | Path,
        *,
        show_progress: bool = True,
        batch_size: int = 64,
        graph: bool = False,
        graph_options: Mapping[str, Any] | None = None,
        embedder: str | TextEncoder | None = None,
        workers: int | None = None,
        scheduler: str | None = None,
    ) -> IndexStore:
        """Index `passages` (or the corpus file/folder at that path, read as `load_corpus`
        reads it, into a `PassageSpool`) into the directory `path`, replacing an index already
        there only once the new one is complete.

        `graph=True` also builds the HiGra knowledge graph into `path/graph` (offline extractor
        unless `graph_options` names an `llm` or `extractor`; its other keys are `GraphSettings`'
        fields or a whole ``settings``, and `RunOptions`' ``memory_budget`` and
        ``max_concurrency``: `graphseek.knowledge.graph.settings.graph_arguments`), inside the
        same atomic swap.

        `embedder`: the passage and query embedder, a spec (`graphseek.knowledge.embedders`:
        "minilm", the default; "openai:MODEL"; "st:FOLDER") or an encoder object. It is recorded
        in the manifest, and the index is queried with it. The graph keeps its own vectors
        (static, from the packaged MiniLM) whichever embedder the passages use.

        `path` chooses the backend (`graphseek.knowledge.storage.backend_for`): a directory (or
        ``file://`` URI) here, a ``postgresql://…?schema=NAME`` URI builds into PostgreSQL
        (`graphseek.knowledge.postgres.PostgresIndex`).

        `workers` / `scheduler`: the sharded build (`graphseek.knowledge.sharded`, the
        ``distributed`` extra): extraction and embedding run as Dask tasks over contiguous
        shards, on a local cluster of `workers` processes or on the cluster of the Dask
        `scheduler` (``tcp://host:8786``; `workers` is then how many of its workers to wait
        for); the rest of the build runs here, as without them."""
        backend = backend_for(path)
        if backend is not DIRECTORY:
            return backend.index_class().build(
                passages,
                path,
                show_progress=show_progress,
                batch_size=batch_size,
                graph=graph,
                graph_options=graph_options,
                embedder=embedder,
                workers=workers,
                scheduler=scheduler,
            )
        sharding = sharding_for(workers, scheduler)
        encoder, items, source = prepare_build(
            passages,
            embedder,
            graph=graph,
            graph_options=graph_options,
            show_progress=show_progress,
        )
        target = local_path(path)
        _check_target(target)
        target.parent.mkdir(parents=True, exist_ok=True)

        started = time.perf_counter()
        with atomic_directory(target) as tmp:
            vectors = corpus_vectors(
                encoder,
                items,
                tmp / GRAPH_DIR if graph else None,
                graph_options,
                batch_size=batch_size,
                show_progress=show_progress,
                sharding=sharding,
            )
            graph_files = _record_graph(tmp)
            try:
                bm25, dense, encoder = _write_stores(
                    items, tmp, show_progress, batch_size, vectors=vectors, encoder=encoder
                )
            finally:
                graph_files.wait()
            manifest = _manifest(items, bm25, encoder, source, time.perf_counter() - started, tmp,
                                 graph_files.result())  # fmt: skip
            _write_json(tmp / MANIFEST_FILE, manifest)
        logger.info(
            "Indexed %d passages into %s in %.1f s",
            len(items),
            target,
            time.perf_counter() - started,
        )
        # a spooled corpus is read back from the passage file when the index is first used
        index = cls(target, manifest, items if isinstance(items, list) else None, bm25=bm25,
                    dense=dense)  # fmt: skip
        index.__dict__["_encoder"] = encoder
        return index

    # ------------------------------------------------------------------------------ opening

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: str | TextEncoder | None = None,
        graph_reads: str | None = None,
    ) -> IndexStore:
        """Open the index at `path`: reads the manifest and passages; nothing is re-embedded.
        `path` chooses the backend (`graphseek.knowledge.storage.backend_for`): a
        ``postgresql://…`` URI opens a `PostgresIndex`.

        Queries are embedded with the embedder recorded at build time; `embedder` (a spec or
        an encoder) names one explicitly, and is refused (`IndexFormatError`, naming both) when
        it is not the recorded one.

        `graph_reads` is how the graph retrievers read a directory index's graph: ``"whole"``
        (the default: loaded once into memory) or ``"neighbourhood"`` (each query reads its
        neighbourhood from the store, `graph_neighbourhood()`, as over PostgreSQL, which
        always does)."""
        if graph_reads is not None:
            check_graph_reads(graph_reads)
        backend = backend_for(path)
        if backend is not DIRECTORY:
            return backend.index_class().open(path, embedder=embedder, graph_reads=graph_reads)
        target = local_path(path)
        recover(target)
        for _ in range(OPEN_TRIES):
            stamp = version_stamp(target)
            try:
                index = cls._open_version(target, graph_reads)
            except (IndexFormatError, IndexNotFoundError, OSError):
                if version_stamp(target) == stamp:
                    raise
                continue  # a writer swapped a new version in while it was read: read that one
            if version_stamp(target) == stamp:
                index._stamp = stamp
                return index.use_embedder(embedder) if embedder is not None else index
        raise IndexChangedError(
            f"The index at {target} was rewritten {OPEN_TRIES} times while it was being opened; "
            "open it again when its writers are done."
        )

    @classmethod
    def _open_version(cls, target: Path, graph_reads: str | None) -> Index:
        """`open`'s reading of the manifest and passages at `target` (checked against each
        other; the caller checks that no writer swapped the directory meanwhile)."""
        hint = "run `graphseek index` to build one"
        if not target.is_dir():
            raise IndexNotFoundError(f"No index at {target}: the directory does not exist; {hint}.")
        manifest_path = target / MANIFEST_FILE
        if not manifest_path.is_file():
            if any((target / name).exists() for name in RESERVED_NAMES - {MANIFEST_FILE}):
                raise IndexNotFoundError(  # an index's other files: one damaged, not none
                    f"No complete index at {target}: {manifest_path} is missing, though the "
                    f"index's other files are there; {rebuild_hint(target)}."
                )
            raise IndexNotFoundError(
                f"No complete index at {target}: {MANIFEST_FILE} is missing; {hint}."
            )
        manifest = _read_manifest(manifest_path)
        check_index(target, manifest)  # sizes, headers, counts: milliseconds
        hint = rebuild_hint(target, manifest)
        passages = _read_passages(target / PASSAGES_FILE, hint)
        expected = manifest["counts"]["passages"]
        if len(passages) != expected:
            raise IndexFormatError(
                f"Index file {target / PASSAGES_FILE} is damaged: it holds {len(passages)} "
                f"passages, where the manifest counts {expected}; {hint}."
            )
        return cls(target, manifest, passages, graph_reads=graph_reads)

    # --------------------------------------------------------------------------- properties

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"Index({str(self._path)!r}, passages={len(self)})"

    def dir_for(self, name: str) -> Path:
        """The directory other stores (e.g. the knowledge graph, `graph`) keep inside this index.

        Not created here. A rebuild of the index replaces the whole directory, these included.
        """
        if not name or name in RESERVED_NAMES or Path(name).name != name or name.startswith("."):
            raise ValueError(f"{name!r} is not a usable store name inside an index directory")
        return self._path / name

    @property
    def location_text(self) -> str:
        """Where this index lives, as messages name it (a directory, or a URI without its
        password)."""
        return str(self.path)

    @property
    def has_graph(self) -> bool:
        """Whether this index holds a knowledge graph (`graph/`)."""
        return (self._path / GRAPH_DIR / "manifest.json").is_file()

    def graph_neighbourhood(self) -> DirectoryNeighbourhood:
        """The graph read one neighbourhood at a time (`DirectoryNeighbourhood`, this object's
        revision): what the graph retrievers read per query when this index was opened with
        ``graph_reads="neighbourhood"`` (`graphseek.knowledge.storage.reads_neighbourhoods`)."""
        from graphseek.knowledge.graph.store.neighbourhood import DirectoryNeighbourhood

        if not self.has_graph:
            raise IndexNotFoundError(
                f"The index at {self._path} has no knowledge graph; rebuild it with "
                "`graphseek index CORPUS --out DIR` (graphs are built unless --no-graph)."
            )
        # it opens every file it reads when made: made of this object's version, or not at all
        return self._read(
            lambda: DirectoryNeighbourhood(
                self._path / GRAPH_DIR,
                revision=self.revision,
                source=str(self._path),
                dim=int(self._manifest["embedder"]["dim"]),
            )
        )

    def open_graph_store(self) -> SQLiteGraphStore:
        """A new `SQLiteGraphStore` on this index's graph (the caller closes it);
        `IndexNotFoundError` when the index has none, or an incomplete one."""
        directory = self._path / GRAPH_DIR
        if not directory.exists():
            raise IndexNotFoundError(
                f"The index at {self._path} has no knowledge graph; rebuild it with "
                "`graphseek index CORPUS --out DIR` (graphs are built unless --no-graph) or "
                "`Index.build(..., graph=True)`."
            )
        from graphseek.knowledge.graph import SQLiteGraphStore

        try:
            return self._read(lambda: SQLiteGraphStore.open(directory))
        except IndexNotFoundError as exc:
            raise IndexNotFoundError(
                f"The index at {self._path} has no complete knowledge graph ({exc}); rebuild "
                "it with `graphseek index`."
            ) from exc

    def _store_graph(self, build: Callable[[Path], None]) -> dict[str, Any] | None:
        """Run `build` into the graph directory (it appears atomically), then rewrite the
        manifest; returns it."""
        with hold(self._path):
            build(self._path / GRAPH_DIR)
            files = recorded_files(self._manifest)
            if files is None:  # an index written before its files were recorded: all of them
                files = record_files(self._path, skip=(MANIFEST_FILE, GRAPH_DIR))
            files = {k: v for k, v in files.items() if not k.startswith(f"{GRAPH_DIR}/")}
            files.update(record_files(self._path, GRAPH_DIR))
            manifest = {**self._manifest, "graph": True, "revision": uuid.uuid4().hex,
                        INTEGRITY: integrity_record(files)}  # fmt: skip
            tmp = self._path / f".{MANIFEST_FILE}.{uuid.uuid4().hex[:8]}"
            _write_json(tmp, manifest)
            stamp = version_stamp(tmp)
            os.replace(tmp, self._path / MANIFEST_FILE)  # keeps the file's inode and time
        self._stamp = stamp
        return manifest

    # ---------------------------------------------------------------------------- updates

    def add_documents(
        self,
        passages: Iterable[Passage],
        *,
        show_progress: bool = False,
        batch_size: int = 64,
        graph_options: Mapping[str, Any] | None = None,
    ) -> Index:
        """Add passages (those whose id is new): only they are embedded, and, when the index
        has a graph, only they are extracted and aligned against the existing entities.
        The directory is rewritten atomically and this object updated; returns it."""
        items = list(passages)
        if items:
            check_passages(items)
        _check_unchanged(self._path, self._manifest)  # fail fast; again under the lock
        new = [p for p in items if p.id not in self]
        if not new:
            return self
        update = GraphAddition(new, graph_options, show_progress)

        def all_vectors() -> np.ndarray:
            vectors = update.vectors(self._encoder, batch_size)
            return np.vstack([np.asarray(self.embeddings), vectors]).astype(np.float32)

        return self._rewrite(self._passages + new, all_vectors, update, show_progress, grows=True)

    def delete_documents(self, passage_ids: Iterable[str], *, show_progress: bool = False) -> Index:
        """Remove passages by id, and from the graph every entity, relation and hyperedge only
        they supported. Unknown ids raise `KeyError`. Rewrites the directory atomically and
        updates this object (no search, graph or retriever built on it sees a deleted passage
        again); returns it."""
        _check_unchanged(self._path, self._manifest)  # fail fast; again under the lock
        drop = set(passage_ids)
        keep = self._kept_positions(drop)
        if keep is None:
            return self
        vectors = np.asarray(self.embeddings)[keep]

        def update_graph(graph_dir: Path, out_dir: Path | None = None) -> None:
            delete_from_graph(graph_dir, drop, show_progress, out_dir)

        items = [self._passages[i] for i in keep]
        return self._rewrite(items, lambda: vectors, update_graph, show_progress)

    def _rewrite(
        self,
        items: list[Passage],
        vectors: Callable[[], np.ndarray],
        update_graph: Any,
        show_progress: bool,
        grows: bool = False,
    ) -> Index:
        """Write `items` into a new directory and swap it in; the graph is updated first
        (`update_graph(graph_dir, out_dir)`: the index's graph read, the new one written into
        the new directory), then `vectors()` gives every row (it may use the graph's pass).
        `grows`: `items` are this index's passages and then new ones (`_write_stores` reuses
        what it can of this index's files)."""
        check_passages(items)
        started = time.perf_counter()
        target = self._path
        with atomic_directory(target) as tmp:
            _check_unchanged(target, self._manifest)
            # an add that takes the exact dense index past the HNSW threshold begins the graph
            # of the stored rows now, while the graph update and the new vectors are computed
            early = None
            if grows and _reusable(target, len(items)):
                early = early_graph(target / DENSE_DIR, len(items))
            try:
                if self.has_graph:  # read from the index, written into the new directory
                    update_graph(target / GRAPH_DIR, tmp / GRAPH_DIR)
                graph_files = _record_graph(tmp)
                try:
                    bm25, dense, encoder = _write_stores(
                        items,
                        tmp,
                        show_progress,
                        64,
                        vectors=vectors(),
                        encoder=self._encoder,
                        grown_from=target if grows else None,
                        early=early,
                    )
                finally:
                    graph_files.wait()
            finally:
                if early is not None:  # a failed add waits for it under the lock
                    early.settle()
            manifest = _manifest(
                items,
                bm25,
                encoder,
                str(self._manifest.get("source", "")),
                time.perf_counter() - started,
                tmp,
                graph_files.result(),
            )
            _write_json(tmp / MANIFEST_FILE, manifest)
            stamp = version_stamp(tmp)  # a rename keeps the manifest's inode and time
        # this object is the updated index from now on: a caller who keeps using it (as in
        # `index.delete_documents(ids)`, result ignored) must not see the old passages
        self._take_state(manifest, items)
        self._stamp = stamp
        self.__dict__.update(_bm25=bm25, _dense=dense, _encoder=encoder)
        return self

    def sync(self) -> Index:
        """This index (a directory index is not changed under an open object: a writer swaps in
        a new directory, which `Index.open` reads)."""
        return self

    @property
    def embeddings(self) -> np.ndarray:
        """Passage embeddings, shape (len(index), dim), float32, L2-normalised (read-only)."""
        return self._dense.embeddings

    # ------------------------------------------------------------------------ lazy stores

    @cached_property
    def _bm25(self) -> BM25Index:
        try:
            bm25 = self._read(lambda: BM25Index.load(self._path / BM25_DIR))
        except IndexChangedError:
            raise
        except Exception as exc:
            raise IndexFormatError(
                f"Cannot load the BM25 index under {self._path / BM25_DIR}: {exc}; "
                f"{rebuild_hint(self._path, self._manifest)}."
            ) from exc
        if len(bm25) != len(self):
            raise IndexFormatError(
                f"BM25 index under {self._path} has {len(bm25)} documents for {len(self)} "
                "passages; rebuild it."
            )
        return bm25

    def lexical_ranker(self) -> BM25Index:
        """The index's BM25 ranker (bm25s over the passages, in corpus order; loaded on first
        use): for what `search` does not give, a term's document frequency or the scores of a
        few passages (`graphseek.tools.doc_hop`)."""
        return self._bm25

    @cached_property
    def _dense(self) -> DenseIndex:
        try:
            dense = self._read(lambda: DenseIndex.load(self._path / DENSE_DIR))
        except IndexChangedError:
            raise
        except Exception as exc:
            raise IndexFormatError(
                f"Cannot load the dense index under {self._path / DENSE_DIR}: {exc}; "
                f"{rebuild_hint(self._path, self._manifest)}."
            ) from exc
        if len(dense) != len(self) or dense.dim != self._manifest["embedder"]["dim"]:
            raise IndexFormatError(
                f"Dense index under {self._path} holds {len(dense)} vectors of dim {dense.dim} "
                f"for {len(self)} passages of dim {self._manifest['embedder']['dim']}; rebuild it."
            )
        return dense

    def _read(self, read: Callable[[], T]) -> T:
        """`read()` of this object's version of the files: `IndexChangedError` when a writer
        swapped another version into the directory before or while they were read (a file of
        one version is never read with the manifest and passages of another)."""
        if version_stamp(self._path) == self._stamp:
            try:
                value = read()
            except Exception:
                if version_stamp(self._path) == self._stamp:
                    raise
            else:
                if version_stamp(self._path) == self._stamp:
                    return value
        raise IndexChangedError(
            f"The index at {self._path} was rewritten (graphseek add, remove or index) after "
            "it was opened; open it again to read the new version."
        )

    # ---------------------------------------------------------------------------- search

    def dense_search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The (position, cosine) pairs of the `k` passages nearest to one query vector, best
        first, ties by position: exact, over the embeddings held in memory (the graph
        retrievers' passage similarity; PostgreSQL answers it from pgvector)."""
        scores = np.asarray(self.embeddings @ query_vector, dtype=np.float32)
        return [(i, float(scores[i])) for i in top_positions(scores, k, positive=False)]


# ---------------------------------------------------------------------------------- helpers


def _check_target(target: Path) -> None:
    """Refuse to replace anything that is not an index (or an empty directory)."""
    if target.exists() and not target.is_dir():
        raise IndexFormatError(
            f"Cannot build an index at {target}: it exists and is not a directory."
        )
    if target.is_dir() and not (target / MANIFEST_FILE).is_file() and any(target.iterdir()):
        raise IndexFormatError(
            f"Cannot build an index at {target}: the directory is not empty and holds no "
            f"{MANIFEST_FILE}, so it is not a graphseek index; choose another path."
        )


def _write_stores(
    items: Sequence[Passage],
    directory: Path,
    show_progress: bool,
    batch_size: int,
    *,
    vectors: Rows | None = None,
    encoder: TextEncoder | None = None,
    grown_from: Path | None = None,
    early: EarlyGraph | None = None,
) -> tuple[BM25Index, DenseIndex, TextEncoder]:
    """Write passages, BM25 and dense stores; `vectors` (row i = items[i]) skips embedding.
    `grown_from`: the index directory these stores replace, whose passages are the first of
    `items` (an add): its passage file is copied and the new lines appended, its texts are not
    tokenized again, and its HNSW graph gets only the new vectors (`early`: that graph begun
    on a thread, `dense.early_graph`)."""
    kept = 0 if grown_from is None else _reusable(grown_from, len(items))
    base = grown_from if kept else None
    if base is not None:
        shutil.copyfile(base / PASSAGES_FILE, directory / PASSAGES_FILE)
    with open(directory / PASSAGES_FILE, "a" if kept else "w", encoding="utf-8") as f:
        for p in items[kept:] if kept else items:  # (a spooled corpus: read in blocks)
            f.write(json.dumps(p.model_dump(), ensure_ascii=False) + "\n")
    bm25 = BM25Index.build(
        Contents(items),  # read as tokenized (a spooled corpus: in blocks), not held
        show_progress=show_progress,
        grown_from=None if base is None else base / BM25_DIR,
        **BM25_PARAMS,
    )
    bm25.save(directory / BM25_DIR)
    encoder = encoder or embedders.embedder_for(None)
    vectors = passage_vectors(encoder, items, vectors, batch_size, show_progress)
    dense = DenseIndex.build(
        vectors,
        grown_from=None if base is None else base / DENSE_DIR,
        early=None if base is None else early,
    )
    dense.save(directory / DENSE_DIR)
    return bm25, dense, encoder


class Contents(Sequence[str]):
    """The texts of `passages` as a sequence, read from them when asked: iterating a spooled
    corpus's reads it in blocks, so no list of every text is held while BM25 tokenizes them."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self._passages = passages

    def __len__(self) -> int:
        return len(self._passages)

    @overload
    def __getitem__(self, k: int) -> str: ...

    @overload
    def __getitem__(self, k: slice) -> list[str]: ...

    def __getitem__(self, k: int | slice) -> str | list[str]:
        if isinstance(k, slice):
            return [p.content for p in self._passages[k]]
        return self._passages[k].content

    def __iter__(self) -> Iterator[str]:
        return (p.content for p in self._passages)


def _reusable(directory: Path, count: int) -> int:
    """How many passages of the index in `directory` an add's `_write_stores` reuses: all of
    them when it has a passage file and at most `count` passages, else 0."""
    try:
        kept = int(BM25Index.read_params(directory / BM25_DIR).get("num_docs", -1))
    except (OSError, ValueError):
        return 0
    return kept if (directory / PASSAGES_FILE).is_file() and 0 < kept <= count else 0


def _record_graph(directory: Path) -> Background[dict[str, dict[str, Any]]]:
    """The records (`record_files`) of the graph just written into `directory` (none without
    one), made on a thread while the passage stores are written: hashing a large graph takes
    seconds, mostly outside the GIL."""
    return Background(lambda: record_files(directory, GRAPH_DIR))


def _manifest(
    items: Sequence[Passage],
    bm25: BM25Index,
    encoder: TextEncoder,
    source: str,
    seconds: float,
    directory: Path,
    graph_files: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """The manifest of the index written into `directory`, with the records of its files
    (`graph_files`: its graph's, made already)."""
    import faiss

    files = record_files(directory, skip=(MANIFEST_FILE, GRAPH_DIR))
    return manifest_record(
        items,
        encoder,
        source,
        seconds,
        bm25=bm25.params,
        dense={
            "implementation": "faiss",
            "version": faiss.__version__,
            "index": "IndexHNSWFlat" if len(items) > HNSW_THRESHOLD else "IndexFlatIP",
            "metric": "inner_product",
        },
        files={"passages": PASSAGES_FILE, "bm25": BM25_DIR, "dense": DENSE_DIR},
        graph=(directory / GRAPH_DIR / "manifest.json").is_file(),
    ) | {INTEGRITY: integrity_record({**files, **graph_files})}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexFormatError(
            f"Malformed index manifest {path}: {exc}; {rebuild_hint(path.parent)}."
        ) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise IndexFormatError(
            f"{path} is not a graphseek index manifest; {rebuild_hint(path.parent)}."
        )
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexFormatError(
            f"Index format version {version!r} in {path} is not supported (this graphseek reads "
            f"version {FORMAT_VERSION}); rebuild the index with `graphseek index`."
        )
    try:
        count = manifest["counts"]["passages"]
        name, dim = manifest["embedder"]["name"], manifest["embedder"]["dim"]
    except (KeyError, TypeError) as exc:
        raise IndexFormatError(
            f"Malformed index manifest {path}: missing {exc}; {rebuild_hint(path.parent)}."
        ) from exc
    if not isinstance(count, int) or not isinstance(name, str) or not isinstance(dim, int):
        raise IndexFormatError(
            f"Malformed index manifest {path}: bad counts or embedder fields; "
            f"{rebuild_hint(path.parent)}."
        )
    return manifest


def _check_unchanged(target: Path, manifest: Mapping[str, Any]) -> None:
    """Under the index's lock: the index on disk is still the revision this object read, so an
    update written from it drops nothing another writer added or removed in between."""
    on_disk = _read_manifest(target / MANIFEST_FILE).get("revision")
    if on_disk != manifest.get("revision"):
        raise IndexBusyError(
            f"The index at {target} was changed by another writer after it was opened; "
            "open it again and retry."
        )


def select_passages(
    passages: Iterable[Passage],
    *,
    sources: Iterable[str] = (),
    titles: Iterable[str] = (),
    ids: Iterable[str] = (),
) -> list[Passage]:
    """The passages (in index order) of the documents named by source (the file, or any file
    under the folder, as the corpus was read: the same string, or the same path from here), by
    title, or by passage id. Every name must match a passage: else `InvalidRequestError` naming
    the closest known ones (the input of `delete_documents`, `graphseek remove`)."""
    from graphseek.state.validation import check_name

    passages = list(passages)
    chosen: set[str] = set()
    for source in sources:
        found = {p.id for p in passages if _source_matches(p.source, source)}
        if not found:
            check_name("document source", source, dict.fromkeys(p.source for p in passages),
                       plural="sources")  # fmt: skip
        chosen |= found
    for title in titles:
        found = {p.id for p in passages if p.title == title}
        if not found:
            check_name("document title", title, dict.fromkeys(p.title for p in passages),
                       plural="titles")  # fmt: skip
        chosen |= found
    for pid in ids:
        check_name("passage id", pid, [p.id for p in passages], plural="ids")
        chosen.add(pid)
    return [p for p in passages if p.id in chosen]


def _source_matches(source: str, wanted: str) -> bool:
    """`source` (a passage's) is `wanted` (a file or a folder above it), as a string or as a
    path resolved against the working directory."""
    if not source or not wanted:
        return False
    if source == wanted:
        return True
    have = Path(os.path.abspath(os.path.expanduser(source)))
    want = Path(os.path.abspath(os.path.expanduser(wanted)))
    return have == want or want in have.parents


def _read_passages(path: Path, hint: str = "rebuild the index") -> list[Passage]:
    """The passages of an index's passage file; `IndexFormatError` (one line, ending with
    `hint`) if it is missing or a line is not a passage."""
    if not path.is_file():
        raise IndexFormatError(f"Index file {path} is missing; {hint}.")
    passages = []
    try:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                try:
                    passages.append(Passage.model_validate_json(line))
                except ValueError as exc:
                    problem = " ".join(str(exc).split())
                    raise IndexFormatError(
                        f"Index file {path} is damaged: line {lineno} is not a passage "
                        f"({problem[:200]}); {hint}."
                    ) from exc
    except UnicodeDecodeError as exc:
        raise IndexFormatError(f"Index file {path} is damaged: not UTF-8 ({exc}); {hint}.") from exc
    return passages


# the names callers import from here: this module's, and the shared ones it re-exports
# (`graphseek.knowledge.index_build`, `graphseek.knowledge.index_common`)
__all__ = [
    "BM25_DIR",
    "BM25_PARAMS",
    "DENSE_DIR",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "GRAPH_DIR",
    "HYBRID_WEIGHTS",
    "MANIFEST_FILE",
    "PASSAGES_FILE",
    "RESERVED_NAMES",
    "RRF_K",
    "SEARCH_METHODS",
    "Contents",
    "GraphAddition",
    "Index",
    "SearchMethod",
    "check_graph_options",
    "check_passages",
    "corpus_vectors",
    "delete_from_graph",
    "hybrid_depth",
    "manifest_record",
    "prepare_build",
    "read_passages",
    "resolve_embedder",
    "select_passages",
    "version_stamp",
]
