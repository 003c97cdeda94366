"""Passage search, the bm25s way: a tiny inline corpus with exact expected ids, and comparisons
against a reference (rank-bm25) or brute-force implementation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from graphseek.knowledge import Hit, Index, Passage
from graphseek.knowledge.fusion import convex, rrf
from graphseek.knowledge.index import SearchMethod, hybrid_depth
from graphseek.knowledge.sparse import STOPWORDS, BM25Index, tokenize, top_k

QUERIES = [
    "Where did Ada Lovelace's father die?",
    "Who designed the Analytical Engine?",
    "In which country was the woman who won the Nobel Prize twice born?",
    "Which poet died in Greece?",
    "capital city of Poland",
    "mechanical computer",
    "radioactivity radioactivity research",  # a repeated term counts twice in both libraries
]


def ids(hits: list[Hit]) -> list[str]:
    return [h.passage.id for h in hits]


# ------------------------------------------------------------------------------ tokenizer


def test_tokenize_lowercases_splits_and_drops_stopwords() -> None:
    assert tokenize("Where did Ada Lovelace's father die, in 1852?") == [
        "ada",
        "lovelace",
        "father",
        "die",
        "1852",
    ]
    assert tokenize("snake_case Pokémon CAFÉ") == ["snake", "case", "pokemon", "cafe"]
    assert tokenize("Who was it?") == []
    assert tokenize("") == []
    assert {"the", "who", "was", "did", "of"} <= STOPWORDS


def test_top_k_orders_by_score_then_index_and_drops_non_positive() -> None:
    scores = np.array([0.5, 2.0, 0.0, 2.0, 1.0, -1.0], dtype=np.float32)
    assert top_k(scores, 3) == [(1, 2.0), (3, 2.0), (4, 1.0)]
    assert [i for i, _ in top_k(scores, 10)] == [1, 3, 4, 0]
    assert top_k(scores, 0) == []
    assert top_k(np.zeros(4, dtype=np.float32), 2) == []


# ------------------------------------------------------------------ BM25 vs the reference


def _reference(passages: list[Passage], **kwargs: float) -> BM25Okapi:
    return BM25Okapi([tokenize(p.content) for p in passages], k1=1.5, b=0.75, **kwargs)


def test_bm25_robertson_matches_rank_bm25_okapi(tiny_passages: list[Passage]) -> None:
    # bm25s omits Okapi's constant (k1 + 1) factor; with no query term in more than half the
    # documents (checked below), idf is never negative and the scores are otherwise identical.
    ours = BM25Index.build([p.content for p in tiny_passages], method="robertson")
    reference = _reference(tiny_passages)
    n = len(tiny_passages)
    for query in QUERIES:
        terms = tokenize(query)
        assert all(sum(t in doc for doc in reference.doc_freqs) <= n / 2 for t in terms)
        expected = reference.get_scores(terms)
        np.testing.assert_allclose(ours.scores(query) * (1.5 + 1), expected, rtol=1e-5, atol=1e-6)
        expected_order = [i for i in np.argsort(-expected, kind="stable") if expected[i] > 0]
        assert [i for i, _ in ours.search(query, n)] == expected_order


class _LuceneOkapi(BM25Okapi):
    """rank-bm25's Okapi scorer with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5))."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


def test_bm25_lucene_matches_okapi_with_lucene_idf(tiny_passages: list[Passage]) -> None:
    ours = BM25Index.build([p.content for p in tiny_passages])  # the runtime variant
    reference = _LuceneOkapi([tokenize(p.content) for p in tiny_passages], k1=1.5, b=0.75)
    for query in [*QUERIES, "English"]:  # "english" is in 3 of 8 passages
        expected = reference.get_scores(tokenize(query))
        np.testing.assert_allclose(ours.scores(query) * 2.5, expected, rtol=1e-5, atol=1e-6)


def test_bm25_lucene_keeps_a_term_shared_by_most_documents() -> None:
    texts = ["red apple", "red cherry", "red tomato", "green apple"]
    bm25 = BM25Index.build(texts)
    assert [i for i, _ in bm25.search("red", 5)] == [0, 1, 2]  # Robertson's idf would be 0
    assert BM25Index.build(texts, method="robertson").search("red", 5) == []


def test_bm25_unknown_terms_and_save_load(tiny_passages: list[Passage], tmp_path: Path) -> None:
    bm25 = BM25Index.build([p.content for p in tiny_passages])
    assert bm25.search("zyzzyva quux", 5) == []
    assert bm25.search("the of who", 5) == []
    bm25.save(tmp_path / "bm25")
    loaded = BM25Index.load(tmp_path / "bm25")
    assert len(loaded) == len(tiny_passages)
    for query in QUERIES:
        assert loaded.search(query, 3) == bm25.search(query, 3)
    assert BM25Index.read_params(tmp_path / "bm25")["method"] == "lucene"


def test_bm25_document_frequencies_count_the_texts_holding_each_term(
    tiny_passages: list[Passage], tmp_path: Path
) -> None:
    """A term's document frequency is the number of texts whose tokens hold it (a repeated
    term counts once per text), built or loaded, in every bm25s variant (Robertson's zero idf
    of a term most texts hold included); a term no text holds is absent."""
    from collections import Counter

    texts = [p.content for p in tiny_passages] + ["", "radioactivity radioactivity Poland"]
    texts += ["red apple", "red cherry", "red tomato"]
    expected = dict(Counter(w for t in texts for w in set(tokenize(t))))
    for method in BM25Index.METHODS:
        assert BM25Index.build(texts, method=method).document_frequencies() == expected, method
    bm25 = BM25Index.build(texts)
    bm25.save(tmp_path / "bm25")
    assert BM25Index.load(tmp_path / "bm25").document_frequencies() == expected
    assert "the" not in expected and "" not in bm25.document_frequencies()


@pytest.mark.parametrize("method", BM25Index.METHODS)
def test_bm25_scores_of_rows_are_the_full_scores_at_those_rows(
    tiny_passages: list[Passage], method: str
) -> None:
    """`scores_of(query, rows)` is `scores(query)[rows]`, the same float32 values, for every
    bm25s variant (bm25l and bm25+ add a non-occurrence score), in the order of `rows`,
    repeated rows and no rows included."""
    texts = [p.content for p in tiny_passages]
    bm25 = BM25Index.build(texts, method=method)
    n = len(texts)
    subsets = [list(range(n)), [n - 1, 0, 3], [2, 2, 5], [4], []]
    for query in [*QUERIES, "zyzzyva", "the of who"]:
        full = bm25.scores(query)
        for rows in subsets:
            part = bm25.scores_of(query, np.asarray(rows, dtype=np.int64))
            assert part.dtype == np.float32
            assert part.tobytes() == full[rows].tobytes(), (query, rows)
            assert bm25.scores_of(query, rows).tolist() == full[rows].tolist()
    with pytest.raises(IndexError):
        bm25.scores_of("mechanical computer", [n])
    with pytest.raises(IndexError):
        bm25.scores_of("mechanical computer", [-1])


# ------------------------------------------------------------------------------------- RRF


def test_bm25_files_are_the_same_whatever_the_string_hashing(tmp_path: Path) -> None:
    """The vocabulary is numbered in first-occurrence order: two processes with different
    hash seeds write the same files (bm25s numbers a set, which they order differently)."""
    import os
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from graphseek.knowledge.sparse import BM25Index\n"
        "texts = ['red apples and green pears', 'a green field of red poppies', "
        "'pears ripen late', 'the field is wide', 'apples, pears, plums and cherries']\n"
        "BM25Index.build(texts).save(sys.argv[1])\n"
    )
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", script, str(tmp_path / seed)], env=env, check=True)
    files = sorted(p.name for p in (tmp_path / "1").iterdir())
    assert "vocab.index.json" in files
    for name in files:
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes(), name
    vocab = BM25Index.load(tmp_path / "1")._retriever.vocab_dict
    assert list(vocab)[:3] == ["red", "apples", "green"]


def test_a_grown_bm25_index_is_the_one_built_anew(tmp_path: Path) -> None:
    """Built from a saved index of its first texts (`grown_from`), an index tokenizes only the
    new texts and writes the same files as one built from all of them; without the saved
    token ids, or with other parameters, it tokenizes everything, to the same index."""
    texts = ["red apples and green pears", "", "pears ripen late", "an élan of red poppies"]
    more = texts + ["new words, red and late", "plums"]
    BM25Index.build(texts).save(tmp_path / "first")
    BM25Index.build(more).save(tmp_path / "anew")
    grown = BM25Index.build(more, grown_from=tmp_path / "first")
    grown.save(tmp_path / "grown")
    for name in sorted(p.name for p in (tmp_path / "anew").iterdir()):
        assert (tmp_path / "anew" / name).read_bytes() == (tmp_path / "grown" / name).read_bytes()
    assert grown.search("red plums", 2) == BM25Index.build(more).search("red plums", 2)
    (tmp_path / "first" / "tokens.npz").unlink()
    BM25Index.build(more, grown_from=tmp_path / "first").save(tmp_path / "again")
    # token ids of another tokenizer are not reused
    with np.load(tmp_path / "grown" / "tokens.npz") as data:
        saved = {k: data[k] for k in data.files}
    saved["tokenizer"] = np.str_("another tokenizer")
    np.savez(tmp_path / "grown" / "tokens.npz", **saved)
    retokenized = BM25Index.build(more + ["cherries"], grown_from=tmp_path / "grown")
    assert retokenized.search("cherries", 1)[0][0] == len(more)
    other = BM25Index.build(more, k1=1.2, grown_from=tmp_path / "grown")
    assert other.params["k1"] == 1.2
    for name in ("data.csc.index.npy", "vocab.index.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "anew" / name).read_bytes()


def test_token_ids_read_as_a_list_of_lists() -> None:
    """bm25s reads every text's ids as a sequence of lists; BM25 hands it `Groups`, which
    makes each from one array when read."""
    from graphseek.knowledge.ragged import Groups

    lists = [[3, 1], [], [4, 1, 5], [9]]
    flat = np.array([i for x in lists for i in x], dtype=np.int32)
    rows = Groups(flat, np.array([0, 2, 2, 5, 6], dtype=np.int64))
    assert len(rows) == 4 and list(rows) == lists and list(rows) == lists  # read again
    assert rows[2] == [4, 1, 5] and rows[-1] == [9] and rows[1:3] == lists[1:3]
    assert all(type(i) is int for i in rows[0])
    with pytest.raises(IndexError, match="4 of 4"):
        rows[4]
    assert list(Groups(np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64))) == []


def test_a_bm25_index_of_a_corpus_view_is_the_one_of_its_list(tmp_path: Path) -> None:
    """`Contents` (the texts of passages, read as iterated: a spooled corpus's in blocks) gives
    the index files a list of the same texts gives."""
    from graphseek.knowledge.graph.memory.spool import PassageSpool
    from graphseek.knowledge.index import Contents

    passages = [Passage.from_title_text(f"T{k}", t) for k, t in enumerate(["red apples", "", "pears ripen late", "an élan of red poppies"])]  # fmt: skip
    spooled = Contents(PassageSpool.of(passages))
    assert len(spooled) == 4 and spooled[2] == passages[2].content
    assert (
        spooled[1:3] == [p.content for p in passages[1:3]]
        and list(spooled)[3] == passages[3].content
    )
    BM25Index.build(spooled).save(tmp_path / "view")
    BM25Index.build([p.content for p in passages]).save(tmp_path / "list")
    for name in sorted(p.name for p in (tmp_path / "list").iterdir()):
        assert (tmp_path / "view" / name).read_bytes() == (tmp_path / "list" / name).read_bytes()


def test_an_exact_index_of_rows_in_a_file_is_the_one_of_their_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors in a file (the passage pass's `SpilledArray`) go into an exact index a block at
    a time and are saved from the file: the same files and results as from an array; the
    index keeps no second copy of them. Past the threshold they are read whole."""
    from graphseek.knowledge import dense
    from graphseek.knowledge.dense import DenseIndex
    from graphseek.knowledge.graph.memory.spool import SpilledArray

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    monkeypatch.setattr(dense, "BLOCK_ROWS", 16)  # 4 blocks
    from_file = DenseIndex.build(SpilledArray(vectors))
    assert from_file.kind == "IndexFlatIP" and len(from_file) == 50
    from_file.save(tmp_path / "file")
    assert from_file._embeddings is None  # the index's own copy serves them from now on
    DenseIndex.build(vectors).save(tmp_path / "array")
    for name in ("embeddings.npy", "faiss.index"):
        assert (tmp_path / "file" / name).read_bytes() == (tmp_path / "array" / name).read_bytes()
    assert np.array_equal(from_file.embeddings, vectors)
    assert from_file.search(vectors[:3], 2) == DenseIndex.build(vectors).search(vectors[:3], 2)
    unsaved = DenseIndex.build(SpilledArray(vectors))
    assert np.array_equal(unsaved.embeddings, vectors)  # read from the file when asked
    graph = DenseIndex.build(SpilledArray(vectors), hnsw_threshold=10)
    assert graph.kind == "IndexHNSWFlat" and graph.search(vectors[7], 1)[0][0][0] == 7
    graph.save(tmp_path / "graph")  # saved from the array it was read into
    assert np.array_equal(np.load(tmp_path / "graph" / "embeddings.npy"), vectors)
    from_file.save(tmp_path / "again")  # a second save: from the index's rows
    assert (tmp_path / "again" / "embeddings.npy").read_bytes() == (
        tmp_path / "array" / "embeddings.npy"
    ).read_bytes()
    assert not from_file.embeddings.flags.writeable
    # array-likes other than a file of rows are read as arrays, as before
    listed = DenseIndex.build(vectors.tolist())
    assert listed.kind == "IndexFlatIP" and np.array_equal(listed.embeddings, vectors)


def test_a_grown_hnsw_index_inserts_only_the_new_vectors(tmp_path: Path) -> None:
    from graphseek.knowledge.dense import DenseIndex

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(60, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    DenseIndex.build(vectors[:50], hnsw_threshold=10).save(tmp_path / "first")
    grown = DenseIndex.build(vectors, hnsw_threshold=10, grown_from=tmp_path / "first")
    assert grown.kind == "IndexHNSWFlat" and len(grown) == 60
    assert np.array_equal(grown.embeddings, vectors)
    for row in (3, 55, 59):  # old and new vectors find themselves
        assert grown.search(vectors[row], 1)[0][0][0] == row
    # an exact index is built anew; an index of more rows than given is not reused
    flat = DenseIndex.build(vectors, hnsw_threshold=100, grown_from=tmp_path / "first")
    assert flat.kind == "IndexFlatIP" and len(flat) == 60
    assert (
        len(DenseIndex.build(vectors[:40], hnsw_threshold=10, grown_from=tmp_path / "first")) == 40
    )
    # a graph that does not hold exactly the stored embeddings is built anew
    np.save(tmp_path / "first" / "embeddings.npy", vectors[:45])
    rebuilt = DenseIndex.build(vectors, hnsw_threshold=10, grown_from=tmp_path / "first")
    assert len(rebuilt) == 60 and rebuilt.search(vectors[47], 1)[0][0][0] == 47


def test_an_exact_index_grown_past_the_threshold_inserts_into_the_graph_of_its_rows(
    tmp_path: Path,
) -> None:
    from graphseek.knowledge.dense import DenseIndex, early_graph, saved_graph

    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(80, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    DenseIndex.build(vectors[:50], hnsw_threshold=60).save(tmp_path / "exact")
    assert DenseIndex.load(tmp_path / "exact").kind == "IndexFlatIP"
    # the graph of the stored rows, built from the saved embeddings
    graph = saved_graph(tmp_path / "exact")
    assert graph is not None and graph.ntotal == 50 and hasattr(graph, "hnsw")
    # begun on a thread only when the growth crosses the threshold
    assert early_graph(tmp_path / "exact", 60, hnsw_threshold=60) is None  # stays exact
    assert early_graph(tmp_path / "exact", 80, hnsw_threshold=40) is None  # already past it
    assert early_graph(tmp_path / "missing", 80, hnsw_threshold=60) is None
    begun = early_graph(tmp_path / "exact", 80, hnsw_threshold=60)
    assert begun is not None
    for early in (begun, None):  # begun early, or built when the add writes: the same kind
        grown = DenseIndex.build(
            vectors, hnsw_threshold=60, grown_from=tmp_path / "exact", early=early
        )
        if early is not None:  # the graph begun is the one grown
            assert grown._faiss is early.future.result()
        assert grown.kind == "IndexHNSWFlat" and len(grown) == 80
        assert np.array_equal(grown.embeddings, vectors)
        hits = grown.search(vectors, 1)
        assert [h[0][0] for h in hits] == list(range(80))  # old and new rows find themselves
        grown.save(tmp_path / "grown")
        assert DenseIndex.load(tmp_path / "grown").kind == "IndexHNSWFlat"
    # a graph begun for another directory is not used
    DenseIndex.build(vectors[:50], hnsw_threshold=60).save(tmp_path / "other")
    elsewhere = early_graph(tmp_path / "other", 80, hnsw_threshold=60)
    assert elsewhere is not None
    grown = DenseIndex.build(
        vectors, hnsw_threshold=60, grown_from=tmp_path / "exact", early=elsewhere
    )
    assert grown._faiss is not elsewhere.future.result() and len(grown) == 80
    # a saved index whose rows are not its stored embeddings gives no graph
    np.save(tmp_path / "exact" / "embeddings.npy", vectors[:45])
    assert saved_graph(tmp_path / "exact") is None
    rebuilt = DenseIndex.build(vectors, hnsw_threshold=60, grown_from=tmp_path / "exact")
    assert len(rebuilt) == 80 and rebuilt.search(vectors[47], 1)[0][0][0] == 47


def test_rrf_hand_computed() -> None:
    fused = rrf([["a", "b", "c"], ["b", "c", "d"]], k=60)
    assert [d for d, _ in fused] == ["b", "c", "a", "d"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 62)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 63)


def test_rrf_weights_k_and_duplicates() -> None:
    fused = dict(rrf([["x", "y"], ["y", "x"]], k=0, weights=[3.0, 1.0]))
    assert fused == pytest.approx({"x": 3 / 1 + 1 / 2, "y": 3 / 2 + 1 / 1})
    # a repeated id counts once, at its best position
    assert dict(rrf([["a", "a", "b"]], k=1)) == pytest.approx({"a": 1 / 2, "b": 1 / 4})
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_rrf_ties_break_by_best_rank_then_ranking_order() -> None:
    # p and q both score 1/61 + 1/62; p reached rank 1 in the first ranking, q in the second.
    assert [d for d, _ in rrf([["p", "q"], ["q", "p"]])] == ["p", "q"]
    assert [d for d, _ in rrf([["q", "p"], ["p", "q"]])] == ["q", "p"]


def test_rrf_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="weights"):
        rrf([["a"], ["b"]], weights=[1.0])
    with pytest.raises(ValueError, match="k must be"):
        rrf([["a"]], k=-1)


def test_convex_hand_computed() -> None:
    fused = convex([[("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 0.9), ("d", 0.5), ("c", 0.1)]])
    # a: 0.5 * 1; b: 0.5 * 0.5 + 0.5 * 1; c: 0.5 * 0 + 0.5 * 0; d: 0.5 * 0.5
    assert fused == [("b", pytest.approx(0.75)), ("a", pytest.approx(0.5)),
                     ("d", pytest.approx(0.25)), ("c", pytest.approx(0.0))]  # fmt: skip


def test_convex_weights_flat_lists_empty_lists_and_duplicates() -> None:
    assert dict(convex([[("x", 1.0), ("y", 0.0)], [("y", 1.0), ("x", 0.0)]], [3.0, 1.0])) == (
        pytest.approx({"x": 3.0, "y": 1.0})
    )
    assert dict(convex([[("a", 2.0), ("b", 2.0)]])) == pytest.approx({"a": 1.0, "b": 1.0})
    assert convex([]) == [] and convex([[], []]) == []
    assert convex([[], [("d", 0.3)]]) == [("d", pytest.approx(0.5))]
    assert dict(convex([[("a", 2.0), ("a", 1.0), ("b", 1.0)]])) == pytest.approx(
        {"a": 1.0, "b": 0.0}
    )
    with pytest.raises(ValueError, match="weights"):
        convex([[("a", 1.0)], [("b", 1.0)]], [1.0])


def test_convex_ties_break_by_best_rank_then_list_order() -> None:
    assert [d for d, _ in convex([[("p", 1.0), ("q", 0.0)], [("q", 1.0), ("p", 0.0)]])] == [
        "p",
        "q",
    ]


# ----------------------------------------------------------------- Index.search, exact ids


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Who designed the Analytical Engine?", ["engine", "babbage", "ada"]),
        ("Which poet died in Greece?", ["byron", "missolonghi", "ada"]),
        ("capital city of Poland", ["warsaw"]),
        ("scientist who studied radioactivity", ["curie"]),
        ("mechanical computer", ["babbage", "engine"]),
    ],
)
def test_bm25_exact_ids(tiny_index: Index, query: str, expected: list[str]) -> None:
    assert ids(tiny_index.search(query, k=3, method="bm25")) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Who designed the Analytical Engine?", ["engine", "babbage", "ada"]),
        ("Which poet died in Greece?", ["byron", "ada", "missolonghi"]),
        ("capital city of Poland", ["warsaw", "missolonghi", "curie"]),
        ("scientist who studied radioactivity", ["curie", "engine", "ada"]),
        ("mechanical computer", ["babbage", "engine", "ada"]),
    ],
)
def test_dense_exact_ids(tiny_index: Index, query: str, expected: list[str]) -> None:
    got = ids(tiny_index.search(query, k=3, method="dense"))
    if query in DENSE_NEAR_TIES:  # exact top hit, then the tied tail in either order
        assert got[0] == expected[0] and sorted(got[1:]) == sorted(expected[1:])
    else:
        assert got == expected


DENSE_NEAR_TIES = {"scientist who studied radioactivity"}
"""Queries whose 2nd and 3rd passages are within 0.02 cosine of each other (0.19 vs 0.18: two
unrelated passages); the int8 query model (cosine >= 0.99 to fp32) may swap them."""


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Who designed the Analytical Engine?", ["engine", "babbage", "ada"]),
        ("Where did Ada Lovelace's father die?", ["ada", "milbanke", "byron"]),
        ("capital city of Poland", ["warsaw", "missolonghi", "curie"]),
        ("mechanical computer", ["babbage", "engine", "ada"]),
    ],
)
def test_hybrid_exact_ids(tiny_index: Index, query: str, expected: list[str]) -> None:
    assert ids(tiny_index.search(query, k=3)) == expected


def test_hybrid_near_tie_is_compared_as_a_set(tiny_index: Index) -> None:
    # "ada" (dense's second) and "warsaw" (BM25's second, dense's fourth) fuse to within 0.001
    # of each other, so their order is left to the platform's float arithmetic.
    got = ids(
        tiny_index.search("In which country was the woman who won the Nobel Prize twice born?", k=3)
    )
    assert got[0] == "curie" and set(got[1:]) == {"ada", "warsaw"}


def test_dense_matches_brute_force(tiny_index: Index) -> None:
    vectors = tiny_index.embed(QUERIES)
    brute = vectors @ np.asarray(tiny_index.embeddings).T
    for query, row in zip(QUERIES, brute, strict=True):
        hits = tiny_index.search(query, k=len(tiny_index), method="dense")
        expected = np.argsort(-row, kind="stable")
        assert [tiny_index.position(h.passage.id) for h in hits] == list(expected)
        np.testing.assert_allclose([h.score for h in hits], row[expected], rtol=1e-5, atol=1e-5)


def test_hybrid_is_the_convex_fusion_of_bm25_and_dense(tiny_index: Index) -> None:
    k = 3
    depth = hybrid_depth(k)
    assert depth == 20
    for query in QUERIES:
        sparse = [(h.passage.id, h.score) for h in tiny_index.search(query, depth, "bm25")]
        dense = [(h.passage.id, h.score) for h in tiny_index.search(query, depth, "dense")]
        expected = convex([sparse, dense], [0.5, 0.5])[:k]
        hits = tiny_index.search(query, k=k, method="hybrid")
        assert [(h.passage.id, h.score) for h in hits] == [
            (pid, pytest.approx(score)) for pid, score in expected
        ]


def test_a_rare_words_exact_match_keeps_its_lead_in_hybrid() -> None:
    # BM25 is sure of "a" (far above the rest); dense barely prefers "b". Rank fusion levels
    # the two (a and b tie on ranks 1 + 2); the convex fusion of scores keeps BM25's lead.
    sparse = [("a", 12.0), ("b", 2.0), ("c", 1.0)]
    dense = [("b", 0.52), ("a", 0.50), ("c", 0.20)]
    assert convex([sparse, dense])[0][0] == "a"
    fused = dict(rrf([[p for p, _ in sparse], [p for p, _ in dense]], k=60))
    assert fused["a"] == pytest.approx(fused["b"])


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid"])
def test_hits_are_ranked_from_one_with_descending_scores(
    tiny_index: Index, method: SearchMethod
) -> None:
    hits = tiny_index.search("Lord Byron poet Greece", k=4, method=method)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(isinstance(h.passage, Passage) for h in hits)
    assert len(tiny_index.search("Byron", k=50, method=method)) <= len(tiny_index)


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid"])
def test_empty_query_gives_no_hits(tiny_index: Index, method: SearchMethod) -> None:
    assert tiny_index.search("", method=method) == []
    assert tiny_index.search("   \n", method=method) == []


def test_search_many_matches_search_and_keeps_order(tiny_index: Index) -> None:
    queries = [QUERIES[0], "", QUERIES[3]]
    methods: list[SearchMethod] = ["bm25", "dense", "hybrid"]
    for method in methods:
        batched = tiny_index.search_many(queries, k=3, method=method)
        assert len(batched) == 3 and batched[1] == []
        for query, hits in zip(queries, batched, strict=True):
            single = tiny_index.search(query, k=3, method=method)
            assert ids(hits) == ids(single)
            np.testing.assert_allclose(
                [h.score for h in hits], [h.score for h in single], rtol=1e-5
            )


def test_bad_method_and_k(tiny_index: Index) -> None:
    with pytest.raises(ValueError, match="bm25, dense, hybrid"):
        tiny_index.search("Byron", method="sparse")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        tiny_index.search("Byron", k=0)
    with pytest.raises(TypeError):
        tiny_index.search_many("Byron")  # a string, not a list of queries


def test_embed_returns_normalised_vectors(tiny_index: Index) -> None:
    vectors = tiny_index.embed(["Ada Lovelace", "Warsaw"])
    assert vectors.shape == (2, tiny_index.manifest["embedder"]["dim"])
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def test_the_early_graph_leaves_the_add_a_core(monkeypatch: pytest.MonkeyPatch) -> None:
    import faiss

    from graphseek.knowledge.dense import early_threads

    for cores, threads in ((1, 1), (2, 1), (16, 15)):
        monkeypatch.setattr(faiss, "omp_get_max_threads", lambda cores=cores: cores)
        assert early_threads() == threads
