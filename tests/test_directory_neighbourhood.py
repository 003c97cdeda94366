"""A directory index read one neighbourhood at a time (`Index.open(path,
graph_reads="neighbourhood")`,
`graphseek.knowledge.graph.store.neighbourhood.DirectoryNeighbourhood`) against the PostgreSQL
backend's neighbourhood reads of the same corpus: every read of the `NeighbourhoodReads` protocol
returns the same rows, and the graph retrievers and G-RAGent's primitives written above the protocol
return the same results from both.

The two indexes of the tiny corpus are `tests/test_postgres_store.py`'s session fixtures (on
conftest.py's embedded PostgreSQL, `pg_server`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from floats import assert_close
from test_postgres_store import (  # noqa: F401 - the indexes of the tiny corpus
    QUERIES,
    _no_whole_graph,
    dir_graph_index,
    pg_index,
)

from graphseek.errors import InvalidRequestError
from graphseek.knowledge.index import Index
from graphseek.knowledge.storage import NeighbourhoodReads, reads_neighbourhoods


@pytest.fixture(scope="module")
def dir_reads(dir_graph_index: Any) -> Any:  # noqa: F811
    """The tiny corpus's directory index, opened to read its graph by neighbourhoods."""
    return Index.open(dir_graph_index.path, graph_reads="neighbourhood")


@pytest.fixture(scope="module")
def sources(dir_reads: Any, pg_index: Any) -> Any:  # noqa: F811
    directory, postgres = dir_reads.graph_neighbourhood(), pg_index.graph_neighbourhood()
    yield directory, postgres
    directory.close()


def _same(a: Any, b: Any) -> bool:
    """Equal values, numpy arrays compared element by element (dataclasses field by field)."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(
            _same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
        )
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# -- (a) the protocol, read for read -------------------------------------------------------------


def test_each_read_equals_the_postgres_read(sources: Any, dir_reads: Any) -> None:
    directory, postgres = sources
    assert isinstance(directory, NeighbourhoodReads) and isinstance(postgres, NeighbourhoodReads)
    assert (directory.revision, directory.dim) == (dir_reads.revision, postgres.dim)
    cat = directory.catalogue()
    assert _same(cat, postgres.catalogue())
    assert cat.has_rows and cat.has_entity_vectors and len(cat.entity_ids) > 20
    entities = cat.entity_ids
    relations = [r[0] for r in postgres.relation_list()]
    hyperedges = [h.id for h in postgres.hyperedge_labels()]
    passages = [p.id for p in dir_reads.passages]
    assert relations and hyperedges
    frontiers = [entities[:1], entities[3:9], entities[::-1], entities, [], ["no such entity"]]
    for ids in frontiers:
        got = directory.incident_relations(ids)
        assert _same(got, postgres.incident_relations(ids)), ids
        assert _same(directory.links_of(ids), sorted(postgres.links_of(ids))), ids
        assert _same(directory.hyperedges_of(ids), postgres.hyperedges_of(ids)), ids
    assert any(r.passage_ids for r in directory.incident_relations(entities))
    for ids in (relations[:4], relations[::-3], relations, []):
        assert _same(directory.relations(ids), postgres.relations(ids))
        assert _same(directory.relation_vectors(ids), postgres.relation_vectors(ids))
    assert len(directory.relation_vectors(relations)) > 0
    for ids in (passages[:2], passages, []):
        assert _same(
            sorted(directory.links_of_passages(ids)), sorted(postgres.links_of_passages(ids))
        )
    for positions in ([0], [5, 2, 5], list(range(len(entities))), [], [len(entities) + 3]):
        assert _same(directory.entity_rows(positions), postgres.entity_rows(positions))
        valid = [p for p in positions if p < len(entities)][:3]
        assert _same(directory.entity_vectors(valid), postgres.entity_vectors(valid))
    for ids in (hyperedges[:3], hyperedges, []):
        assert _same(directory.hyperedges(ids), postgres.hyperedges(ids))
    assert _same(directory.topics(), postgres.topics()) and directory.topics()
    assert _same(directory.hyperedge_labels(), postgres.hyperedge_labels())
    # the centroids are computed on each side (numpy here, pgvector's `avg` in the server),
    # the rest read as stored: these within a tolerance
    assert_close(directory.topic_centroids(), postgres.topic_centroids())
    assert _same(directory.relation_list(), postgres.relation_list())
    embed = dir_reads.embed
    for query in QUERIES:
        qv = np.asarray(embed([query])[0], dtype=np.float32)
        for n in (len(entities), 5):
            got_pos, got_vec = directory.nearest_entities(qv, n)
            want_pos, want_vec = postgres.nearest_entities(qv, n)
            # the same entities and vectors (the database returns them in no set order); the
            # nearest are ranked by numpy here and by pgvector there, but the fixture's 6
            # nearest cosines are at least 5e-5 apart: no tie a last bit could turn
            order, want = np.argsort(got_pos), np.argsort(want_pos)
            assert sorted(got_pos) == sorted(want_pos), (query, n)
            assert np.array_equal(got_vec[order], want_vec[want]), (query, n)


def test_reads_are_indexed_frontier_reads_not_the_graph(sources: Any) -> None:
    """A frontier read is a couple of statements and only its rows."""
    directory, _ = sources
    entities = directory.catalogue().entity_ids
    total = len(directory.relation_list())
    directory.reads.reset()
    rows = directory.incident_relations(entities[:2])
    queries, read = directory.reads.reset()
    assert queries <= 2 and read < total / 3 and rows


# -- (b) the algorithms, written once above the protocol -----------------------------------------


@pytest.mark.parametrize("name", ["higra", "progressive"])
def test_graph_retrievers_equal_the_postgres_backend(
    dir_reads: Any,
    pg_index: Any,  # noqa: F811
    dir_graph_index: Any,  # noqa: F811
    name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphseek.tools.graph_retrievers import higra_retriever, progressive_retriever
    from graphseek.tools.neighbourhood import HiGraNeighbourhood, ProgressiveNeighbourhood
    from graphseek.tools.retrievers import retrieve

    _no_whole_graph(monkeypatch)
    assert reads_neighbourhoods(dir_reads) and not reads_neighbourhoods(dir_graph_index)
    make, kind = {
        "higra": (higra_retriever, HiGraNeighbourhood),
        "progressive": (progressive_retriever, ProgressiveNeighbourhood),
    }[name]
    assert isinstance(make(dir_reads), kind)
    for query in QUERIES:
        expected = retrieve(pg_index, query, 5, name)
        got = retrieve(dir_reads, query, 5, name)
        assert [h.passage.id for h in got] == [h.passage.id for h in expected], (name, query)
        # the scores within a tolerance: each backend finds the nearest entities and makes the
        # topic centroids its own way (numpy here, pgvector there)
        assert_close([h.score for h in got], [h.score for h in expected], where=f"{name} {query}")
        assert got, query


def test_higra_context_equals_the_postgres_backend(dir_reads: Any, pg_index: Any) -> None:  # noqa: F811
    """HiGra's whole result (entities, relation context, passages) is the same from both
    backends read by neighbourhoods."""
    from graphseek.tools.graph_retrievers import higra_retriever

    with_context = 0
    for query in QUERIES:
        got = higra_retriever(dir_reads).retrieve(query)
        expected = higra_retriever(pg_index).retrieve(query)
        # every id, rank and name exactly; the scores within a tolerance (two backends' reads)
        assert_close(replace(got, timings={}), replace(expected, timings={}), where=query)
        with_context += bool(got.relations and got.passages)
    assert with_context >= 3


def test_hypergraph_primitives_equal_the_postgres_backend(
    dir_reads: Any,
    pg_index: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphseek.graphs.graph_context import topic_labels
    from graphseek.state.context import Context
    from graphseek.tools import hypergraph

    _no_whole_graph(monkeypatch)
    labels = topic_labels(Context(index=pg_index))
    assert labels and topic_labels(Context(index=dir_reads)) == labels
    topic = hypergraph.topics_of(pg_index)[0].id  # type: ignore[index]
    assert hypergraph.topics_of(dir_reads) == hypergraph.topics_of(pg_index)
    calls: list[tuple[str, tuple[Any, ...]]] = [
        ("retrieve_subgraph", (topic,)),
        ("retrieve_subgraph", ("Analytical Engine computer",)),
        ("node_feature", ("Lord Byron", "all")),
        ("node_feature", ("Marie Curie", "passages")),
        ("neighbor_check", ("Lord Byron", "died")),
        ("neighbor_check", ("Missolonghi",)),
    ]
    for name, args in calls:
        fn = getattr(hypergraph, name)
        expected = fn(pg_index, *args)
        assert fn(dir_reads, *args) == expected, (name, args)
        assert expected.found and expected.passage_ids, (name, expected.text)


# -- (c) the option ------------------------------------------------------------------------------


def test_graph_reads_is_a_choice_whole_by_default(dir_graph_index: Any) -> None:  # noqa: F811
    whole = Index.open(dir_graph_index.path)
    assert whole.graph_reads == "whole" and not reads_neighbourhoods(whole)
    assert Index.open(dir_graph_index.path, graph_reads="whole").graph_reads == "whole"
    assert reads_neighbourhoods(Index.open(dir_graph_index.path, graph_reads="neighbourhood"))


def test_a_bad_graph_reads_value_is_one_line(dir_graph_index: Any) -> None:  # noqa: F811
    with pytest.raises(InvalidRequestError) as caught:
        Index.open(dir_graph_index.path, graph_reads="partial")
    message = str(caught.value)
    assert "\n" not in message and "'whole'" in message and "'neighbourhood'" in message
    assert "'partial'" in message
    with pytest.raises(InvalidRequestError, match="directory index") as caught:
        Index.open("postgresql://nobody@localhost/none?schema=x", graph_reads="whole")
    assert "\n" not in str(caught.value)


def test_cli_ask_takes_graph_reads(
    dir_graph_index: Any,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from graphseek.cli import main

    opened: list[str] = []
    open_index = Index.open

    def spy(path: Any, **kwargs: Any) -> Any:
        index = open_index(path, **kwargs)
        opened.append(index.graph_reads)
        return index

    monkeypatch.setattr(Index, "open", spy)
    base = ["ask", str(dir_graph_index.path), QUERIES[0], "--json", "--topology", "higra_retriever"]
    answers = []
    for extra in ([], ["--graph-reads", "neighbourhood"]):
        assert main([*base, "--profile", "wikipedia", *extra]) == 0
        obj = json.loads(capsys.readouterr().out)
        answers.append((obj["answer"], [e["passage_id"] for e in obj["evidence"]]))
    assert opened == ["whole", "neighbourhood"]
    assert answers[0] == answers[1] and answers[0][0]
    with pytest.raises(SystemExit) as caught:
        main([*base, "--graph-reads", "partial"])
    assert caught.value.code == 2
    assert "invalid choice: 'partial'" in capsys.readouterr().err
