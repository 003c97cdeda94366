"""A build's entities and hyperedges as columns: each model read is the one made before."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from graphseek.knowledge.graph.algorithms.align import record_entity
from graphseek.knowledge.graph.algorithms.hyper import assign_topics
from graphseek.knowledge.graph.algorithms.records import EntityRecord
from graphseek.knowledge.graph.memory.id_columns import ABSENT, IdList, MentionIds
from graphseek.knowledge.graph.memory.model_columns import EntityColumns, HyperEdgeColumns
from graphseek.knowledge.graph.models import HyperEdge, graph_record

IDS = sorted(f"p{p}#m{k}" for p in range(3) for k in range(4))


def record(name: str, mention_ids: Sequence[str], **extra: object) -> EntityRecord:
    values: dict[str, object] = {
        "aliases": [],
        "description": "",
        "types": ["PERSON"],
        "passage_ids": sorted({m.split("#")[0] for m in mention_ids}),
    }
    values.update(extra)
    return EntityRecord(name=name, mention_ids=mention_ids, **values)  # type: ignore[arg-type]


def records(ids: MentionIds | list[str]) -> list[tuple[str, EntityRecord]]:
    def view(*mids: str) -> IdList | list[str]:
        return (
            ids.take([ids.position(m) for m in mids])
            if isinstance(ids, MentionIds)
            else [*sorted(mids)]
        )

    return [  # in alignment's order, not the ids'
        ("e-zeta", record("Zeta", view("p2#m1", "p0#m3"), aliases=["Z", "Zed"])),
        ("e-alpha", record("Alpha", view("p1#m0"), description="a letter", types=["ORG", "GPE"])),
        ("e-mu", record("Mu", view("p0#m0", "p0#m1", "p1#m2"), types=[])),
    ]


@pytest.mark.parametrize("kind", ["numbers", "strings"])
def test_each_entity_is_the_model_alignment_made(kind: str) -> None:
    ids: MentionIds | list[str] = MentionIds.of(IDS) if kind == "numbers" else list(IDS)  # type: ignore[assignment]
    assert ids is not None
    added = records(ids)
    columns = EntityColumns(ids)
    for eid, rec in added:
        columns.add(eid, rec)
    assert columns.finish() is columns
    expected = sorted((record_entity(rec, eid) for eid, rec in added), key=lambda e: e.id)
    assert [e.model_dump() for e in columns] == [e.model_dump() for e in expected]
    assert columns.ids == ["e-alpha", "e-mu", "e-zeta"]
    assert columns.column("name") == ["Alpha", "Mu", "Zeta"]
    assert columns.items_of("types", 0) == ["ORG", "GPE"] and columns.items_of("types", 1) == []
    assert columns.items_of("passage_ids", 2) == ["p0", "p2"]
    zeta = columns[-1]
    assert zeta.mention_ids == ["p0#m3", "p2#m1"]
    assert isinstance(zeta.mention_ids, IdList if kind == "numbers" else list)
    assert [e.id for e in columns[1:]] == ["e-mu", "e-zeta"]
    with pytest.raises(IndexError):
        columns[3]


def test_entities_are_found_by_id() -> None:
    ids = MentionIds.of(IDS)
    assert ids is not None
    columns = EntityColumns(ids)
    for eid, rec in records(ids):
        columns.add(eid, rec)
    with pytest.raises(ValueError, match="not sorted"):
        columns.position("e-mu")
    columns.finish()
    assert columns.position("e-mu") == 1 and columns.position("e-nu") == ABSENT
    by_id = columns.by_id()
    assert list(by_id) == columns.ids and len(by_id) == 3
    assert by_id["e-zeta"].aliases == ["Z", "Zed"]
    assert "e-alpha" in by_id and "e-beta" not in by_id and 3 not in by_id
    with pytest.raises(KeyError):
        by_id["e-beta"]


def test_a_record_of_mention_strings_is_held_by_position() -> None:
    """A record whose mention ids are strings (not a view of alignment's ids) keeps them by
    position; one naming an id alignment does not have is refused."""
    ids = MentionIds.of(IDS)
    assert ids is not None
    columns = EntityColumns(ids)
    columns.add("e-a", record("A", ["p2#m0", "p1#m3"]))
    with pytest.raises(ValueError, match="does not have"):
        columns.add("e-b", record("B", ["p9#m0"]))
    assert columns.finish()[0].mention_ids == ["p1#m3", "p2#m0"]


def test_a_view_of_other_ids_is_held_by_position_in_alignments() -> None:
    """A record whose `IdList` views another `MentionIds` (not alignment's) is read back as
    the same ids, by their positions in alignment's."""
    ids, other = MentionIds.of(IDS), MentionIds.of(["p1#m3", "p2#m0", "p9#m9"])
    assert ids is not None and other is not None
    columns = EntityColumns(ids)
    view = other.take([other.position("p1#m3"), other.position("p2#m0")])
    columns.add("e-a", record("A", view))
    entity = columns.finish()[0]
    assert entity.mention_ids == ["p1#m3", "p2#m0"]
    assert isinstance(entity.mention_ids, IdList) and entity.mention_ids.ids is ids


def test_empty_columns_and_their_limits() -> None:
    columns = EntityColumns().finish()
    assert len(columns) == 0 and list(columns) == [] and columns[:] == []
    assert columns.position("e-a") == ABSENT and dict(columns.by_id()) == {}
    with pytest.raises(IndexError):
        columns.items_of("types", 0)
    with pytest.raises(ValueError, match="finished"):
        columns.add("e-a", record("A", ["x"]))
    edges = HyperEdgeColumns()
    with pytest.raises(ValueError, match="needs passage_ids"):
        edges.append(id="h-a", relation="r", topic_id=None, entity_ids=[])
    assert len(edges) == 0  # nothing half added
    with pytest.raises(ValueError, match="finish the hyperedges"):
        edges.with_topics([])


def test_list_fields_are_read_by_negative_index_too() -> None:
    columns = EntityColumns()
    columns.add("e-a", record("A", ["x"], types=["ORG"]))
    columns.add("e-b", record("B", ["y"], types=["GPE"]))
    columns.finish()
    assert columns.items_of("types", -1) == ["GPE"] and columns.items_of("types", -2) == ["ORG"]
    assert columns[-2].id == "e-a" and repr(columns) == "EntityColumns(2 models)"


def test_two_entities_with_one_id_are_refused() -> None:
    columns = EntityColumns()
    columns.add("e-a", record("A", ["x"]))
    columns.add("e-a", record("A", ["y"]))
    with pytest.raises(ValueError, match="Entity models have one id"):
        columns.finish()


def hyperedge(hid: str, members: list[str], pids: list[str]) -> HyperEdge:
    return graph_record(
        HyperEdge,
        id=hid,
        relation=f"fact {hid}",
        entity_ids=members,
        passage_ids=pids,
        topic_id=None,
    )


def test_hyperedges_as_columns_take_their_topics() -> None:
    edges = [hyperedge("h-b", ["e-2", "e-1"], ["p1"]), hyperedge("h-a", ["e-3"], ["p0", "p2"])]
    columns = HyperEdgeColumns()
    for edge in edges:
        columns.append(**edge.model_dump())
    columns.finish()
    assert columns.ids == ["h-a", "h-b"]
    assert list(columns) == sorted(edges, key=lambda h: h.id)
    assert columns.items_of("entity_ids", 1) == ["e-2", "e-1"]
    vectors = np.eye(2, dtype=np.float32)
    labels = np.array([1, 0])
    out, topics = assign_topics(columns, vectors, labels=labels, keywords=2)
    expected, same_topics = assign_topics(list(columns), vectors, labels=labels, keywords=2)
    assert isinstance(out, HyperEdgeColumns) and list(out) == expected and topics == same_topics
    assert [h.topic_id for h in out] == ["t-0001", "t-0000"]
    with pytest.raises(ValueError, match="finished"):  # the two share their columns
        columns.append(**edges[0].model_dump())
    assert all(h.topic_id is None for h in columns)  # the columns read before are unchanged
    with pytest.raises(ValueError, match="one topic id per hyperedge"):
        columns.with_topics(["t-0000"])
