"""Speed-ups that must not change results, checked against the straightforward versions:
the label-token index of progressive retrieval against brute-force `stem_match`, dense search
against numpy, and the HNSW switch above the size threshold."""

from __future__ import annotations

import numpy as np

from graphseek.knowledge.dense import DenseIndex
from graphseek.knowledge.sparse import STOPWORDS
from graphseek.tools.graph_access import name_tokens, stem_match
from graphseek.tools.progressive import _TokenIndex

LABELS = [
    "directed by",
    "director of",
    "died in",
    "place of death",
    "born in",
    "birthplace",
    "spouse",
    "married to",
    "educated at",
    "educator",
    "composer",
    "composed by",
    "die",
    "country of citizenship",
    "citizen of",
    "is a",
    "produced by",
    "producer",
]
WORDS = [
    "directed",
    "director",
    "die",
    "died",
    "death",
    "birth",
    "born",
    "married",
    "marriage",
    "educ",
    "education",
    "compose",
    "composition",
    "citizenship",
    "country",
    "produce",
    "xyz",
    "dir",
    "spouses",
]


def brute_force(word: str) -> list[int]:
    return [
        i
        for i, label in enumerate(LABELS)
        if any(stem_match(word, t) for t in name_tokens(label) if t not in STOPWORDS)
    ]


def test_token_index_finds_exactly_the_stem_matches() -> None:
    index = _TokenIndex(LABELS)
    for word in WORDS:
        found = sorted({i for t in index.matching(word) for i in index.labels[t]})
        assert found == brute_force(word), word


def test_flat_dense_search_equals_numpy() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(500, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = vectors[:5] + 0.1 * rng.normal(size=(5, 16)).astype(np.float32)
    dense = DenseIndex.build(vectors)
    assert dense.kind == "IndexFlatIP"
    # FAISS and numpy score with two float kernels; the rankings are compared exactly, as the
    # fixture's 11 best scores per query are at least 3e-4 apart
    for q, hits in zip(queries, dense.search(queries, 10), strict=True):
        want = np.argsort(-(vectors @ q), kind="stable")[:10].tolist()
        assert [i for i, _ in hits] == want


def test_hnsw_above_the_threshold_finds_the_nearest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(2000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    dense = DenseIndex.build(vectors, hnsw_threshold=1000)
    assert dense.kind == "IndexHNSWFlat"
    dense.save(tmp_path)
    reopened = DenseIndex.load(tmp_path)
    assert reopened.kind == "IndexHNSWFlat" and len(reopened) == 2000
    hits = reopened.search(vectors[:50], 1)
    assert sum(h[0][0] == i for i, h in enumerate(hits)) >= 49  # itself, nearly always
    np.testing.assert_allclose(reopened.embeddings, vectors)
