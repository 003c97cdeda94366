"""Sentence nodes on PostgreSQL (issue 57 item 1): the sentence layer stored in ``sentences`` and
``entity_sentences`` reads back as the directory store's `SentenceLayer`, the bridge retriever
ranks the same on both backends, and an incremental add on PostgreSQL gives the layer a rebuild
gives. Runs against the embedded PostgreSQL of conftest.py (`pg_server`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphseek.knowledge.graph.store.sentences import SentenceLayer
from graphseek.knowledge.passages import Passage

QUERIES = [
    "Where did Ada Lovelace's father die?",
    "In which country was the woman who won the Nobel Prize twice born?",
    "Who designed the Analytical Engine?",
    "Greek War of Independence sieges",
    "programmable computer",
]

#: pgvector's and FAISS's float kernels differ in the last bits of a dense score (a bridge
#: passage prior); the PPR scores they lead to agree within this
SCORE_TOLERANCE = 1e-5


def uri_for(server: Any, schema: str) -> str:
    return f"{server.get_uri()}&schema={schema}"


@pytest.fixture(scope="module")
def directory_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Any:
    from graphseek.knowledge.index import Index

    path = tmp_path_factory.mktemp("pg-sentences") / "index"
    return Index.build(tiny_passages, path, show_progress=False, graph=True)


@pytest.fixture(scope="module")
def copied(pg_server: Any, directory_index: Any) -> Any:
    """The directory index copied into PostgreSQL (its graph and layer imported, nothing
    re-embedded)."""
    from graphseek.knowledge.postgres import PostgresIndex

    return PostgresIndex.from_directory(directory_index.path, uri_for(pg_server, "sentences"))


def layer_of(index: Any) -> SentenceLayer:
    with index.open_graph_store() as store:
        layer = store.sentence_layer()
    assert layer is not None
    return layer


def assert_same_layer(got: SentenceLayer, expected: SentenceLayer, atol: float = 0.0) -> None:
    assert got.passage_ids == expected.passage_ids
    assert got.entity_ids == expected.entity_ids
    for name in ("passage", "start", "end"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name))
    assert got.vectors.dtype == expected.vectors.dtype == np.float16
    np.testing.assert_allclose(
        got.vectors.astype(np.float32), expected.vectors.astype(np.float32), atol=atol, rtol=0
    )
    np.testing.assert_array_equal(got.edges.toarray(), expected.edges.toarray())


def assert_same_bridge(got_index: Any, expected_index: Any) -> None:
    """`bridge` ranks the same passages for every query of `QUERIES` on both indexes, with
    scores within `SCORE_TOLERANCE`."""
    from graphseek.tools.retrievers import retrieve

    for query in QUERIES:
        expected = retrieve(expected_index, query, 5, "bridge")
        got = retrieve(got_index, query, 5, "bridge")
        assert [h.passage.id for h in got] == [h.passage.id for h in expected], query
        assert [h.score for h in got] == pytest.approx(
            [h.score for h in expected], abs=SCORE_TOLERANCE
        )


def test_the_layer_reads_back_as_the_directory_stores(copied: Any, directory_index: Any) -> None:
    import psycopg

    from graphseek.knowledge.index import Index

    reopened = Index.open(copied.uri)
    expected = layer_of(directory_index)
    got = layer_of(reopened)
    assert_same_layer(got, expected)  # float16 in halfvec: the vectors bit for bit
    assert got.meta["sentences"] == len(expected) and got.meta["source"] == "pooled"
    with psycopg.connect(copied.location.conninfo) as conn:
        kinds = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attname = "
            "'embedding' AND attrelid = 'sentences.sentences'::regclass"
        ).fetchone()
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM sentences.sentences), "
            "(SELECT count(*) FROM sentences.entity_sentences)"
        ).fetchone()
    assert kinds == ("halfvec",)
    assert counts == (len(expected), expected.edges.nnz)


def test_bridge_ranks_the_same_on_both_backends(copied: Any, directory_index: Any) -> None:
    from graphseek.knowledge.index import Index
    from graphseek.tools.graph_retrievers import bridge_retriever

    reopened = Index.open(copied.uri)
    assert_same_bridge(reopened, directory_index)
    # the second hop: Ada Lovelace -> (Annabella Milbanke's sentence) -> Lord Byron
    result = bridge_retriever(reopened).retrieve(QUERIES[0], 3)
    assert not result.fallback and result.passage_ids == ["ada", "milbanke", "byron"]


@pytest.mark.parametrize("name", ["higra", "progressive"])
def test_the_bridge_seeds_option_ranks_the_same_on_both_backends(
    copied: Any, directory_index: Any, name: str
) -> None:
    """`Context.bridge_seeds` (issue 57 item 2) over PostgreSQL: the bridged entities come from
    the stored layer, and the retrievers, read one neighbourhood at a time, rank as the
    directory's do."""
    from graphseek.knowledge.index import Index
    from graphseek.tools import graph_retrievers as gr

    reopened = Index.open(copied.uri)
    retrieve = getattr(gr, name)
    for query in QUERIES:
        bridged = gr.bridge_seeds_for(reopened, query)
        reference = gr.bridge_seeds_for(directory_index, query)
        assert [e for e, _ in bridged] == [e for e, _ in reference], query
        assert [w for _, w in bridged] == pytest.approx([w for _, w in reference], abs=1e-6)
        expected = retrieve(directory_index, query, 5, bridge_seeds=True)
        got = retrieve(reopened, query, 5, bridge_seeds=True)
        assert [h.passage.id for h in got] == [h.passage.id for h in expected], query
    on = retrieve(reopened, QUERIES[0], 5, bridge_seeds=True)
    assert on != retrieve(reopened, QUERIES[0], 5)


def test_an_add_on_postgres_equals_a_rebuild(
    pg_server: Any, copied: Any, tiny_passages: list[Passage], tmp_path: Path
) -> None:
    """The tiny corpus less Warsaw built into PostgreSQL, Warsaw added: the layer (sentences,
    spans, edges, vectors) and the bridge rankings are a rebuild's
    (`copied`: all eight passages). Then Warsaw deleted again: its sentences are gone."""
    from graphseek.knowledge.index import Index

    index = Index.build(
        tiny_passages[:-1], uri_for(pg_server, "sentences_add"), show_progress=False, graph=True
    )
    before = layer_of(index)
    assert "warsaw" not in before.passage_ids
    index.add_documents([tiny_passages[-1]])
    reopened = Index.open(index.uri)
    added = layer_of(reopened)
    rebuilt = layer_of(Index.open(copied.uri))
    # old sentences keep their stored vectors; Warsaw's are pooled by its passage pass
    assert added.meta["vectors"]["reused"] == len(before)
    assert added.meta["vectors"]["pooled"] == len(added) - len(before)
    assert_same_layer(added, rebuilt)  # the vectors too, bit for bit
    assert_same_bridge(reopened, copied)

    index.delete_documents(["warsaw"])
    after = layer_of(Index.open(index.uri))
    assert "warsaw" not in after.passage_ids
    assert_same_layer(after, before)


def test_a_graph_without_sentences_has_no_layer_on_postgres(
    pg_server: Any, tiny_passages: list[Passage]
) -> None:
    from graphseek.knowledge.graph.settings import GraphSettings
    from graphseek.knowledge.index import Index
    from graphseek.tools.bridge import NoSentenceLayerError, sentence_layer_of

    index = Index.build(
        tiny_passages[:3],
        uri_for(pg_server, "no_sentences"),
        show_progress=False,
        graph=True,
        graph_options={"settings": GraphSettings(sentences="none")},
    )
    with index.open_graph_store() as store:
        assert store.sentence_layer() is None
    with pytest.raises(NoSentenceLayerError, match="rebuild it with `graphseek index CORPUS"):
        sentence_layer_of(index)
    # an add keeps it without one (as a directory store's)
    index.add_documents([tiny_passages[3]])
    with Index.open(index.uri).open_graph_store() as store:
        assert store.sentence_layer() is None


def test_a_delta_add_on_postgres_keeps_the_layer(pg_server: Any, directory_index: Any) -> None:
    """`graph_options={"delta": True}`: the graph exported with its layer, changed as a delta,
    written back; the new passage's sentences join, every stored one keeps its vector."""
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.postgres import PostgresIndex

    index = PostgresIndex.from_directory(directory_index.path, uri_for(pg_server, "delta_layer"))
    before = layer_of(index)
    new = Passage(
        id="lisbon",
        title="Xavier Quill",
        text="Xavier Quill was a Portuguese cartographer born in Lisbon in 1701.",
        source="tiny",
    )
    index.add_documents([new], graph_options={"delta": True})
    after = layer_of(Index.open(index.uri))
    assert after.passage_ids == [*before.passage_ids, "lisbon"]
    assert after.meta["vectors"]["reused"] == len(before)
    old = before.vectors_by_span()
    for key, vector in after.vectors_by_span().items():
        if key in old:
            np.testing.assert_array_equal(vector, old[key])
