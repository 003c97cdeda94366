"""The delta add (`add_passages(..., delta=True)`, `graphseek.knowledge.graph.delta`) end to end
on the offline extractor with real spaCy and MiniLM: what it changes, what it keeps, that the
store it writes reads back whole, that a failure leaves the store as it was, and that an exact
add afterwards gives a rebuild's graph again; and the stages' functions for a stored graph
(`stages.align.align_new`, `stages.link.match_links`, `stages.write.append_rows`) directly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import delta_reference
import numpy as np
import pytest
from floats import assert_close
from test_graph_store import CORPUS, build, snapshot

from graphseek.knowledge.graph import SQLiteGraphStore, add_passages
from graphseek.knowledge.graph.models import Entity, graph_record
from graphseek.knowledge.graph.settings import QUIET, GraphSettings, settings_of
from graphseek.knowledge.graph.stages import align as align_stage
from graphseek.knowledge.graph.stages import link as link_stage
from graphseek.knowledge.graph.stages import write as write_stage
from graphseek.knowledge.graph.store.stored import StoredGraph
from graphseek.knowledge.passages import Passage

FORD_AGAIN = Passage.from_title_text(
    "The Searchers",
    "The Searchers is a 1956 American western film directed by John Ford. It stars John Wayne.",
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A store of the first three passages, and the rebuild of all six."""
    root = tmp_path_factory.mktemp("delta")
    build(CORPUS[:3], root / "half").close()
    build(CORPUS, root / "full").close()
    return {"half": root / "half", "full": root / "full"}


def copy_of(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / "graph"
    shutil.copytree(path, out)
    return out


def test_a_delta_add_gives_the_rebuilds_graph_on_a_small_corpus(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    """No bridge between stored entities and no topic count change: the same entities,
    relations, links and hyperedges as a rebuild; the topics are the nearest stored ones."""
    out = copy_of(stores["half"], tmp_path)
    updated = add_passages(out, CORPUS[3:] + CORPUS[:1], run=QUIET, delta=True)
    with SQLiteGraphStore.open(stores["full"]) as full:
        # the delta's new cosines come from its own search of the stored vectors, the
        # rebuild's from a search of every pair (two float kernels): "similar" relation
        # weights within a tolerance; no cosine of the fixture is within 0.0037 of the
        # candidate threshold
        assert_close(snapshot(updated), snapshot(full))
        assert sorted(updated.passage_ids()) == sorted(full.passage_ids())
    with SQLiteGraphStore.open(stores["half"]) as half:
        stored_topics = {t.id for t in half.topics()}
    assert {t.id for t in updated.topics()} == stored_topics
    assert sum(t.size for t in updated.topics()) == len(updated.hyperedges())
    delta = updated.manifest["delta"]
    assert delta["adds"] == 1 and delta["passages_added"] == 3
    assert delta["last"]["new_entities"] > 0
    assert {"align", "link_passages", "write", "extract"} <= set(delta["timings"])
    updated.close()


def test_delta_adds_write_the_stored_reference(tmp_path: Path) -> None:
    """Two delta adds give the store recorded in ``tests/snapshots/delta_add.json`` (written by
    `delta_reference` with the delta add before its stages moved into the stage modules):
    every SQLite row in table order, the node ids, the matcher's words, the sentence layer,
    the matrices and the manifest's counts, their floats within `floats.assert_close`'s
    tolerance, and each vector file's dtype, shape and row sums (within a float16 step: the
    last bits of MiniLM's vectors differ between CPUs)."""
    got = delta_reference.contents(delta_reference.delta_store(tmp_path))
    want = json.loads(delta_reference.REFERENCE.read_text())
    got_arrays, want_arrays = got.pop("arrays"), want.pop("arrays")
    assert_close(got, want)
    assert sorted(got_arrays) == sorted(want_arrays)
    for name, array in want_arrays.items():
        mine = got_arrays[name]
        assert (mine["dtype"], mine["shape"]) == (array["dtype"], array["shape"]), name
        assert np.allclose(mine["row_sums"], array["row_sums"], rtol=0, atol=1e-2), name


def test_the_store_a_delta_writes_reads_back_whole(stores: dict[str, Path], tmp_path: Path) -> None:
    out = copy_of(stores["half"], tmp_path)
    updated = add_passages(out, CORPUS[3:], run=QUIET, delta=True)
    ids = updated.entity_ids()
    vectors, rows = updated.entity_embeddings()
    assert rows == ids and vectors.shape == (len(ids), 384)
    hyper, hids = updated.hyperedge_embeddings()
    assert hids == [h.id for h in updated.hyperedges()] and len(hyper) == len(hids)
    assert all(h.topic_id for h in updated.hyperedges())
    relation_vectors, rids = updated.relation_embeddings()
    assert len(relation_vectors) == len(rids)
    assert set(rids) == {r.id for r in updated.relations() if r.kind == "extracted"}
    mention_vectors, mids = updated.mention_embeddings()
    assert len(mids) == len(set(mids)) == len(mention_vectors)
    assert set(mids) == {m.id for x in updated.extractions() for m in x.mentions}
    full, nodes = updated.adjacency(include_passages=True)
    assert full.shape == (len(ids) + 6, len(nodes)) and nodes[len(ids) :] == [
        p.id for p in updated.passages()
    ]
    incidence, eids, pids = updated.entity_passage_matrix()
    for e in updated.entities():  # the matrix and the links table agree
        row = incidence[eids.index(e.id)]
        assert {pids[c] for c in row.indices} == set(updated.passages_of(e.id))
    counts = updated.manifest["counts"]
    assert counts["entities"] == len(ids) and counts["passages"] == 6
    assert counts["relations"] == len(updated.relations())
    updated.close()


def test_a_stored_entity_keeps_its_id_and_gains_the_new_mentions(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "graph"
    build(CORPUS[3:5], out).close()  # Seven Women, John Ford
    with SQLiteGraphStore.open(out) as before:
        (ford,) = before.find_entities("John Ford")
        american = before.find_entities("American")[0]
    updated = add_passages(out, [FORD_AGAIN], run=QUIET, delta=True)
    (after,) = updated.find_entities("John Ford")
    assert after.id == ford.id
    assert FORD_AGAIN.id in updated.passages_of(ford.id)
    assert set(after.mention_ids) > set(ford.mention_ids)
    assert updated.find_entities("John Wayne")  # a new entity
    # a stored relation gains the new passage's weight: American co-occurs with John Ford
    pair = sorted([ford.id, american.id])
    with SQLiteGraphStore.open(out) as again:
        edges = [r for r in again.relations_of(ford.id) if sorted([r.source, r.target]) == pair]
    assert edges and any(FORD_AGAIN.id in r.passage_ids for r in edges)
    assert updated.manifest["delta"]["last"]["joined_by_name"] >= 2
    updated.close()


def test_an_exact_add_after_a_delta_gives_the_rebuild_again(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    out = copy_of(stores["half"], tmp_path)
    add_passages(out, CORPUS[3:5], run=QUIET, delta=True).close()
    exact = add_passages(out, CORPUS[5:], run=QUIET)
    with SQLiteGraphStore.open(stores["full"]) as full:
        assert_close(snapshot(exact), snapshot(full))  # cosines from other searches
        assert [t.model_dump() for t in exact.topics()] == [t.model_dump() for t in full.topics()]
    assert "delta" not in exact.manifest  # a rebuild's store: nothing deferred
    exact.close()


def test_the_matcher_links_a_new_name_to_the_stored_passages_naming_it(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    out = copy_of(stores["full"], tmp_path)
    settings = settings_of(SQLiteGraphStore.open(out))
    awards = graph_record(
        Entity,
        id="e-new",
        name="Academy Awards",
        aliases=[],
        description="",
        types=["ORG"],
        passage_ids=[],
        mention_ids=[],
    )
    john_ford = next(p for p in CORPUS if p.title == "John Ford")
    with StoredGraph.open(out) as stored:
        links, common = link_stage.match_links(stored, [], [awards], {}, settings)
        assert links["e-new"] == {john_ford.id}
        assert len(common) == settings.top_k_common
        # a name as frequent as theta links nowhere
        rare = link_stage.match_links(
            stored, [], [awards], {}, type(settings)(**{**settings.__dict__, "theta": 1})
        )[0]
        assert "e-new" not in rare


def test_append_rows_keeps_the_dtype_and_the_rows(tmp_path: Path) -> None:
    stored = np.arange(12, dtype=np.float16).reshape(4, 3)
    np.save(tmp_path / "a.npy", stored)
    write_stage.append_rows(tmp_path / "a.npy", tmp_path / "b.npy", np.ones((2, 3)))
    out = np.load(tmp_path / "b.npy")
    assert out.dtype == np.float16 and out.shape == (6, 3)
    assert np.array_equal(out[:4], stored) and np.all(out[4:] == 1)
    np.save(tmp_path / "empty.npy", np.zeros((0, 0), dtype=np.float32))
    write_stage.append_rows(tmp_path / "empty.npy", tmp_path / "c.npy", np.ones((2, 5)))
    assert np.load(tmp_path / "c.npy").shape == (2, 5)
    with pytest.raises(ValueError, match="width"):
        write_stage.append_rows(tmp_path / "a.npy", tmp_path / "d.npy", np.ones((1, 4)))


def test_a_failing_delta_leaves_the_store_as_it_was(
    stores: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = copy_of(stores["half"], tmp_path)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(write_stage, "_extend_matrices", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        add_passages(out, CORPUS[3:], run=QUIET, delta=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph"]  # nothing left behind


def test_a_delta_add_refuses_an_llm_aligner(stores: dict[str, Path], tmp_path: Path) -> None:
    out = copy_of(stores["half"], tmp_path)
    with pytest.raises(ValueError, match="delta add decides merges offline"):
        add_passages(out, CORPUS[3:], run=QUIET, delta=True, llm=_never_called())
    manifest = json.loads((out / "manifest.json").read_text())
    assert "delta" not in manifest


def _never_called() -> object:
    """A scripted chat model that fails if called: a delta add must refuse it first."""
    from graphseek.llm import ScriptedChatModel

    def script(messages: list) -> object:  # pragma: no cover
        raise AssertionError("not called")

    return ScriptedChatModel(responses=script)


def test_a_build_keeps_its_common_words_and_a_delta_reads_them(
    stores: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = json.loads((stores["half"] / "matcher.json").read_text())
    assert kept["top_k_common"] == 20 and len(kept["common_words"]) == 20

    def recount(*args: object, **kwargs: object) -> None:
        raise AssertionError("the words were counted again")

    monkeypatch.setattr(link_stage, "top_common_words", recount)
    out = copy_of(stores["half"], tmp_path)
    add_passages(out, CORPUS[3:], run=QUIET, delta=True).close()
    assert json.loads((out / "matcher.json").read_text()) == kept


def test_stats_say_how_many_delta_adds_wait_for_a_rebuild(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    from graphseek.knowledge.graph import format_stats, graph_stats

    out = copy_of(stores["half"], tmp_path)
    assert "delta adds" not in format_stats(graph_stats(out))
    add_passages(out, CORPUS[3:5], run=QUIET, delta=True).close()
    add_passages(out, CORPUS[5:], run=QUIET, delta=True).close()
    text = format_stats(graph_stats(out))
    assert "delta adds" in text and "2 (3 passages) since the last build" in text


def test_a_delta_add_to_a_store_aligned_with_record_strings(tmp_path: Path) -> None:
    """Record alignment (no contextual mention vectors): base vectors from record strings."""
    from graphseek.knowledge.graph import build_graph

    out = tmp_path / "graph"
    build_graph(CORPUS[3:5], out, run=QUIET, settings=GraphSettings(alignment="records")).close()
    updated = add_passages(out, [FORD_AGAIN], run=QUIET, delta=True)
    assert updated.manifest["settings"]["alignment"] == "records"
    (ford,) = updated.find_entities("John Ford")
    assert FORD_AGAIN.id in updated.passages_of(ford.id)
    assert updated.mention_embeddings()[0].shape[0] == 0
    base_ids, _, vectors, _ = updated.alignment_state()
    assert len(base_ids) == len(vectors)
    updated.close()


def test_a_delete_after_a_delta_gives_the_rebuild_of_what_is_left(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    """The exact paths read a store a delta wrote (appended rows, vectors and ids out of the
    build's order) as they read a build's."""
    from graphseek.knowledge.graph import delete_passages

    out = copy_of(stores["half"], tmp_path)
    add_passages(out, CORPUS[3:], run=QUIET, delta=True).close()
    after = delete_passages(out, [CORPUS[0].id])
    rebuilt = build(CORPUS[1:], tmp_path / "rebuilt")
    # cosines from other searches: within a tolerance (the fixture's nearest to the candidate
    # threshold is 0.00095 from it)
    assert_close(snapshot(after), snapshot(rebuilt))
    after.close()
    rebuilt.close()


def test_an_exact_add_after_a_delta_keeps_the_stored_merge_decisions(tmp_path: Path) -> None:
    """A delta appends base entities, so the stored ones are no longer in id order: the exact
    add must still find the pairs it decided before (Steph / Stephen Curry stay one)."""
    out = tmp_path / "graph"
    build(CORPUS[3:], out).close()
    add_passages(out, CORPUS[:3], run=QUIET, delta=True).close()
    exact = add_passages(out, [FORD_AGAIN], run=QUIET)
    rebuilt = build([*CORPUS[3:], *CORPUS[:3], FORD_AGAIN], tmp_path / "rebuilt")
    # cosines from other searches: within a tolerance (the fixture's nearest to the candidate
    # threshold is 0.0018 from it)
    assert_close(snapshot(exact), snapshot(rebuilt))
    assert len(exact.find_entities("Stephen Curry")) == 1
    exact.close()
    rebuilt.close()


def test_a_stored_entity_that_gains_aliases_gets_its_vector_again(tmp_path: Path) -> None:
    from graphseek.knowledge.graph.algorithms.vectors import (
        default_embed,
        entity_text,
        string_embed,
    )

    out = tmp_path / "graph"
    build(CORPUS[:2], out).close()  # Stephen Curry (alias GSW for the Warriors), the Warriors
    more = Passage.from_title_text(
        "Golden State", "The Golden State Warriors, also called the Dubs, won in 2015."
    )
    updated = add_passages(out, [more], run=QUIET, delta=True)
    grown = [e for e in updated.entities() if more.id in e.passage_ids and len(e.passage_ids) > 1]
    assert grown
    settings = settings_of(updated)
    strings = string_embed(settings, default_embed())
    vectors, ids = updated.entity_embeddings()
    for entity in grown:
        expected = np.asarray(strings([entity_text(entity)]))[0]
        assert np.allclose(vectors[ids.index(entity.id)], expected, atol=1e-5), entity.name
    updated.close()


def test_merge_pairs_refuse_unsorted_ids() -> None:
    from graphseek.knowledge.graph.memory.merge_pairs import MergePairs

    none = np.zeros(0, dtype=np.int64)
    with pytest.raises(ValueError, match="sorted"):
        MergePairs.of(["b-2", "b-1"], none, none, np.zeros(0), np.zeros(0, dtype=bool))


def test_a_name_shared_without_a_type_goes_to_the_merge_decision(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    """As the build's name candidates: a new generic "Akron" (no type shared with the stored
    GPE/ORG "Akron") is judged by the offline decision, which joins a proper name."""
    from graphseek.knowledge.graph.algorithms.vectors import default_embed
    from graphseek.knowledge.graph.models import Mention

    out = copy_of(stores["half"], tmp_path)
    with SQLiteGraphStore.open(out) as store:
        settings = settings_of(store)
        (akron,) = [e for e in store.find_entities("Akron") if "GPE" in e.types]
    mention = Mention(id="p-new#m0", passage_id="p-new", name="Akron", types=["CONCEPT"])
    with StoredGraph.open(out) as stored:
        embed = default_embed()
        bases = align_stage.new_bases([mention], {}, settings, embed)
        rows = stored.count("base_entities")
        near = align_stage.near_stored(stored, bases.vectors, settings, rows)
        aligned = align_stage.align_new(stored, bases, near, settings, embed)
    assert aligned.mention_entity == {"p-new#m0": akron.id}
    assert aligned.counts["joined_by_name"] == 0 and not aligned.new_entities
