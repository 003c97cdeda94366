"""Contextual alignment vectors: span pooling of token states, one encoder pass giving both the
passage vectors and the mention vectors (both backends agree), mention spans from the offline
extractor and from name search, base vectors as normalised sums, variant candidates, and graphs
built with them: recorded setting, stored mention vectors, an index storing the graph pass's
passage vectors, updates equal to a rebuild, base entities without a mention vector (by name,
or their record strings), the record-string fallback of a custom `embed`."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from floats import HALF_STEPS, assert_close

from graphseek.knowledge.embedder import Embedder, get_embedder, pool_spans
from graphseek.knowledge.graph import add_passages, build_graph, delete_passages
from graphseek.knowledge.graph.algorithms.candidates import variant_pairs
from graphseek.knowledge.graph.algorithms.contextual import (
    ALIGNMENT_VECTORS,
    base_vectors,
    encode_passages,
    mention_spans,
)
from graphseek.knowledge.graph.algorithms.records import EntityRecord
from graphseek.knowledge.graph.build import build_graph_with_vectors
from graphseek.knowledge.graph.extract.offline import OfflineExtractor
from graphseek.knowledge.graph.memory.spool import SpilledArray
from graphseek.knowledge.graph.models import Mention
from graphseek.knowledge.graph.settings import QUIET, GraphSettings, settings_of
from graphseek.knowledge.graph.store import SQLiteGraphStore
from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import stable_id


def test_pool_spans_is_the_normalised_mean_of_overlapping_tokens() -> None:
    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(6, 4)).astype(np.float32)
    # [CLS] "Ada" " Love" "lace" " wrote" [SEP]
    offsets = np.array([[0, 0], [0, 3], [4, 8], [8, 12], [13, 18], [0, 0]])
    spans = np.array([[4, 12], [5, 9], [0, 3], [40, 50]])
    got = pool_spans(hidden, offsets, spans)
    for row, tokens in zip(got[:3], ([2, 3], [2, 3], [1]), strict=True):
        want = hidden[tokens].mean(0)
        np.testing.assert_allclose(row, want / np.linalg.norm(want), rtol=1e-5)
    assert not got[3].any()  # no token there: a zero row


@pytest.fixture(scope="module")
def onnx() -> Embedder:
    return get_embedder()


TEXTS = [
    "Ada Lovelace\nAda Lovelace was an English mathematician, the daughter of Lord Byron.",
    "Warsaw\nMarie Curie was born in Warsaw in 1867.",
    "Long\n" + "Warsaw is the capital of Poland. " * 60 + "Curie",
]
SPANS = [
    np.array([[0, 12], [71, 81]]),
    np.array([[7, 18], [31, 37]]),
    np.array([[0, 4], [1985, 1990]]),
]


def test_one_pass_gives_the_passage_vectors_and_span_vectors(onnx: Embedder) -> None:
    vectors, spans = onnx.encode_spans(TEXTS, SPANS)
    bulk = onnx.encode(TEXTS * 3)[:3]  # more than SMALL_BATCH texts: the bulk (fp32) path
    np.testing.assert_allclose(vectors, bulk, atol=1e-6)
    assert [s.shape for s in spans] == [(2, 384), (2, 384), (2, 384)]
    assert np.allclose(np.linalg.norm(spans[0], axis=1), 1.0, atol=1e-5)
    assert not spans[2][1].any()  # past the 256-token window
    # the span of a name carries the name: closer to the name's own vector than to another's
    names = onnx.encode(["Lord Byron", "Marie Curie"])
    byron, curie = spans[0][1], spans[1][0]
    assert byron @ names[0] > byron @ names[1] and curie @ names[1] > curie @ names[0]


def test_releasing_the_pass_memory_renews_the_sessions_with_the_same_vectors(
    onnx: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build releases ONNX Runtime's arenas after the passage pass (`release_memory`): new
    sessions of the same models, which give the same vectors, bit for bit; the C heap's free
    memory that leaves is handed back to the OS."""
    from graphseek.knowledge import embedder

    given_back: list[bool] = []
    monkeypatch.setattr(embedder, "give_back_free_heap", lambda: given_back.append(True))
    before = onnx.encode_spans(TEXTS, SPANS)
    bulk = onnx.encode(TEXTS * 3)
    assert onnx._onnx is not None
    session = onnx._onnx.session
    onnx.release_memory()
    assert onnx._onnx.session is not session and given_back == [True]
    after = onnx.encode_spans(TEXTS, SPANS)
    np.testing.assert_array_equal(after[0], before[0])
    for a, b in zip(after[1], before[1], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(onnx.encode(TEXTS * 3), bulk)


def test_the_pass_pools_on_one_blas_thread_and_gives_the_threads_back(onnx: Embedder) -> None:
    """Pooling's matrix products run on the encoder's worker threads; OpenBLAS's own threads
    would fight those for the cores, so the pass holds BLAS to one thread, and only the pass."""
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    before = blas_threads()
    seen: list[list[int]] = []
    run_ids = onnx._run_ids

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(blas_threads())
        return run_ids(*args, **kwargs)

    onnx._run_ids = spy  # type: ignore[method-assign]
    try:
        onnx.encode_spans(TEXTS, SPANS)
    finally:
        del onnx._run_ids
    assert seen and all(n == 1 for n in seen[0])
    assert blas_threads() == before


def test_a_pass_run_partly_ahead_equals_one_pass(onnx: Embedder) -> None:
    texts, spans = TEXTS * 3, SPANS * 3
    vectors, pooled = onnx.encode_spans(texts, spans, batch_size=2)
    begun = onnx.span_pass(texts, batch_size=2)
    assert len(begun.plan) > 2
    assert begun.run_ahead(threading.Event(), max_bytes=1) == 1  # one batch, then the cap
    got_vectors, got_pooled = begun.finish(spans)
    np.testing.assert_array_equal(got_vectors, vectors)  # the same batches: bit for bit
    for got, want in zip(got_pooled, pooled, strict=True):
        np.testing.assert_array_equal(got, want)
    stopped = threading.Event()
    stopped.set()
    assert onnx.span_pass(texts, batch_size=2).run_ahead(stopped) == 0


def test_the_pass_runs_two_blocks_at_once_with_the_same_result(onnx: Embedder, monkeypatch) -> None:
    """With two encoder threads the passage pass keeps two blocks under way (their batches in
    one pool, so no more than two run at once), and gives what one block at a time gives, bit
    for bit, the mention rows in the blocks' order; BLAS threads are given back after."""
    from threadpoolctl import threadpool_info

    from graphseek.knowledge.graph.algorithms import contextual

    def blas_threads() -> list[int]:
        return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]

    passages = [Passage(id=f"p{k}", title="T", text=TEXTS[k % 3] + f" {k}") for k in range(9)]
    extractions = OfflineExtractor().extract(passages)
    monkeypatch.setattr(contextual, "BLOCK_BATCHES", 1)  # blocks of 2 passages: 5 blocks
    with onnx.bulk_threads(1):
        assert not onnx.concurrent_spans
        one_vectors, one_mentions = encode_passages(onnx, passages, extractions, batch_size=2)
    before = blas_threads()
    lock, calls, running, most = threading.Lock(), [0, 0], [0, 0], [0, 0]

    def counted(fn, k):  # type: ignore[no-untyped-def]
        """`fn`, its calls counted in slot `k`: how many, and the most under way at once."""

        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            with lock:
                calls[k] += 1
                running[k] += 1
                most[k] = max(most[k], running[k])
            try:
                return fn(*args, **kwargs)
            finally:
                with lock:
                    running[k] -= 1

        return wrapper

    monkeypatch.setattr(onnx, "encode_spans", counted(onnx.encode_spans, 0))  # blocks
    monkeypatch.setattr(onnx, "_states", counted(onnx._states, 1))  # batches
    with onnx.bulk_threads(2):
        assert onnx.concurrent_spans
        vectors, mentions = encode_passages(onnx, passages, extractions, batch_size=2)
    assert calls[0] == 5 and most[0] <= 2 and most[1] <= 2
    # the passage vectors are written to a file a block at a time, not held in an array
    assert isinstance(vectors, SpilledArray) and vectors.shape == (len(passages), onnx.dim)
    np.testing.assert_array_equal(vectors, one_vectors)
    assert list(mentions._row) == list(one_mentions._row)  # rows appended in the same order
    for mid in one_mentions._row:
        np.testing.assert_array_equal(mentions[mid], one_mentions[mid])
    assert blas_threads() == before


@pytest.mark.slow
def test_span_vectors_agree_across_backends(onnx: Embedder) -> None:
    torch_vectors, torch_spans = Embedder(backend="torch").encode_spans(TEXTS, SPANS)
    vectors, spans = onnx.encode_spans(TEXTS, SPANS)
    assert (np.sum(vectors * torch_vectors, axis=1) > 0.9999).all()
    for a, b in zip(spans, torch_spans, strict=True):
        found = np.abs(a).sum(1) > 0
        assert (np.sum(a[found] * b[found], axis=1) > 0.9999).all()
        assert not b[~found].any()


def test_offline_spans_point_at_the_names_in_the_content() -> None:
    passages = [
        Passage(id="a", title="Ada Lovelace", text="She was the daughter of Lord Byron."),
        Passage(id="b", title="", text="Marie Curie was born in Warsaw."),
    ]
    extractions = OfflineExtractor().extract(passages)
    for passage, extraction in zip(passages, extractions, strict=True):
        for m in extraction.mentions:
            assert passage.content[m.start : m.end] == m.name
    names = {m.name for x in extractions for m in x.mentions}
    assert {"Ada Lovelace", "Lord Byron", "Marie Curie", "Warsaw"} <= names


def test_mention_spans_fall_back_to_the_name_in_the_passage() -> None:
    passage = Passage(id="p", title="Warsaw", text="Marie Curie was born in WARSAW.")

    def m(name: str, start: int = -1, end: int = -1) -> Mention:
        return Mention(id=f"p#{name}", passage_id="p", name=name, start=start, end=end)

    spans = mention_spans(
        passage, [m("Marie Curie", 7, 18), m("warsaw"), m("Poland"), m("x", 5, 99), m(" ")]
    )
    assert spans.tolist() == [[7, 18], [0, 6], [-1, -1], [-1, -1], [-1, -1]]


def test_base_vectors_are_normalised_sums_and_report_the_missing() -> None:
    vectors = {
        "a": np.array([1, 0, 0], np.float16),
        "b": np.array([0, 1, 0], np.float16),
        "c": np.array([0, 0, 1], np.float16),
    }
    rows, missing = base_vectors([["a", "b"], ["x"], ["c", "y"]], vectors, 3)
    np.testing.assert_allclose(rows[0], np.array([1, 1, 0]) / np.sqrt(2), rtol=1e-6)
    np.testing.assert_array_equal(rows[1], 0)
    np.testing.assert_allclose(rows[2], [0, 0, 1])
    assert missing == [1]


def test_base_vectors_in_blocks_are_the_sums_of_one_stack(monkeypatch) -> None:
    """Summed a few rows at a time (groups never split), every base vector has the same bits
    as when all rows are stacked at once."""
    from graphseek.knowledge.graph.algorithms import contextual

    rng = np.random.default_rng(7)
    vectors = {f"m{k}": rng.normal(size=16).astype(np.float16) for k in range(400)}
    ids = [*vectors, "gone-1", "gone-2"]
    members = [list(rng.choice(ids, size=int(rng.integers(1, 9)))) for _ in range(120)]
    whole, whole_missing = base_vectors(members, vectors, 16)
    monkeypatch.setattr(contextual, "BASE_ROWS", 5)
    blocked, blocked_missing = base_vectors(members, vectors, 16)
    assert blocked.tobytes() == whole.tobytes()
    assert blocked_missing == whole_missing
    assert np.count_nonzero(np.abs(whole).sum(1)) == len(members) - len(whole_missing)


def test_mention_vectors_keep_rows_in_a_file_and_read_them_back() -> None:
    from graphseek.knowledge.graph.algorithms.contextual import MENTION_DTYPE, MentionVectors

    rng = np.random.default_rng(3)
    first = rng.normal(size=(3, 8)).astype(np.float32)
    second = rng.normal(size=(2, 8)).astype(np.float32)
    vectors = MentionVectors(8)
    vectors.append(["p1#m0", "p1#m1", "p1#m2"], first)
    vectors.append([], np.zeros((0, 8), np.float16))
    vectors.append(["p2#m0", "p1#m1"], second)  # a later row for an id replaces the earlier
    assert list(vectors) == ["p1#m0", "p1#m1", "p1#m2", "p2#m0"]
    assert len(vectors) == 4 and "p2#m0" in vectors and "p9#m0" not in vectors
    row = vectors["p1#m2"]
    assert row.dtype == MENTION_DTYPE and not row.flags.writeable
    assert row.tobytes() == first[2].astype(MENTION_DTYPE).tobytes()
    assert vectors["p1#m1"].tobytes() == second[1].astype(MENTION_DTYPE).tobytes()
    with pytest.raises(KeyError):
        vectors["p9#m0"]
    kept = vectors.restrict(["p2#m0", "p1#m0", "p9#m0"])
    assert list(kept) == ["p2#m0", "p1#m0"]
    assert kept["p2#m0"].tobytes() == vectors["p2#m0"].tobytes()
    with pytest.raises(ValueError, match="2 ids for a block of shape"):
        vectors.append(["a", "b"], np.zeros((3, 8), np.float16))


def test_frozen_mention_vectors_read_the_same_rows_through_sorted_ids() -> None:
    """`freeze` replaces the row dict by row numbers over alignment's sorted ids: the same
    keys, rows and runs; ids without a vector stay absent; nothing can be added after."""
    from graphseek.knowledge.graph.algorithms.contextual import MentionVectors
    from graphseek.knowledge.graph.memory.id_columns import IdList, MentionIds

    rng = np.random.default_rng(5)
    vectors = MentionVectors(4)
    vectors.append(["p2#m0", "p1#m1", "p1#m0"], rng.normal(size=(3, 4)))
    vectors.append(["p1#m1"], rng.normal(size=(1, 4)))  # replaced: row 3
    before = {m: vectors[m].tobytes() for m in vectors}
    taken = vectors.take(["p1#m0", "p2#m0", "p1#m1"]).tobytes()
    ids = ["p1#m0", "p1#m1", "p1#m2", "p2#m0"]  # p1#m2: a mention without a vector
    unfrozen = vectors.restrict(ids)
    assert unfrozen.sorted_keys() == ["p1#m0", "p1#m1", "p2#m0"]
    mention_ids = MentionIds.of(ids)
    assert mention_ids is not None
    vectors.freeze(mention_ids)  # alignment's ids: two int columns (`id_columns`)
    assert list(vectors) == ["p1#m0", "p1#m1", "p2#m0"] and len(vectors) == 3
    assert {m: vectors[m].tobytes() for m in vectors} == before and "p1#m2" not in vectors
    assert vectors.take(["p1#m0", "p2#m0", "p1#m1"]).tobytes() == taken
    assert vectors.restrict(["p2#m0"])["p2#m0"].tobytes() == before["p2#m0"]
    # the store write's ids: a view of the frozen ids, not a list of strings
    keys = vectors.sorted_keys()
    assert isinstance(keys, IdList) and keys == ["p1#m0", "p1#m1", "p2#m0"]
    with pytest.raises(ValueError, match="frozen"):
        vectors.append(["p3#m0"], np.zeros((1, 4)))
    other = MentionVectors(4)
    other.append(["p9#m0"], np.zeros((1, 4)))
    with pytest.raises(ValueError, match="1 mention vectors have no id"):
        other.freeze(ids)


def test_mention_vectors_take_rows_in_runs_as_lookups_give_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`take` stacks the rows of any ids (any order, repeats, a replaced row, a restricted
    view) as their lookups do, reading each run of rows that lie one after another once."""
    from graphseek.knowledge.graph.algorithms.contextual import MENTION_DTYPE, MentionVectors
    from graphseek.knowledge.graph.memory.spool import TempFile

    rng = np.random.default_rng(7)
    vectors = MentionVectors(4)
    ids = [f"p{p}#m{m}" for p in range(5) for m in range(6)]
    vectors.append(ids, rng.normal(size=(len(ids), 4)))
    vectors.append(["p2#m3"], rng.normal(size=(1, 4)))  # replaces a row: now at the end
    wanted = ids[::-1] + ["p0#m0", "p2#m3", "p0#m0"]
    reads: list[int] = []
    real = TempFile.read
    monkeypatch.setattr(TempFile, "read", lambda self, *a: reads.append(1) or real(self, *a))
    got = vectors.take(wanted)
    assert got.dtype == MENTION_DTYPE and got.shape == (len(wanted), 4)
    # runs: rows 0-14, 16-30 (15 was replaced by 30), and one read per repeat (0 twice, 30)
    assert len(reads) == 5
    reads.clear()
    want = np.stack([vectors[m] for m in wanted])
    assert got.tobytes() == want.tobytes()
    kept = vectors.restrict(["p4#m5", "p1#m1"])
    assert (
        kept.take(["p1#m1", "p4#m5"]).tobytes()
        == np.stack([vectors["p1#m1"], vectors["p4#m5"]]).tobytes()
    )
    assert vectors.take([]).shape == (0, 4)


def test_mention_vectors_read_back_from_a_stored_file(tmp_path: Path) -> None:
    """An update's cache copies the store's rows into its own file in blocks; float32 rows (a
    PostgreSQL export) come back as the float16 values they were; a bad file is one line."""
    from graphseek.knowledge.graph.algorithms import contextual
    from graphseek.knowledge.graph.algorithms.contextual import MENTION_DTYPE, MentionVectors
    from graphseek.knowledge.graph.stages.passage_pass import with_new

    rng = np.random.default_rng(5)
    rows = rng.normal(size=(7, 4)).astype(MENTION_DTYPE)
    ids = [f"p{k}#m0" for k in range(7)]
    for dtype in (MENTION_DTYPE, np.float32):
        np.save(tmp_path / "v.npy", rows.astype(dtype))
        contextual.BASE_ROWS, saved = 3, contextual.BASE_ROWS
        try:
            stored = MentionVectors.from_npy(tmp_path / "v.npy", ids)
        finally:
            contextual.BASE_ROWS = saved
        assert list(stored) == ids
        assert np.stack([stored[m] for m in ids]).tobytes() == rows.tobytes()
    new = {"p9#m0": rows[0], "p1#m0": rows[6]}
    merged = with_new(stored, new)
    assert merged is stored and list(merged) == [*ids, "p9#m0"]
    assert merged["p1#m0"].tobytes() == rows[6].tobytes()  # a new row replaces the stored one
    with pytest.raises(ValueError, match="rows for 6 mention ids"):
        MentionVectors.from_npy(tmp_path / "v.npy", ids[:6])


def test_variant_pairs_find_name_variants_only() -> None:
    def record(name: str) -> EntityRecord:
        return EntityRecord(name, [], "", ["PERSON"], [name], ["p"])

    base = [
        record(n) for n in ("Stephen Curry", "Steph Curry", "John Smith", "Joan Smith", "Curry")
    ]
    assert variant_pairs(base, range(len(base)), 30) == {(0, 1)}
    assert variant_pairs(base, [2, 3], 30) == set()
    assert variant_pairs(base, [0], 1) == set()  # blocks larger than the limit are skipped


def test_settings_validate_and_old_stores_align_records() -> None:
    from graphseek.cli import ALIGNMENT_VECTORS as CLI_CHOICES

    assert CLI_CHOICES == ALIGNMENT_VECTORS
    assert GraphSettings().alignment == ALIGNMENT_VECTORS[0] == "contextual"
    with pytest.raises(ValueError, match="unknown alignment vectors"):
        GraphSettings(alignment="bert")

    assert GraphSettings().outside_window is None  # resolved by the build, per extractor
    with pytest.raises(ValueError, match="unknown outside_window"):
        GraphSettings(outside_window="static")

    class Old:
        manifest = {"settings": {"tau": 0.3, "vectors": "static"}}

    old = settings_of(Old())  # type: ignore[arg-type]
    assert (old.alignment, old.outside_window) == ("records", "records")

    class LastRelease:  # contextual, before outside_window existed: record strings for those
        manifest = {"settings": {"tau": 0.3, "vectors": "static", "alignment": "contextual"}}

    assert settings_of(LastRelease()).outside_window == "records"  # type: ignore[arg-type]


def test_base_entities_without_a_mention_vector_merge_by_name_or_embed_their_record() -> None:
    """Every mention of "Steph Curry" and of "NBA" lies past the encoder's window: by default
    they have no vector (zero rows) and meet other base entities by name only; with
    ``embed_outside`` their record strings are embedded."""
    from graphseek.knowledge.graph.algorithms.align import Aligner, AlignmentCache

    def mention(k: int, name: str, kind: str) -> Mention:
        return Mention(id=f"p{k}#m0", passage_id=f"p{k}", name=name, types=[kind])

    mentions = [
        mention(1, "Stephen Curry", "PERSON"),
        mention(2, "Steph Curry", "PERSON"),
        mention(3, "NBA", "ORG"),
        mention(4, "National Basketball Association", "ORG"),
    ]
    contextual = {
        "p1#m0": np.array([1, 0, 0, 0], np.float16),
        "p4#m0": np.array([0, 1, 0, 0], np.float16),
    }
    embedded: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        embedded.extend(texts)
        return np.tile(np.array([0, 0, 0, 1], np.float32), (len(texts), 1))

    names = Aligner(embed=embed, tau=0.3).align(mentions, AlignmentCache(), contextual)
    assert embedded == []
    rows = dict(zip(names.base_texts, names.base_vectors.load(), strict=True))
    assert not rows["Steph Curry; PERSON"].any() and not rows["NBA; ORG"].any()
    by_mention = names.mention_entity
    assert by_mention["p1#m0"] == by_mention["p2#m0"]  # a name variant: found by name
    assert by_mention["p3#m0"] != by_mention["p4#m0"]  # an acronym: only vectors found those

    records = Aligner(embed=embed, tau=0.3, embed_outside=True).align(
        mentions, AlignmentCache(), contextual
    )
    assert sorted(embedded) == ["NBA; ORG", "Steph Curry; PERSON"]
    rows = dict(zip(records.base_texts, records.base_vectors.load(), strict=True))
    np.testing.assert_array_equal(rows["NBA; ORG"], [0, 0, 0, 1])


@pytest.mark.parametrize("rows", [None, 1])  # one block; a block per row
def test_an_update_reuses_the_base_vectors_of_unchanged_base_entities(
    rows: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base entity whose id the cache holds has the same mentions, so its stored row is
    used and its mentions' vectors are not read; the others are summed. The rows equal a
    fresh alignment's."""
    from graphseek.knowledge.graph.algorithms import align
    from graphseek.knowledge.graph.algorithms.align import Aligner, AlignmentCache

    if rows:
        monkeypatch.setattr(align, "BASE_ROWS", rows)

    def mention(k: int, name: str, kind: str) -> Mention:
        return Mention(id=f"p{k}#m0", passage_id=f"p{k}", name=name, types=[kind])

    old = [mention(1, "Stephen Curry", "PERSON"), mention(2, "Akron", "GPE")]
    new = [mention(3, "Stephen Curry", "PERSON"), mention(4, "Ohio", "GPE")]
    vectors = {
        "p1#m0": np.array([1, 0, 0, 0], np.float16),
        "p2#m0": np.array([0, 1, 0, 0], np.float16),
        "p3#m0": np.array([1, 1, 0, 0], np.float16),
        "p4#m0": np.array([0, 0, 1, 0], np.float16),
    }

    def embed(texts: list[str]) -> np.ndarray:
        raise AssertionError(f"nothing is embedded here: {texts}")

    aligner = Aligner(embed=embed, tau=0.3)
    first = aligner.align(old, AlignmentCache(), vectors)
    stored = dict(zip(first.base_ids, first.base_vectors.load(), strict=True))
    fresh = aligner.align(old + new, AlignmentCache(), vectors)

    class Watched(dict):  # the mention vectors, recording which are read
        def __init__(self, data: dict[str, np.ndarray]) -> None:
            super().__init__(data)
            self.read: list[str] = []

        def __getitem__(self, key: str) -> np.ndarray:
            self.read.append(key)
            return super().__getitem__(key)

    watched = Watched(vectors)
    cache = AlignmentCache(base_ids=set(first.base_ids), pairs=first.pairs, base_vectors=stored)
    updated = aligner.align(old + new, cache, watched)
    assert updated.base_ids == fresh.base_ids
    np.testing.assert_array_equal(updated.base_vectors.load(), fresh.base_vectors.load())
    assert updated.mention_entity == fresh.mention_entity
    # "Akron" kept its base entity (its row reused); "Stephen Curry" gained a mention
    assert "p2#m0" not in watched.read and {"p1#m0", "p3#m0", "p4#m0"} <= set(watched.read)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Index:
    root = tmp_path_factory.mktemp("contextual")
    return Index.build(tiny_passages, root / "full", show_progress=False, graph=True)


def test_index_stores_the_graph_pass_passage_vectors(built: Index, onnx: Embedder) -> None:
    store = built.graph
    assert store.manifest["settings"]["alignment"] == "contextual"
    assert store.manifest["settings"]["outside_window"] == "names"  # the offline extractor
    assert "embed_passages" in store.manifest["timings"]
    contents = [p.content for p in built.passages]
    want = onnx.encode(contents * 2)[: len(contents)]  # the bulk path, as an index uses
    np.testing.assert_allclose(built.embeddings, want, atol=1e-6)


def test_base_vectors_come_from_the_mentions(built: Index, tiny_passages) -> None:
    store = built.graph
    mention_vectors, ids = store.mention_embeddings()
    assert mention_vectors.dtype == np.float16 and len(ids) == len(mention_vectors) > 0
    extractions = OfflineExtractor().extract(tiny_passages)
    _, fresh = encode_passages(get_embedder(), tiny_passages, extractions)
    assert sorted(fresh) == ids
    np.testing.assert_allclose(
        mention_vectors.astype(np.float32),
        np.stack([fresh[m] for m in ids]).astype(np.float32),
        atol=2e-3,
    )
    # a base entity of one mention has that mention's vector
    base_ids, texts, stored, _ = store.alignment_state()
    row_of = {b: k for k, b in enumerate(base_ids)}
    single = 0
    for mid, vector in zip(ids, mention_vectors, strict=True):
        k = row_of.get(stable_id("b", mid, length=16))
        if k is not None:
            want = vector.astype(np.float32)
            np.testing.assert_allclose(stored[k], want / np.linalg.norm(want), atol=1e-6)
            single += 1
    assert single > 10
    # a contextual vector is not the record string's
    minilm = get_embedder().encode(list(texts))
    assert (np.sum(np.asarray(stored) * minilm, axis=1) < 0.99).mean() > 0.5


def test_contextual_update_and_delete_equal_a_rebuild(tiny_passages, tmp_path: Path) -> None:
    """The same entities, relations and vectors. The vectors come from other code paths (the
    update's passage pass runs over the new passages alone, in other batches; the delete keeps
    the stored rows): compared within a tolerance, the base vectors within two float16 steps
    (`HALF_STEPS`: they are sums of float16 mention vectors, whose rounding can turn a
    last-bit difference into one float16 step). Merges are decided on cosines the fixture
    holds nowhere near the candidate threshold (the nearest: 0.033 from it)."""

    def snapshot(store: SQLiteGraphStore) -> tuple[object, ...]:
        vectors, ids = store.entity_embeddings()
        return (
            sorted(e.model_dump_json() for e in store.entities()),
            sorted(r.id for r in store.relations()),
            list(ids),
            np.asarray(vectors),
        )

    def assert_same(got: SQLiteGraphStore, want: SQLiteGraphStore) -> None:
        assert_close(snapshot(got), snapshot(want))
        base = np.asarray(got.alignment_state()[2])
        assert_close(base, np.asarray(want.alignment_state()[2]), rtol=HALF_STEPS)

    full = build_graph(tiny_passages, tmp_path / "full", run=QUIET)
    build_graph(tiny_passages[:5], tmp_path / "grown", run=QUIET).close()
    grown = add_passages(tmp_path / "grown", tiny_passages[5:], run=QUIET)
    assert_same(grown, full)
    part = build_graph(tiny_passages[:5], tmp_path / "part", run=QUIET)
    shrunk = delete_passages(tmp_path / "full", [p.id for p in tiny_passages[5:]])
    assert_same(shrunk, part)
    assert len(shrunk.mention_embeddings()[1]) == len(part.mention_embeddings()[1])


def test_a_build_runs_the_first_batches_ahead_with_the_same_result(
    tiny_passages: list[Passage], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphseek.knowledge.graph.memory.run_ahead as run_ahead_module
    from graphseek.knowledge.embedder import SpanPass

    run_ahead = SpanPass.run_ahead
    ran: list[int] = []

    def one_batch_ahead(self: SpanPass, stop: threading.Event, max_bytes: int = 0) -> int:
        # spaCy is loaded already here, so `stop` comes at once: run one batch regardless
        ran.append(run_ahead(self, threading.Event(), max_bytes=1))
        return ran[-1]

    def build(name: str) -> tuple[np.ndarray, SQLiteGraphStore]:
        built = build_graph_with_vectors(tiny_passages, tmp_path / name, run=QUIET)
        # the pass's vectors come in their temporary file; np.asarray reads them
        vectors = built.passage_vectors
        assert isinstance(vectors, SpilledArray) and len(vectors) == len(tiny_passages)
        return np.asarray(vectors), built.store

    monkeypatch.setattr(SpanPass, "run_ahead", one_batch_ahead)
    monkeypatch.setattr(run_ahead_module, "AHEAD_MIN", 1)
    ahead_vectors, ahead = build("ahead")
    assert ran == [1]
    monkeypatch.setattr(run_ahead_module, "AHEAD_MIN", 10**9)
    plain_vectors, plain = build("plain")
    assert ran == [1]
    np.testing.assert_array_equal(ahead_vectors, plain_vectors)
    np.testing.assert_array_equal(ahead.mention_embeddings()[0], plain.mention_embeddings()[0])
    assert [e.model_dump() for e in ahead.entities()] == [e.model_dump() for e in plain.entities()]


def test_custom_embed_aligns_record_strings(tiny_passages, tmp_path: Path) -> None:
    def embed(texts):  # noqa: ANN001, ANN202
        return get_embedder().encode(list(texts))

    store = build_graph(tiny_passages[:4], tmp_path / "g", run=QUIET, embed=embed)
    assert store.manifest["settings"]["alignment"] == "records"
    assert store.mention_embeddings()[1] == []
    with pytest.raises(ValueError, match="custom `embed`"):
        build_graph(tiny_passages[:2], tmp_path / "h", run=QUIET).close()
        add_passages(tmp_path / "h", tiny_passages[2:4], run=QUIET, embed=embed)


def test_adding_to_an_index_encodes_the_new_passages_once(
    tiny_passages, tmp_path: Path, onnx: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.knowledge import embedders as embedders_module

    index = Index.build(tiny_passages[:5], tmp_path / "i", show_progress=False, graph=True)

    def no_second_pass(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("the graph update's passage vectors were encoded again")

    monkeypatch.setattr(embedders_module, "encode_texts", no_second_pass)
    index.add_documents(tiny_passages[5:])
    contents = [p.content for p in tiny_passages]
    want = onnx.encode(contents * 2)[: len(contents)]
    np.testing.assert_allclose(index.embeddings, want, atol=1e-6)
    assert [p.id for p in index.passages] == [p.id for p in tiny_passages]


def test_base_vector_blocks_give_base_vectors_rows_a_block_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Blocks end at a group's edge, zero rows stand for groups with no vector (one at the
    end too), and their stack is the rows of one sum over everything."""
    from graphseek.knowledge.graph.algorithms import contextual

    rng = np.random.default_rng(3)
    vectors = {f"m{k}": rng.standard_normal(6).astype(np.float16) for k in range(40)}
    members = [[f"m{k}", f"m{k + 1}"] for k in range(0, 30, 2)] + [["gone"]]
    members[4] = ["nothing", "here"]
    members.insert(7, [f"m{k}" for k in range(30, 40)])
    whole, whole_missing = contextual.base_vectors(members, vectors, 6)
    monkeypatch.setattr(contextual, "BASE_ROWS", 5)
    missing: list[int] = []
    blocks = list(contextual.base_vector_blocks(members, vectors, 6, missing))
    assert len(blocks) > 3 and all(b.dtype == np.float32 and b.shape[1] == 6 for b in blocks)
    np.testing.assert_array_equal(np.vstack(blocks), whole)
    assert missing == whole_missing == [4, len(members) - 1]
    assert not whole[4].any() and not whole[-1].any()
    np.testing.assert_allclose(np.linalg.norm(whole[[0, 7]], axis=1), 1, rtol=1e-6)
    assert list(contextual.base_vector_blocks([], vectors, 6, [])) == []


def test_shards_passage_vectors_are_joined_in_order_in_a_file() -> None:
    from graphseek.knowledge.graph.build import MappedJoin, MappedPassages, join_mapped

    first = np.arange(8, dtype=np.float32).reshape(2, 4)
    second = -np.arange(4, dtype=np.float32).reshape(1, 4)
    mention = np.ones(4, dtype=np.float16)
    parts = [
        MappedPassages([], first, {"a#m0": mention}),
        MappedPassages([], second, {"b#m0": mention * 2}),
    ]
    joined = join_mapped(parts)
    assert isinstance(joined.passage_vectors, SpilledArray)
    np.testing.assert_array_equal(joined.passage_vectors, np.vstack([first, second]))
    assert joined.mentions is not None and sorted(joined.mentions) == ["a#m0", "b#m0"]
    np.testing.assert_array_equal(joined.mentions["b#m0"], mention * 2)
    # a shard without the pass: the join has none (the reduce runs the pass itself)
    without = MappedJoin()
    for part in [parts[0], MappedPassages([]), parts[1]]:
        without.add(part)
    assert without.result().passage_vectors is None and without.result().mentions is None
    assert join_mapped([]).passage_vectors is None
