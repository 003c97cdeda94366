"""Retriever registry: one name -> `fn(index, query, k) -> list[Hit]`, shared by workflows and eval.

`bm25`, `dense` and `hybrid` search the passage index. The graph retrievers (`higra`,
`progressive`, `bridge`) live in `graphseek.tools.graph_retrievers` and are named here in a lazy table
(name -> module and function, like `graphseek.graphs.TOPOLOGIES`): their module, which pulls in
the graph layer, is imported only when one of them is asked for, and it does not import this
module back. `doc_hop` (`graphseek.tools.doc_hop`: the second hop through the corpus's own
document names) is in the same table. `register_retriever(name, fn)` adds a retriever for every caller (workflows and
`graphseek eval`).

`retrieve` applies a reranker (``Context.reranker``, off by default) over the hits of any
retriever: `graphseek.knowledge.rerank`.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from graphseek.errors import ContextError, GraphseekError
from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context, index_path_problem, resolve_index_path
from graphseek.tools.run_settings import run_setting

if TYPE_CHECKING:
    from graphseek.knowledge.index_common import SearchMethod
    from graphseek.knowledge.storage import IndexStore

logger = logging.getLogger(__name__)

RetrieverFn = Callable[["IndexStore", str, int], list[Hit]]

#: retrievers imported on first use: name -> (module, function)
LAZY_RETRIEVERS: dict[str, tuple[str, str]] = {
    "higra": ("graphseek.tools.graph_retrievers", "higra"),
    "progressive": ("graphseek.tools.graph_retrievers", "progressive"),
    "bridge": ("graphseek.tools.graph_retrievers", "bridge"),
    "doc_hop": ("graphseek.tools.doc_hop", "doc_hop"),
}

_REGISTRY: dict[str, RetrieverFn] = {}


def register_retriever(name: str, fn: RetrieverFn) -> None:
    """Make `fn(index, query, k) -> list[Hit]` available as retriever `name` everywhere."""
    _REGISTRY[name] = fn


def retriever_names() -> list[str]:
    """Every known retriever name (nothing is imported to list them)."""
    return sorted({*_REGISTRY, *LAZY_RETRIEVERS})


def check_retriever(name: str) -> str:
    """`name` if it is a known retriever, else an `InvalidRequestError` (a `ValueError`) naming
    the closest known ones (cheap: no retriever module is imported)."""
    from graphseek.state.validation import check_name

    return check_name("retriever", name, retriever_names())


def get_retriever(name: str) -> RetrieverFn:
    check_retriever(name)
    if name not in _REGISTRY:
        module, attr = LAZY_RETRIEVERS[name]
        _REGISTRY[name] = getattr(importlib.import_module(module), attr)
    return _REGISTRY[name]


def retrieve(
    index: IndexStore, query: str, k: int, name: str = "hybrid", *, reranker: str | None = None
) -> list[Hit]:
    """The top-`k` hits of retriever `name`. With a reranker (`reranker`, a spec of
    `graphseek.knowledge.rerank`; None: the current run's ``Context.reranker``, none outside a
    run) the retriever gives `rerank_depth(k)` candidates and the reranker orders them; when
    the reranker fails (after its retries) the retrieval order stands and a warning is logged."""
    spec = run_setting("reranker") if reranker is None else reranker
    fn = get_retriever(name)
    if not spec:
        return fn(index, query, k)
    return reranked(spec, lambda depth: fn(index, query, depth), query, k)


def reranked(spec: str, fetch: Callable[[int], list[Hit]], query: str, k: int) -> list[Hit]:
    """The best `k` of `fetch(rerank_depth(k))` (a retriever's hits) as the reranker of `spec`
    orders them; when the reranker fails (after its retries) the retrieval order stands and a
    warning is logged."""
    from graphseek.errors import LLMError
    from graphseek.knowledge.rerank import rerank_depth, rerank_hits, reranker_for

    model = reranker_for(spec)
    hits = fetch(rerank_depth(k))
    if model is None:
        return hits[:k]
    try:
        return rerank_hits(hits, query, model, k)
    except LLMError as exc:
        logger.warning("reranking skipped, retrieval order kept: %s", exc)
        return [h.model_copy(update={"rank": r}) for r, h in enumerate(hits[:k], start=1)]


def _method(method: SearchMethod) -> RetrieverFn:
    def search(index: IndexStore, query: str, k: int) -> list[Hit]:
        return list(index.search(query, k=k, method=method))

    search.__name__ = f"search_{method}"
    return search


_SEARCH_METHODS: tuple[SearchMethod, ...] = ("bm25", "dense", "hybrid")
for _m in _SEARCH_METHODS:
    register_retriever(_m, _method(_m))


@lru_cache(maxsize=8)
def _open_index(path: str, stamp: tuple[int, int]) -> IndexStore:
    from graphseek.knowledge.index import Index

    return Index.open(path)


@lru_cache(maxsize=8)
def _open_remote(uri: str) -> IndexStore:
    from graphseek.knowledge.storage import open_index

    return open_index(uri)


def _manifest_stamp(path: str) -> tuple[int, int]:
    """Identity of the index written at `path` now (its manifest's inode and mtime): a rebuilt or
    updated index is opened again, not served from the cache."""
    try:
        st = os.stat(os.path.join(path, "manifest.json"))
    except OSError:
        return (0, 0)
    return (st.st_ino, st.st_mtime_ns)


def resolve_index(context: Any) -> IndexStore:
    """The index of a run: `context.index` if given, else the one at `context.index_path`
    (relative paths resolve against `$GRAPHSEEK_INDEX_DIR`, else the working directory; a
    served context opens only what `ServedContext.index_location` allows), opened once per path
    and on-disk version.

    Raises `ContextError` (a `ValueError`, so the LangGraph server shows its message to the
    client) when no index is named or the path holds no readable index."""
    if context.index is not None:
        return context.index
    from graphseek.knowledge.storage import backend_for

    raw = getattr(context, "index_path", "")
    if raw:
        own = isinstance(context, Context)
        target = context.index_location() if own else str(raw)
        try:
            local = backend_for(target).local
        except GraphseekError as exc:  # an unknown URI scheme
            raise ContextError(f"index_path: {exc}") from exc
        if not local:
            try:  # one open index per URI, brought up to the stored revision for each run
                return _open_remote(target).sync()
            except (GraphseekError, OSError, ValueError) as exc:  # the message names no password
                raise ContextError(f"index_path: {str(exc).rstrip('.')}.") from exc
        path = str(resolve_index_path(target))
        try:
            return _open_index(path, _manifest_stamp(path))
        except (GraphseekError, OSError) as exc:  # missing, malformed or unreadable
            problem = context.index_problem(str(exc)) if own else index_path_problem(raw, str(exc))
            raise ContextError(problem) from exc
    raise ContextError(
        "No index for this run: set index_path in the context (Python: "
        "Context(index=...) or ask(index, ...)); build one with `graphseek index CORPUS --out DIR`."
    )
