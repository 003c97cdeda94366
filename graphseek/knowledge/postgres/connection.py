"""Connections to a PostgreSQL index's database: connect, pools, snapshots, the lock, meta rows.

Every other module of the backend reaches the database through these: `connect` (one line naming
the server when it is not there), the process's pool per database and schema (`shared_pool`,
closed at exit or by `close_pools`), a read-only REPEATABLE READ `snapshot`, the index's
advisory lock (`lock_index`, taken first by every write) and the ``meta`` key/value rows
(`read_meta` / `write_meta`: the manifest, the revision, the graph manifest).

A server that restarts, or drops connections, under a running process: the pools check each
connection when it is taken (`ConnectionPool.check_connection`) and replace a broken one; a read
whose connection breaks while it runs is run again on a new one (`reconnecting`, with tenacity)
for up to `RECONNECT_SECONDS`, then ends in one line (`DatabaseUnavailableError`). A write's
transaction is not run again: a dropped connection rolls it back on the server, and the write
ends in one line (`write_errors`).

psycopg, psycopg-pool and pgvector are imported only here and only when a Postgres URI is used.
"""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from graphseek.errors import DatabaseUnavailableError, IndexFormatError, IndexNotFoundError
from graphseek.knowledge.postgres.uri import PostgresLocation

POOL_MAX_SIZE = 16
#: how long a read goes on trying while the server is unreachable (a restart, dropped
#: connections) before it ends in `DatabaseUnavailableError`
RECONNECT_SECONDS = 30.0
#: how long taking a pooled connection waits (the pool reconnects meanwhile) before a try fails
POOL_TIMEOUT_SECONDS = 10.0

T = TypeVar("T")


def is_disconnect(exc: BaseException) -> bool:
    """Whether `exc` says the server or the connection went away (psycopg's
    `OperationalError`: the server shut down or restarted, a broken connection, no connection
    from the pool in time), as opposed to an error of the statement itself."""
    psycopg = sys.modules.get("psycopg")  # not imported: no PostgreSQL was used
    return psycopg is not None and isinstance(exc, psycopg.OperationalError)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def reconnecting(location: PostgresLocation | str, read: Callable[[], T]) -> T:
    """`read()`, tried again (on a new connection: the pools drop broken ones) while the server
    is unreachable, for up to `RECONNECT_SECONDS`; then `DatabaseUnavailableError`, one line.
    `read` must be a read, or a whole transaction: it is run again from its start. `location`:
    the server, as the message names it."""
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

    retrying = Retrying(
        retry=retry_if_exception(is_disconnect),
        stop=stop_after_delay(RECONNECT_SECONDS),
        wait=wait_exponential(multiplier=0.05, max=2.0),
        reraise=True,
    )
    try:
        return retrying(read)
    except Exception as exc:
        if not is_disconnect(exc):
            raise
        raise DatabaseUnavailableError(
            f"The PostgreSQL server at {getattr(location, 'display', location)} is unreachable "
            f"({first_line(exc)}); tried for {RECONNECT_SECONDS:.0f} s. Run it again when the "
            "server is back."
        ) from exc


@contextmanager
def write_errors(location: PostgresLocation) -> Iterator[None]:
    """Around a write's transaction: a connection the server dropped (a restart) ends the
    write in one line, `DatabaseUnavailableError`. The transaction is not run again: it rolled
    back on the server, unless the drop came as the server committed it (then the new version
    is stored)."""
    try:
        yield
    except Exception as exc:
        if not is_disconnect(exc):
            raise
        raise DatabaseUnavailableError(
            f"The PostgreSQL server at {location.display} dropped the connection of this write "
            f"({first_line(exc)}): the index holds its previous version (or, had the commit "
            "reached the server, the new one). Run the command again when the server is back."
        ) from exc


def connect_kwargs(location: PostgresLocation) -> dict[str, Any]:
    return {"options": f"-c search_path={location.schema},public"}


def connect(location: PostgresLocation, *, retry: bool = False, **kwargs: Any) -> Any:
    """A psycopg connection to the index's database, `search_path` = its schema then public.
    `retry`: while the server is unreachable, try again for up to `RECONNECT_SECONDS` (a
    running process's read; opening an index fails at once, naming the server)."""
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise IndexNotFoundError(
            f"PostgreSQL indexes need the postgres extra ({exc.name} is missing): "
            "pip install 'graphseek[postgres]'."
        ) from exc

    def opened() -> Any:
        return psycopg.connect(location.conninfo, **connect_kwargs(location), **kwargs)

    if retry:
        return reconnecting(location, opened)
    try:
        return opened()
    except psycopg.OperationalError as exc:
        raise IndexNotFoundError(
            f"Cannot connect to {location.display}: {first_line(exc)}"
        ) from exc


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
    """A psycopg pool (autocommit connections with the pgvector types registered), each
    connection checked when it is taken (a server restart leaves broken ones in the pool)."""
    from psycopg_pool import ConnectionPool

    return ConnectionPool(
        location.conninfo,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, **connect_kwargs(location)},
        configure=configure,
        check=ConnectionPool.check_connection,
        timeout=POOL_TIMEOUT_SECONDS,
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
