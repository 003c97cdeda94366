"""Connections to a PostgreSQL index's database: connect, pools, snapshots, the lock, meta rows.

Every other module of the backend reaches the database through these: `connect` (one line naming
the server when it is not there), the process's pool per database and schema (`shared_pool`,
closed at exit or by `close_pools`), a read-only REPEATABLE READ `snapshot`, the index's
advisory lock (`lock_index`, taken first by every write) and the ``meta`` key/value rows
(`read_meta` / `write_meta`: the manifest, the revision, the graph manifest).

psycopg, psycopg-pool and pgvector are imported only here and only when a Postgres URI is used.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphseek.errors import IndexFormatError, IndexNotFoundError
from graphseek.knowledge.postgres.uri import PostgresLocation

POOL_MAX_SIZE = 16


def connect_kwargs(location: PostgresLocation) -> dict[str, Any]:
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
        return psycopg.connect(location.conninfo, **connect_kwargs(location), **kwargs)
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


def configure(conn: Any) -> None:
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
        kwargs={"autocommit": True, **connect_kwargs(location)},
        configure=configure,
        open=True,
        name=f"graphseek-{location.schema}",
    )


@contextmanager
def snapshot(conn: Any) -> Iterator[Any]:
    """A read-only REPEATABLE READ transaction on an autocommit connection."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield conn


def lock_index(conn: Any, location: PostgresLocation) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (location.lock_key,))


def read_meta(conn: Any, key: str) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
    return None if row is None else row[0]


def write_meta(conn: Any, key: str, value: Any) -> None:
    from psycopg.types.json import Jsonb

    conn.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, Jsonb(value)),
    )


def schema_exists(conn: Any, schema: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
    ).fetchone()
    return row is not None


def schema_tables(conn: Any, schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
    ).fetchall()
    return sorted(r[0] for r in rows)
