"""Index-level incremental updates with the knowledge graph: add and delete documents."""

from __future__ import annotations

import pytest

from graphseek.errors import IndexNotFoundError
from graphseek.knowledge.index import Index


def _entity_names(index: Index) -> set[str]:
    return {e.name for e in index.graph.entities()}


@pytest.fixture(scope="module")
def graph_indexes(tmp_path_factory, tiny_passages):
    root = tmp_path_factory.mktemp("updates")
    full = Index.build(tiny_passages, root / "full", show_progress=False, graph=True)
    part = Index.build(tiny_passages[:6], root / "part", show_progress=False, graph=True)
    return full, part


def test_add_documents_matches_a_full_rebuild(graph_indexes, tiny_passages) -> None:
    full, part = graph_indexes
    assert part.has_graph and len(part) == 6
    grown = part.add_documents(tiny_passages[6:])
    assert [p.id for p in grown.passages] == [p.id for p in full.passages]
    assert grown.manifest["counts"]["passages"] == 8
    assert grown.manifest["graph"] is True
    assert sorted(grown.graph.passage_ids()) == sorted(full.graph.passage_ids())
    # the grown index's new vectors come from a pass over the new passages alone (other
    # batches); what they decide is compared exactly, as the fixture has no near tie: the
    # merges' nearest cosine to the candidate threshold is 0.033 from it, the question's 5
    # best dense scores at least 0.035 apart
    assert _entity_names(grown) == _entity_names(full)
    question = "Which city was Marie Curie born in?"
    for method in ("bm25", "dense", "hybrid"):
        assert [h.passage.id for h in grown.search(question, 3, method)] == [
            h.passage.id for h in full.search(question, 3, method)
        ]
    # the passage file and BM25 are a rebuild's, byte for byte (the add read the old ones)
    for name in ("passages.jsonl", "bm25/data.csc.index.npy", "bm25/vocab.index.json"):
        assert (grown.path / name).read_bytes() == (full.path / name).read_bytes(), name
    # reopening from disk gives the same thing (the update was written, atomically)
    reopened = Index.open(grown.path)
    assert [p.id for p in reopened.passages] == [p.id for p in grown.passages]
    assert not [p for p in grown.path.parent.iterdir() if p.name.startswith(".")]
    # adding what is already there changes nothing
    assert grown.add_documents(tiny_passages[:2]) is grown


def test_delete_documents_removes_passages_and_orphaned_entities(graph_indexes) -> None:
    full, _ = graph_indexes
    copy = Index.build(full.passages, full.path.parent / "copy", show_progress=False, graph=True)
    assert any("Warsaw" in n for n in _entity_names(copy))
    shrunk = copy.delete_documents(["warsaw", "curie"])
    assert "warsaw" not in shrunk and len(shrunk) == 6
    assert "warsaw" not in shrunk.graph.passage_ids()
    names = _entity_names(shrunk)
    assert not any("Marie Curie" == n for n in names)
    assert any("Lord Byron" in n or "Byron" in n for n in names)
    assert shrunk.search("Marie Curie Warsaw", 8, "bm25") == []  # no passage shares a term now
    dense_ids = [h.passage.id for h in shrunk.search("Marie Curie Warsaw", 8, "dense")]
    assert len(dense_ids) == 6 and not {"warsaw", "curie"} & set(dense_ids)
    with pytest.raises(KeyError, match="nope"):
        shrunk.delete_documents(["nope"])


def test_index_without_graph_says_how_to_get_one(tiny_index) -> None:
    assert not tiny_index.has_graph
    with pytest.raises(IndexNotFoundError, match="no knowledge graph"):
        _ = tiny_index.graph


def test_ensure_graph_adds_the_graph_a_full_build_has(graph_indexes, tiny_passages) -> None:
    full, _ = graph_indexes
    plain = Index.build(tiny_passages, full.path.parent / "plain", show_progress=False)
    revision = plain.revision
    assert not plain.has_graph
    assert plain.ensure_graph() is plain
    assert plain.has_graph and plain.manifest["graph"] is True and plain.revision != revision
    assert _entity_names(plain) == _entity_names(full)
    reopened = Index.open(plain.path)
    assert reopened.has_graph and reopened.revision == plain.revision
    assert plain.ensure_graph() is plain and plain.revision == reopened.revision  # once only


def test_a_delta_add_through_the_index(graph_indexes, tiny_passages, tmp_path) -> None:
    """`graph_options={"delta": True}`: the passages, their vectors and BM25 as an exact add
    gives them; the graph holds the new passages, the graph retrievers find them."""
    from graphseek.tools.retrievers import retrieve

    full, _ = graph_indexes  # the other index of the module: grown by another test
    copy = Index.build(tiny_passages[:6], tmp_path / "copy", show_progress=False, graph=True)
    grown = copy.add_documents(tiny_passages[6:], graph_options={"delta": True})
    assert [p.id for p in grown.passages] == [p.id for p in full.passages]
    assert sorted(grown.graph.passage_ids()) == sorted(full.graph.passage_ids())
    assert grown.graph.manifest["delta"]["passages_added"] == 2
    question = "Which city was Marie Curie born in?"  # no near tie (see the exact add's test)
    for method in ("bm25", "dense", "hybrid"):
        assert [h.passage.id for h in grown.search(question, 3, method)] == [
            h.passage.id for h in full.search(question, 3, method)
        ]
    new_ids = {p.id for p in tiny_passages[6:]}
    for method in ("higra", "progressive"):
        found = {h.passage.id for h in retrieve(Index.open(grown.path), question, 5, method)}
        assert found & new_ids, method


def test_an_add_past_the_hnsw_threshold_begins_the_graph_early(
    tiny_passages, tmp_path, monkeypatch
) -> None:
    import graphseek.knowledge.dense as dense
    import graphseek.knowledge.index as index_module

    exact = Index.build(tiny_passages, tmp_path / "exact", show_progress=False)
    part = Index.build(tiny_passages[:6], tmp_path / "part", show_progress=False)
    assert part.manifest["dense"]["index"] == "IndexFlatIP"
    monkeypatch.setattr(dense, "HNSW_THRESHOLD", 6)
    monkeypatch.setattr(index_module, "HNSW_THRESHOLD", 6)
    begun = []

    def spy(directory, total, **kwargs):  # type: ignore[no-untyped-def]
        early = dense.early_graph(directory, total, **kwargs)
        begun.append((total, early is not None))
        return early

    monkeypatch.setattr(index_module, "early_graph", spy)
    grown = part.add_documents(tiny_passages[6:])
    assert begun == [(8, True)]  # 6 stored rows, the threshold, grown to 8
    assert grown.manifest["dense"]["index"] == "IndexHNSWFlat"
    reopened = Index.open(grown.path)
    question = "Which city was Marie Curie born in?"
    # HNSW and the exact index score with two float kernels: the ranking is compared exactly,
    # the question's best dense scores being at least 0.035 apart
    assert [h.passage.id for h in reopened.search(question, 3, "dense")] == [
        h.passage.id for h in exact.search(question, 3, "dense")
    ]
    grown.add_documents([])  # nothing new: nothing begun
    assert begun == [(8, True)]


def test_an_add_that_fails_waits_for_the_graph_it_began(
    tiny_passages, tmp_path, monkeypatch
) -> None:
    """The early graph's thread reads the index directory: an add that fails waits for it
    before the lock is let go, and leaves the index as it was."""
    import threading
    import time

    import graphseek.knowledge.dense as dense
    import graphseek.knowledge.index as index_module

    part = Index.build(tiny_passages[:6], tmp_path / "part", show_progress=False)
    monkeypatch.setattr(dense, "HNSW_THRESHOLD", 6)
    monkeypatch.setattr(index_module, "HNSW_THRESHOLD", 6)
    slow_graph = dense.saved_graph
    finished = []

    def slow(directory, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.5)
        graph = slow_graph(directory, **kwargs)
        finished.append(graph is not None)
        return graph

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("the encoder failed")

    monkeypatch.setattr(dense, "saved_graph", slow)
    monkeypatch.setattr(index_module, "passage_vectors", broken)
    with pytest.raises(RuntimeError, match="the encoder failed"):
        part.add_documents(tiny_passages[6:])
    assert finished == [True]  # waited for before the add returned
    for thread in [t for t in threading.enumerate() if t.name.startswith("graphseek-hnsw")]:
        thread.join(timeout=10)  # done with its one task: it ends once the queue is empty
        assert not thread.is_alive()
    reopened = Index.open(part.path)
    assert len(reopened) == 6 and reopened.manifest["dense"]["index"] == "IndexFlatIP"
