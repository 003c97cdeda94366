"""The topologies: compiled LangGraph workflows over one shared state, picked by name, and the
checkpointers to run them with (`memory_saver()`, `sqlite_saver(path)`, or any LangGraph saver
given `serde=checkpoint_serializer()`)."""

from __future__ import annotations

import importlib
import sqlite3
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


def _topology(name: str) -> Topology:
    try:
        return TOPOLOGIES[name]
    except KeyError:
        raise UnknownTopologyError(
            f"Unknown topology {name!r}; known topologies: {', '.join(TOPOLOGIES)}."
        ) from None


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


__all__ = [
    "TOPOLOGIES",
    "Topology",
    "build_workflow",
    "checkpoint_serializer",
    "get_workflow",
    "memory_saver",
    "sqlite_saver",
    "topology_names",
]
