"""Sentences as graph nodes: each passage's sentences, their vectors, and entity–sentence edges.

The bridging retriever (`graphseek.tools.bridge`, LinearRAG's "semantic bridging") walks from a
question's entities to the sentences that mention them and most resemble the question, and on
to the other entities those sentences mention. This module gives it the nodes and edges:

- **Sentences** (`split_sentences`): a passage's text (its title line left out) cut at sentence
  ends (``.``, ``!``, ``?`` before a capital, a digit or a quote; not after an initial or a
  common abbreviation) and at line ends. A sentence is the span ``[start, end)`` of
  `Passage.content`, so it is the same string for the build and the reader. Deterministic and
  dependency-free: an update splits its new passages as the build split the old ones.
- **Sentence–passage edges**: each sentence row names its passage.
- **Entity–sentence edges** (`link_sentences`): an entity linked to a passage (the store's
  entity–passage links, mentions and matches) is linked to each sentence of that passage that
  names it (its name or an alias, case-insensitively, at word boundaries), kind `NAMED`; the
  entity the passage is titled after (its name is the title, with or without a qualifier such
  as "(1944 film)") is linked to every other sentence of the passage, kind `TITLED`: "He was
  the son of ..." in the passage "Lothair II" is about Lothair II.
- **Vectors**: by default pooled from the passage encoder's own pass (``GraphSettings.sentences
  = "pooled"``: the mean of the token states over the sentence's characters, as the contextual
  mention vectors are, `graphseek.knowledge.graph.algorithms.contextual.encode_passages`), so a
  build runs no second transformer pass; a sentence past the encoder's 256-token window, and every
  sentence with ``"encoded"``, is encoded on its own by MiniLM. Stored at half precision.

Files, in the graph store's directory (written after the store by
`graphseek.knowledge.graph.store.sentence_write`, atomically each, and recorded in the store's
manifest under ``"sentences"``)::

    sentences.json          version, vector source, counts, the passage and entity id orders
    sentences.npz           per sentence: passage (position), start, end; the entity x
                            sentence edges (CSR, kinds)
    sentence_vectors.npy    float16, one row per sentence

An update reuses the vector of every sentence whose passage and span it already had
(`SentenceLayer.vectors_by_span`) and recomputes the edges from the updated store, so the layer
equals a rebuild's with the same vectors.
"""

from __future__ import annotations

import json
import os
import re
import threading
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import normalize_name, split_qualifier

SENTENCES_JSON = "sentences.json"
SENTENCES_NPZ = "sentences.npz"
SENTENCE_VECTORS = "sentence_vectors.npy"
SENTENCE_FILES = (SENTENCES_JSON, SENTENCES_NPZ, SENTENCE_VECTORS)
LAYER_VERSION = 1
SENTENCE_DTYPE = np.float16

SENTENCE_VECTOR_SOURCES = ("pooled", "encoded", "none")
"""``GraphSettings.sentences``: how sentence vectors are made (``"none"``: no sentence layer)."""

NAMED = 1
"""Edge kind: the sentence names the entity."""
TITLED = 2
"""Edge kind: the entity is the passage's title entity and the sentence does not name it."""

MIN_SENTENCE_CHARS = 3
"""Shorter pieces (a stray bracket, a lone bullet) are joined to the sentence before them."""

_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr prof gen col lt sgt capt rev hon vs etc inc ltd co corp no nos vol "
    "fig approx est dept univ ave mt ft jan feb mar apr jun jul aug sep sept oct nov dec e.g "
    "i.e cf al ca".split()
)
_END = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
_WORD_BEFORE = re.compile(r"([\w.]+)$")


def split_sentences(text: str, offset: int = 0) -> list[tuple[int, int]]:
    """``[start, end)`` spans of the sentences of `text` (shifted by `offset`), trimmed of
    surrounding space; line ends always end a sentence, and ``.``/``!``/``?`` followed by space
    and a capital, a digit or an opening quote ends one unless the word before it is an initial
    ("J. R. R. Tolkien") or a common abbreviation ("St.", "e.g.")."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for line in text.split("\n"):
        begin = pos
        pos += len(line) + 1
        cut = 0
        for m in _END.finditer(line):
            word = _WORD_BEFORE.search(line, 0, m.start())
            token = word.group(1).lower().rstrip(".") if word else ""
            if m.group(0).startswith(".") and (
                (len(token) == 1 and token.isalpha()) or token in _ABBREVIATIONS
            ):
                continue
            _add(spans, line, cut, m.end(), begin + offset)
            cut = m.end()
        _add(spans, line, cut, len(line), begin + offset)
    return spans


def _add(spans: list[tuple[int, int]], line: str, start: int, end: int, shift: int) -> None:
    piece = line[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    s = start + (len(piece) - len(piece.lstrip()))
    e = s + len(stripped)
    if len(stripped) < MIN_SENTENCE_CHARS and spans and spans[-1][1] <= s + shift:
        spans[-1] = (spans[-1][0], e + shift)
        return
    spans.append((s + shift, e + shift))


def passage_sentences(passage: Passage) -> np.ndarray:
    """The sentence spans of a passage in `Passage.content` ((n, 2) int64), its title line left
    out."""
    offset = len(passage.title) + 1 if passage.title else 0
    spans = split_sentences(passage.text, offset)
    return np.asarray(spans, dtype=np.int64).reshape(-1, 2)


# -- vectors from the passage pass ----------------------------------------------------------------


class PooledSentences:
    """Sentence vectors pooled in the passage pass (`encode_passages(..., sentences=...)`): the
    pass asks `spans(passage)` and hands back `put(passage_id, spans, vectors)`; a zero row
    (past the encoder's window) is left for `sentence_write.write_sentence_layer` to encode."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    def spans(self, passage: Passage) -> np.ndarray:
        return passage_sentences(passage)

    def put(self, passage_id: str, spans: np.ndarray, vectors: np.ndarray) -> None:
        with self._lock:
            self._rows[passage_id] = (spans, vectors.astype(SENTENCE_DTYPE))

    def get(self, passage_id: str) -> tuple[np.ndarray, np.ndarray] | None:
        return self._rows.get(passage_id)

    def update(self, other: PooledSentences) -> None:
        """Add another pass's rows (a shard's: `graphseek.knowledge.graph.build.MappedJoin`)."""
        with self._lock:
            self._rows.update(other._rows)

    def __getstate__(self) -> dict[str, Any]:  # a shard's rows travel back to the driver
        return {"rows": self._rows}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._rows = state["rows"]
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return sum(len(s) for s, _ in self._rows.values())


# -- edges ------------------------------------------------------------------------------------------


def _occurrences(lowered: str, name: str) -> list[int]:
    """Start offsets of `name` (lower-case) in `lowered` at word boundaries."""
    out: list[int] = []
    at = lowered.find(name)
    n = len(name)
    while at >= 0:
        before = lowered[at - 1] if at else " "
        after = lowered[at + n] if at + n < len(lowered) else " "
        if not before.isalnum() and not after.isalnum():
            out.append(at)
        at = lowered.find(name, at + 1)
    return out


def title_keys(title: str) -> set[str]:
    """The name keys an entity titled after a passage may have: the title and its base name."""
    keys = {normalize_name(title)}
    base, _ = split_qualifier(title)
    if base:
        keys.add(normalize_name(base))
    keys.discard("")
    return keys


def link_sentences(
    passages: Sequence[Passage],
    spans: Sequence[np.ndarray],
    names: Sequence[Sequence[str]],
    incidence: sparse.csr_matrix,
) -> sparse.csr_matrix:
    """Entity x sentence edges (int8 kinds `NAMED` / `TITLED`), sentences numbered passage by
    passage in the order of `passages` (`spans[j]`: passage j's sentence spans). `names[i]`:
    entity i's name and aliases; `incidence`: entities x passages (> 0 where linked)."""
    by_passage = sparse.csc_matrix(incidence)
    first = np.zeros(len(passages) + 1, dtype=np.int64)
    for j, s in enumerate(spans):
        first[j + 1] = first[j] + len(s)
    keys = [{normalize_name(n) for n in entity} for entity in names]
    rows: list[int] = []
    cols: list[int] = []
    kinds: list[int] = []
    for j, passage in enumerate(passages):
        sentence_spans = spans[j]
        if not len(sentence_spans):
            continue
        starts = sentence_spans[:, 0].tolist()
        ends = sentence_spans[:, 1].tolist()
        lowered = passage.content.lower()
        titled = title_keys(passage.title) if passage.title else set()
        for i in by_passage.indices[by_passage.indptr[j] : by_passage.indptr[j + 1]].tolist():
            hit: set[int] = set()
            for name in dict.fromkeys(n.strip().lower() for n in names[i]):
                if len(name) < 2:
                    continue
                for at in _occurrences(lowered, name):
                    k = bisect_right(starts, at) - 1
                    if k >= 0 and at < ends[k]:
                        hit.add(k)
            for k in sorted(hit):
                rows.append(i)
                cols.append(int(first[j]) + k)
                kinds.append(NAMED)
            if titled and keys[i] & titled:
                for k in range(len(starts)):
                    if k not in hit:
                        rows.append(i)
                        cols.append(int(first[j]) + k)
                        kinds.append(TITLED)
    return sparse.csr_matrix(
        (np.asarray(kinds, dtype=np.int8), (rows, cols)),
        shape=(len(names), int(first[-1])),
    )


# -- the layer ----------------------------------------------------------------------------------


@dataclass
class SentenceLayer:
    """The sentences of a graph store: rows passage by passage (in `passage_ids` order)."""

    passage_ids: list[str]
    passage: np.ndarray  # int32, position in `passage_ids` of each sentence
    start: np.ndarray  # int32, offsets in `Passage.content`
    end: np.ndarray
    vectors: np.ndarray  # float16 (sentences, dim)
    entity_ids: list[str]
    edges: sparse.csr_matrix  # (len(entity_ids), sentences), int8 kinds
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.passage)

    def text(self, k: int, content: str) -> str:
        """Sentence `k`'s text, from its passage's `content`."""
        return content[int(self.start[k]) : int(self.end[k])]

    def vectors_by_span(self) -> dict[tuple[str, int, int], np.ndarray]:
        """Each sentence's vector by (passage id, start, end): what an update reuses."""
        out = {}
        for k in range(len(self.passage)):
            key = (self.passage_ids[int(self.passage[k])], int(self.start[k]), int(self.end[k]))
            out[key] = self.vectors[k]
        return out

    def edges_for(self, entity_ids: Sequence[str]) -> sparse.csr_matrix:
        """The edges with rows in the order of `entity_ids` (a store's, which may have changed
        since the layer was written: an entity the layer does not know gets no edge)."""
        if list(entity_ids) == self.entity_ids:
            return self.edges
        row = {eid: i for i, eid in enumerate(self.entity_ids)}
        take = np.array([row.get(e, -1) for e in entity_ids], dtype=np.int64)
        known = take >= 0
        picked = self.edges[take[known]]
        out = sparse.lil_matrix((len(entity_ids), len(self)), dtype=np.int8)
        out[np.flatnonzero(known)] = picked
        return out.tocsr()

    # -- files ------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Write the three files into `directory`, each atomically (a temporary name, then
        renamed), the vectors first and the JSON last."""
        vectors = directory / SENTENCE_VECTORS
        replace_file(vectors, lambda h: np.save(h, self.vectors.astype(SENTENCE_DTYPE)))
        e = self.edges.tocsr()
        replace_file(
            directory / SENTENCES_NPZ,
            lambda h: np.savez(
                h,
                passage=self.passage.astype(np.int32),
                start=self.start.astype(np.int32),
                end=self.end.astype(np.int32),
                edge_kind=e.data.astype(np.int8),
                edge_sentence=e.indices.astype(np.int32),
                edge_indptr=e.indptr.astype(np.int64),
            ),
        )
        meta = {
            **self.meta,
            "version": LAYER_VERSION,
            "sentences": len(self),
            "edges": int(e.nnz),
            "passage_ids": self.passage_ids,
            "entity_ids": self.entity_ids,
        }
        text = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
        replace_file(directory / SENTENCES_JSON, lambda h: h.write(text.encode("utf-8")))

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> SentenceLayer | None:
        """The layer stored in a graph store's directory, or None if it has none (a store
        written before sentences were nodes, or built with ``sentences="none"``).
        `IndexFormatError` (one line, how to rebuild) for a layer of another version or one
        that does not hold together."""
        from graphseek.errors import IndexFormatError

        root = Path(directory)
        if not (root / SENTENCES_JSON).exists():
            return None
        hint = "rebuild the index with `graphseek index CORPUS --out DIR`"
        try:
            meta = json.loads((root / SENTENCES_JSON).read_text(encoding="utf-8"))
            if meta.get("version") != LAYER_VERSION:
                raise IndexFormatError(
                    f"{root / SENTENCES_JSON}: sentence layer version {meta.get('version')}, "
                    f"this graphseek reads version {LAYER_VERSION}; {hint}"
                )
            arrays = np.load(root / SENTENCES_NPZ)
            vectors = np.load(root / SENTENCE_VECTORS, mmap_mode="r")
            n = int(meta["sentences"])
            entity_ids = list(meta["entity_ids"])
            edges = sparse.csr_matrix(
                (arrays["edge_kind"], arrays["edge_sentence"], arrays["edge_indptr"]),
                shape=(len(entity_ids), n),
            )
            layer = cls(
                passage_ids=list(meta["passage_ids"]),
                passage=arrays["passage"],
                start=arrays["start"],
                end=arrays["end"],
                vectors=np.asarray(vectors),
                entity_ids=entity_ids,
                edges=edges,
                meta={k: v for k, v in meta.items() if k not in ("passage_ids", "entity_ids")},
            )
        except IndexFormatError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexFormatError(
                f"the sentence layer in {root} cannot be read ({exc}); {hint}"
            ) from exc
        if not (len(layer.passage) == len(layer.start) == len(layer.end) == len(vectors) == n):
            raise IndexFormatError(
                f"the sentence layer in {root} does not hold together ({n} sentences counted, "
                f"{len(layer.passage)} rows, {len(vectors)} vectors); {hint}"
            )
        return layer


def replace_file(path: Path, write: Callable[[Any], Any]) -> None:
    """Write `path` through `write(handle)` into a temporary name, then rename it."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
