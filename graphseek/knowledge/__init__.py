"""graphseek.knowledge: corpus loading, passages and the passage index (BM25, dense, hybrid).

`Index`, `load_corpus`, `Passage` and `Hit` are imported lazily, so `import graphseek.knowledge`
stays cheap (no faiss, bm25s or torch until used).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.loaders import load_corpus
    from graphseek.knowledge.passages import Hit, Passage

__all__ = ["Hit", "Index", "Passage", "load_corpus"]

_EXPORTS = {
    "Index": "graphseek.knowledge.index",
    "load_corpus": "graphseek.knowledge.loaders",
    "Passage": "graphseek.knowledge.passages",
    "Hit": "graphseek.knowledge.passages",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphseek.knowledge' has no attribute {name!r}")
    return getattr(import_module(module), name)
