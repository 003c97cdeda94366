"""Static graph vectors: the token table distilled from MiniLM (cached on disk, made again when
damaged), the encoder (mean of token rows, normalised, the same vector whatever the batch), and
a graph built with ``vectors="static"``: its setting recorded, its entity vectors static while
alignment embeds with MiniLM (contextual mention vectors), queries compared in its space, incremental updates equal to
a rebuild, old stores read as MiniLM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphseek.knowledge import static_embedder as static_module
from graphseek.knowledge.embedder import load_tokenizer, model_dir
from graphseek.knowledge.graph.algorithms.vectors import entity_text
from graphseek.knowledge.graph.settings import VECTOR_SPACES, GraphSettings
from graphseek.knowledge.graph.store import vector_space
from graphseek.knowledge.index import Index
from graphseek.knowledge.static_embedder import StaticEncoder, distill, get_static_encoder


class CountingEmbedder:
    """Stands in for MiniLM while distilling: a fixed random vector per token id."""

    def __init__(self) -> None:
        self.calls = 0

    def encode_ids(self, ids, batch_size=64):  # noqa: ANN001, ANN201
        self.calls += 1
        rows = np.stack([np.random.default_rng(int(r[1])).normal(size=384) for r in ids])
        assert all(len(r) == 3 for r in ids)
        return rows.astype(np.float32)


@pytest.fixture(scope="module")
def encoder() -> StaticEncoder:
    return get_static_encoder()


def test_distill_runs_each_token_alone_and_centres_the_table() -> None:
    tokenizer = load_tokenizer(model_dir())
    fake = CountingEmbedder()
    table = distill(fake, tokenizer)
    assert table.shape == (tokenizer.get_vocab_size(), 384)
    np.testing.assert_allclose(table.mean(axis=0), 0.0, atol=1e-4)
    raw = np.random.default_rng(2000).normal(size=384).astype(np.float32)
    # row 2000 is token 2000's own vector minus the shared mean
    shift = raw - table[2000]
    other = np.random.default_rng(3000).normal(size=384).astype(np.float32)
    np.testing.assert_allclose(other - table[3000], shift, atol=1e-4)


def test_table_is_cached_and_remade_when_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHSEEK_CACHE_DIR", str(tmp_path))
    fake = CountingEmbedder()
    first = StaticEncoder.load(fake)
    path = static_module.table_path()
    assert path.is_file() and fake.calls > 0
    calls = fake.calls
    second = StaticEncoder.load(fake)
    assert fake.calls == calls  # read from disk
    np.testing.assert_array_equal(first.table, second.table)
    np.save(path, np.zeros((3, 384), dtype=np.float32))  # wrong shape: made again
    third = StaticEncoder.load(fake)
    assert fake.calls > calls
    np.testing.assert_array_equal(third.table, first.table)
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_encode_is_the_normalised_mean_of_token_rows(encoder: StaticEncoder) -> None:
    texts = ["Francis I; PERSON", "", "Lord Byron was a poet", "Ünïcödé Kraków"]
    got = encoder.encode(texts)
    assert got.shape == (4, encoder.dim) and got.dtype == np.float32
    ids = encoder.tokenizer.encode(texts[2], add_special_tokens=False).ids
    want = encoder.table[ids].mean(axis=0)
    np.testing.assert_allclose(got[2], want / np.linalg.norm(want), atol=1e-5)
    assert not got[1].any()  # no tokens: a zero row
    np.testing.assert_allclose(np.linalg.norm(got[[0, 2, 3]], axis=1), 1.0, atol=1e-5)


def test_a_string_gets_one_vector_whatever_its_batch(encoder: StaticEncoder) -> None:
    texts = [f"entity number {i}; CONCEPT" for i in range(50)] + ["Ada Lovelace; PERSON"]
    together = encoder.encode(texts)
    alone = encoder.encode(["Ada Lovelace; PERSON"])
    reversed_rows = encoder.encode(texts[::-1])[::-1]
    np.testing.assert_array_equal(together[-1], alone[0])
    np.testing.assert_array_equal(together, reversed_rows)


def test_encoding_in_chunks_gives_the_rows_of_one_call(
    encoder: StaticEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [f"entity number {i}; CONCEPT" for i in range(20)] + ["", "Ada Lovelace; PERSON"]
    whole = encoder.encode(texts)
    monkeypatch.setattr(static_module, "TEXT_CHUNK", 3)
    np.testing.assert_array_equal(encoder.encode(texts), whole)
    assert not whole[20].any()  # no tokens: a zero row


def test_cached_encode_writes_per_text_vectors_into_its_output(
    encoder: StaticEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a per-text encoder, `cached_encode` encodes a chunk at a time into its output:
    the same rows as one call, repeats and cached texts included, and the cache views them."""
    from graphseek.knowledge.graph.algorithms import align

    texts = ["b; PERSON", "old; CONCEPT", "a; CITY", "b; PERSON", "c; CONCEPT", "a; CITY"]
    cached = np.full(encoder.dim, 0.5, dtype=np.float32)
    monkeypatch.setattr(align, "FRESH_CHUNK", 2)
    cache = {"old; CONCEPT": cached}
    got = align.cached_encode(texts, encoder, cache)
    expected = encoder.encode(texts)
    expected[1] = cached
    np.testing.assert_array_equal(got, expected)
    for text in ("a; CITY", "b; PERSON", "c; CONCEPT"):
        assert np.shares_memory(cache[text], got)
        np.testing.assert_array_equal(cache[text], got[texts.index(text)])
    # the same as the general path (an encoder called once on the sorted missing texts)
    plain = align.cached_encode(
        texts, lambda batch: encoder.encode(batch), {"old; CONCEPT": cached}
    )
    np.testing.assert_array_equal(got, plain)


def test_spill_per_text_writes_the_rows_cached_encode_gives(
    encoder: StaticEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`spill_per_text` writes a chunk at a time the rows the whole array had (cached texts
    from the cache, repeats encoded again), and leaves the cache as it was."""
    from collections import ChainMap

    from graphseek.knowledge.graph.algorithms import align
    from graphseek.knowledge.graph.memory.spool import SpilledArray

    texts = ["b; PERSON", "old; CONCEPT", "a; CITY", "b; PERSON", "", "c; CONCEPT", "a; CITY"]
    cache = {"old; CONCEPT": np.full(encoder.dim, 0.5, dtype=np.float32)}
    whole = align.cached_encode(texts, encoder, ChainMap({}, cache))
    monkeypatch.setattr(align, "SPILL_CHUNK", 3)  # 3 chunks, a repeat across two of them
    spilled = align.spill_per_text(texts, encoder, cache)
    assert spilled.shape == whole.shape and spilled.dtype == np.float32
    assert spilled.load().tobytes() == whole.tobytes()
    assert [b.shape[0] for b in spilled.blocks(4)] == [4, 3]
    assert list(cache) == ["old; CONCEPT"]
    assert align.spill_per_text([], encoder, cache).shape == SpilledArray(whole[:0, :0]).shape
    with pytest.raises(ValueError, match="block of shape"):
        SpilledArray.of_blocks([np.zeros((2, 3), dtype=np.float64)], 3)


def test_name_variants_are_closer_than_unrelated_names(encoder: StaticEncoder) -> None:
    a, b, c, d = encoder.encode(
        [
            "Francis I, Holy Roman Emperor; PERSON",
            "Francis I; PERSON",
            "Warsaw; GPE",
            "capital of Poland",
        ]
    )
    assert a @ b > 0.8
    assert a @ b > a @ c + 0.3
    assert c @ d > a @ d


def test_settings_validate_the_vector_space() -> None:
    assert GraphSettings().vectors in VECTOR_SPACES
    with pytest.raises(ValueError, match="unknown graph vectors 'glove'; choose minilm or static"):
        GraphSettings(vectors="glove")
    # stores written before the setting existed embedded with MiniLM
    assert vector_space({"settings": {"tau": 0.25}}) == "minilm"
    assert vector_space(None) == "minilm"
    assert vector_space({"settings": {"vectors": "static"}}) == "static"


def test_cli_choices_match_the_vector_spaces() -> None:
    from graphseek.cli import GRAPH_VECTORS

    assert set(GRAPH_VECTORS) == set(VECTOR_SPACES)
    assert GRAPH_VECTORS[0] == GraphSettings().vectors


@pytest.fixture(scope="module")
def static_indexes(tmp_path_factory, tiny_passages):
    root = tmp_path_factory.mktemp("static-graph")
    options = {"vectors": "static"}
    full = Index.build(
        tiny_passages, root / "full", show_progress=False, graph=True, graph_options=options
    )
    part = Index.build(
        tiny_passages[:6], root / "part", show_progress=False, graph=True, graph_options=options
    )
    return full, part


def test_static_graph_records_its_space_and_embeds_with_it(static_indexes, encoder) -> None:
    full, _ = static_indexes
    store = full.graph
    assert store.manifest["settings"]["vectors"] == "static"
    vectors, ids = store.entity_embeddings()
    by_id = {e.id: e for e in store.entities()}
    want = encoder.encode([entity_text(by_id[i]) for i in ids])
    np.testing.assert_allclose(vectors, want, atol=1e-6)
    hyper, _ = store.hyperedge_embeddings()
    want = encoder.encode([h.relation for h in store.hyperedges()])
    np.testing.assert_allclose(hyper, want, atol=1e-6)
    # semantic merging compares contextual MiniLM vectors (tests/test_contextual.py)
    assert store.manifest["settings"]["alignment"] == "contextual"
    assert len(store.mention_embeddings()[1]) > 0


def test_queries_meet_a_static_graph_in_its_space(static_indexes, encoder) -> None:
    from graphseek.tools.graph_access import graph_view
    from graphseek.tools.graph_retrievers import higra_retriever

    full, _ = static_indexes
    view = graph_view(full)
    assert view.vector_space == "static"
    question = "Where was the father of Ada Lovelace born?"
    minilm = full.embed([question])[0]
    np.testing.assert_array_equal(view.graph_query(question, minilm), encoder.encode([question])[0])
    assert view.graph_query("  ", minilm) is None
    result = higra_retriever(full).retrieve(question)
    assert "byron" in [p.id for p in result.passages[:3]]


def test_static_graph_update_equals_a_rebuild(static_indexes, tiny_passages) -> None:
    full, part = static_indexes
    grown = part.add_documents(tiny_passages[6:])
    assert grown.graph.manifest["settings"]["vectors"] == "static"
    assert {e.name for e in grown.graph.entities()} == {e.name for e in full.graph.entities()}
    got, got_ids = grown.graph.entity_embeddings()
    want, want_ids = full.graph.entity_embeddings()
    assert list(got_ids) == list(want_ids)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_minilm_graph_keeps_passing_the_query_vector(tiny_passages, tmp_path) -> None:
    options = {"vectors": "minilm"}
    index = Index.build(
        tiny_passages[:4], tmp_path / "m", show_progress=False, graph=True, graph_options=options
    )
    assert index.graph.manifest["settings"]["vectors"] == "minilm"
    from graphseek.tools.graph_access import graph_view

    view = graph_view(index)
    assert view.vector_space == "minilm"
    vector = index.embed(["Lord Byron"])[0]
    assert view.graph_query("Lord Byron", vector) is vector


def test_static_encoding_in_token_blocks_gives_the_same_sums(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Texts are summed whole inside blocks of about `BLOCK_TOKENS` token rows: any block size
    gives the same vectors, bit for bit (a text longer than a block is its own block)."""
    tokenizer = load_tokenizer(model_dir())
    table = np.random.default_rng(0).standard_normal((tokenizer.get_vocab_size(), 16))
    encoder = StaticEncoder(table.astype(np.float32), tokenizer)
    texts = ["Stephen Curry", "", "Golden State Warriors; Warriors; ORG", "a " * 40, "x"] * 7
    whole = encoder.encode(texts)
    monkeypatch.setattr(static_module, "BLOCK_TOKENS", 5)
    assert np.array_equal(encoder.encode(texts), whole)
    assert not whole[1].any() and np.allclose(np.linalg.norm(whole[0]), 1.0)
