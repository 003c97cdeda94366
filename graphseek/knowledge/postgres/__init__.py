"""The PostgreSQL backend of the index: passages with pgvector embeddings (HNSW, cosine), the
knowledge graph in tables, and the index metadata, all in one schema of one database, chosen by a
URI such as ``postgresql://user@host:5432/db?schema=myindex``.

The storage registry (`graphseek.knowledge.storage.backend_for`) chooses this backend for such
a URI (`Index.build` / `Index.open` go through it); the directory backend stays the default.
Modules: `index` (`PostgresIndex`, the `IndexStore` protocol over tables, and how reads and
writes stay consistent), `connection` (connections, pools, snapshots, the advisory lock),
`tables` (state, manifest, passages, BM25 postings, rebuilds, migrations), `dense` (pgvector
search), `graph` (the knowledge graph in tables), `neighbourhood` (per-query graph reads),
`schema` (DDL and migrations), `uri` (parsing the URI).

psycopg, psycopg-pool and pgvector are imported only when a Postgres URI is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphseek.knowledge.postgres.uri import (
    DEFAULT_SCHEMA,
    PostgresLocation,
    is_postgres_uri,
    parse_postgres_uri,
)

if TYPE_CHECKING:
    from graphseek.knowledge.postgres.index import PostgresIndex

__all__ = [
    "DEFAULT_SCHEMA",
    "PostgresIndex",
    "PostgresLocation",
    "is_postgres_uri",
    "parse_postgres_uri",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresIndex":
        from graphseek.knowledge.postgres.index import PostgresIndex

        return PostgresIndex
    raise AttributeError(name)
