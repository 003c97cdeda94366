"""Dataset indexes, cached on disk by corpus: built on first use, reopened afterwards.

The directory of a dataset's index is `<index_dir>/<dataset name>-<corpus hash>`, so a changed
corpus gets a new index and an unchanged one is never rebuilt; a data set whose corpus is
already cached under another name (`docqa-heldout` shares `docqa`'s) reuses that index. `<index_dir>` defaults to
`<cache>/indexes`, with `<cache>` = $GRAPHSEEK_CACHE_DIR, else $XDG_CACHE_HOME/graphseek, else
~/.cache/graphseek (as `graphseek` itself uses).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from graphseek.evaluation.configs import EvalConfig
from graphseek.evaluation.datasets import Dataset, require_corpus

__all__ = [
    "GRAPHLESS_RETRIEVERS",
    "GRAPHLESS_TOPOLOGIES",
    "cached_index",
    "default_index_dir",
    "needs_graph",
]

log = logging.getLogger(__name__)

GRAPHLESS_TOPOLOGIES = frozenset({"naive", "dual_agent"})
GRAPHLESS_RETRIEVERS = frozenset({"bm25", "dense", "hybrid", "doc_hop"})


def default_index_dir() -> Path:
    """Where dataset indexes are cached: `<cache>/indexes`, with `<cache>` = $GRAPHSEEK_CACHE_DIR,
    else $XDG_CACHE_HOME/graphseek, else ~/.cache/graphseek (as `graphseek` itself uses)."""
    root = os.environ.get("GRAPHSEEK_CACHE_DIR")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "graphseek"
    return base / "indexes"


def needs_graph(configs: Iterable[EvalConfig]) -> bool:
    """Whether any configuration may use the knowledge graph (a topology other than naive or
    dual_agent, or a retriever other than bm25/dense/hybrid)."""
    return any(
        c.topology not in GRAPHLESS_TOPOLOGIES or c.retriever not in GRAPHLESS_RETRIEVERS
        for c in configs
    )


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "dataset"


def cached_index(
    dataset: Dataset,
    index_dir: str | Path | None = None,
    *,
    graph: bool = False,
    show_progress: bool = True,
) -> Any:
    """Open the dataset's index from the cache, building it on first use.

    The directory is `<index_dir>/<dataset name>-<corpus hash>`, so a changed corpus gets a new
    index and an unchanged one is never rebuilt; an index of the same corpus cached under
    another dataset name is reused. With `graph=True` the index must also hold the
    knowledge graph (built offline); a cached index without one gets it added (no re-embedding).
    """
    from graphseek.errors import IndexFormatError, IndexNotFoundError
    from graphseek.knowledge.index import Index

    require_corpus(dataset)
    root = Path(index_dir) if index_dir is not None else default_index_dir()
    digest = dataset.corpus_hash()[:12]
    path = root / f"{_slug(dataset.name)}-{digest}"
    if not path.exists():  # the same corpus under another name (docqa and docqa-heldout)
        path = next(iter(sorted(root.glob(f"[!.]*-{digest}"))), path) if root.is_dir() else path
    if path.exists():
        try:
            index = Index.open(path)
            if graph and not index.has_graph:
                log.info("adding the knowledge graph to the cached index at %s", path)
                index.ensure_graph(show_progress=show_progress)
            return index
        except (IndexNotFoundError, IndexFormatError) as exc:
            log.warning("cached index at %s unusable (%s); rebuilding", path, exc)
    root.mkdir(parents=True, exist_ok=True)
    log.info("building index for %s (%d passages) at %s", dataset.name, len(dataset.corpus), path)
    return Index.build(dataset.corpus, path, show_progress=show_progress, graph=graph)
