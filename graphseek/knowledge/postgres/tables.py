"""An index's tables in PostgreSQL: reading its state, writing passages, BM25 and whole rebuilds.

- `read_state`: the manifest, passage ords and passages of the stored index (in the caller's
  snapshot), refusing a schema of another version or an inconsistent index;
- `postgres_manifest`: the manifest a write stores (`manifest_record` plus the tables' fields);
- `insert_passages`, `store_bm25` / `load_bm25` (the bm25s files in ``bm25_files``);
- `write_all`: replace the whole index (passages, vectors, HNSW index, graph, BM25, manifest)
  in one transaction under the index's advisory lock;
- `upgrade`: apply the schema migrations an older index lacks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.errors import IndexFormatError, IndexNotFoundError
from graphseek.knowledge.atomic import scratch_directory
from graphseek.knowledge.dense import HNSW_THRESHOLD, TextEncoder
from graphseek.knowledge.index import BM25_PARAMS, FORMAT_NAME, FORMAT_VERSION, manifest_record
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.postgres.connection import (
    configure,
    connect,
    lock_index,
    read_meta,
    schema_exists,
    schema_tables,
    write_errors,
    write_meta,
)
from graphseek.knowledge.postgres.schema import (
    SCHEMA_VERSION,
    current_version,
    migrate,
    newer_than_code,
)
from graphseek.knowledge.postgres.uri import PostgresLocation
from graphseek.knowledge.sparse import BM25Index

logger = logging.getLogger(__name__)


def read_state(
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
    manifest = read_meta(conn, "manifest")
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


def postgres_manifest(
    items: Sequence[Passage],
    encoder: TextEncoder,
    source: str,
    seconds: float,
    graph: bool,
    location: PostgresLocation,
) -> dict[str, Any]:
    return manifest_record(
        items,
        encoder,
        source,
        seconds,
        backend="postgres",
        schema=location.schema,
        schema_version=SCHEMA_VERSION,
        bm25={
            "implementation": "bm25s (postings stored in bm25_files, loaded in process)",
            **BM25_PARAMS,
        },
        dense={
            "implementation": "pgvector",
            "index": "hnsw (vector_cosine_ops)",
            "search": f"exact up to {HNSW_THRESHOLD} passages, HNSW above",
            "metric": "cosine",
        },
        graph=graph,
    )


def insert_passages(
    conn: Any, ords: Sequence[int], items: Sequence[Passage], vectors: np.ndarray
) -> None:
    with conn.cursor().copy(
        "COPY passages (ord, id, title, text, source, embedding) FROM STDIN"
    ) as copy:
        for o, p, v in zip(ords, items, vectors, strict=True):
            copy.write_row((o, p.id, p.title, p.text, p.source, v))


class EmbedderName:
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
    with scratch_directory("graphseek-bm25-") as tmp:
        bm25.save(tmp)
        with conn.cursor().copy("COPY bm25_files (name, data) FROM STDIN") as copy:
            for path in sorted(Path(tmp).iterdir()):
                copy.write_row((path.name, path.read_bytes()))
    return bm25


def load_bm25(files: Iterable[tuple[str, bytes]]) -> BM25Index:
    """A bm25s index from its stored files."""
    with scratch_directory("graphseek-bm25-") as tmp:
        for name, data in files:
            (Path(tmp) / Path(name).name).write_bytes(bytes(data))
        return BM25Index.load(tmp)


def upgrade(location: PostgresLocation) -> list[int]:
    """Apply the schema migrations the index at `location` lacks, in one transaction under
    its advisory lock (a concurrent opener waits, then finds nothing to do). Returns the
    versions applied."""
    import psycopg

    with connect(location) as conn:  # one transaction: committed at the end of the block
        lock_index(conn, location)
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
        manifest = read_meta(conn, "manifest")
        if applied and isinstance(manifest, dict):
            write_meta(conn, "manifest", {**manifest, "schema_version": SCHEMA_VERSION})
    if applied:
        logger.info("Migrated %s to schema version %s", location.display, applied[-1])
    return applied


def schema_query(location: PostgresLocation) -> str:
    sep = "&" if "?" in location.conninfo else "?"
    return f"{sep}schema={location.schema}"


def write_all(
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
    # one transaction, committed at the end of the block; a dropped connection: one line
    with write_errors(location), connect(location) as conn:
        lock_index(conn, location)
        schema = location.schema
        if schema_exists(conn, schema):
            tables = schema_tables(conn, schema)
            if tables and "schema_version" not in tables:
                raise IndexFormatError(
                    f"Cannot build an index in schema {schema!r} of {location.display}: it holds "
                    f"tables ({', '.join(tables[:5])}) but no graphseek index; choose another "
                    "schema with ?schema=NAME."
                )
        else:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        configure(conn)
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
        insert_passages(conn, range(len(items)), items, vectors)
        conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
        conn.execute(
            "CREATE INDEX passages_embedding_hnsw ON passages "
            "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        if graph_dir is not None:
            import_graph(conn.cursor(), graph_dir, [p.id for p in items])
        store_bm25(conn, items)
        write_meta(conn, "manifest", manifest)
        write_meta(conn, "revision", manifest["revision"])
