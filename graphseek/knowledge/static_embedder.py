"""Static token vectors distilled from the packaged MiniLM, for the graph's short strings.

A knowledge graph embeds about four times as many tokens as its passages hold (entity records,
relations, hyperedge sentences; `benchmarks/indexing.py` prints the ratio), so with MiniLM the
graph costs more encoder time than the passages. `StaticEncoder` gives those strings vectors
without running the transformer per string:

- **Distillation** (once per model, cached like the ONNX export): every
  vocabulary token is run through MiniLM alone (``[CLS] token [SEP]``, mean pooled, normalised);
  the mean over the vocabulary is subtracted (the component every such vector shares, from the
  [CLS]/[SEP] positions), as Model2Vec's distillation removes it with PCA.
- **Encoding**: a text is WordPiece-tokenised with the packaged tokenizer, its token vectors
  are averaged and L2-normalised (a few microseconds per string; no batching effects, so a
  string always gets the same vector).

The vectors live in their own space: a query is compared with them through
`StaticEncoder.encode` too, never with a MiniLM vector. The graph records which space its
vectors are in (`GraphSettings.vectors`).

Written by hand rather than with `model2vec`: its distillation extra pins transformers <= 5.3
(sentence-transformers here needs a newer one), and what is left, a table lookup and a mean, is a
few lines of numpy.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.atomic import atomic_file
from graphseek.knowledge.embedder import (
    MODEL_NAME,
    _fingerprint,
    cache_dir,
    get_embedder,
    load_tokenizer,
    model_dir,
)

STATIC_VERSION = 1
"""Bump when the distillation changes, so cached tables are made again."""
DISTILL_BATCH = 512
"""Vocabulary tokens run through MiniLM per batch while distilling."""
TEXT_CHUNK = 8_192
"""Texts tokenised at a time by `StaticEncoder.encode` (each chunk's vectors are written into
the output before the next is tokenised)."""

BLOCK_TOKENS = 16_384
"""Token rows gathered from the table at a time when encoding (whole texts per block). One
gather of every token's row (for a corpus' entity strings) would spend most of its time in
memory traffic; blocks that fit the CPU's caches better give the same sums faster (each text is
still reduced in one piece)."""


def table_path(directory: Path | None = None) -> Path:
    """Where the distilled token table of the packaged model is cached."""
    directory = directory or model_dir()
    name = f"{MODEL_NAME}-{_fingerprint(directory)}-static-v{STATIC_VERSION}.npy"
    return cache_dir() / "static" / name


def distill(embedder: Any, tokenizer: Any) -> np.ndarray:
    """The token table: row t is MiniLM's vector of ``[CLS] t [SEP]``, minus the mean row."""
    vocab = tokenizer.get_vocab()
    size = max(vocab.values()) + 1
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    ids = [np.asarray([cls, t, sep], dtype=np.int64) for t in range(size)]
    table = np.asarray(embedder.encode_ids(ids, batch_size=DISTILL_BATCH), dtype=np.float32)
    table -= table.mean(axis=0, keepdims=True)
    return table


class StaticEncoder:
    """Encodes texts as the normalised mean of their distilled token vectors (module doc)."""

    name = f"{MODEL_NAME}-static-v{STATIC_VERSION}"
    thread_safe = True
    """`encode` may be called from several threads at once (the tokenizer call is locked);
    the graph build runs it in a background thread."""

    def __init__(self, table: np.ndarray, tokenizer: Any) -> None:
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.tokenizer = tokenizer
        self.dim = int(self.table.shape[1])
        self._lock = threading.Lock()

    @classmethod
    def load(cls, embedder: Any = None) -> StaticEncoder:
        """The packaged model's table, distilled on first use and cached on disk."""
        directory = model_dir()
        tokenizer = load_tokenizer(directory)
        path = table_path(directory)
        table: np.ndarray | None = None
        if path.is_file():
            try:
                table = np.load(path)
            except (OSError, ValueError):
                table = None  # damaged cache: made again below
        if table is None or table.ndim != 2 or len(table) != tokenizer.get_vocab_size():
            table = distill(embedder or get_embedder(), tokenizer)
            # a concurrent or interrupted run never leaves a partial table
            with atomic_file(path) as tmp, open(tmp, "wb") as handle:
                np.save(handle, table)
        return cls(table, tokenizer)

    per_text = True
    """A text's vector depends on that text alone, not on the other texts of the call: a
    caller may split its texts into calls, or order them, as it likes
    (`graphseek.knowledge.graph.algorithms.align.cached_encode` encodes into its output a chunk at a
    time)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised vectors, rows in order; a text without tokens gets a zero row."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        self.encode_into(texts, out)
        return out

    def encode_into(self, texts: Sequence[str], out: np.ndarray) -> None:
        """`encode` into `out` (zeros, (len(texts), dim) float32), `TEXT_CHUNK` texts at a
        time: the tokenizer's encodings (ids, offsets and token strings) of every text at once
        were several times the vectors' size."""
        for start in range(0, len(texts), TEXT_CHUNK):
            self._encode_chunk(texts[start : start + TEXT_CHUNK], out[start : start + TEXT_CHUNK])

    def _encode_chunk(self, texts: Sequence[str], out: np.ndarray) -> None:
        with self._lock:  # tokenizers' batch encoding is not documented as thread-safe
            encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        filled = np.flatnonzero(lengths)
        if not len(filled):
            return
        ids = np.concatenate([np.asarray(encodings[i].ids, dtype=np.int64) for i in filled])
        ends = np.cumsum(lengths[filled])
        starts = ends - lengths[filled]
        sums = np.empty((len(filled), self.dim), dtype=np.float32)
        first = 0
        while first < len(filled):  # whole texts, about BLOCK_TOKENS token rows at a time
            last = max(first + 1, int(np.searchsorted(ends, starts[first] + BLOCK_TOKENS, "right")))
            rows = self.table[ids[starts[first] : ends[last - 1]]]
            sums[first:last] = np.add.reduceat(rows, starts[first:last] - starts[first], axis=0)
            first = last
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        out[filled] = sums / np.maximum(norms, 1e-12)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)


@lru_cache(maxsize=1)
def get_static_encoder() -> StaticEncoder:
    """The process-wide static encoder."""
    return StaticEncoder.load()
