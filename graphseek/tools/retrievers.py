"""Retriever registry: one name -> `fn(index, query, k) -> list[Hit]`, shared by workflows and eval.

`bm25`, `dense` and `hybrid` search the passage index; graph retrievers (`higra`, `progressive`)
register themselves from `graphseek.tools` when the graph layer is available.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from graphseek.errors import ContextError, GraphseekError
from graphseek.knowledge.passages import Hit
from graphseek.state.context import index_path_problem, resolve_index_path

RetrieverFn = Callable[[Any, str, int], list[Hit]]

_REGISTRY: dict[str, RetrieverFn] = {}


def register_retriever(name: str, fn: RetrieverFn) -> None:
    _REGISTRY[name] = fn


def retriever_names() -> list[str]:
    _load_graph_retrievers()
    return sorted(_REGISTRY)


def get_retriever(name: str) -> RetrieverFn:
    _load_graph_retrievers()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"Unknown retriever {name!r}; known retrievers: {', '.join(sorted(_REGISTRY))}."
        ) from None


def retrieve(index: Any, query: str, k: int, name: str = "hybrid") -> list[Hit]:
    return get_retriever(name)(index, query, k)


def _method(method: str) -> RetrieverFn:
    def search(index: Any, query: str, k: int) -> list[Hit]:
        return list(index.search(query, k=k, method=method))

    search.__name__ = f"search_{method}"
    return search


for _m in ("bm25", "dense", "hybrid"):
    register_retriever(_m, _method(_m))


def _load_graph_retrievers() -> None:
    """Import the graph retrievers lazily (they pull in the graph store) so they self-register."""
    import graphseek.tools.graph_retrievers  # noqa: F401


@lru_cache(maxsize=8)
def _open_index(path: str) -> Any:
    from graphseek.knowledge.index import Index

    return Index.open(path)


def resolve_index(context: Any) -> Any:
    """The index of a run: `context.index` if given, else the one at `context.index_path`
    (relative paths resolve against `$GRAPHSEEK_INDEX_DIR`, else the working directory).

    Raises `ContextError` (a `ValueError`, so the LangGraph server shows its message to the
    client) when no index is named or the path holds no readable index."""
    if context.index is not None:
        return context.index
    raw = getattr(context, "index_path", "")
    if raw:
        try:
            return _open_index(str(resolve_index_path(raw)))
        except (GraphseekError, OSError) as exc:  # missing, malformed or unreadable
            raise ContextError(index_path_problem(raw, str(exc))) from exc
    raise ContextError(
        "No index for this run: set index_path in the context (Python: "
        "Context(index=...) or ask(index, ...)); build one with `graphseek index CORPUS --out DIR`."
    )
