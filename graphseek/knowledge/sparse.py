"""BM25 passage search on bm25s, with one deterministic tokenizer shared by indexing and querying.

Why bm25s: on the 2WikiMultiHopQA corpus it builds and queries far faster than rank-bm25 (the
figures are printed by `benchmarks/bm25_choice.py`); rank-bm25 is kept only as the reference
implementation that the tests compare against.

BM25 variants (Kamphuis et al., ECIR 2020). For a query term t with document frequency n_t in a
corpus of N documents, term frequency f in a document of length |d| (average avgdl):

    score = idf(t) * f / (f + k1 * (1 - b + b * |d| / avgdl))        (bm25s, every method)
    score = idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avgdl))  (rank-bm25)

The constant factor (k1 + 1) does not change the ranking. The methods differ in idf:

- `robertson` (bm25s) ~ `BM25Okapi` (rank-bm25): idf = log((N - n + 0.5) / (n + 0.5)). It is
  negative for a term in more than half of the documents: bm25s clips it to 0, rank-bm25 replaces
  it by 0.25 x the mean idf. Equal scores (up to k1 + 1) whenever no query term is that common.
- `lucene` (bm25s default, Lucene/Elasticsearch): idf = log(1 + (N - n + 0.5) / (n + 0.5)),
  always positive, so a term shared by most documents of a small corpus still counts.

The runtime uses `lucene`: user corpora are often tiny, where Robertson's idf silences common
query terms. The tests check both: `robertson` against `BM25Okapi`, and `lucene` against
`BM25Okapi` with Lucene's idf swapped in.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.ragged import Groups

logger = logging.getLogger(__name__)

TOKENIZER_NAME = "graphseek-v1: NFKD accent folding, lowercase, [^\\W_]+ tokens, English stopwords"

# English function words (Lucene's list plus question words and common auxiliaries), removed
# from both passages and queries.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could d did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just ll m me might more most must my myself no nor not now o of off on once only or other
    our ours ourselves out over own re s same shall she should so some such t than that the their
    theirs them themselves then there these they this those through to too under until up upon
    us ve very was we were what when where which while who whom whose why will with would y you
    your yours yourself yourselves
    """.split()
)

_TOKEN = re.compile(r"[^\W_]+")


def tokenize(text: str) -> list[str]:
    """Lowercased alphanumeric tokens of `text`, accents folded, English stopwords removed."""
    if not text.isascii():
        text = "".join(
            c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
        )
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The (index, score) pairs of the k highest positive scores, best first; ties by index."""
    if k <= 0:
        return []
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) > k:
        best = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        # keep every candidate tied with the k-th score, so ties break by index
        candidates = candidates[scores[candidates] >= scores[best].min()]
    order = np.lexsort((candidates, -scores[candidates]))[:k]
    return [(int(i), float(scores[i])) for i in candidates[order]]


TOKENS_FILE = "tokens.npz"
"""Each indexed text's token ids (``ids``, one array, cut at ``offsets``), saved beside bm25s's
files: an index grown by new texts tokenizes only those (`BM25Index.build`, `grown_from`)."""


def _saved_tokens(
    directory: Path, limit: int, params: dict[str, Any]
) -> tuple[dict[str, int], np.ndarray, np.ndarray] | None:
    """The vocabulary (as `BM25Index.build` numbers it) and every text's token ids (one int32
    array, and the offsets that cut it) of the index saved in `directory`; None when it has no
    tokens file, more texts than `limit`, or other parameters."""
    path = directory / TOKENS_FILE
    try:
        saved = json.loads((directory / "params.index.json").read_text(encoding="utf-8"))
        if any(saved.get(k) != v for k, v in params.items()) or not path.is_file():
            return None
        with np.load(path) as data:
            if str(data["tokenizer"]) != TOKENIZER_NAME:
                return None  # tokenized otherwise: tokenize every text again
            flat, offsets = data["ids"], data["offsets"]
        terms = json.loads((directory / "vocab.index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError):
        return None
    count = len(offsets) - 1
    if count > limit or count != saved.get("num_docs"):
        return None
    terms.pop("", None)  # bm25s's token for empty texts, appended after the texts' terms
    return terms, flat.astype(np.int32, copy=False), offsets.astype(np.int64, copy=False)


def _import_bm25s() -> Any:
    """Import bm25s, undoing its `logger.setLevel(DEBUG)` so it does not flood our logs."""
    import bm25s

    bm25s_logger = logging.getLogger("bm25s")
    if bm25s_logger.level == logging.DEBUG:
        bm25s_logger.setLevel(logging.WARNING)
    return bm25s


class BM25Index:
    """A bm25s retriever over a fixed list of texts; results are positions in that list."""

    METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")

    def __init__(self, retriever: Any) -> None:
        self._retriever = retriever
        self._tokens: tuple[np.ndarray, np.ndarray] | None = None
        """The indexed texts' token ids and their offsets (a built index's, saved with it)."""

    @classmethod
    def build(
        cls,
        texts: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        show_progress: bool = False,
        grown_from: str | Path | None = None,
    ) -> BM25Index:
        """Tokenize and index `texts`. The vocabulary is numbered in the order its terms first
        occur (bm25s numbers a set of them, whose order changes with each process's string
        hashing), so the same texts give the same index files, byte for byte.

        `grown_from`: a saved index of the first of `texts` (an index that grows at its end):
        their token ids are read from its `TOKENS_FILE` instead of tokenizing them again (most
        of a large index's build time); the same index files. Ignored when
        it has none, or its number of texts or parameters differ."""
        from graphseek.knowledge.progress import bar as progress_bar

        bm25s = _import_bm25s()
        if method not in cls.METHODS:
            raise ValueError(f"Unknown BM25 method {method!r}; choose one of {cls.METHODS}")
        from bm25s.tokenization import Tokenized

        vocab: dict[str, int] = {}
        ids, ends = array("i"), array("q", [0])  # every text's token ids, and where each ends
        if grown_from is not None:
            known = _saved_tokens(
                Path(grown_from), len(texts), {"k1": k1, "b": b, "method": method}
            )
            if known is not None:
                vocab = known[0]
                # the saved arrays' bytes, read once (not through a `tobytes` copy)
                ids.frombytes(known[1].data.cast("B"))
                ends = array("q")
                ends.frombytes(known[2].data.cast("B"))
        kept = len(ends) - 1
        # a fresh index reads `texts` in order (a view of a spooled corpus: in blocks), not
        # a slice, which would be a list of them all
        rest = texts[kept:] if kept else texts
        with progress_bar("BM25 index", len(texts), show_progress) as bar:
            bar.update(kept)
            for t in rest:
                ids.extend([vocab.setdefault(term, len(vocab)) for term in tokenize(t)])
                ends.append(len(ids))
                bar.update(1)
        flat = np.frombuffer(ids, dtype=np.int32) if ids else np.zeros(0, dtype=np.int32)
        offsets = np.frombuffer(ends, dtype=np.int64)
        retriever = bm25s.BM25(k1=k1, b=b, method=method)
        # bm25s reads the ids as a list per text, three times: made from the array when read,
        # not a list of lists of every text's ids (8 bytes a token and a list a text)
        retriever.index(Tokenized(ids=Groups(flat, offsets), vocab=vocab), show_progress=False)
        index = cls(retriever)
        index._tokens = (flat, offsets)
        return index

    def save(self, directory: str | Path) -> None:
        self._retriever.save(str(directory), show_progress=False)
        tokens = self._tokens
        if tokens is not None:  # for the next build of this index grown (`grown_from`)
            with open(Path(directory) / TOKENS_FILE, "wb") as handle:
                np.savez(
                    handle, ids=tokens[0], offsets=tokens[1], tokenizer=np.str_(TOKENIZER_NAME)
                )

    @classmethod
    def load(cls, directory: str | Path) -> BM25Index:
        bm25s = _import_bm25s()
        return cls(bm25s.BM25.load(str(directory), mmap=False))

    @staticmethod
    def read_params(directory: str | Path) -> dict[str, Any]:
        """The saved parameters (k1, b, method, num_docs, ...) without loading the index."""
        with open(Path(directory) / "params.index.json", encoding="utf-8") as f:
            params: dict[str, Any] = json.load(f)
        return params

    @property
    def params(self) -> dict[str, Any]:
        bm25s = _import_bm25s()
        r = self._retriever
        return {
            "implementation": "bm25s",
            "version": bm25s.__version__,
            "method": r.method,
            "k1": r.k1,
            "b": r.b,
            "tokenizer": TOKENIZER_NAME,
        }

    def __len__(self) -> int:
        return int(self._retriever.scores["num_docs"])

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed text for `query` (zeros when no query term is known)."""
        ids = self._retriever.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(len(self), dtype=np.float32)
        return np.asarray(self._retriever.get_scores_from_ids(ids), dtype=np.float32)

    def scores_of(self, query: str, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """BM25 score of the indexed texts at positions `rows` (each in ``0 .. len(self) - 1``,
        else IndexError) for `query`, in the order of `rows`: float32, the floats of
        ``scores(query)`` at those rows. For ranking a few texts (one document's passages: the
        second hop of `graphseek.tools.doc_hop`) by the index's own scores.

        One corpus-wide pass of bm25s (vectorised), then cut: reading only those rows' entries
        of the score matrix term by term runs in Python and was the slower of the two at the
        corpus sizes measured; callers rely on the result only, not on how it is read."""
        wanted = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(wanted) and (wanted.min() < 0 or wanted.max() >= len(self)):
            raise IndexError(f"rows outside the {len(self)} indexed texts")
        return self.scores(query)[wanted]

    def document_frequencies(self) -> dict[str, int]:
        """Each indexed term -> how many indexed texts hold it (terms no text holds left out).

        Read from bm25s's score matrix, one stored score per (term, text holding it): a term's
        column length is its document frequency, so a caller's idf needs no second
        tokenization of the corpus (`graphseek.tools.doc_hop`'s idf over an index's
        passages). Built anew on each call (one pass over the vocabulary)."""
        r = self._retriever
        counts = np.diff(np.asarray(r.scores["indptr"])).tolist()
        return {w: counts[i] for w, i in r.vocab_dict.items() if i < len(counts) and counts[i]}

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Positions and scores of the best `k` texts that share a term with `query`."""
        return top_k(self.scores(query), k)
