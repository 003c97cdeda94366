"""A build holds each of its growing structures once (issue 27, first step), and writes the same
store as the reference build: the same files byte for byte, the manifest's counts and settings.

The reference build runs today's functions as they were before the change (kept below,
verbatim): `cached_encode` that stacks a copy while the cache keeps the encoder's output,
the graph's static vectors made whole before they are spilled, `encode_passages` that keeps
every mention row, and the mention vectors stacked whole before `np.save`."""

from __future__ import annotations

import gc
import importlib
import json
import weakref
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from demo_builds import demo_copies, store_files, store_manifest

from graphseek.knowledge.graph import build_graph
from graphseek.knowledge.graph.algorithms.contextual import MENTION_DTYPE, mention_spans
from graphseek.knowledge.graph.algorithms.exact import components
from graphseek.knowledge.graph.memory.spool import PassageSpool
from graphseek.knowledge.graph.settings import QUIET, RunOptions
from graphseek.knowledge.passages import Passage

align = importlib.import_module("graphseek.knowledge.graph.algorithms.align")
building = importlib.import_module("graphseek.knowledge.graph.build")
memory = importlib.import_module("graphseek.knowledge.graph.memory")
align_stage = importlib.import_module("graphseek.knowledge.graph.stages.align")
link_stage = importlib.import_module("graphseek.knowledge.graph.stages.link")
pass_stage = importlib.import_module("graphseek.knowledge.graph.stages.passage_pass")
topics_stage = importlib.import_module("graphseek.knowledge.graph.stages.topics")
write_stage = importlib.import_module("graphseek.knowledge.graph.stages.write")
contextual = importlib.import_module("graphseek.knowledge.graph.algorithms.contextual")
store_writer = importlib.import_module("graphseek.knowledge.graph.store.writer")

# -- the reference: the functions as they were before the change ---------------------------------


def reference_cached_encode(texts, embed, cache):  # type: ignore[no-untyped-def]
    missing = sorted({t for t in texts if t not in cache})
    if missing:
        vectors = embed(missing)
        for text, vector in zip(missing, vectors, strict=True):
            cache[text] = np.asarray(vector, dtype=np.float32)
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([cache[t] for t in texts]).astype(np.float32, copy=False)


def reference_spill_per_text(texts, embed, cache):  # type: ignore[no-untyped-def]
    from collections import ChainMap

    from graphseek.knowledge.graph.memory.spool import SpilledArray

    # the whole array made (the cache read, not written), then spilled
    return SpilledArray(reference_cached_encode(texts, embed, ChainMap({}, cache)))


def reference_encode_passages(  # type: ignore[no-untyped-def]
    encoder, passages, extractions, *, batch_size=64, show_progress=False, ahead=None,
    sentences=None,
):  # fmt: skip
    n = len(passages)
    vectors = np.zeros((n, encoder.dim), dtype=np.float32)
    mentions = {}
    for k, idx in enumerate(contextual._blocks(passages, batch_size)):
        spans = [mention_spans(passages[i], extractions[i].mentions) for i in idx]
        # sentence nodes (issue 57): the sentences' spans after the mentions', pooled alike
        extra = [sentences.spans(passages[i]) for i in idx] if sentences is not None else []
        if extra:
            spans = [np.concatenate([m, s]) for m, s in zip(spans, extra, strict=True)]
        if k == 0 and ahead is not None:
            rows, pooled = ahead.finish(spans)
        else:
            rows, pooled = encoder.encode_spans(
                [passages[i].content for i in idx], spans, batch_size=batch_size
            )
        for r, own in enumerate(extra):
            cut = len(pooled[r]) - len(own)
            sentences.put(passages[idx[r]].id, own, pooled[r][cut:])
            pooled[r] = pooled[r][:cut]
        vectors[idx] = rows
        for i, span_vectors in zip(idx, pooled, strict=True):
            found = np.abs(span_vectors).sum(1) > 0
            half = span_vectors.astype(MENTION_DTYPE)
            for m, ok, row in zip(extractions[i].mentions, found, half, strict=True):
                if ok:
                    mentions[m.id] = row
    return vectors, mentions


def reference_save_rows(path, rows, ids, dim):  # type: ignore[no-untyped-def]
    stacked = np.stack([rows[m] for m in ids]) if ids else np.zeros((0, dim))
    np.save(path, np.ascontiguousarray(stacked, dtype=np.float16))


def reference_extract(passages, extractor, coreferencer, timings, ahead=None):  # type: ignore[no-untyped-def]
    if ahead is not None:
        ahead.load_model()
    return extractor.extract(list(passages))  # a list, held by the whole build


def reference_raw_components(extractions, node_of, n, scope):  # type: ignore[no-untyped-def]
    from graphseek.knowledge.graph.algorithms.link import cooccurring_pairs
    from graphseek.knowledge.graph.algorithms.records import GENERIC_TYPES

    edges = [
        (node_of[r.source], node_of[r.target])
        for x in extractions
        for r in x.relations
        if r.source in node_of and r.target in node_of
    ]
    typed = {m.id for x in extractions for m in x.mentions if not set(m.types) <= GENERIC_TYPES}
    raw = {mid: str(node) for mid, node in node_of.items() if mid in typed}
    edges += [(int(a), int(b)) for a, b in cooccurring_pairs(extractions, raw, scope=scope)]
    return components(n, [a for a, _ in edges], [b for _, b in edges])[0]


def live_extraction_objects() -> int:
    """Passages, mentions, raw relations, facts and extractions reachable now (they are
    gc-tracked; cyclic garbage, which a build with automatic collection off leaves until the
    next collection, e.g. the reference build's, is collected first)."""
    from graphseek.knowledge.graph.models import Extraction, Mention, RawFact, RawRelation

    gc.collect()
    kinds = (Passage, Extraction, Mention, RawRelation, RawFact)
    return sum(1 for o in gc.get_objects() if isinstance(o, kinds))


# -- a corpus of a few hundred passages -----------------------------------------------------------


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Passage]]:
    passages = demo_copies(9, "bounded")
    root = tmp_path_factory.mktemp("bounded")
    calls: Counter[str] = Counter()

    def counted(fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[fn.__name__] += 1
            return fn(*args, **kwargs)

        return wrapper

    patch = pytest.MonkeyPatch()
    try:
        patch.setattr(align, "cached_encode", counted(reference_cached_encode))
        patch.setattr(memory, "cached_encode", counted(reference_cached_encode))
        patch.setattr(topics_stage, "cached_encode", counted(reference_cached_encode))
        patch.setattr(memory, "spill_per_text", counted(reference_spill_per_text))
        patch.setattr(pass_stage, "encode_passages", counted(reference_encode_passages))
        patch.setattr(store_writer, "_save_rows", counted(reference_save_rows))
        patch.setattr(building, "extract", counted(reference_extract))
        patch.setattr(align_stage, "_raw_components", counted(reference_raw_components))
        build_graph(passages, root / "reference", run=QUIET)
    finally:
        patch.undo()
    # the reference build ran the reference functions
    assert calls["reference_encode_passages"] == 1 and calls["reference_save_rows"] == 1
    assert calls["reference_spill_per_text"] == 2  # entities, relations (static vectors)
    assert calls["reference_cached_encode"] >= 1  # hyperedges (the two above call it uncounted)
    assert calls["reference_extract"] == 1 and calls["reference_raw_components"] == 1
    # the bounded build: no passage or extraction object of its own alive from linking on
    # (they stay on disk); those alive before it (this corpus, other tests' fixtures) are
    # not its own
    alive: dict[str, int] = {}
    before = live_extraction_objects()

    def counting(name, fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            alive[name] = live_extraction_objects() - before
            return fn(*args, **kwargs)

        return wrapper

    spilled: list[weakref.ref[np.ndarray]] = []

    class Spilled(memory.SpilledArray):  # type: ignore[misc, name-defined]
        def __init__(self, array: np.ndarray) -> None:
            spilled.append(weakref.ref(array))
            super().__init__(array)

    def freed(name, fn):  # type: ignore[no-untyped-def]
        def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
            gc.collect()
            alive[name] = sum(1 for ref in spilled if ref() is not None)
            return fn(*args, **kwargs)

        return wrapper

    try:
        patch.setattr(memory, "SpilledArray", Spilled)
        patch.setattr(align, "SpilledArray", Spilled)  # `spill_per_text`'s files
        # the statistics after topics (`graph_data`), and the write
        patch.setattr(write_stage, "build_matrices", freed("stats", write_stage.build_matrices))
        patch.setattr(write_stage, "write_store", freed("write vectors", write_stage.write_store))
        patch.setattr(link_stage, "match_numbers", counting("link", link_stage.match_numbers))
        patch.setattr(topics_stage, "assign_topics", counting("topics", topics_stage.assign_topics))
        patch.setattr(write_stage, "write_store", counting("write", write_stage.write_store))
        # the corpus in a temporary file (as `Index.build` spools a corpus folder), so the
        # build holds none of its passages between the stages that read them
        build_graph(PassageSpool.of(passages), root / "bounded", run=QUIET)
    finally:
        patch.undo()
    # ... and the graph's vectors (base, entities, relations, hyperedges) in files at the write
    assert alive == {"link": 0, "topics": 0, "write": 0, "stats": 0, "write vectors": 0}
    assert len(spilled) == 4
    return root / "reference", root / "bounded", passages


def test_the_store_is_the_reference_builds_byte_for_byte(
    builds: tuple[Path, Path, list[Passage]],
) -> None:
    reference, bounded, passages = builds
    assert len(passages) == 306
    ref_files, new_files = store_files(reference), store_files(bounded)
    assert sorted(new_files) == sorted(ref_files)
    assert "mention_vectors.npy" in new_files and "graph.sqlite" in new_files
    different = [name for name in ref_files if ref_files[name] != new_files[name]]
    assert different == []
    assert store_manifest(bounded) == store_manifest(reference)
    counts = store_manifest(bounded)["counts"]
    assert isinstance(counts, dict) and counts["passages"] == 306 and counts["entities"] > 100
    mentions = np.load(bounded / "mention_vectors.npy")
    assert mentions.dtype == np.float16 and len(mentions) > 1000


def test_each_stage_records_the_peak_rss(builds: tuple[Path, Path, list[Passage]]) -> None:
    _, bounded, _ = builds
    timings = json.loads((bounded / "manifest.json").read_text())["timings"]
    for stage in ("extract", "embed_passages", "align", "link_entities", "hyperedges_topics"):
        assert timings[stage]["peak_rss_mb"] > 50


def test_cached_encode_keeps_each_vector_once() -> None:
    outputs: list[weakref.ref[np.ndarray]] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        out = np.arange(len(texts) * 4, dtype=np.float32).reshape(len(texts), 4) + len(texts)
        outputs.append(weakref.ref(out))
        return out

    cache: dict[str, np.ndarray] = {"old": np.ones(4, dtype=np.float32)}
    texts = ["b", "old", "a", "b"]
    got = align.cached_encode(texts, embed, cache)
    expected = reference_cached_encode(texts, embed, {"old": np.ones(4, dtype=np.float32)})
    np.testing.assert_array_equal(got, expected)
    assert outputs[0]() is None  # the encoder's output is freed once copied
    assert np.shares_memory(cache["a"], got) and np.shares_memory(cache["b"], got)
    np.testing.assert_array_equal(cache["a"], got[2])
    np.testing.assert_array_equal(cache["b"], got[0])
    # a second call encodes nothing and returns the same rows
    again = align.cached_encode(["a", "old"], embed, cache)
    assert len(outputs) == 2  # the reference call above encoded once more, this one not at all
    np.testing.assert_array_equal(again, np.stack([got[2], np.ones(4)]))


def test_mention_rows_are_written_in_batches_as_np_save_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(0)
    rows = {
        f"p{i}#m{k}": rng.standard_normal(8).astype(np.float16) for i in range(9) for k in (0, 1)
    }
    ids = sorted(rows)
    monkeypatch.setattr(store_writer, "WRITE_ROWS", 4)
    for chosen in (ids, []):
        store_writer._save_rows(tmp_path / "a.npy", rows, chosen, 8)
        reference_save_rows(tmp_path / "b.npy", rows, chosen, 8)
        assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "b.npy").read_bytes()


def test_a_build_under_the_least_memory_writes_the_same_store(
    builds: tuple[Path, Path, list[Passage]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A build whose memory plan is the least there is (one extraction process, one encoder
    thread, the smallest write cache; which plan a budget gets: test_memory_budget.py) runs
    with it, warns that the estimate is over the budget, and writes the store of the default
    build byte for byte."""
    _, bounded, passages = builds
    budget = importlib.import_module("graphseek.knowledge.graph.memory.budget")
    least_plan = budget.MemoryPlan(512, 1, 1, budget.CACHE_CHOICES_KIB[-1], 1200)
    made: list[int] = []
    pools: list[int] = []
    offline = importlib.import_module("graphseek.knowledge.graph.extract.offline")
    patch = pytest.MonkeyPatch()
    forked = offline.OfflineExtractor._extract_forked

    def spy(self, chunk, processes, out):  # type: ignore[no-untyped-def]
        made.append(processes)
        return forked(self, chunk, processes, out)

    embedder_module = importlib.import_module("graphseek.knowledge.embedder")
    pool = embedder_module.ThreadPoolExecutor

    def counted_pool(n, *args, **kwargs):  # type: ignore[no-untyped-def]
        pools.append(n)
        return pool(n, *args, **kwargs)

    try:
        patch.setattr(offline.OfflineExtractor, "_extract_forked", spy)
        patch.setattr(embedder_module, "ThreadPoolExecutor", counted_pool)
        patch.setattr(memory, "plan_memory", lambda *args, **kwargs: least_plan)
        with caplog.at_level("WARNING", logger="graphseek.knowledge.graph.memory"):
            build_graph(
                passages, tmp_path / "least", run=RunOptions(memory_budget=512, show_progress=False)
            )
    finally:
        patch.undo()
    assert made == [] and pools == []  # extraction in this process, the pass on this thread
    warned = [r.getMessage() for r in caplog.records]
    assert any("over the memory budget of 512 MB" in m and "1 encoder thread" in m for m in warned)
    least = tmp_path / "least"
    plan = json.loads((least / "manifest.json").read_text())["memory"]
    assert plan["processes"] == 1 and plan["threads"] == 1 and plan["fits"] is False
    assert plan["cache_kib"] == 16_384 and plan["budget_mb"] == 512
    assert store_files(least) == store_files(bounded)
    default = json.loads((bounded / "manifest.json").read_text())["memory"]
    assert default["fits"] is True and default["cache_kib"] == 262_144
    assert store_manifest(least) == store_manifest(bounded)  # less their memory plans
