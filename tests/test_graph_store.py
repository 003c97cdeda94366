"""The graph store end to end (offline extractor, real spaCy and MiniLM): build, read API,
incremental add equal to a rebuild, delete, atomic writes, statistics."""

from __future__ import annotations

import gc
import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from floats import assert_close

from graphseek.errors import CorpusError, IndexFormatError, IndexNotFoundError
from graphseek.knowledge.graph import (
    GraphStore,
    SQLiteGraphStore,
    add_passages,
    build_graph,
    delete_passages,
    format_stats,
    graph_stats,
)
from graphseek.knowledge.graph.settings import QUIET, GraphSettings
from graphseek.knowledge.passages import Passage

CORPUS = [
    Passage.from_title_text(
        "Stephen Curry",
        "Stephen Curry, an American basketball player, plays for the Golden State Warriors "
        "(GSW). He was born in Akron, Ohio.",
    ),
    Passage.from_title_text(
        "Golden State Warriors",
        "The Golden State Warriors are a team in the National Basketball Association (NBA). "
        "Steph Curry is their point guard.",
    ),
    Passage.from_title_text(
        "Akron, Ohio",
        "Akron is a city in Ohio. LeBron James was also born in Akron.",
    ),
    Passage.from_title_text(
        "Seven Women (1965 film)",
        "Seven Women is a 1965 American drama film directed by John Ford. It stars Anne Bancroft.",
    ),
    Passage.from_title_text(
        "John Ford",
        "John Ford was an American film director. He won four Academy Awards.",
    ),
    Passage.from_title_text(
        "Teutberga",
        "Teutberga was a queen of Lotharingia by marriage to Lothair II.",
    ),
]
TEUTBERGA = CORPUS[5]


def snapshot(store: SQLiteGraphStore) -> dict[str, object]:
    """What a store holds, comparable across stores: entities, relations (by id, as dicts:
    a "similar" relation's weight is its merge cosine, which an update and a rebuild compute
    with other searches, so stores built apart are compared with `floats.assert_close`),
    passage links and hyperedges."""
    return {
        "entities": sorted(e.model_dump_json() for e in store.entities()),
        "relations": sorted((r.model_dump() for r in store.relations()), key=lambda r: r["id"]),
        "links": sorted((e.id, p) for e in store.entities() for p in store.passages_of(e.id)),
        "hyperedges": sorted(
            (h.id, tuple(h.entity_ids), tuple(h.passage_ids)) for h in store.hyperedges()
        ),
    }


def build(passages: Sequence[Passage], out: Path) -> SQLiteGraphStore:
    return build_graph(passages, out, run=QUIET, settings=GraphSettings(theta=50, top_k_common=20))


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("graph") / "graph"
    build(CORPUS, out).close()
    return out


@pytest.fixture()
def store(store_dir: Path) -> SQLiteGraphStore:
    opened = SQLiteGraphStore.open(store_dir)
    yield opened  # type: ignore[misc]
    opened.close()


def test_a_build_leaves_garbage_collection_as_it_found_it(tmp_path: Path) -> None:
    assert gc.isenabled()
    build(CORPUS[:2], tmp_path / "on").close()
    assert gc.isenabled()
    gc.disable()
    try:
        build(CORPUS[:2], tmp_path / "off").close()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_read_api(store: SQLiteGraphStore) -> None:
    assert isinstance(store, GraphStore)
    assert store.passage_ids() == [p.id for p in CORPUS]
    (curry,) = store.find_entities("steph curry")
    assert curry.name == "Stephen Curry" and curry.aliases == ["Steph Curry"]
    assert store.find_entities("Steph Curry", normalised=False) == [curry]
    assert store.find_entities("steph curry", normalised=False) == []
    assert set(curry.passage_ids) == {CORPUS[0].id, CORPUS[1].id}
    assert {m.passage_id for m in store.mentions_of(curry.id)} == set(curry.passage_ids)
    (warriors,) = store.find_entities("GSW")
    labels = {
        (store.entity(r.source).name, r.label, store.entity(r.target).name)  # type: ignore[union-attr]
        for r in store.relations_of(curry.id, kind="extracted")
    }
    assert ("Stephen Curry", "play for", "Golden State Warriors") in labels
    assert ("Stephen Curry", "born in", "Akron") in labels
    assert all(curry.id in (r.source, r.target) for r in store.relations_of(curry.id))
    assert {r.kind for r in store.relations()} <= {"extracted", "cooccurrence", "similar"}
    # entity-passage links: mentions plus the matcher ("Akron" is named in three passages)
    (akron,) = store.find_entities("Akron")
    assert set(store.passages_of(akron.id)) == {CORPUS[0].id, CORPUS[2].id}
    assert akron.id in store.entities_of(CORPUS[2].id)
    assert store.passages_of(warriors.id, kind="mention")


def test_hyperedges_and_topics(store: SQLiteGraphStore) -> None:
    edges = store.hyperedges()
    assert edges and all(e.topic_id for e in edges)
    topics = store.topics()
    assert sum(t.size for t in topics) == len(edges)
    sub = store.topic_subgraph(topics[0].id)
    assert [h.topic_id for h in sub.hyperedges] == [topics[0].id] * topics[0].size
    assert sub.linearise().startswith("HyperEdge_1: <")
    (curry,) = store.find_entities("Stephen Curry")
    assert any("born in Akron" in h.relation for h in store.hyperedges_of(curry.id))
    with pytest.raises(KeyError):
        store.topic_subgraph("t-9999")


def test_matrices_and_vectors(store: SQLiteGraphStore) -> None:
    adjacency, ids = store.adjacency()
    assert ids == store.entity_ids() and adjacency.shape == (len(ids), len(ids))
    assert (adjacency != adjacency.T).nnz == 0
    full, nodes = store.adjacency(include_passages=True)
    assert nodes == ids + store.passage_ids() and full.shape == (len(nodes), len(nodes))
    incidence, rows, cols = store.entity_passage_matrix()
    assert rows == ids and cols == store.passage_ids()
    for k, eid in enumerate(rows):
        linked = {cols[j] for j in incidence[k].indices}
        assert linked == set(store.passages_of(eid))
    vectors, vector_ids = store.entity_embeddings()
    assert vectors.shape == (len(ids), 384) and vector_ids == ids
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    relation_vectors, relation_ids = store.relation_embeddings()
    assert relation_vectors.shape[0] == len(relation_ids) == len(store.relations("extracted"))
    hyper_vectors, hyper_ids = store.hyperedge_embeddings()
    assert hyper_ids == [h.id for h in store.hyperedges()] and len(hyper_vectors) == len(hyper_ids)


def test_the_raw_layer_reads_back_as_the_extractions_written(tmp_path: Path) -> None:
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    written = OfflineExtractor().extract(CORPUS)
    out = tmp_path / "graph"
    build(CORPUS, out).close()
    store = SQLiteGraphStore.open(out)
    stream = store.extractions()
    first = next(stream)  # read as taken: the store stays usable between them
    assert store.passage(first.passage_id) is not None
    read = [first, *stream]
    assert [x.passage_id for x in read] == [p.id for p in CORPUS]
    assert any(x.relations for x in read) and any(x.facts for x in read)
    for got, made in zip(read, written, strict=True):
        # spans are not stored; everything alignment and linking read is
        assert [replace(m, start=-1, end=-1) for m in got.mentions] == [
            replace(m, start=-1, end=-1) for m in made.mentions
        ]
        assert got.relations == made.relations
        assert got.facts == made.facts
    store.close()

    # a raw row out of passage order is a damaged store, named as such
    import sqlite3

    con = sqlite3.connect(out / "graph.sqlite")
    con.execute(
        "UPDATE mentions SET passage_id = ? WHERE rowid = (SELECT min(rowid) FROM mentions)",
        (CORPUS[-1].id,),
    )
    con.commit()
    con.close()
    with SQLiteGraphStore.open(out) as damaged, pytest.raises(IndexFormatError, match="order"):
        list(damaged.extractions())


def test_incremental_add_equals_rebuild(store: SQLiteGraphStore, tmp_path: Path) -> None:
    out = tmp_path / "graph"
    build(CORPUS[:3], out).close()
    updated = add_passages(out, CORPUS[3:] + CORPUS[:1], run=QUIET)  # one repeat
    assert sorted(updated.passage_ids()) == sorted(p.id for p in CORPUS)
    # the update searches only its new entities' cosines, the rebuild every pair's (two float
    # kernels): "similar" relation weights within a tolerance. No cosine of the fixture is
    # near the candidate threshold (the nearest: 0.0037 from it)
    assert_close(snapshot(updated), snapshot(store))
    assert updated.manifest["alignment"] == store.manifest["alignment"]
    assert "extract" in updated.manifest["timings"]
    assert updated.manifest["timings"]["extract"]["passages"] == 3
    updated.close()


def test_delete_removes_what_only_those_passages_supported(
    store: SQLiteGraphStore, tmp_path: Path
) -> None:
    out = tmp_path / "graph"
    shutil.copytree(store.dir, out)
    after = delete_passages(out, [TEUTBERGA.id, "p-unknown"])
    assert TEUTBERGA.id not in after.passage_ids()
    assert store.find_entities("Teutberga") and not after.find_entities("Teutberga")
    assert not after.find_entities("Lotharingia")
    assert all(TEUTBERGA.id not in r.passage_ids for r in after.relations())
    assert all(TEUTBERGA.id not in h.passage_ids for h in after.hyperedges())
    # shared entities stay
    assert after.find_entities("John Ford")
    rebuilt = build(CORPUS[:5], tmp_path / "rebuilt")
    # the delete keeps the stored cosines, the rebuild computes them again over fewer rows
    # (other float kernels): within a tolerance (nearest cosine to the threshold: 0.0037 away)
    assert_close(snapshot(after), snapshot(rebuilt))
    after.close()
    rebuilt.close()


class Boom(RuntimeError):
    pass


class FailingExtractor:
    def extract(self, passages: Sequence[Passage]) -> list:
        raise Boom("extraction crashed")


def test_a_build_bounds_the_c_heap_before_it_extracts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bound_heap` is asked before extraction, so the forked workers and the passage pass's
    threads start under it."""
    import graphseek.knowledge.graph.memory as memory

    asked: list[str] = []
    monkeypatch.setattr(memory, "bound_heap", lambda: asked.append("bound") or True)
    with pytest.raises(Boom):
        build_graph(CORPUS[:2], tmp_path / "g", extractor=FailingExtractor(), run=QUIET)
    assert asked == ["bound"]


def test_interrupted_build_keeps_the_previous_store(
    store: SQLiteGraphStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "graph"
    shutil.copytree(store.dir, out)
    before = snapshot(SQLiteGraphStore.open(out))
    with pytest.raises(Boom):
        build_graph(CORPUS[:2], out, extractor=FailingExtractor(), run=QUIET)
    assert gc.isenabled()  # the build pauses automatic collection, and gives it back on failure

    import graphseek.knowledge.graph.store.writer as store_module

    def crash(*args: object, **kwargs: object) -> None:
        raise Boom("disk full while writing matrices")

    monkeypatch.setattr(store_module, "build_matrices", crash)
    with pytest.raises(Boom):
        build(CORPUS[:2], out)
    monkeypatch.undo()
    # the database is written on its own thread: its failure reaches the caller the same way
    write_database = store_module._write_database

    def crash_in_database(path: Path, data: object, *args: object) -> None:
        write_database(path, data, *args)  # type: ignore[arg-type]
        raise Boom("disk full while writing the database")

    monkeypatch.setattr(store_module, "_write_database", crash_in_database)
    with pytest.raises(Boom, match="database"):
        build(CORPUS[:2], out)
    monkeypatch.undo()
    assert snapshot(SQLiteGraphStore.open(out)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph"]  # no temp dirs left
    # a crash between the two renames: the previous store is renamed aside, then put back
    out.rename(tmp_path / ".graph.old-12345678")
    assert snapshot(SQLiteGraphStore.open(out)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph"]


def test_stats_on_a_directory(store_dir: Path) -> None:
    stats = graph_stats(store_dir)
    assert stats["passages"] == len(CORPUS)
    assert stats["entities"] == stats["entities_after_alignment"]
    assert stats["entities_before_alignment"] >= stats["entities_after_exact_merge"]
    assert stats["entities_after_exact_merge"] > stats["entities_after_alignment"]
    assert stats["mentions"] >= stats["entities_before_alignment"]
    assert stats["passages_per_entity"]["min"] >= 1
    assert stats["connected_components"] >= 1
    assert stats["components_before_alignment"] >= stats["connected_components"]
    text = format_stats(stats)
    assert "entities before alignment" in text and "entity degree (min/avg/max)" in text


def test_errors(tmp_path: Path, store_dir: Path) -> None:
    with pytest.raises(CorpusError, match="empty"):
        build_graph([], tmp_path / "g", run=QUIET)
    clash = [Passage(id="p1", text="a"), Passage(id="p1", text="b")]
    with pytest.raises(CorpusError, match="p1"):
        build_graph(clash, tmp_path / "g", run=QUIET)
    with pytest.raises(IndexNotFoundError):
        SQLiteGraphStore.open(tmp_path / "nothing")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(IndexFormatError, match="refusing"):
        build_graph(CORPUS[:1], precious, run=QUIET)
    assert (precious / "notes.txt").read_text() == "keep me"
    copy = tmp_path / "copy"
    shutil.copytree(store_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["version"] = 999
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="version"):
        SQLiteGraphStore.open(copy)


# -- the LLM pipeline, scripted -----------------------------------------------------------------


def _llm_script(messages: list) -> object:
    system, human = messages[0].content, messages[-1].content
    if "knowledge graph from text" in system:  # extraction
        if "Stephen Curry" in human:
            return {
                "entities": [
                    {
                        "id": "1",
                        "name": "Stephen Curry",
                        "types": ["PERSON"],
                        "description": "basketball player",
                    },
                    {"id": "2", "name": "Golden State Warriors", "types": ["TEAM"]},
                ],
                "relations": [{"source": "1", "label": "plays for", "target": "2"}],
                "facts": [{"relation": "Curry plays for the Warriors", "entities": ["1", "2"]}],
            }
        return {
            "entities": [
                {
                    "id": "1",
                    "name": "Steph Curry",
                    "types": ["ATHLETE"],
                    "description": "Warriors guard",
                },
                {"id": "2", "name": "Golden State Warriors Arena", "types": ["VENUE"]},
            ],
            "relations": [],
            "facts": [],
        }
    lines = [line for line in human.splitlines() if line[:1].isdigit()]
    number = {line.split("name=")[1].split(";")[0]: int(line.split(".")[0]) for line in lines}
    if "same real-world referent" in system:  # merging
        if "Stephen Curry" in number and "Steph Curry" in number:
            return {
                "reason": "one player",
                "groups": [[number["Stephen Curry"], number["Steph Curry"]]],
            }
        return {"reason": "none", "groups": []}
    if "Golden State Warriors" in number and "Golden State Warriors Arena" in number:  # linking
        return {
            "reason": "home arena",
            "relations": [
                {
                    "source": number["Golden State Warriors"],
                    "label": "plays at",
                    "target": number["Golden State Warriors Arena"],
                }
            ],
        }
    return {"reason": "none", "relations": []}


def test_llm_pipeline_with_a_scripted_model(tmp_path: Path) -> None:
    from graphseek.llm import ScriptedChatModel

    model = ScriptedChatModel(responses=_llm_script)
    passages = [
        Passage.from_title_text("A", "Stephen Curry plays for the Golden State Warriors."),
        Passage.from_title_text("B", "Steph Curry, the Warriors guard, plays at their arena."),
    ]
    store = build_graph(
        passages, tmp_path / "g", llm=model, run=QUIET, settings=GraphSettings(tau=0.5)
    )
    assert store.manifest["extractor"] == "LLMExtractor"
    # an LLM's names need not occur in the passage: those without a vector embed records
    assert store.manifest["settings"]["outside_window"] == "records"
    (curry,) = store.find_entities("Steph Curry")
    assert curry.name in ("Stephen Curry", "Steph Curry") and len(curry.passage_ids) == 2
    kinds = {(store.entity(r.source).name, r.label, r.kind) for r in store.relations()}  # type: ignore[union-attr]
    assert ("Golden State Warriors", "plays at", "predicted") in kinds
    assert ("Golden State Warriors", "plays for", "extracted") not in kinds
    assert any(k == "extracted" for _, _, k in kinds)
    assert {"align", "link"} <= set(store.manifest["llm_usage"])
    store.close()


def test_graph_records_equal_validated_models_and_share_one_fields_set(
    store: SQLiteGraphStore,
) -> None:
    """The records a build makes and a store reads are the models validation would give; one
    fields-set per class is shared, and a copy with an update gets its own."""
    from graphseek.knowledge.graph.models import Entity, HyperEdge, Relation, graph_record

    relation = graph_record(
        Relation,
        id="r1",
        source="a",
        label="knows",
        target="b",
        passage_ids=["p"],
        weight=2.0,
        kind="extracted",
    )
    validated = Relation(
        id="r1", source="a", label="knows", target="b", passage_ids=["p"], weight=2.0
    )
    assert relation == validated and relation.model_dump() == validated.model_dump()
    other = graph_record(Relation, id="r2", source="b", label="x", target="c", weight=1.0)
    assert other.passage_ids == [] and other.kind == "extracted"
    assert relation.__pydantic_fields_set__ is other.__pydantic_fields_set__
    moved = relation.model_copy(update={"weight": 3.0})
    assert moved.weight == 3.0 and relation.model_fields_set == set(Relation.model_fields)
    with pytest.raises(Exception, match="frozen"):
        relation.weight = 5.0  # type: ignore[misc]
    # what the store reads back validates to itself
    for model, rows in (
        (Entity, store.entities()),
        (Relation, store.relations()),
        (HyperEdge, store.hyperedges()),
    ):
        assert rows and all(model.model_validate(r.model_dump()) == r for r in rows)


def test_an_updates_vector_cache_holds_every_stored_vector_by_its_text(
    store: SQLiteGraphStore,
) -> None:
    """The cache an update starts from (read as rows, no records built) gives each stored
    entity, relation and hyperedge text the vector the store holds for it (the first row's,
    for a text two rows share): those texts are not encoded again."""
    from graphseek.knowledge.graph.algorithms.vectors import (
        cache_from_store,
        entity_text,
        hyperedge_text,
        relation_text,
    )
    from graphseek.knowledge.graph.settings import settings_of

    cache = cache_from_store(store, settings_of(store))
    names = {e.id: e.name for e in store.entities()}
    by_id = {r.id: r for r in store.relations()}
    relation_vectors, relation_ids = store.relation_embeddings()
    expected: dict[str, np.ndarray] = {}
    for e, vector in zip(store.entities(), store.entity_embeddings()[0], strict=True):
        expected.setdefault(entity_text(e), vector)
    for rid, vector in zip(relation_ids, relation_vectors, strict=True):
        expected.setdefault(relation_text(by_id[rid], names), vector)
    for edge, vector in zip(store.hyperedges(), store.hyperedge_embeddings()[0], strict=True):
        expected.setdefault(hyperedge_text(edge), vector)
    assert relation_ids and store.hyperedges()
    assert expected.keys() <= cache.vectors.keys()
    for text, vector in expected.items():
        assert np.array_equal(cache.vectors[text], vector), text
    assert cache.alignment.base_ids == set(store.alignment_state()[0])


def test_id_lists_are_written_as_the_compact_json_of_the_whole(tmp_path: Path) -> None:
    from graphseek.knowledge.graph.store import writer as store_writer

    lists = {
        "entities": [f"e-{k}" for k in range(5)],
        "passages": ['p \u00e9"1', "p\\2"],  # escapes and text past ASCII
        "empty": [],
    }
    for rows in (2, 3, 100):  # blocks that split the lists, and one that does not
        path = tmp_path / f"nodes-{rows}.json"
        patch = pytest.MonkeyPatch()
        patch.setattr(store_writer, "WRITE_ROWS", rows)
        try:
            store_writer.write_id_lists(path, lists)
        finally:
            patch.undo()
        assert path.read_text(encoding="utf-8") == store_writer._dumps(lists)
        assert json.loads(path.read_text(encoding="utf-8")) == lists
