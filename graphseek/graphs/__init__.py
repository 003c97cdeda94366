"""The topologies: compiled LangGraph workflows, each over its own state on a common base
(`graphseek.state.schema`), picked by name, and the checkpointers to run them with
(`memory_saver()`, `sqlite_saver(path)`, `postgres_saver(uri)`, `checkpointer_for(index)`, or any
LangGraph saver given `serde=checkpoint_serializer()`; they live in `graphseek.graphs.checkpoints`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from graphseek.errors import UnknownTopologyError
from graphseek.graphs.checkpoints import (
    checkpoint_serializer,
    checkpointer_for,
    close_checkpointers,
    memory_saver,
    postgres_saver,
    sqlite_saver,
)


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
