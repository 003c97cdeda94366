"""The graph retrievers `higra`, `progressive` and `bridge` (listed in `tools.retrievers.LAZY_RETRIEVERS`).

Imported by `graphseek.tools.retrievers.get_retriever` on first use, so the graph layer loads only
when a graph retriever is asked for; this module does not import the registry back. Each is
``fn(index, query, k) -> list[Hit]``, offline (no LLM), with one retriever object cached per
index object.

`higra` and `progressive` take the option ``bridge_seeds`` (`Context.bridge_seeds`, read from
the run when not given; off by default): their seeds are extended by the entities semantic
bridging reaches from the question's entities (`bridge_seeds_for`; `BridgeRetriever.bridged`),
so their subgraph and PageRank start at the second hop too. It loads the bridge retriever (the
graph and its sentence layer, whole) beside them; on an index without sentence nodes it adds
nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from graphseek.errors import IndexBusyError
from graphseek.knowledge.passages import Hit
from graphseek.tools.bridge import BridgeConfig, BridgeRetriever, NoSentenceLayerError
from graphseek.tools.graph_access import per_revision, reads_neighbourhoods
from graphseek.tools.higra import HiGraConfig, HiGraRetriever
from graphseek.tools.progressive import ProgressiveConfig, ProgressiveRetriever
from graphseek.tools.run_settings import run_setting

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

_higra: weakref.WeakKeyDictionary[Any, tuple[str, HiGraRetriever]] = weakref.WeakKeyDictionary()
_progressive: weakref.WeakKeyDictionary[Any, tuple[str, ProgressiveRetriever]] = (
    weakref.WeakKeyDictionary()
)
_bridge: weakref.WeakKeyDictionary[Any, tuple[str, BridgeRetriever]] = weakref.WeakKeyDictionary()


def higra_retriever(index: IndexStore) -> HiGraRetriever:
    """The `HiGraRetriever` of an index (default `HiGraConfig`), built once per index revision."""

    def make() -> HiGraRetriever:
        if reads_neighbourhoods(index):
            from graphseek.tools.neighbourhood import HiGraNeighbourhood

            return HiGraNeighbourhood.from_index(index, HiGraConfig())
        return HiGraRetriever.from_index(index, HiGraConfig())

    return per_revision(_higra, index, make)  # type: ignore[no-any-return]


def progressive_retriever(index: IndexStore) -> ProgressiveRetriever:
    """The `ProgressiveRetriever` of an index, built once per index revision."""

    def make() -> ProgressiveRetriever:
        if reads_neighbourhoods(index):
            from graphseek.tools.neighbourhood import ProgressiveNeighbourhood

            return ProgressiveNeighbourhood.from_index(index, ProgressiveConfig())
        return ProgressiveRetriever.from_index(index, ProgressiveConfig())

    return per_revision(_progressive, index, make)  # type: ignore[no-any-return]


def bridge_retriever(index: IndexStore) -> BridgeRetriever:
    """The `BridgeRetriever` of an index (default `BridgeConfig`), built once per index revision
    (the whole graph and its sentence layer in memory, whichever way the index reads its graph
    otherwise)."""
    return per_revision(_bridge, index, lambda: BridgeRetriever.from_index(index, BridgeConfig()))  # type: ignore[no-any-return]


#: bridged entities added to higra's or progressive's seeds at most (`Context.bridge_seeds`)
MAX_BRIDGE_SEEDS = 3


def bridge_seeds_for(
    index: IndexStore, query: str, limit: int = MAX_BRIDGE_SEEDS
) -> list[tuple[str, float]]:
    """The entities semantic bridging reaches from the entities `query` names (not those
    themselves), best first: (entity id, activation), at most `limit`; [] when the query names
    no entity or the index has no sentence nodes."""
    try:
        retriever = bridge_retriever(index)
    except NoSentenceLayerError:
        return []
    return retriever.bridged(query, limit)


def bridging(bridge_seeds: bool | None) -> bool:
    """`bridge_seeds` as given, else the run's `Context.bridge_seeds` (off outside a run)."""
    if bridge_seeds is not None:
        return bool(bridge_seeds)
    return run_setting("bridge_seeds") not in ("", "False")


def _retrying(index: IndexStore, run: Callable[[], list[Hit]], attempts: int = 3) -> list[Hit]:
    """`run()`, again on the index's new revision when another writer committed while a graph
    kept in its store (PostgreSQL) was being read."""
    for attempt in range(attempts):
        try:
            return run()
        except IndexBusyError:
            sync = getattr(index, "sync", None)
            if attempt == attempts - 1 or sync is None:
                raise
            sync()
    raise AssertionError("unreachable")


def higra(index: IndexStore, query: str, k: int, *, bridge_seeds: bool | None = None) -> list[Hit]:
    """HiGraRetriever's passages: the final context, then the rest of the fused ranking.
    `bridge_seeds` (None: the run's `Context.bridge_seeds`): the bridged entities join the
    seeds (the module docstring)."""

    def run() -> list[Hit]:
        retriever = higra_retriever(index)
        if k > retriever.config.entity_passage_top_k:
            retriever = retriever.with_config(entity_passage_top_k=k)
        extra = bridge_seeds_for(index, query) if bridging(bridge_seeds) else []
        return retriever.hits(retriever.retrieve(query, extra_seeds=extra), k)

    return _retrying(index, run)


def progressive(
    index: IndexStore, query: str, k: int, *, bridge_seeds: bool | None = None
) -> list[Hit]:
    """A2RAG's progressive retriever: evidence passages, then hybrid search to fill k.
    `bridge_seeds` as for `higra`."""

    def run() -> list[Hit]:
        retriever = progressive_retriever(index)
        extra = bridge_seeds_for(index, query) if bridging(bridge_seeds) else []
        return retriever.retrieve(query, k, extra_seeds=[e for e, _ in extra]).hits

    return _retrying(index, run)


def bridge(index: IndexStore, query: str, k: int) -> list[Hit]:
    """Semantic bridging (`graphseek.tools.bridge`): question entities -> sentences -> entities,
    then PPR with dense passage priors; dense search when the question names no entity."""
    return _retrying(index, lambda: bridge_retriever(index).retrieve(query, k).hits)
