"""Linking (HiGra Phases 3 and 4) and the hyperedge layer: the theta / top-K passage matcher,
co-occurrence edges, hyperedges and topics, linearisation."""

from __future__ import annotations

import numpy as np

from graphseek.knowledge.graph import Entity, Extraction, HyperEdge, Mention, RawFact
from graphseek.knowledge.graph.algorithms.hyper import assign_topics, build_hyperedges, topic_count
from graphseek.knowledge.graph.algorithms.link import MatchReport, cooccurrence_edges, match_numbers
from graphseek.knowledge.graph.models import linearise_hyperedge
from graphseek.knowledge.passages import Passage


def entity(eid: str, name: str, *aliases: str) -> Entity:
    return Entity(id=eid, name=name, aliases=list(aliases), types=["X"])


PASSAGES = [
    Passage(id="p1", title="", text="Paris is the capital of France. The country is large."),
    Passage(id="p2", title="", text="Parisians love PARIS; the country of France."),
    Passage(id="p3", title="", text="Comparison: parish records of the country."),
    Passage(id="p4", title="", text="The Eiffel Tower (La Tour Eiffel) stands in Paris."),
]


def brute_force(entities: list[Entity], theta: int, common: set[str]) -> dict[str, set[str]]:
    """The Phase 4 rule with regexes, for comparison."""
    import re

    out: dict[str, set[str]] = {}
    for e in entities:
        for surface in e.names:
            key = surface.lower()
            if key in common:
                continue
            pattern = re.compile(rf"(?<![\w]){re.escape(key)}(?![\w])")
            hits = {p.id: len(pattern.findall(p.content.lower())) for p in PASSAGES}
            if sum(hits.values()) >= theta:
                continue
            found = {pid for pid, n in hits.items() if n}
            if found:
                out.setdefault(e.id, set()).update(found)
    return out


def match_passages(
    entities: list[Entity], passages: list[Passage], **options: int
) -> tuple[dict[str, set[str]], MatchReport]:
    """`match_numbers` as entity id -> passage ids."""
    entity, passage, report = match_numbers(entities, passages, **options)  # type: ignore[arg-type]
    links: dict[str, set[str]] = {}
    for e, n in zip(entity.tolist(), passage.tolist(), strict=True):
        links.setdefault(entities[e].id, set()).add(passages[n].id)
    return links, report


def test_match_passages_word_boundaries_theta_and_top_k() -> None:
    entities = [
        entity("paris", "Paris"),
        entity("france", "France"),
        entity("eiffel", "Eiffel Tower", "La Tour Eiffel"),
        entity("country", "country"),
    ]
    links, report = match_passages(entities, PASSAGES, theta=100, top_k_common=0)
    assert links["paris"] == {"p1", "p2", "p4"}  # not "Parisians", not "parish"
    assert links["eiffel"] == {"p4"}
    assert links["country"] == {"p1", "p2", "p3"}
    assert links == brute_force(entities, 100, set())
    # "country" is among the 3 most common words: never linked by the matcher
    links, report = match_passages(entities, PASSAGES, theta=100, top_k_common=3)
    assert "country" not in links and report.skipped_common >= 1
    # Paris occurs 3 times in the corpus: theta=3 drops it, theta=4 keeps it
    links, report = match_passages(entities, PASSAGES, theta=3, top_k_common=0)
    assert "paris" not in links and links["france"] == {"p1", "p2"}
    assert links == brute_force(entities, 3, set())
    links, _ = match_passages(entities, PASSAGES, theta=4, top_k_common=0)
    assert links["paris"] == {"p1", "p2", "p4"}


def _extraction(pid: str, groups: list[list[str]]) -> Extraction:
    mentions = [
        Mention(id=f"{pid}#m{n}-{s}", passage_id=pid, name=name, sentence=s)
        for s, names in enumerate(groups)
        for n, name in enumerate(names)
    ]
    return Extraction(passage_id=pid, mentions=mentions)


def test_cooccurrence_edges_by_sentence_and_passage() -> None:
    x1 = _extraction("p1", [["a", "b"], ["b", "c"]])
    x2 = _extraction("p2", [["a", "b", "a"]])
    mention_entity = {m.id: m.name for x in (x1, x2) for m in x.mentions}
    edges = {
        (r.source, r.target): (r.weight, r.passage_ids)
        for r in cooccurrence_edges([x1, x2], mention_entity)
    }
    assert edges == {("a", "b"): (2.0, ["p1", "p2"]), ("b", "c"): (1.0, ["p1"])}
    by_passage = {
        (r.source, r.target) for r in cooccurrence_edges([x1], mention_entity, scope="passage")
    }
    assert by_passage == {("a", "b"), ("a", "c"), ("b", "c")}
    assert cooccurrence_edges([x1], mention_entity, scope="none") == []


def test_hyperedges_merge_across_passages_and_linearise() -> None:
    facts = [
        RawFact(
            id="p1#f0", passage_id="p1", relation="A and B wrote C", mentions=["m1", "m2", "m3"]
        ),
        RawFact(
            id="p2#f0", passage_id="p2", relation="A and  B wrote C", mentions=["m4", "m2", "m3"]
        ),
    ]
    mention_entity = {"m1": "e-a", "m4": "e-a", "m2": "e-b", "m3": "e-c"}
    x = [Extraction(passage_id="p1", facts=facts[:1]), Extraction(passage_id="p2", facts=facts[1:])]
    (edge,) = build_hyperedges(x, mention_entity)
    assert edge.entity_ids == ["e-a", "e-b", "e-c"] and edge.passage_ids == ["p1", "p2"]
    names = {"e-a": "Ann", "e-b": "Bob", "e-c": "Paper C"}
    assert linearise_hyperedge(edge, names, 1) == (
        "HyperEdge_1: <A and B wrote C> involves [Ann, Bob, Paper C]"
    )


def test_topics_are_deterministic_and_keyworded() -> None:
    assert [topic_count(n) for n in (0, 1, 4, 16, 100, 10_000)] == [0, 1, 1, 2, 5, 50]
    texts = [f"football match goal {i}" for i in range(8)] + [
        f"piano concert music {i}" for i in range(8)
    ]
    edges = [HyperEdge(id=f"h{i:02d}", relation=t, entity_ids=["e"]) for i, t in enumerate(texts)]
    rng = np.random.default_rng(0)
    centre_a, centre_b = rng.normal(size=8), rng.normal(size=8)
    vectors = np.stack(
        [centre_a + 0.01 * rng.normal(size=8) for _ in range(8)]
        + [centre_b + 0.01 * rng.normal(size=8) for _ in range(8)]
    ).astype(np.float32)
    out, topics = assign_topics(edges, vectors, seed=0)
    again, _ = assign_topics(edges, vectors, seed=0)
    assert [e.topic_id for e in out] == [e.topic_id for e in again]
    assert [t.id for t in topics] == ["t-0000", "t-0001"]
    assert {e.topic_id for e in out[:8]} == {"t-0000"} and {e.topic_id for e in out[8:]} == {
        "t-0001"
    }
    assert set(topics[0].keywords[:3]) == {"football", "match", "goal"}
    assert topics[1].size == 8
