"""The topologies: compiled LangGraph workflows over one shared state, picked by name."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
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


__all__ = ["TOPOLOGIES", "Topology", "build_workflow", "get_workflow", "topology_names"]
