"""Checkpointers for graphseek runs: the serializer every topology's state round-trips through,
an in-memory saver, a SQLite saver on a file, and a PostgreSQL saver on a connection pool (one per
database and schema in this process, for runs over an index stored in PostgreSQL).

Re-exported by `graphseek.graphs` (`from graphseek.graphs import checkpointer_for, sqlite_saver,
memory_saver`).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore


def checkpoint_serializer() -> Any:
    """The checkpoint serializer for graphseek runs: a `JsonPlusSerializer` that rebuilds every
    state type of every topology without "unregistered type" warnings and blocks other types
    (`graphseek.state.serde`). Pass it as `serde=` to `SqliteSaver`, `PostgresSaver`, ...."""
    from graphseek.state.serde import serializer
    from graphseek.tools.progressive import ProgressiveState  # adaptive's `retrieval` key

    return serializer(extra=(ProgressiveState,))


def memory_saver() -> Any:
    """An `InMemorySaver` with `checkpoint_serializer()`."""
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver(serde=checkpoint_serializer())


def sqlite_saver(path: str | Path) -> Any:
    """A `SqliteSaver` on the file `path` (created if missing) with `checkpoint_serializer()`.

    The connection may be used from other threads (LangGraph runs sync nodes in a pool); close
    it with `saver.conn.close()`."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(str(path), check_same_thread=False)
    return SqliteSaver(conn, serde=checkpoint_serializer())


def postgres_saver(target: Any) -> Any:
    """A LangGraph `PostgresSaver` with `checkpoint_serializer()`, its tables set up, on a pool
    of connections to `target`: a ``postgresql://`` URI (its ``schema=`` parameter, default
    ``graphseek``, holds the checkpoint tables) or a `PostgresIndex` (the same database and
    schema as the index). Close it with `saver.conn.close()`."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from graphseek.knowledge.postgres import connection
    from graphseek.knowledge.postgres.uri import parse_postgres_uri

    location = getattr(target, "location", None) or parse_postgres_uri(str(target))

    def make() -> Any:
        import psycopg

        with psycopg.connect(location.conninfo, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{location.schema}"')
        pool = ConnectionPool(
            location.conninfo,
            min_size=1,
            max_size=16,
            kwargs={
                "autocommit": True,
                "prepare_threshold": 0,
                "row_factory": dict_row,
                "options": f"-c search_path={location.schema}",
            },
            # a server restart leaves broken connections in the pool: each is checked when
            # taken, and replaced (`graphseek.knowledge.postgres.connection`)
            check=ConnectionPool.check_connection,
            timeout=connection.POOL_TIMEOUT_SECONDS,
            open=True,
            name=f"graphseek-checkpoints-{location.schema}",
        )
        try:
            saver = PostgresSaver(pool, serde=checkpoint_serializer())  # type: ignore[arg-type]
            saver.setup()
        except BaseException:
            pool.close()
            raise
        return saver

    with _savers_lock:  # CREATE SCHEMA / setup() race between concurrent first callers
        # a server restarting: wait for it as reads do, then one line (`DatabaseUnavailableError`)
        return connection.reconnecting(location, make)


_savers: dict[Any, Any] = {}
_savers_lock = threading.RLock()


def checkpointer_for(index: IndexStore | None) -> Any:
    """The checkpointer a run over `index` uses by default: a `PostgresSaver` in the index's
    own database and schema when it is stored in PostgreSQL (one per database and schema in
    this process), else None (no checkpoints)."""
    location = getattr(index, "location", None)
    if location is None:
        return None
    with _savers_lock:
        if location not in _savers:
            _savers[location] = postgres_saver(index)
        return _savers[location]


def close_checkpointers() -> None:
    """Close the connection pools of the savers `checkpointer_for` opened."""
    with _savers_lock:
        savers = list(_savers.values())
        _savers.clear()
    for saver in savers:
        saver.conn.close()


__all__ = [
    "checkpoint_serializer",
    "checkpointer_for",
    "close_checkpointers",
    "memory_saver",
    "postgres_saver",
    "sqlite_saver",
]
