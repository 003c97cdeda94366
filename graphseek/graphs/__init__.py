"""The topologies: compiled LangGraph workflows over one shared state, picked by name, and the
checkpointers to run them with (`memory_saver()`, `sqlite_saver(path)`, `postgres_saver(uri)`,
`checkpointer_for(index)`, or any LangGraph saver given `serde=checkpoint_serializer()`)."""

from __future__ import annotations

import importlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphseek.errors import UnknownTopologyError


@dataclass(frozen=True)
class Topology:
    name: str
    module: str
    builder: str
    description: str


TOPOLOGIES: dict[str, Topology] = {
    t.name: t
    for t in [
        Topology(
            "naive",
            "graphseek.graphs.naive",
            "build_naive",
            "One retrieval, one answer (baseline).",
        ),
        Topology(
            "dual_agent",
            "graphseek.graphs.dual_agent",
            "build_dual_agent",
            "Seeker plans and Librarian retrieves and drafts, in a loop (HiGraAgent §5).",
        ),
        Topology(
            "higra_retriever",
            "graphseek.graphs.higra_retriever",
            "build_higra_retriever",
            "HiGraRetriever relations and passages, then the Librarian, single step "
            "(HiGraAgent §4).",
        ),
        Topology(
            "adaptive",
            "graphseek.graphs.adaptive",
            "build_adaptive",
            "Coverage gate, local/bridge/PPR escalation, Triple-Check and failure-aware rewrite "
            "(A2RAG §III).",
        ),
        Topology(
            "deep_search",
            "graphseek.graphs.deep_search",
            "build_deep_search",
            "Decompose, ground, semantic and relational channels in parallel, draft, verify, "
            "expand (GraphSearch §3).",
        ),
        Topology(
            "react",
            "graphseek.graphs.react",
            "build_react",
            "Thought/Action/Observation over hypergraph topics with early stopping "
            "(G-RAGent §2.2).",
        ),
        Topology(
            "knowledge_aware",
            "graphseek.graphs.knowledge_aware",
            "build_knowledge_aware",
            "Known/Required caches, query planning, knowledge update and context filtering, "
            "with single, competitive or collaborative agents (KAIR §3).",
        ),
    ]
}


def topology_names() -> list[str]:
    return list(TOPOLOGIES)


def check_topology(name: Any) -> str:
    """`name` if a topology has it, else `UnknownTopologyError` naming the closest ones."""
    from graphseek.state.validation import check_name

    return check_name("topology", name, TOPOLOGIES, plural="topologies", error=UnknownTopologyError)


def _topology(name: str) -> Topology:
    return TOPOLOGIES[check_topology(name)]


def get_workflow(name: str) -> Any:
    """The compiled graph of a topology (no checkpointer), e.g. `get_workflow("dual_agent")`."""
    return importlib.import_module(_topology(name).module).graph


def build_workflow(name: str) -> Any:
    """The uncompiled `StateGraph` of a topology, to compile with your own checkpointer."""
    t = _topology(name)
    return getattr(importlib.import_module(t.module), t.builder)()


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

    from graphseek.knowledge.postgres.uri import parse_postgres_uri

    location = getattr(target, "location", None) or parse_postgres_uri(str(target))
    with _savers_lock:  # CREATE SCHEMA / setup() race between concurrent first callers
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
            open=True,
            name=f"graphseek-checkpoints-{location.schema}",
        )
        saver = PostgresSaver(pool, serde=checkpoint_serializer())  # type: ignore[arg-type]
        saver.setup()
    return saver


_savers: dict[Any, Any] = {}
_savers_lock = threading.RLock()


def checkpointer_for(index: Any) -> Any:
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
    "TOPOLOGIES",
    "close_checkpointers",
    "checkpointer_for",
    "postgres_saver",
    "Topology",
    "build_workflow",
    "checkpoint_serializer",
    "check_topology",
    "get_workflow",
    "memory_saver",
    "sqlite_saver",
    "topology_names",
]
