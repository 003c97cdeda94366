"""The graph retrievers `higra` and `progressive` (listed in `tools.retrievers.LAZY_RETRIEVERS`).

Imported by `graphseek.tools.retrievers.get_retriever` on first use, so the graph layer loads only
when a graph retriever is asked for; this module does not import the registry back. Each is
``fn(index, query, k) -> list[Hit]``, offline (no LLM), with one retriever object cached per
index object.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from graphseek.knowledge.passages import Hit
from graphseek.tools.higra import HiGraConfig, HiGraRetriever
from graphseek.tools.progressive import ProgressiveConfig, ProgressiveRetriever

_lock = threading.Lock()
_higra: weakref.WeakKeyDictionary[Any, HiGraRetriever] = weakref.WeakKeyDictionary()
_progressive: weakref.WeakKeyDictionary[Any, ProgressiveRetriever] = weakref.WeakKeyDictionary()


def higra_retriever(index: Any) -> HiGraRetriever:
    """The `HiGraRetriever` of an index (default `HiGraConfig`), built once per index object."""
    with _lock:
        retriever = _higra.get(index)
    if retriever is None:
        retriever = HiGraRetriever.from_index(index, HiGraConfig())
        with _lock:
            _higra[index] = retriever
    return retriever


def progressive_retriever(index: Any) -> ProgressiveRetriever:
    """The `ProgressiveRetriever` of an index, built once per index object."""
    with _lock:
        retriever = _progressive.get(index)
    if retriever is None:
        retriever = ProgressiveRetriever.from_index(index, ProgressiveConfig())
        with _lock:
            _progressive[index] = retriever
    return retriever


def higra(index: Any, query: str, k: int) -> list[Hit]:
    """HiGraRetriever's passages: the final context, then the rest of the fused ranking."""
    retriever = higra_retriever(index)
    if k > retriever.config.entity_passage_top_k:
        retriever = retriever.with_config(entity_passage_top_k=k)
    return retriever.hits(retriever.retrieve(query), k)


def progressive(index: Any, query: str, k: int) -> list[Hit]:
    """A2RAG's progressive retriever: evidence passages, then hybrid search to fill k."""
    return progressive_retriever(index).retrieve(query, k).hits
