"""`PassageLinks`: entity-passage links as columns, in the order the store writes them, and the
matcher's links as numbers (`match_numbers`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from graphseek.knowledge.graph import Entity, Relation
from graphseek.knowledge.graph.algorithms.link import match_numbers
from graphseek.knowledge.graph.memory.passage_links import PassageLinks
from graphseek.knowledge.graph.store.writer import build_matrices
from graphseek.knowledge.passages import Passage

ENTITIES = ["e-b", "e-a", "e-c"]  # not sorted: rows follow the ids' order, not the positions
PASSAGES = ["p10", "p2", "p1"]


def as_dict(links: PassageLinks) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for eid, pid, kind in links.rows():
        out.setdefault(eid, {})[pid] = kind
    return out


def test_rows_are_in_entity_then_passage_id_order_and_a_mention_wins() -> None:
    mentioned = (np.array([0, 1, 0]), np.array([1, 0, 1]))  # (e-b, p2) twice
    matched = (np.array([0, 2, 1, 0]), np.array([1, 2, 2, 0]))  # (e-b, p2) also matched
    links = PassageLinks.of(ENTITIES, PASSAGES, mentioned, matched)
    assert list(links.rows()) == [
        ("e-a", "p1", "match"),
        ("e-a", "p10", "mention"),
        ("e-b", "p10", "match"),
        ("e-b", "p2", "mention"),
        ("e-c", "p1", "match"),
    ]
    assert len(links) == 5 and links.matches == 3
    assert links.entity.dtype == np.int32 and links.passage.dtype == np.int32


def test_the_rows_are_those_of_the_sorted_dict_a_build_wrote_before() -> None:
    mapping = {
        "e-c": {"p1": "match"},
        "e-a": {"p2": "mention", "p10": "match", "p1": "mention"},
        "e-b": {"p10": "mention"},
    }
    expected = [
        (eid, pid, kind)
        for eid, kinds in sorted(mapping.items())
        for pid, kind in sorted(kinds.items())
    ]
    links = PassageLinks.from_mapping(ENTITIES, PASSAGES, mapping)
    assert list(links.rows()) == expected
    assert as_dict(links) == mapping
    # an entity or passage the store does not know is left out
    extra = {**mapping, "e-z": {"p1": "match"}, "e-a": {**mapping["e-a"], "p9": "match"}}
    assert as_dict(PassageLinks.from_mapping(ENTITIES, PASSAGES, extra)) == mapping


def test_numbers_out_of_range_are_refused() -> None:
    none = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="entity out of range"):
        PassageLinks.of(ENTITIES, PASSAGES, (np.array([3]), np.array([0])), none)
    with pytest.raises(ValueError, match="passage out of range"):
        PassageLinks.of(ENTITIES, PASSAGES, none, (np.array([0]), np.array([-1])))
    empty = PassageLinks.of(ENTITIES, PASSAGES, none, none)
    assert len(empty) == 0 and list(empty.rows()) == []


def test_the_incidence_matrix_is_the_links() -> None:
    mapping = {"e-a": {"p2": "mention", "p1": "match"}, "e-c": {"p10": "mention"}}
    links = PassageLinks.from_mapping(ENTITIES, PASSAGES, mapping)
    _, full, incidence = build_matrices(ENTITIES, PASSAGES, [], links)
    expected = np.zeros((3, 3), dtype=np.float32)
    expected[1, 1] = expected[1, 2] = expected[2, 0] = 1.0
    assert isinstance(incidence, sparse.csr_matrix)
    assert (incidence.toarray() == expected).all()
    assert full.shape == (6, 6) and (full.toarray()[:3, 3:] == expected).all()
    with pytest.raises(ValueError, match="other entities or passages"):
        build_matrices(ENTITIES[:2], PASSAGES, [], links)


@pytest.mark.parametrize(
    ("ne", "np_", "linked"),
    [(40, 25, True), (40, 25, False), (7, 0, False), (0, 5, False), (0, 0, False)],
)
def test_the_full_matrix_is_the_blocks_bmat_gives(ne: int, np_: int, linked: bool) -> None:
    """The entity+passage matrix stacked over CSR has bmat's arrays, byte for byte (the store
    files before the change), with links or none, and when a block is empty."""
    rng = np.random.default_rng(7)
    entity_ids = [f"e{k:03d}" for k in range(ne)]
    passage_ids = [f"p{k:03d}" for k in range(np_)]
    relations = (
        [
            Relation(id=f"r{k}", source=entity_ids[a], label="x", target=entity_ids[b], weight=w)
            for k, (a, b, w) in enumerate(
                zip(rng.integers(0, ne, 90), rng.integers(0, ne, 90), rng.random(90), strict=True)
            )
        ]
        if ne
        else []
    )
    links = None
    if linked:
        pairs = (rng.integers(0, ne, 120), rng.integers(0, np_, 120))
        links = PassageLinks.of(entity_ids, passage_ids, pairs, (pairs[0][:9], pairs[1][::-1][:9]))
    adjacency, full, incidence = build_matrices(entity_ids, passage_ids, relations, links)
    expected = sparse.bmat(
        [[adjacency, incidence], [incidence.T, None]], format="csr", dtype=np.float32
    )
    assert full.shape == expected.shape == (ne + np_, ne + np_) and full.dtype == np.float32
    for name in ("indptr", "indices", "data"):
        got, want = getattr(full, name), getattr(expected, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name


def test_match_numbers_are_positions_of_each_link_once() -> None:
    passages = [
        Passage(id="p1", title="", text="Paris is the capital of France."),
        Passage(id="p2", title="", text="Parisians love PARIS, and Ville Lumiere too."),
        Passage(id="p3", title="", text="The Eiffel Tower stands in Paris, France."),
    ]
    entities = [
        Entity(id="paris", name="Paris", aliases=["PARIS", "Ville Lumiere"], types=["GPE"]),
        Entity(id="france", name="France", types=["GPE"]),
        Entity(id="tower", name="Eiffel Tower", types=["FAC"]),
    ]
    entity, passage, report = match_numbers(entities, passages, theta=100, top_k_common=0)
    pairs = {(entities[e].id, passages[p].id) for e, p in zip(entity, passage, strict=True)}
    assert len(pairs) == len(entity) == report.links == 6  # a name and an alias: one link
    assert pairs == {
        ("paris", "p1"),
        ("paris", "p2"),
        ("paris", "p3"),
        ("france", "p1"),
        ("france", "p3"),
        ("tower", "p3"),
    }
    assert entity.dtype == np.int32 and passage.dtype == np.int32
    assert list(entity * len(passages) + passage) == sorted(entity * len(passages) + passage)
