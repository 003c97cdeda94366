"""`PostgresIndex`: the `Index` API over one schema of a PostgreSQL database.

The storage protocol both backends implement is the one `Index` already implies: passages in
corpus order with their embeddings, a BM25 ranking over them, dense search, the knowledge graph
(`GraphStore`), a manifest with a revision, and atomic `build` / `add_documents` /
`delete_documents`. The directory backend keeps them in files; this one keeps them in tables
(see `graphseek.knowledge.postgres.schema`):

- passages and their vectors in ``passages`` (pgvector, HNSW ``vector_cosine_ops``). Dense
  search is a pgvector query, exact (sequential scan) up to `HNSW_THRESHOLD` passages and HNSW
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

import atexit
import logging
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.errors import CorpusError, IndexBusyError, IndexFormatError, IndexNotFoundError
from graphseek.knowledge import embedders
from graphseek.knowledge.dense import HNSW_EF_SEARCH, HNSW_THRESHOLD, TextEncoder
from graphseek.knowledge.index import (
    BM25_PARAMS,
    FORMAT_NAME,
    FORMAT_VERSION,
    GRAPH_DIR,
    RRF_K,
    Index,
    SearchMethod,
    _build_graph,
    _check_passages,
    check_graph_options,
    graph_pass_vectors,
    passage_vectors,
    read_passages,
    resolve_embedder,
)
from graphseek.knowledge.passages import Hit, Passage
from graphseek.knowledge.postgres.graph import as_array
from graphseek.knowledge.postgres.schema import (
    SCHEMA_VERSION,
    current_version,
    migrate,
    newer_than_code,
)
from graphseek.knowledge.postgres.uri import PostgresLocation, parse_postgres_uri
from graphseek.knowledge.sparse import BM25Index

logger = logging.getLogger(__name__)

POOL_MAX_SIZE = 16
_RETRIES = 3


class _Stale(Exception):
    """The stored revision is not the one this object holds (another writer committed)."""


# -- connections --------------------------------------------------------------------------------


def _connect_kwargs(location: PostgresLocation) -> dict[str, Any]:
    return {"options": f"-c search_path={location.schema},public"}


def connect(location: PostgresLocation, **kwargs: Any) -> Any:
    """A psycopg connection to the index's database, `search_path` = its schema then public."""
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise IndexNotFoundError(
            f"PostgreSQL indexes need the postgres extra ({exc.name} is missing): "
            "pip install 'graphseek[postgres]'."
        ) from exc

    try:
        return psycopg.connect(location.conninfo, **_connect_kwargs(location), **kwargs)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise IndexNotFoundError(f"Cannot connect to {location.display}: {first}") from exc


def ensure_vector_extension(location: PostgresLocation) -> None:
    """``CREATE EXTENSION IF NOT EXISTS vector`` (needs the right on a managed database)."""
    import psycopg

    with connect(location, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        except psycopg.errors.UniqueViolation:  # created by a concurrent builder
            pass
        except psycopg.Error as exc:
            raise IndexFormatError(
                f"The database at {location.display} lacks the pgvector extension and it could "
                f"not be created ({exc}); install pgvector or ask the database owner to run "
                "`CREATE EXTENSION vector`."
            ) from exc


def _configure(conn: Any) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


_pools: dict[PostgresLocation, Any] = {}
_pools_lock = threading.Lock()


def shared_pool(location: PostgresLocation) -> Any:
    """The process's connection pool for `location` (one per database and schema, shared by
    every `PostgresIndex` opened on it, closed at exit or by `close_pools`)."""
    with _pools_lock:
        pool = _pools.get(location)
        if pool is None or pool.closed:
            pool = _pools[location] = make_pool(location)
            if len(_pools) == 1:
                atexit.register(close_pools)
        return pool


def close_pools() -> None:
    """Close every pool `shared_pool` opened."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def make_pool(location: PostgresLocation, max_size: int = POOL_MAX_SIZE) -> Any:
    """A psycopg pool (autocommit connections with the pgvector types registered)."""
    from psycopg_pool import ConnectionPool

    return ConnectionPool(
        location.conninfo,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, **_connect_kwargs(location)},
        configure=_configure,
        open=True,
        name=f"graphseek-{location.schema}",
    )


@contextmanager
def _snapshot(conn: Any) -> Iterator[Any]:
    """A read-only REPEATABLE READ transaction on an autocommit connection."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield conn


def _lock(conn: Any, location: PostgresLocation) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (location.lock_key,))


def _meta(conn: Any, key: str) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
    return None if row is None else row[0]


def _set_meta(conn: Any, key: str, value: Any) -> None:
    from psycopg.types.json import Jsonb

    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, Jsonb(value)),
    )


def _schema_exists(conn: Any, schema: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
    ).fetchone()
    return row is not None


def _schema_tables(conn: Any, schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    ).fetchall()
    return sorted(r[0] for r in rows)


def _state_of(
    conn: Any, location: PostgresLocation
) -> tuple[dict[str, Any], list[int], list[Passage]]:
    """Manifest, passage ords and passages, read on `conn` (inside the caller's transaction)."""
    version = current_version(conn.cursor(), location.schema)
    hint = "build one with `graphseek index CORPUS --out URI`"
    if version is None:
        raise IndexNotFoundError(f"No index at {location.display}: {hint}.")
    if version > SCHEMA_VERSION:
        raise IndexFormatError(newer_than_code(location.schema, version))
    if version != SCHEMA_VERSION:
        raise IndexFormatError(
            f"The index at {location.display} has schema version {version}, this graphseek "
            f"reads version {SCHEMA_VERSION}; open it with `Index.open` to migrate it."
        )
    manifest = _meta(conn, "manifest")
    if not isinstance(manifest, dict):
        raise IndexNotFoundError(f"No complete index at {location.display}: {hint}.")
    if manifest.get("format") != FORMAT_NAME or manifest.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"The index at {location.display} has format {manifest.get('format')!r} version "
            f"{manifest.get('format_version')!r}; rebuild it with `graphseek index`."
        )
    rows = conn.execute("SELECT ord, id, title, text, source FROM passages ORDER BY ord").fetchall()
    ords = [int(r[0]) for r in rows]
    passages = [Passage(id=r[1], title=r[2], text=r[3], source=r[4]) for r in rows]
    expected = manifest["counts"]["passages"]
    if len(passages) != expected:
        raise IndexFormatError(
            f"Index at {location.display} is inconsistent: the manifest counts {expected} "
            f"passages, the table holds {len(passages)}; rebuild it."
        )
    return manifest, ords, passages


def _manifest(
    items: Sequence[Passage],
    encoder: TextEncoder,
    source: str,
    seconds: float,
    graph: bool,
    location: PostgresLocation,
) -> dict[str, Any]:
    from graphseek.version import __version__

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "backend": "postgres",
        "schema": location.schema,
        "schema_version": SCHEMA_VERSION,
        "graphseek_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source,
        "counts": {
            "passages": len(items),
            "titles": len({p.title for p in items}),
            "sources": len({p.source for p in items}),
        },
        "embedder": embedders.embedder_record(encoder),
        "bm25": {
            "implementation": "bm25s (postings stored in bm25_files, loaded in process)",
            **BM25_PARAMS,
        },
        "dense": {
            "implementation": "pgvector",
            "index": "hnsw (vector_cosine_ops)",
            "search": f"exact up to {HNSW_THRESHOLD} passages, HNSW above",
            "metric": "cosine",
        },
        "fusion": {"method": "rrf", "k": RRF_K, "depth": "max(4k, 20)"},
        "graph": graph,
        "build_seconds": round(seconds, 3),
        "revision": uuid.uuid4().hex,
    }


def _insert_passages(
    conn: Any, ords: Sequence[int], items: Sequence[Passage], vectors: np.ndarray
) -> None:
    with conn.cursor().copy(
        "COPY passages (ord, id, title, text, source, embedding) FROM STDIN"
    ) as copy:
        for o, p, v in zip(ords, items, vectors, strict=True):
            copy.write_row((o, p.id, p.title, p.text, p.source, v))


# -- dense search -------------------------------------------------------------------------------


class PgDenseIndex:
    """Dense search in pgvector for a `PostgresIndex` (what `Index` needs from `DenseIndex`)."""

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
        `_Stale` when the stored revision is not the index object's."""
        query_vectors = np.ascontiguousarray(query_vectors, dtype=np.float32)
        if query_vectors.ndim == 1:
            query_vectors = query_vectors[None, :]
        k = min(k, len(self))
        if k <= 0 or len(query_vectors) == 0:
            return [[] for _ in range(len(query_vectors))]
        index = self._index
        revision, position = index.revision, index._position_of_ord
        out = []
        with index._pool.connection() as conn, _snapshot(conn):
            if _meta(conn, "revision") != revision:
                raise _Stale
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


# -- the index ----------------------------------------------------------------------------------


class PostgresIndex(Index):
    """An `Index` stored in one schema of a PostgreSQL database (see the module docstring).

    Open with `Index.open(uri)` / `PostgresIndex.open(uri)`, build with `Index.build(corpus,
    uri)`, copy a directory index with `PostgresIndex.from_directory(path, uri)`. Thread-safe
    for searching; `close()` releases the connection pool."""

    def __init__(
        self,
        location: PostgresLocation,
        pool: Any,
        manifest: dict[str, Any],
        ords: list[int],
        passages: list[Passage],
    ) -> None:
        super().__init__(Path("."), manifest, passages)
        self._path = location.display  # type: ignore[assignment]
        self._location = location
        self._pool = pool
        self._state_lock = threading.RLock()
        self._set_ords(ords)
        self._embeddings: np.ndarray | None = None

    def _set_ords(self, ords: list[int]) -> None:
        self._ords = ords
        self._position_of_ord = {o: i for i, o in enumerate(ords)}

    # ----------------------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: str | Path, *, embedder: str | TextEncoder | None = None) -> PostgresIndex:
        """Open the index at the URI `path`: reads the manifest and passages in one snapshot.
        `embedder`: as for `Index.open` (default: the recorded one)."""
        location = parse_postgres_uri(str(path))
        # fail fast with one clear line when the server is not there (the pool would retry)
        with connect(location, autocommit=True) as conn:
            version = current_version(conn.cursor(), location.schema)
            if version is not None and version < SCHEMA_VERSION:
                upgrade(location)
            with _snapshot(conn):
                _state_of(conn, location)
        pool = shared_pool(location)
        with pool.connection() as conn, _snapshot(conn):
            manifest, ords, passages = _state_of(conn, location)
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
    def path(self) -> Path:
        """The index URI (without a password); not a filesystem path."""
        return self._location.display  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"PostgresIndex({self._location.display!r}, passages={len(self)})"

    def dir_for(self, name: str) -> Path:
        raise ValueError(
            f"The index at {self._location.display} is stored in PostgreSQL and has no "
            f"directories (asked for {name!r})."
        )

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
    ) -> PostgresIndex:
        """Index `passages` (or a corpus file/folder) into the schema named by the URI `path`,
        replacing an index already there in one transaction (readers see the old one until it
        commits). Refuses a schema that holds tables but no graphseek index. `embedder`: as
        for `Index.build` (recorded in the manifest)."""
        location = parse_postgres_uri(str(path))
        encoder = resolve_embedder(embedder)
        if graph:
            check_graph_options(encoder, graph_options)
        items, source = read_passages(passages, show_progress)
        # connect before the long work: a wrong URI fails at once
        ensure_vector_extension(location)
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="graphseek-pg-") as tmp:
            graph_dir = None
            computed = None
            if graph:  # first: its passage pass (contextual alignment) gives the vectors
                graph_dir = Path(tmp) / GRAPH_DIR
                computed = graph_pass_vectors(
                    encoder, _build_graph(items, graph_dir, show_progress, graph_options)
                )
            vectors = passage_vectors(encoder, items, computed, batch_size, show_progress)
            manifest = _manifest(
                items, encoder, source, time.perf_counter() - started, graph, location
            )
            _write_all(location, items, vectors, graph_dir, manifest)
        logger.info(
            "Indexed %d passages into %s in %.1f s",
            len(items),
            location.display,
            time.perf_counter() - started,
        )
        index = cls.open(location.conninfo + _schema_query(location))
        index.__dict__["_encoder"] = encoder
        index._embeddings = np.asarray(vectors, dtype=np.float32)
        return index

    @classmethod
    def from_directory(cls, directory: str | Path, uri: str) -> PostgresIndex:
        """Copy the directory index at `directory` (passages, vectors, graph) into the schema
        named by `uri`, nothing re-embedded; replaces an index already there atomically."""
        source = Index.open(directory)
        location = parse_postgres_uri(uri)
        ensure_vector_extension(location)
        graph_dir = source.dir_for(GRAPH_DIR) if source.has_graph else None
        manifest = _manifest(
            source.passages,
            _EmbedderName(source.manifest["embedder"]),
            str(source.manifest.get("source", "")),
            float(source.manifest.get("build_seconds", 0.0)),
            graph_dir is not None,
            location,
        )
        _write_all(location, source.passages, np.asarray(source.embeddings), graph_dir, manifest)
        return cls.open(uri)

    # ------------------------------------------------------------------------------- state

    @property
    def embeddings(self) -> np.ndarray:
        """Passage embeddings, shape (len(index), dim), float32 (read from the table on first
        use, in a snapshot of this object's revision)."""
        with self._state_lock:
            if self._embeddings is None:
                with self._pool.connection() as conn, _snapshot(conn):
                    if _meta(conn, "revision") != self.revision:
                        self._reload(conn)
                    rows = conn.execute("SELECT embedding FROM passages ORDER BY ord").fetchall()
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
            manifest, ords, passages = _state_of(conn, self._location)
            self._close_graph()
            self._manifest = manifest
            self._passages = passages
            self._by_id = {p.id: i for i, p in enumerate(passages)}
            self._set_ords(ords)
            self._embeddings = None
            self.__dict__.pop("_bm25", None)

    def sync(self) -> PostgresIndex:
        """Reload when another writer has committed since this object last read the index."""
        with self._pool.connection() as conn, _snapshot(conn):
            if _meta(conn, "revision") != self.revision:
                self._reload(conn)
        return self

    @cached_property
    def _bm25(self) -> BM25Index:
        """bm25s over the passages: loaded from the stored postings (``bm25_files``) of this
        object's revision, or built from the passages when the index has none (migrated from
        schema v2 and not written since)."""
        with self._pool.connection() as conn, _snapshot(conn):
            if _meta(conn, "revision") != self.revision:
                raise _Stale
            files = conn.execute("SELECT name, data FROM bm25_files").fetchall()
        if files:
            return load_bm25(files)
        return BM25Index.build([p.content for p in self._passages], **BM25_PARAMS)

    @cached_property
    def _dense(self) -> PgDenseIndex:  # type: ignore[override]
        return PgDenseIndex(self)

    def search_many(
        self, queries: Sequence[str], k: int = 5, method: SearchMethod = "hybrid"
    ) -> list[list[Hit]]:
        """`Index.search_many`, against one revision of the stored index (reloaded first when
        another writer has committed)."""
        if method == "bm25":  # no pgvector query (which checks the revision): check it here
            self.sync()
        for _ in range(_RETRIES):
            try:
                return super().search_many(queries, k=k, method=method)
            except _Stale:
                self.sync()
        raise IndexBusyError(
            f"The index at {self._location.display} changed during {_RETRIES} searches in a row; "
            "retry."
        )

    def dense_search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The (position, cosine) pairs of the `k` passages nearest to one query vector, from
        pgvector (the graph retrievers' passage similarity, without loading the embeddings)."""
        for _ in range(_RETRIES):
            try:
                return self._dense.search(np.asarray(query_vector)[None, :], k)[0]
            except _Stale:
                self.sync()
        raise IndexBusyError(
            f"The index at {self._location.display} changed during {_RETRIES} searches in a row; "
            "retry."
        )

    # ------------------------------------------------------------------------------- graph

    @property
    def has_graph(self) -> bool:
        return bool(self._manifest.get("graph"))

    def open_graph_store(self) -> Any:
        """A `PostgresGraphStore` on its own connection, reading this object's revision."""
        from graphseek.knowledge.postgres.graph import PostgresGraphStore

        if not self.has_graph:
            raise IndexNotFoundError(
                f"The index at {self._location.display} has no knowledge graph; rebuild it with "
                "`graphseek index CORPUS --out URI` (graphs are built unless --no-graph)."
            )
        conn = connect(self._location, autocommit=True)
        try:
            _configure(conn)
            if _meta(conn, "revision") != self.revision:
                raise IndexBusyError(
                    f"The index at {self._location.display} was rewritten after it was opened; "
                    "call sync() or open it again."
                )
            manifest = _meta(conn, "graph_manifest") or {}
        except BaseException:
            conn.close()
            raise
        return PostgresGraphStore(
            conn,
            manifest,
            dim=int(self._manifest["embedder"]["dim"]),
            source=self._location.display,
            owns_connection=True,
            revision=self.revision,
        )

    def graph_neighbourhood(self) -> Any:
        """The graph read one neighbourhood at a time (`PostgresNeighbourhood`, this object's
        revision): what the graph retrievers use instead of loading the graph."""
        from graphseek.knowledge.postgres.neighbourhood import PostgresNeighbourhood

        if not self.has_graph:
            raise IndexNotFoundError(
                f"The index at {self._location.display} has no knowledge graph; rebuild it with "
                "`graphseek index CORPUS --out URI` (graphs are built unless --no-graph)."
            )
        return PostgresNeighbourhood(self)

    @cached_property
    def graph(self) -> Any:
        """The knowledge-graph store (`PostgresGraphStore`), opened on first use."""
        return self.open_graph_store()

    def ensure_graph(
        self, *, show_progress: bool = False, graph_options: Mapping[str, Any] | None = None
    ) -> PostgresIndex:
        """Build the knowledge graph into this index if it has none (one transaction)."""
        if self.has_graph:
            return self
        with self._writing() as conn, tempfile.TemporaryDirectory(prefix="graphseek-pg-") as tmp:
            if self.has_graph:
                return self
            graph_dir = Path(tmp) / GRAPH_DIR
            _build_graph(self._passages, graph_dir, show_progress, graph_options)
            from graphseek.knowledge.postgres.graph import delete_graph, import_graph

            delete_graph(conn.cursor())
            import_graph(conn.cursor(), graph_dir, [p.id for p in self._passages])
            manifest = {**self._manifest, "graph": True, "revision": uuid.uuid4().hex}
            _set_meta(conn, "manifest", manifest)
            _set_meta(conn, "revision", manifest["revision"])
        self._close_graph()
        self._manifest = manifest
        return self

    # ----------------------------------------------------------------------------- updates

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """One write transaction under the index's advisory lock, this object brought up to
        the stored revision first."""
        with self._pool.connection() as conn, conn.transaction():
            _lock(conn, self._location)
            if _meta(conn, "revision") != self.revision:
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
            conn, _meta(conn, "graph_manifest") or {}, dim=int(self._manifest["embedder"]["dim"])
        )
        with tempfile.TemporaryDirectory(prefix="graphseek-pg-") as tmp:
            graph_dir = export_graph(store, Path(tmp) / GRAPH_DIR)
            change(graph_dir)
            delete_graph(conn.cursor())
            import_graph(conn.cursor(), graph_dir, passage_ids)

    def _commit_state(
        self, conn: Any, items: list[Passage], ords: list[int], seconds: float
    ) -> dict[str, Any]:
        self.__dict__["_pending_bm25"] = store_bm25(conn, items)
        manifest = _manifest(
            items,
            self._encoder,
            str(self._manifest.get("source", "")),
            seconds,
            self.has_graph,
            self._location,
        )
        manifest["created"] = self._manifest.get("created", manifest["created"])
        manifest["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
        _set_meta(conn, "manifest", manifest)
        _set_meta(conn, "revision", manifest["revision"])
        return manifest

    def _adopt(
        self,
        manifest: dict[str, Any],
        items: list[Passage],
        ords: list[int],
        vectors: np.ndarray | None,
    ) -> None:
        with self._state_lock:
            self._close_graph()
            self._manifest = manifest
            self._passages = items
            self._by_id = {p.id: i for i, p in enumerate(items)}
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
            _check_passages(items)
        started = time.perf_counter()
        with self._writing() as conn:
            new = [p for p in items if p.id not in self]
            if not new:
                return self
            start = (self._ords[-1] + 1) if self._ords else 0
            new_ords = list(range(start, start + len(new)))
            all_items = self._passages + new
            from_graph: list[np.ndarray] = []
            if self.has_graph:  # first: the graph export must not hold the new passages yet
                options = dict(graph_options or {})

                def change(graph_dir: Path) -> None:
                    from graphseek.knowledge.graph import add_passages

                    add_passages(
                        graph_dir,
                        new,
                        show_progress=show_progress,
                        on_passage_vectors=from_graph.append,
                        **options,
                    )

                self._update_graph(conn, change, [p.id for p in all_items])
            # the graph update's passage pass (contextual alignment), else one of our own
            computed = graph_pass_vectors(self._encoder, from_graph[0] if from_graph else None)
            vectors = passage_vectors(self._encoder, new, computed, batch_size, show_progress)
            _insert_passages(conn, new_ords, new, vectors)
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
            unknown = sorted(drop - set(self._by_id))
            if unknown:
                raise KeyError(
                    f"No passages with ids {unknown[:5]} in the index at {self._location.display}"
                )
            if not drop:
                return self
            keep = [i for i, p in enumerate(self._passages) if p.id not in drop]
            if not keep:
                raise CorpusError("Deleting these passages would leave the index empty.")
            items = [self._passages[i] for i in keep]
            ords = [self._ords[i] for i in keep]
            if self.has_graph:  # first: the graph export must still hold the deleted passages

                def change(graph_dir: Path) -> None:
                    from graphseek.knowledge.graph import delete_passages

                    delete_passages(graph_dir, drop, show_progress=show_progress)

                self._update_graph(conn, change, [p.id for p in items])
            conn.execute("DELETE FROM passages WHERE id = ANY(%s)", (sorted(drop),))
            old = self._embeddings
            manifest = self._commit_state(conn, items, ords, time.perf_counter() - started)
        kept = None if old is None else np.ascontiguousarray(old[keep])
        self._adopt(manifest, items, ords, kept)
        return self


class _EmbedderName:
    """The name and dim of the embedder a directory index was built with (for its manifest)."""

    def __init__(self, recorded: Mapping[str, Any]) -> None:
        self.name = str(recorded["name"])
        self.dim = int(recorded["dim"])

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        raise NotImplementedError("only the recorded name and dim of an embedder")


def store_bm25(conn: Any, items: Sequence[Passage]) -> BM25Index:
    """Build bm25s over `items` and store its files in ``bm25_files`` (the caller's
    transaction), replacing what was there. Returns the index built."""
    bm25 = BM25Index.build([p.content for p in items], **BM25_PARAMS)
    conn.execute("DELETE FROM bm25_files")
    with tempfile.TemporaryDirectory(prefix="graphseek-bm25-") as tmp:
        bm25.save(tmp)
        with conn.cursor().copy("COPY bm25_files (name, data) FROM STDIN") as copy:
            for path in sorted(Path(tmp).iterdir()):
                copy.write_row((path.name, path.read_bytes()))
    return bm25


def load_bm25(files: Iterable[tuple[str, bytes]]) -> BM25Index:
    """A bm25s index from its stored files."""
    with tempfile.TemporaryDirectory(prefix="graphseek-bm25-") as tmp:
        for name, data in files:
            (Path(tmp) / Path(name).name).write_bytes(bytes(data))
        return BM25Index.load(tmp)


def upgrade(location: PostgresLocation) -> list[int]:
    """Apply the schema migrations the index at `location` lacks, in one transaction under
    its advisory lock (a concurrent opener waits, then finds nothing to do). Returns the
    versions applied."""
    import psycopg

    with connect(location) as conn:  # one transaction: committed at the end of the block
        _lock(conn, location)
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'passages'::regclass "
            "AND attname = 'embedding'"
        ).fetchone()
        if row is None:
            raise IndexFormatError(
                f"The index at {location.display} has no passages table; rebuild it."
            )
        try:
            applied = migrate(conn.cursor(), location.schema, int(row[0]))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise IndexFormatError(
                f"The index at {location.display} needs its schema migrated to version "
                f"{SCHEMA_VERSION} and this database user may not ({str(exc).strip()}); open "
                "it once as the schema's owner."
            ) from exc
        manifest = _meta(conn, "manifest")
        if applied and isinstance(manifest, dict):
            _set_meta(conn, "manifest", {**manifest, "schema_version": SCHEMA_VERSION})
    if applied:
        logger.info("Migrated %s to schema version %s", location.display, applied[-1])
    return applied


def _schema_query(location: PostgresLocation) -> str:
    sep = "&" if "?" in location.conninfo else "?"
    return f"{sep}schema={location.schema}"


def _write_all(
    location: PostgresLocation,
    items: Sequence[Passage],
    vectors: np.ndarray,
    graph_dir: Path | None,
    manifest: dict[str, Any],
) -> None:
    """Replace the index in `location.schema` by these passages, vectors and graph: one
    transaction under the index's advisory lock."""
    from graphseek.knowledge.postgres.graph import delete_graph, import_graph

    dim = int(manifest["embedder"]["dim"])
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.shape != (len(items), dim):
        raise ValueError(f"expected {len(items)} vectors of dim {dim}, got {vectors.shape}")
    with connect(location) as conn:  # one transaction: committed at the end of the block
        _lock(conn, location)
        schema = location.schema
        if _schema_exists(conn, schema):
            tables = _schema_tables(conn, schema)
            if tables and "schema_version" not in tables:
                raise IndexFormatError(
                    f"Cannot build an index in schema {schema!r} of {location.display}: it holds "
                    f"tables ({', '.join(tables[:5])}) but no graphseek index; choose another "
                    "schema with ?schema=NAME."
                )
        else:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        _configure(conn)
        migrate(conn.cursor(), schema, dim)
        row = conn.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'passages'::regclass "
            "AND attname = 'embedding'"
        ).fetchone()
        if row is not None and int(row[0]) != dim:
            raise IndexFormatError(
                f"The index in schema {schema!r} stores vectors of dim {row[0]}, this build has "
                f"dim {dim}; drop the schema (DROP SCHEMA {schema} CASCADE) or use another one."
            )
        delete_graph(conn.cursor())
        conn.execute("DELETE FROM passages")
        # loading then indexing is much faster than inserting into an HNSW index row by row
        conn.execute("DROP INDEX IF EXISTS passages_embedding_hnsw")
        _insert_passages(conn, range(len(items)), items, vectors)
        conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
        conn.execute(
            "CREATE INDEX passages_embedding_hnsw ON passages "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        if graph_dir is not None:
            import_graph(conn.cursor(), graph_dir, [p.id for p in items])
        store_bm25(conn, items)
        _set_meta(conn, "manifest", manifest)
        _set_meta(conn, "revision", manifest["revision"])
