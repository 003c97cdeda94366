"""Sentences as graph nodes (`graphseek.knowledge.graph.store.sentences`) and the semantic bridging
retriever over them (`graphseek.tools.bridge`): splitting, entity–sentence edges, the layer
written by a build and kept by an incremental add, older stores without it, and `bridge`
reaching the second hop on the tiny multi-hop corpus."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse

from graphseek.knowledge.graph.store.sentences import (
    NAMED,
    SENTENCE_FILES,
    TITLED,
    SentenceLayer,
    link_sentences,
    passage_sentences,
    split_sentences,
)
from graphseek.knowledge.passages import Passage


def texts(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def test_split_sentences_at_ends_and_lines_not_initials() -> None:
    text = (
        "J. R. R. Tolkien wrote it in 1937. Was it good? Yes! It sold e.g. 100 copies.\n"
        "  - a list item\n\n"
        'He said "Go." Then left. St. Paul is a city; Dr. No is a film.'
    )
    assert texts(text) == [
        "J. R. R. Tolkien wrote it in 1937.",
        "Was it good?",
        "Yes!",
        "It sold e.g. 100 copies.",
        "- a list item",
        'He said "Go."',
        "Then left.",
        "St. Paul is a city; Dr. No is a film.",
    ]
    # spans index the text itself
    for a, b in split_sentences(text):
        assert text[a:b] == text[a:b].strip() and b > a


def test_passage_sentences_skip_the_title_line() -> None:
    p = Passage(id="p", title="Lord Byron", text="He was a poet. He died in 1824.")
    spans = passage_sentences(p)
    assert [p.content[a:b] for a, b in spans.tolist()] == ["He was a poet.", "He died in 1824."]
    assert spans[0, 0] == len("Lord Byron\n")
    assert split_sentences("") == [] and split_sentences(" \n ") == []


def test_link_sentences_named_and_titled() -> None:
    passages = [
        Passage(
            id="a", title="Ada Lovelace", text="Ada Lovelace wrote notes. She was Byron's child."
        ),
        Passage(id="b", title="Lord Byron", text="He was a poet. Lord Byron died at Missolonghi."),
    ]
    spans = [passage_sentences(p) for p in passages]
    names = [["Ada Lovelace"], ["Lord Byron", "Byron"], ["Missolonghi"], ["poet"]]
    # every entity linked to both passages: only what the text says becomes an edge
    incidence = sparse.csr_matrix(np.ones((4, 2)))
    edges = link_sentences(passages, spans, names, incidence).toarray()
    assert edges.shape == (4, 4)
    assert edges.tolist() == [
        [NAMED, TITLED, 0, 0],  # Ada: named in s0, title entity of passage a
        [0, NAMED, TITLED, NAMED],  # Byron: "Byron's" (an alias), title entity of passage b
        [0, 0, 0, NAMED],
        [0, 0, NAMED, 0],
    ]
    # no link, no edge: the text naming an entity is not enough
    unlinked = link_sentences(passages, spans, names, sparse.csr_matrix((4, 2)))
    assert unlinked.nnz == 0


def test_layer_round_trip_and_entity_reorder(tmp_path: Path) -> None:
    layer = SentenceLayer(
        passage_ids=["a", "b"],
        passage=np.array([0, 0, 1], dtype=np.int32),
        start=np.array([0, 5, 0], dtype=np.int32),
        end=np.array([4, 9, 3], dtype=np.int32),
        vectors=np.eye(3, 4, dtype=np.float16),
        entity_ids=["e1", "e2"],
        edges=sparse.csr_matrix(np.array([[1, 0, 2], [0, 1, 0]], dtype=np.int8)),
        meta={"source": "encoded"},
    )
    layer.save(tmp_path)
    back = SentenceLayer.load(tmp_path)
    assert back is not None
    assert back.passage.tolist() == [0, 0, 1] and back.end.tolist() == [4, 9, 3]
    assert back.edges.toarray().tolist() == [[1, 0, 2], [0, 1, 0]]
    assert np.array_equal(back.vectors, layer.vectors)
    assert back.meta["source"] == "encoded"
    # a store whose entities changed: rows follow its order, unknown entities get none
    assert back.edges_for(["e2", "new", "e1"]).toarray().tolist() == [
        [0, 1, 0],
        [0, 0, 0],
        [1, 0, 2],
    ]
    assert back.vectors_by_span()[("b", 0, 3)].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert SentenceLayer.load(tmp_path / "missing") is None


def test_layer_of_another_version_is_one_line(tmp_path: Path) -> None:
    from graphseek.errors import IndexFormatError

    (tmp_path / "sentences.json").write_text(json.dumps({"version": 99}))
    with pytest.raises(IndexFormatError, match="rebuild the index with `graphseek index"):
        SentenceLayer.load(tmp_path)


# -- built, updated, read -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]):  # type: ignore[no-untyped-def]
    """The tiny corpus without its last passage (added by a test), with its graph."""
    from graphseek.knowledge.index import Index

    path = tmp_path_factory.mktemp("sentences") / "index"
    return Index.build(tiny_passages[:-1], path, graph=True, show_progress=False)


def test_build_writes_pooled_sentence_layer(graph_index, tiny_passages) -> None:  # type: ignore[no-untyped-def]
    graph = graph_index.dir_for("graph")
    layer = SentenceLayer.load(graph)
    assert layer is not None
    expected = sum(len(passage_sentences(p)) for p in tiny_passages[:-1])
    assert len(layer) == expected
    manifest = json.loads((graph / "manifest.json").read_text())
    assert manifest["settings"]["sentences"] == "pooled"
    assert manifest["sentences"]["vectors"] == {"pooled": expected, "reused": 0, "encoded": 0}
    norms = np.linalg.norm(layer.vectors.astype(np.float32), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-2)
    # a pooled sentence vector is near the sentence encoded alone (same space as a query)
    from graphseek.knowledge.embedder import get_embedder

    ada = graph_index.get("ada").content
    first = layer.passage_ids.index("ada")
    k = int(np.flatnonzero(layer.passage == first)[0])
    alone = get_embedder().encode([layer.text(k, ada)])[0]
    assert float(layer.vectors[k].astype(np.float32) @ alone) > 0.6
    # every file is recorded by the index's integrity record
    recorded = graph_index.manifest["integrity"]["files"]
    for name in SENTENCE_FILES:
        assert f"graph/{name}" in recorded
    with graph_index.open_graph_store() as store:
        assert len(store.sentence_layer()) == expected


def test_bridge_reaches_the_second_hop(graph_index) -> None:  # type: ignore[no-untyped-def]
    from graphseek.tools.graph_retrievers import bridge_retriever

    retriever = bridge_retriever(graph_index)
    result = retriever.retrieve("Where did Ada Lovelace's father die?", 3)
    assert result.seeds == ["Ada Lovelace"]
    assert not result.fallback
    assert set(result.activated) == {"Ada Lovelace", "Lord Byron"}
    # the question's passage, the bridge sentence's ("She married Lord Byron ... the mother of
    # Ada Lovelace"), then the second hop's: Lord Byron's page, which no question word names
    assert result.passage_ids == ["ada", "milbanke", "byron"]
    (bridge,) = result.bridges
    assert (bridge.source, bridge.passage_id, bridge.targets) == (
        "Ada Lovelace",
        "milbanke",
        ("Lord Byron",),
    )
    assert bridge.sentence.startswith("She married Lord Byron")
    assert [h.passage.id for h in result.hits] == result.passage_ids
    # no entity named: dense search
    plain = retriever.retrieve("what was never completed", 2)
    assert plain.fallback and len(plain.passage_ids) == 2
    # fused with the hybrid ranking: the same passages lead, k of them
    fused = retriever.with_config(fusion_k=5).retrieve("Where did Ada Lovelace's father die?", 3)
    assert fused.passage_ids[0] == "ada" and len(fused.passage_ids) == 3


def test_bridge_is_a_registered_retriever(graph_index) -> None:  # type: ignore[no-untyped-def]
    from graphseek.tools.retrievers import retrieve, retriever_names

    assert "bridge" in retriever_names()
    hits = retrieve(graph_index, "Where did Ada Lovelace's father die?", 3, "bridge")
    assert [h.passage.id for h in hits] == ["ada", "milbanke", "byron"]
    assert [h.rank for h in hits] == [1, 2, 3]


def test_add_keeps_the_layer_and_reuses_vectors(graph_index, tiny_passages, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from graphseek.knowledge.index import Index

    copy = tmp_path / "index"
    shutil.copytree(graph_index.path, copy)
    before = SentenceLayer.load(copy / "graph")
    assert before is not None
    updated = Index.open(copy).add_documents([tiny_passages[-1]])
    after = SentenceLayer.load(updated.dir_for("graph"))
    assert after is not None
    added = len(passage_sentences(tiny_passages[-1]))
    assert len(after) == len(before) + added
    assert after.meta["vectors"] == {"pooled": added, "reused": len(before), "encoded": 0}
    old = before.vectors_by_span()
    for key, vector in after.vectors_by_span().items():
        if key in old:
            assert np.array_equal(vector, old[key])
    assert "warsaw" in after.passage_ids
    # the new passage's sentences are linked to the entities it names
    with updated.open_graph_store() as store:
        names = {e.id: e.name for e in store.entities()}
    k = after.passage_ids.index("warsaw")
    columns = np.flatnonzero(after.passage == k)
    linked = {names[after.entity_ids[i]] for i in after.edges[:, columns].nonzero()[0]}
    assert {"Warsaw", "Marie Curie"} <= linked
    Index.open(copy)  # the integrity record holds


def test_store_without_sentences_is_read_and_bridge_says_rebuild(graph_index, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from graphseek.knowledge.index import Index
    from graphseek.tools.bridge import BridgeRetriever, NoSentenceLayerError

    copy = tmp_path / "index"
    shutil.copytree(graph_index.path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    for name in SENTENCE_FILES:  # an index written before sentences were nodes
        (copy / "graph" / name).unlink()
        manifest["integrity"]["files"].pop(f"graph/{name}")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    old = Index.open(copy)
    with old.open_graph_store() as store:
        assert store.sentence_layer() is None
    with pytest.raises(NoSentenceLayerError, match=r"rebuild it with `graphseek index CORPUS"):
        BridgeRetriever.from_index(old)
    assert old.search("Lord Byron", 1)[0].passage.id == "byron"
    # a workflow run with retriever "bridge" reads it by passage search, and says why
    from graphseek.state.context import Context
    from graphseek.tools.graph_context import NO_SENTENCES, librarian_context

    context = Context(index=old, retriever="bridge", top_k=3)
    result = librarian_context(context, "Where did Lord Byron die?")
    assert result.note == NO_SENTENCES
    assert [h.passage.id for h in result.hits] == [
        h.passage.id for h in old.search("Where did Lord Byron die?", 3, "hybrid")
    ]
    fine = librarian_context(Context(index=graph_index, retriever="bridge", top_k=3), "Byron")
    assert fine.note == "" and len(fine.hits) == 3


def test_delete_drops_the_passages_sentences(graph_index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from graphseek.knowledge.index import Index

    copy = tmp_path / "index"
    shutil.copytree(graph_index.path, copy)
    before = SentenceLayer.load(copy / "graph")
    assert before is not None
    gone = int((before.passage == before.passage_ids.index("babbage")).sum())
    updated = Index.open(copy).delete_documents(["babbage"])
    after = SentenceLayer.load(updated.dir_for("graph"))
    assert after is not None
    assert "babbage" not in after.passage_ids
    assert after.meta["vectors"] == {"pooled": 0, "reused": len(before) - gone, "encoded": 0}
    Index.open(copy)


def test_a_graph_without_sentences(tiny_passages, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from graphseek.knowledge.graph import SQLiteGraphStore, build_graph
    from graphseek.knowledge.graph.settings import QUIET, GraphSettings, settings_of

    build_graph(
        tiny_passages[:3],
        tmp_path / "graph",
        settings=GraphSettings(sentences="none"),
        run=QUIET,
    ).close()
    assert not any((tmp_path / "graph" / name).exists() for name in SENTENCE_FILES)
    with SQLiteGraphStore.open(tmp_path / "graph") as store:
        assert store.sentence_layer() is None
        assert settings_of(store).sentences == "none"
        assert "sentences" not in store.manifest
    with pytest.raises(ValueError, match="unknown sentence vectors"):
        GraphSettings(sentences="sometimes")


def test_sharded_map_stages_pool_the_sentences(tiny_passages, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import pickle

    from graphseek.knowledge.graph.build import build_graph, join_mapped, map_passages
    from graphseek.knowledge.graph.settings import QUIET

    passages = tiny_passages[:4]
    shards = [
        map_passages(passages[:2], in_process=True),
        map_passages(passages[2:], in_process=True),
    ]
    shards = [pickle.loads(pickle.dumps(s)) for s in shards]  # as a worker sends them back
    build_graph(passages, tmp_path / "graph", mapped=join_mapped(shards), run=QUIET).close()
    layer = SentenceLayer.load(tmp_path / "graph")
    assert layer is not None
    expected = sum(len(passage_sentences(p)) for p in passages)
    assert layer.meta["vectors"] == {"pooled": expected, "reused": 0, "encoded": 0}
