"""`PostgresIndex`: the index (`IndexStore`) kept in one schema of a PostgreSQL database.

Both backends implement `graphseek.knowledge.storage.IndexStore`: passages in corpus order with
their embeddings, a BM25 ranking over them, dense search, the knowledge graph (`GraphStore`), a
manifest with a revision, and atomic `build` / `add_documents` / `delete_documents`. The
directory backend keeps them in files; this one keeps them in tables (see
`graphseek.knowledge.postgres.schema`; reading and writing them:
`graphseek.knowledge.postgres.tables`; connections: `graphseek.knowledge.postgres.connection`):

- passages and their vectors in ``passages`` (pgvector, HNSW ``vector_cosine_ops``). Dense
  search is a pgvector query (`graphseek.knowledge.postgres.dense`), exact (sequential scan) up to `HNSW_THRESHOLD` passages and HNSW
  (``hnsw.ef_search`` = `HNSW_EF_SEARCH`) above, the same policy as the directory backend's FAISS
  index, so both return the same top-k.
- BM25: bm25s in the process, loaded on first use from the postings every write stores
  (``bm25_files``: the saved bm25s index, same tokenizer and parameters as a directory build,
  so the same scores), or built from the passages when there are none. `benchmarks/
  postgres_store.py` measures it against Postgres full text (tsvector + GIN, ``ts_rank_cd``):
  slower per query and a lower Recall@5 on 2Wiki (see the README), so the lexical channel
  stays bm25s.
- the knowledge graph in tables (`graphseek.knowledge.postgres.graph`); graph retrievers load
  it into a `GraphView` once per revision, as they do from a directory.

Consistency. Every write (`build`, `add_documents`, `delete_documents`, `ensure_graph`) is one
transaction that takes ``pg_advisory_xact_lock`` on the index first, so writers are serialised
and a killed writer leaves nothing behind; it ends by storing a new ``revision``. Readers load
the passages and the manifest (and the embeddings, the graph) each in one REPEATABLE READ
snapshot; a search first compares the stored revision with its own and reloads when another
writer has committed, and dense queries run in a snapshot that checks the revision again, so a
query never mixes two revisions.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from graphseek.errors import IndexBusyError, IndexNotFoundError, InvalidRequestError
from graphseek.knowledge.atomic import scratch_directory
from graphseek.knowledge.dense import TextEncoder
from graphseek.knowledge.index_build import (
    GRAPH_DIR,
    GraphAddition,
    check_passages,
    corpus_vectors,
    delete_from_graph,
    prepare_build,
)
from graphseek.knowledge.index_common import BM25_PARAMS, IndexCommon, SearchMethod
from graphseek.knowledge.passages import Hit, Passage
from graphseek.knowledge.postgres.connection import (
    close_pools,
    configure,
    connect,
    ensure_vector_extension,
    lock_index,
    read_meta,
    reconnecting,
    shared_pool,
    snapshot,
    write_errors,
    write_meta,
)
from graphseek.knowledge.postgres.dense import PgDenseIndex, Stale
from graphseek.knowledge.postgres.graph import as_array
from graphseek.knowledge.postgres.schema import SCHEMA_VERSION, current_version
from graphseek.knowledge.postgres.tables import (
    EmbedderName,
    insert_passages,
    load_bm25,
    postgres_manifest,
    read_state,
    schema_query,
    store_bm25,
    upgrade,
    write_all,
)
from graphseek.knowledge.postgres.uri import PostgresLocation, parse_postgres_uri
from graphseek.knowledge.sharded import sharding_for
from graphseek.knowledge.sparse import BM25Index
from graphseek.knowledge.storage import check_graph_reads

if TYPE_CHECKING:
    from graphseek.knowledge.postgres.graph import PostgresGraphStore
    from graphseek.knowledge.postgres.neighbourhood import PostgresNeighbourhood

logger = logging.getLogger(__name__)

#: searches retried when another writer commits in between
RETRIES = 3

_T = TypeVar("_T")

__all__ = ["PostgresIndex", "close_pools"]


class PostgresIndex(IndexCommon):
    """An index stored in one schema of a PostgreSQL database (see the module docstring): the
    `IndexStore` protocol over tables. What it shares with the directory backend (lookups,
    search, the embedder, `ensure_graph`) is `IndexCommon`'s; the tables are its own.

    Open with `Index.open(uri)` / `PostgresIndex.open(uri)`, build with `Index.build(corpus,
    uri)`, copy a directory index with `PostgresIndex.from_directory(path, uri)`. Thread-safe
    for searching; `close()` releases the connection pool."""

    #: the graph retrievers read the tables one neighbourhood at a time (`graph_neighbourhood`)
    default_graph_reads = "neighbourhood"

    def __init__(
        self,
        location: PostgresLocation,
        pool: Any,
        manifest: dict[str, Any],
        ords: list[int],
        passages: list[Passage],
    ) -> None:
        self._graph_reads = self.default_graph_reads
        self._manifest = manifest
        self._passages = passages
        self._location = location
        self._pool_ref = pool
        self._state_lock = threading.RLock()
        self._set_ords(ords)
        self._embeddings: np.ndarray | None = None

    @property
    def _pool(self) -> Any:
        """The process's shared pool for this index's database and schema, taken again when
        `close_pools` closed the one the index opened with (reads then work at once)."""
        if self._pool_ref.closed:
            self._pool_ref = shared_pool(self._location)
        return self._pool_ref

    def _set_ords(self, ords: list[int]) -> None:
        self._ords = ords
        self._position_of_ord = {o: i for i, o in enumerate(ords)}

    # ----------------------------------------------------------------------------- opening

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: str | TextEncoder | None = None,
        graph_reads: str | None = None,
    ) -> PostgresIndex:
        """Open the index at the URI `path`: reads the manifest and passages in one snapshot.
        `embedder`: as for `Index.open` (default: the recorded one). Its graph is read one
        neighbourhood at a time (`graph_reads` None or ``"neighbourhood"``)."""
        if graph_reads is not None and check_graph_reads(graph_reads) != cls.default_graph_reads:
            raise InvalidRequestError(
                f"graph_reads={graph_reads!r} is for a directory index; a PostgreSQL index reads "
                "its graph one neighbourhood at a time (graph_reads='neighbourhood')."
            )
        location = parse_postgres_uri(str(path))
        # fail fast with one clear line when the server is not there (the pool would retry)
        with connect(location, autocommit=True) as conn:
            version = current_version(conn.cursor(), location.schema)
            if version is not None and version < SCHEMA_VERSION:
                upgrade(location)
            with snapshot(conn):
                read_state(conn, location)
        pool = shared_pool(location)
        with pool.connection() as conn, snapshot(conn):
            manifest, ords, passages = read_state(conn, location)
        index = cls(location, pool, manifest, ords, passages)
        if embedder is not None:
            index.use_embedder(embedder)
        return index

    def close(self) -> None:
        """Close the graph store (the connection pool is shared: `close_pools`)."""
        self._close_graph()

    def __enter__(self) -> PostgresIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def location(self) -> PostgresLocation:
        return self._location

    @property
    def uri(self) -> str:
        """The index URI without a password."""
        return self._location.display

    @property
    def path(self) -> str:
        """The index URI (without a password); not a filesystem path."""
        return self._location.display

    @property
    def location_text(self) -> str:
        """Where this index lives, as messages name it: its URI without the password."""
        return self._location.display

    def __repr__(self) -> str:
        return f"PostgresIndex({self._location.display!r}, passages={len(self)})"

    # ---------------------------------------------------------------------------- building

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
    ) -> PostgresIndex:
        """Index `passages` (or a corpus file/folder) into the schema named by the URI `path`,
        replacing an index already there in one transaction (readers see the old one until it
        commits). Refuses a schema that holds tables but no graphseek index. `embedder`: as
        for `Index.build` (recorded in the manifest); `workers`, `scheduler`: the sharded
        build, as for `Index.build`."""
        location = parse_postgres_uri(str(path))
        sharding = sharding_for(workers, scheduler)
        encoder, items, source = prepare_build(
            passages,
            embedder,
            graph=graph,
            graph_options=graph_options,
            show_progress=show_progress,
        )
        # connect before the long work: a wrong URI fails at once
        ensure_vector_extension(location)
        started = time.perf_counter()
        with scratch_directory("graphseek-pg-") as tmp:
            graph_dir = Path(tmp) / GRAPH_DIR if graph else None
            rows = corpus_vectors(
                encoder,
                items,
                graph_dir,
                graph_options,
                batch_size=batch_size,
                show_progress=show_progress,
                sharding=sharding,
            )
            vectors = np.asarray(rows, dtype=np.float32)  # (the graph's: read from their file)
            del rows
            manifest = postgres_manifest(
                items, encoder, source, time.perf_counter() - started, graph, location
            )
            write_all(location, items, vectors, graph_dir, manifest)
        logger.info(
            "Indexed %d passages into %s in %.1f s",
            len(items),
            location.display,
            time.perf_counter() - started,
        )
        index = cls.open(location.conninfo + schema_query(location))
        index.__dict__["_encoder"] = encoder
        index._embeddings = np.asarray(vectors, dtype=np.float32)
        return index

    @classmethod
    def from_directory(cls, directory: str | Path, uri: str) -> PostgresIndex:
        """Copy the directory index at `directory` (passages, vectors, graph) into the schema
        named by `uri`, nothing re-embedded; replaces an index already there atomically."""
        from graphseek.knowledge.index import Index

        source = Index.open(directory)
        if not isinstance(source, Index):
            raise ValueError(
                f"The index at {source.location_text} is not a directory index; "
                "from_directory copies one."
            )
        location = parse_postgres_uri(uri)
        ensure_vector_extension(location)
        graph_dir = source.dir_for(GRAPH_DIR) if source.has_graph else None
        manifest = postgres_manifest(
            source.passages,
            EmbedderName(source.manifest["embedder"]),
            str(source.manifest.get("source", "")),
            float(source.manifest.get("build_seconds", 0.0)),
            graph_dir is not None,
            location,
        )
        write_all(location, source.passages, np.asarray(source.embeddings), graph_dir, manifest)
        return cls.open(uri)

    # ------------------------------------------------------------------------------- state

    @property
    def embeddings(self) -> np.ndarray:
        """Passage embeddings, shape (len(index), dim), float32 (read from the table on first
        use, in a snapshot of this object's revision)."""
        with self._state_lock:
            if self._embeddings is None:

                def read() -> list[Any]:
                    with self._pool.connection() as conn, snapshot(conn):
                        if read_meta(conn, "revision") != self.revision:
                            self._reload(conn)
                        return conn.execute(  # type: ignore[no-any-return]
                            "SELECT embedding FROM passages ORDER BY ord"
                        ).fetchall()

                rows = reconnecting(self._location, read)
                dim = int(self._manifest["embedder"]["dim"])
                matrix = np.zeros((len(rows), dim), dtype=np.float32)
                for i, (v,) in enumerate(rows):
                    matrix[i] = as_array(v)
                matrix.setflags(write=False)
                self._embeddings = matrix
            return self._embeddings

    def _reload(self, conn: Any) -> None:
        """Take the stored state (inside the caller's snapshot or lock) as this object's."""
        with self._state_lock:
            manifest, ords, passages = read_state(conn, self._location)
            self._take_state(manifest, passages)
            self._set_ords(ords)
            self._embeddings = None
            self.__dict__.pop("_bm25", None)

    def sync(self) -> PostgresIndex:
        """Reload when another writer has committed since this object last read the index."""

        def read() -> None:
            with self._pool.connection() as conn, snapshot(conn):
                if read_meta(conn, "revision") != self.revision:
                    self._reload(conn)

        reconnecting(self._location, read)
        return self

    @cached_property
    def _bm25(self) -> BM25Index:
        """bm25s over the passages: loaded from the stored postings (``bm25_files``) of this
        object's revision, or built from the passages when the index has none (migrated from
        schema v2 and not written since)."""

        def read() -> list[Any]:
            with self._pool.connection() as conn, snapshot(conn):
                if read_meta(conn, "revision") != self.revision:
                    raise Stale
                return conn.execute("SELECT name, data FROM bm25_files").fetchall()  # type: ignore[no-any-return]

        files = reconnecting(self._location, read)
        if files:
            return load_bm25(files)
        return BM25Index.build([p.content for p in self._passages], **BM25_PARAMS)

    def lexical_ranker(self) -> BM25Index:
        """The index's BM25 ranker (bm25s over this object's revision of the passages, in
        corpus order: its stored postings, loaded on first use; reloaded with the index when
        another writer committed meanwhile): for what `search` does not give, a term's document
        frequency or the scores of a few passages (`graphseek.tools.doc_hop`)."""
        return self._fresh(lambda: self._bm25)

    @cached_property
    def _dense(self) -> PgDenseIndex:
        return PgDenseIndex(self)

    def search_many(
        self, queries: Sequence[str], k: int = 5, method: SearchMethod = "hybrid"
    ) -> list[list[Hit]]:
        """`IndexCommon.search_many`, against one revision of the stored index (reloaded first
        when another writer has committed)."""
        if method == "bm25":  # no pgvector query (which checks the revision): check it here
            self.sync()
        return self._fresh(lambda: super(PostgresIndex, self).search_many(queries, k, method))

    def dense_search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The (position, cosine) pairs of the `k` passages nearest to one query vector, from
        pgvector (the graph retrievers' passage similarity, without loading the embeddings)."""
        return self._fresh(lambda: self._dense.search(np.asarray(query_vector)[None, :], k)[0])

    def _fresh(self, read: Callable[[], _T]) -> _T:
        """`read()` against one revision: when another writer committed during it (`Stale`),
        take the new revision and read again, at most `RETRIES` times."""
        for _ in range(RETRIES):
            try:
                return read()
            except Stale:
                self.sync()
        raise IndexBusyError(
            f"The index at {self._location.display} changed during {RETRIES} searches in a row; "
            "retry."
        )

    # ------------------------------------------------------------------------------- graph

    @property
    def has_graph(self) -> bool:
        return bool(self._manifest.get("graph"))

    def open_graph_store(self) -> PostgresGraphStore:
        """A `PostgresGraphStore` on its own connection, reading this object's revision."""
        from graphseek.knowledge.postgres.graph import PostgresGraphStore

        if not self.has_graph:
            raise IndexNotFoundError(
                f"The index at {self._location.display} has no knowledge graph; rebuild it with "
                "`graphseek index CORPUS --out URI` (graphs are built unless --no-graph)."
            )

        def opened() -> Any:  # (waits while the server is unreachable, as reads do)
            conn = connect(self._location, retry=True, autocommit=True)
            configure(conn)
            return conn

        def read() -> tuple[Any, dict[str, Any]]:
            conn = opened()
            try:
                if read_meta(conn, "revision") != self.revision:
                    raise IndexBusyError(
                        f"The index at {self._location.display} was rewritten after it was "
                        "opened; call sync() or open it again."
                    )
                return conn, read_meta(conn, "graph_manifest") or {}
            except BaseException:
                conn.close()
                raise

        conn, manifest = reconnecting(self._location, read)
        return PostgresGraphStore(
            conn,
            manifest,
            dim=int(self._manifest["embedder"]["dim"]),
            source=self._location.display,
            owns_connection=True,
            revision=self.revision,
            reconnect=opened,
        )

    def graph_neighbourhood(self) -> PostgresNeighbourhood:
        """The graph read one neighbourhood at a time (`PostgresNeighbourhood`, this object's
        revision): what the graph retrievers use instead of loading the graph."""
        from graphseek.knowledge.postgres.neighbourhood import PostgresNeighbourhood

        if not self.has_graph:
            raise IndexNotFoundError(
                f"The index at {self._location.display} has no knowledge graph; rebuild it with "
                "`graphseek index CORPUS --out URI` (graphs are built unless --no-graph)."
            )
        return PostgresNeighbourhood(self)

    def _store_graph(self, build: Callable[[Path], None]) -> dict[str, Any] | None:
        """One transaction: `build` into a temporary directory, the graph imported into the
        tables, the manifest rewritten; None when another writer stored a graph first."""
        with self._writing() as conn, scratch_directory("graphseek-pg-") as tmp:
            if self.has_graph:
                return None
            graph_dir = Path(tmp) / GRAPH_DIR
            build(graph_dir)
            from graphseek.knowledge.postgres.graph import delete_graph, import_graph

            delete_graph(conn.cursor())
            import_graph(conn.cursor(), graph_dir, [p.id for p in self._passages])
            manifest = {**self._manifest, "graph": True, "revision": uuid.uuid4().hex}
            write_meta(conn, "manifest", manifest)
            write_meta(conn, "revision", manifest["revision"])
        return manifest

    # ----------------------------------------------------------------------------- updates

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """One write transaction under the index's advisory lock, this object brought up to
        the stored revision first. A connection the server drops during it (a restart) ends
        the write in one line (`write_errors`): the transaction did not commit."""
        with write_errors(self._location), self._pool.connection() as conn, conn.transaction():
            lock_index(conn, self._location)
            if read_meta(conn, "revision") != self.revision:
                self._reload(conn)
            yield conn

    def _update_graph(self, conn: Any, change: Any, passage_ids: list[str]) -> None:
        """Export the graph, apply `change(graph_dir)`, import the result (same transaction)."""
        from graphseek.knowledge.postgres.graph import (
            PostgresGraphStore,
            delete_graph,
            export_graph,
            import_graph,
        )

        store = PostgresGraphStore(
            conn,
            read_meta(conn, "graph_manifest") or {},
            dim=int(self._manifest["embedder"]["dim"]),
        )
        with scratch_directory("graphseek-pg-") as tmp:
            graph_dir = export_graph(store, Path(tmp) / GRAPH_DIR)
            change(graph_dir)
            delete_graph(conn.cursor())
            import_graph(conn.cursor(), graph_dir, passage_ids)

    def _commit_state(
        self, conn: Any, items: list[Passage], ords: list[int], seconds: float
    ) -> dict[str, Any]:
        self.__dict__["_pending_bm25"] = store_bm25(conn, items)
        manifest = postgres_manifest(
            items,
            self._encoder,
            str(self._manifest.get("source", "")),
            seconds,
            self.has_graph,
            self._location,
        )
        manifest["created"] = self._manifest.get("created", manifest["created"])
        manifest["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        write_meta(conn, "manifest", manifest)
        write_meta(conn, "revision", manifest["revision"])
        return manifest

    def _adopt(
        self,
        manifest: dict[str, Any],
        items: list[Passage],
        ords: list[int],
        vectors: np.ndarray | None,
    ) -> None:
        with self._state_lock:
            self._take_state(manifest, items)
            self._set_ords(ords)
            self._embeddings = vectors
            if vectors is not None:
                vectors.setflags(write=False)
            self.__dict__.pop("_bm25", None)
            bm25 = self.__dict__.pop("_pending_bm25", None)
            if bm25 is not None:
                self.__dict__["_bm25"] = bm25

    def add_documents(
        self,
        passages: Iterable[Passage],
        *,
        show_progress: bool = False,
        batch_size: int = 64,
        graph_options: Mapping[str, Any] | None = None,
    ) -> PostgresIndex:
        """Add passages whose id is new, with their vectors and graph, in one transaction
        (writers serialised by the index's advisory lock). Returns this object, updated."""
        items = list(passages)
        if items:
            check_passages(items)
        started = time.perf_counter()
        with self._writing() as conn:
            new = [p for p in items if p.id not in self]
            if not new:
                return self
            start = (self._ords[-1] + 1) if self._ords else 0
            new_ords = list(range(start, start + len(new)))
            all_items = self._passages + new
            update = GraphAddition(new, graph_options, show_progress)
            if self.has_graph:  # first: the graph export must not hold the new passages yet
                self._update_graph(conn, update, [p.id for p in all_items])
            vectors = update.vectors(self._encoder, batch_size)
            insert_passages(conn, new_ords, new, vectors)
            ords = self._ords + new_ords
            old = self._embeddings
            manifest = self._commit_state(conn, all_items, ords, time.perf_counter() - started)
        merged = None if old is None else np.vstack([old, vectors]).astype(np.float32)
        self._adopt(manifest, all_items, ords, merged)
        return self

    def delete_documents(
        self, passage_ids: Iterable[str], *, show_progress: bool = False
    ) -> PostgresIndex:
        """Remove passages by id, and from the graph what only they supported, in one
        transaction. Unknown ids raise `KeyError`. Returns this object, updated."""
        drop = set(passage_ids)
        started = time.perf_counter()
        with self._writing() as conn:
            keep = self._kept_positions(drop)
            if keep is None:
                return self
            items = [self._passages[i] for i in keep]
            ords = [self._ords[i] for i in keep]
            if self.has_graph:  # first: the graph export must still hold the deleted passages

                def change(graph_dir: Path) -> None:
                    delete_from_graph(graph_dir, drop, show_progress)

                self._update_graph(conn, change, [p.id for p in items])
            conn.execute("DELETE FROM passages WHERE id = ANY(%s)", (sorted(drop),))
            old = self._embeddings
            manifest = self._commit_state(conn, items, ords, time.perf_counter() - started)
        kept = None if old is None else np.ascontiguousarray(old[keep])
        self._adopt(manifest, items, ords, kept)
        return self
