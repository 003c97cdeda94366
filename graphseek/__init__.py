"""graphseek: multi-hop question answering over your own documents.

from graphseek import Index, ask
index = Index.build("corpus.json", "my-index")
result = ask(index, "Where was the director of Jaws born?", topology="dual_agent")
"""

from __future__ import annotations

from typing import Any

from graphseek.version import __version__ as __version__

__all__ = ["Context", "Index", "Passage", "Result", "ask", "get_workflow", "load_corpus"]


def __getattr__(name: str) -> Any:  # lazy: importing graphseek stays cheap
    if name in {"ask", "Result"}:
        from graphseek import api

        return getattr(api, name)
    if name in {"Index", "load_corpus"}:
        from graphseek.knowledge import index, loaders

        return index.Index if name == "Index" else loaders.load_corpus
    if name == "Passage":
        from graphseek.knowledge.passages import Passage

        return Passage
    if name == "Context":
        from graphseek.state.context import Context

        return Context
    if name == "get_workflow":
        from graphseek.graphs import get_workflow

        return get_workflow
    raise AttributeError(f"module 'graphseek' has no attribute {name!r}")
