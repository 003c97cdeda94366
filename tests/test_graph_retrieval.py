"""Graph retrieval on a tiny hand-built graph (exact ids), checked against networkx where an
algorithm has a reference, plus one end-to-end run over a real offline graph.

The toy world (8 entities, 10 relations, 6 passages, 5 hyperedges in 3 topics)::

    Ada Lovelace -daughter of-> Lord Byron, Annabella Milbanke;  -worked with-> Charles Babbage
    Ada Lovelace -wrote about-> Analytical Engine;  Charles Babbage -designed-> Analytical Engine
    Lord Byron -died in-> Missolonghi;  -born in-> London;  -died in year-> 1824
    Annabella Milbanke -married-> Lord Byron;  Charles Babbage -born in-> London
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from graphseek.knowledge.graph.models import Entity, HyperEdge, Relation, Topic
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.sparse import BM25Index
from graphseek.tools import progressive as prog
from graphseek.tools.dual_channel import TriplePattern, relational_query
from graphseek.tools.graph_access import (
    GraphNotFoundError,
    GraphView,
    graph_view,
    match_mentions,
    resolve_entity,
)
from graphseek.tools.higra import HiGraConfig, HiGraRetriever, fuse_ranks
from graphseek.tools.hypergraph import neighbor_check, node_feature, retrieve_subgraph

TOY_PASSAGES = {
    "p_ada": (
        "Ada Lovelace",
        "Ada Lovelace was the daughter of Lord Byron and Annabella Milbanke. She worked with "
        "Charles Babbage and wrote about the Analytical Engine.",
    ),
    "p_byron": ("Lord Byron", "Lord Byron was born in London and died at Missolonghi in 1824."),
    "p_babbage": (
        "Charles Babbage",
        "Charles Babbage, born in London, designed the Analytical Engine.",
    ),
    "p_engine": (
        "Analytical Engine",
        "The Analytical Engine was a mechanical computer designed by Charles Babbage.",
    ),
    "p_miss": ("Missolonghi", "Missolonghi is a town in western Greece on the Gulf of Patras."),
    "p_milbanke": (
        "Annabella Milbanke",
        "Annabella Milbanke married Lord Byron; she was the mother of Ada Lovelace.",
    ),
}


def _entity(eid: str, name: str, types: list[str], passages: list[str], **kw: object) -> Entity:
    return Entity(id=eid, name=name, types=types, passage_ids=passages, **kw)  # type: ignore[arg-type]


TOY_ENTITIES = [
    _entity(
        "ada", "Ada Lovelace", ["PERSON"], ["p_ada", "p_milbanke"], aliases=["Augusta Ada King"]
    ),
    _entity(
        "byron",
        "Lord Byron",
        ["PERSON"],
        ["p_byron", "p_ada", "p_milbanke"],
        aliases=["George Gordon Byron"],
    ),
    _entity("miss", "Missolonghi", ["GPE"], ["p_miss", "p_byron"]),
    _entity("babbage", "Charles Babbage", ["PERSON"], ["p_babbage", "p_engine", "p_ada"]),
    _entity(
        "engine",
        "Analytical Engine",
        ["PRODUCT"],
        ["p_engine", "p_babbage", "p_ada"],
        description="a mechanical computer",
    ),
    _entity("milbanke", "Annabella Milbanke", ["PERSON"], ["p_milbanke", "p_ada"]),
    _entity("london", "London", ["GPE"], ["p_byron", "p_babbage"]),
    _entity("y1824", "1824", ["DATE"], ["p_byron"]),
]


def _rel(rid: str, s: str, label: str, t: str, *passages: str) -> Relation:
    return Relation(id=rid, source=s, label=label, target=t, passage_ids=list(passages))


TOY_RELATIONS = [
    _rel("r1", "ada", "daughter of", "byron", "p_ada"),
    _rel("r2", "ada", "daughter of", "milbanke", "p_ada"),
    _rel("r3", "ada", "worked with", "babbage", "p_ada"),
    _rel("r4", "babbage", "designed", "engine", "p_babbage", "p_engine"),
    _rel("r5", "byron", "died in", "miss", "p_byron"),
    _rel("r6", "byron", "born in", "london", "p_byron"),
    _rel("r7", "byron", "died in year", "y1824", "p_byron"),
    _rel("r8", "milbanke", "married", "byron", "p_milbanke"),
    _rel("r9", "ada", "wrote about", "engine", "p_ada"),
    _rel("r10", "babbage", "born in", "london", "p_babbage"),
]

TOY_HYPEREDGES = [
    HyperEdge(
        id="h1",
        relation="Lord Byron died at Missolonghi in 1824",
        entity_ids=["byron", "miss", "y1824"],
        passage_ids=["p_byron"],
        topic_id="t_life",
    ),
    HyperEdge(
        id="h2",
        relation="Lord Byron was born in London",
        entity_ids=["byron", "london"],
        passage_ids=["p_byron"],
        topic_id="t_life",
    ),
    HyperEdge(
        id="h3",
        relation="Charles Babbage designed the Analytical Engine",
        entity_ids=["babbage", "engine"],
        passage_ids=["p_babbage", "p_engine"],
        topic_id="t_computing",
    ),
    HyperEdge(
        id="h4",
        relation="Ada Lovelace wrote about the Analytical Engine of Charles Babbage",
        entity_ids=["ada", "engine", "babbage"],
        passage_ids=["p_ada"],
        topic_id="t_computing",
    ),
    HyperEdge(
        id="h5",
        relation="Annabella Milbanke married Lord Byron and was the mother of Ada Lovelace",
        entity_ids=["milbanke", "byron", "ada"],
        passage_ids=["p_milbanke"],
        topic_id="t_family",
    ),
]

TOY_TOPICS = [
    Topic(id="t_life", label="born, died, missolonghi", keywords=["london"], size=2),
    Topic(id="t_computing", label="engine, babbage, designed", keywords=["computer"], size=2),
    Topic(id="t_family", label="married, mother, daughter", keywords=["family"], size=1),
]


def toy_passages() -> dict[str, Passage]:
    return {pid: Passage(id=pid, title=t, text=x) for pid, (t, x) in TOY_PASSAGES.items()}


def toy_view() -> GraphView:
    return GraphView.from_models(
        TOY_ENTITIES,
        TOY_RELATIONS,
        list(TOY_PASSAGES),
        hyperedges=TOY_HYPEREDGES,
        topics=TOY_TOPICS,
    )


class ToySearch:
    """BM25 over the toy passages: a `PassageSearch`."""

    def __init__(self) -> None:
        self.passages = toy_passages()
        self.ids = list(self.passages)
        self.bm25 = BM25Index.build([self.passages[p].content for p in self.ids])

    def __call__(
        self, query: str, k: int, query_vector: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        return [(self.ids[i], s) for i, s in self.bm25.search(query, k)]


def toy_higra(**config: object) -> HiGraRetriever:
    search = ToySearch()
    return HiGraRetriever(
        toy_view(),
        search,
        lookup=search.passages.__getitem__,
        config=HiGraConfig(**config),  # type: ignore[arg-type]
    )


# -- the view and name lookups --------------------------------------------------------------------


def test_view_from_models() -> None:
    view = toy_view()
    assert (view.n_entities, view.n_relations, view.n_passages) == (8, 10, 6)
    byron = view.entity_pos["byron"]
    assert sorted(view.entity_ids[int(e)] for e in view.neighbors(byron)) == [
        "ada",
        "london",
        "milbanke",
        "miss",
        "y1824",
    ]
    assert view.passages_of(byron) == ["p_ada", "p_byron", "p_milbanke"]
    assert view.entities_of_passage("p_miss") == [view.entity_pos["miss"]]
    assert view.relation_text(0) == "Ada Lovelace daughter of Lord Byron"
    assert (view.undirected != view.undirected.T).nnz == 0


def test_match_mentions_longest_match_and_aliases() -> None:
    view = GraphView.from_models(
        [
            _entity("l1", "Lothair I", ["PERSON"], ["p1"]),
            _entity("l2", "Lothair II", ["PERSON"], ["p2"]),
            _entity("lo", "Lothair", ["PERSON"], ["p1"]),
            _entity("m", "mother", ["CONCEPT"], ["p2"]),
        ],
        [],
    )
    found = match_mentions(view, "When did Lothair Ii's mother die?")
    assert [(m.text, view.entity_ids[m.entity], m.concept) for m in found] == [
        ("lothair ii", "l2", False),
        ("mother", "m", True),
    ]
    toy = toy_view()
    assert [toy.entity_ids[m.entity] for m in match_mentions(toy, "george gordon byron")] == [
        "byron"
    ]


def test_resolve_entity() -> None:
    view = toy_view()
    assert resolve_entity(view, "miss") == view.entity_pos["miss"]
    assert resolve_entity(view, "the Analytical Engine") == view.entity_pos["engine"]
    assert resolve_entity(view, "Augusta Ada King") == view.entity_pos["ada"]
    assert resolve_entity(view, "Babbage") == view.entity_pos["babbage"]  # by similarity
    assert resolve_entity(view, "zzz") is None


# -- HiGraRetriever -------------------------------------------------------------------------------


def test_higra_exact_context() -> None:
    retriever = toy_higra(entity_passage_top_k=3, similarity_passage_top_k=2, prune_top_k=3)
    result = retriever.retrieve("Who designed the Analytical Engine?")
    assert [(s.entity_id, s.source) for s in result.seeds] == [("engine", "mention")]
    # radius 1 around the engine: Babbage (designed) and Ada (wrote about); r3 joins them
    assert (result.subgraph_entities, result.subgraph_relations) == (3, 3)
    assert [(p.id, p.ppr_rank, p.sim_rank) for p in result.passages] == [
        ("p_ada", 1, 3),
        ("p_engine", 3, 1),
        ("p_babbage", 2, 2),
    ]
    assert [r.id for r in result.relations] == ["r4", "r9", "r3"]
    assert result.relations[0].passage_ids == ("p_babbage", "p_engine")
    assert result.relations[0].text == "Charles Babbage designed Analytical Engine"
    assert [h.passage.id for h in result.hits] == ["p_ada", "p_engine", "p_babbage"]
    assert set(result.timings) >= {"similarity", "seeds", "subgraph", "ppr", "fusion", "total"}


def test_higra_matches_networkx_reference() -> None:
    """Phases 3-5 recomputed with networkx: subgraph, both PPRs, and the fused ranks."""
    query = "Where did the father of Ada Lovelace die?"
    retriever = toy_higra(tol=1e-12, max_iter=1000)
    result = retriever.retrieve(query)
    assert [s.entity_id for s in result.seeds] == ["ada"]

    graph = nx.Graph()
    graph.add_edges_from((r.source, r.target) for r in TOY_RELATIONS)
    sub_nodes = {"ada", *graph.neighbors("ada")}
    sub = graph.subgraph(sub_nodes)
    assert result.subgraph_entities == len(sub_nodes) == 5
    assert result.subgraph_relations == sub.number_of_edges() == 6

    aug = nx.Graph(sub)
    for e in TOY_ENTITIES:
        if e.id in sub_nodes:
            aug.add_edges_from((e.id, "P:" + p) for p in e.passage_ids)
    scores = nx.pagerank(aug, alpha=0.85, personalization={"ada": 1.0}, tol=1e-13)
    ppr = sorted(
        (n[2:] for n in aug if n.startswith("P:")),
        key=lambda p: (-scores["P:" + p], list(TOY_PASSAGES).index(p)),
    )
    sim = [pid for pid, _ in ToySearch()(query, 20)]
    expected = [(p, s) for p, s, _, _ in fuse_ranks(ppr, sim, 10, 10)]
    assert [(p.id, pytest.approx(p.score)) for p in result.fused] == expected
    # fused score = 1/(10 + PPR rank) + 1/(10 + similarity rank)
    top = result.fused[0]
    assert top.score == pytest.approx(1 / (10 + top.ppr_rank) + 1 / (10 + top.sim_rank))

    ent = nx.pagerank(sub, alpha=0.85, personalization={"ada": 1.0}, tol=1e-13)
    rel_scores = {
        r.id: (ent[r.source] + ent[r.target]) / 2
        for r in TOY_RELATIONS
        if r.source in sub_nodes and r.target in sub_nodes
    }
    rel_ppr = sorted(rel_scores, key=lambda r: (-rel_scores[r], int(r[1:])))
    assert {r.id for r in result.relations} == set(rel_ppr)  # all 6 fit in prune_top_k=10


def test_higra_context_is_fused_union_similarity() -> None:
    retriever = toy_higra(entity_passage_top_k=1, similarity_passage_top_k=2)
    result = retriever.retrieve("Where was George Gordon Byron born?")
    fused_top = {result.fused[0].id}
    sim_top = {pid for pid, _ in ToySearch()("Where was George Gordon Byron born?", 2)}
    assert set(result.passage_ids) == fused_top | sim_top
    assert [h.passage.id for h in retriever.hits(result, 4)][: len(result.passages)] == [
        p.id for p in result.passages
    ]


def test_higra_llm_seed_recognition() -> None:
    from graphseek.llm import ScriptedChatModel

    model = ScriptedChatModel(
        responses=[{"reasoning": "Byron is named.", "entity_ids": ["byron", "not-offered"]}]
    )
    result = toy_higra().retrieve("Where did Byron die?", model=model)
    assert [(s.entity_id, s.source) for s in result.seeds] == [("byron", "llm")]
    prompt = "\n".join(str(m.content) for m in model.calls[0])
    assert "[byron] Lord Byron (aliases: George Gordon Byron; types: PERSON)" in prompt
    assert result.usage is not None and result.usage.llm_calls == 1


def test_higra_falls_back_to_offline_seeds_when_the_model_fails() -> None:
    from graphseek.llm import ScriptedChatModel

    model = ScriptedChatModel(responses=["not json"] * 3)
    result = toy_higra().retrieve("Where did Lord Byron die?", model=model)
    assert [(s.entity_id, s.source) for s in result.seeds] == [("byron", "mention")]
    assert "offline seeds" in result.note


def test_higra_given_seeds_and_no_match() -> None:
    retriever = toy_higra()
    given = retriever.retrieve("anything", seeds=["Missolonghi"])
    assert [(s.entity_id, s.source) for s in given.seeds] == [("miss", "given")]
    assert given.passage_ids[0] in {"p_miss", "p_byron"}
    nothing = retriever.retrieve("quantum chromodynamics")
    assert nothing.seeds == [] and nothing.passages == []


# -- progressive retrieval ------------------------------------------------------------------------


def _progress(query: str) -> prog.ProgressiveResult:
    search = ToySearch()
    retriever = prog.ProgressiveRetriever(toy_view(), search, lookup=search.passages.__getitem__)
    return retriever.retrieve(query, k=3)


def test_progressive_stops_at_stage_1() -> None:
    result = _progress("Where was Lord Byron born?")
    state = result.state
    assert state.entity_seeds == ["byron"] and state.relation_seeds == ["born in"]
    assert state.ended_at == "local" and state.relations == ["r6"]
    assert [(r.name, r.sufficient) for r in state.records] == [("local", True)]
    assert [h.passage.id for h in result.hits][0] == "p_byron"


def test_progressive_escalates_to_bridge() -> None:
    result = _progress("What links the Analytical Engine to Missolonghi?")
    state = result.state
    assert state.entity_seeds == ["engine", "miss"]
    assert [(r.name, r.sufficient) for r in state.records] == [("local", False), ("bridge", True)]
    assert state.records[0].reason == "the evidence does not connect the seeds"
    assert state.ended_at == "bridge"
    # bridges within 2 hops of both seeds: more seeds reached, shorter total distance, position
    assert state.bridges == ["ada", "byron", "milbanke", "london"]
    assert {"r9", "r1", "r5"} <= set(state.relations)  # engine - ada - byron - missolonghi


def test_progressive_escalates_to_ppr() -> None:
    result = _progress("When did the father of Ada Lovelace die?")
    state = result.state
    assert state.entity_seeds == ["ada"] and state.answer_labels == ["DATE"]
    assert [r.name for r in state.records] == ["local", "bridge", "ppr"]
    assert [r.sufficient for r in state.records[:2]] == [False, False]
    assert state.ended_at == "ppr"
    assert state.passages[0] == "p_ada"
    assert "p_byron" in state.passages  # Byron (and 1824) are two hops from Ada


def test_progressive_stage_functions_and_router() -> None:
    view = toy_view()
    state = prog.start(view, "What links the Analytical Engine to Missolonghi?")
    state = prog.check(view, prog.stage_local(view, state))
    assert prog.next_step(state) == "stage_bridge"
    state = prog.check(view, prog.stage_bridge(view, state))
    assert prog.next_step(state) == "done"
    forced = state.model_copy(update={"sufficient": False})
    assert prog.next_step(forced) == "stage_ppr"
    state = prog.check(view, prog.stage_ppr(view, forced))
    assert prog.next_step(state) == "done" and state.stage == 3
    assert prog.ProgressiveState.model_validate_json(state.model_dump_json()) == state


def test_degree_normalised_stage_ppr_matches_networkx() -> None:
    view = toy_view()
    state = prog.start(view, "x", entity_seeds=["ada", "byron"])
    cfg = prog.ProgressiveConfig(top_m=3, max_passages=6, push_eps=1e-13)
    state = prog.stage_ppr(view, state, cfg)
    graph = nx.Graph()
    graph.add_edges_from((r.source, r.target) for r in TOY_RELATIONS)
    scores = nx.pagerank(
        graph, personalization={s: 1 / graph.degree(s) for s in ("ada", "byron")}, tol=1e-13
    )
    top = sorted(scores, key=lambda e: -scores[e])[:3]
    links = {e.id: e.passage_ids for e in TOY_ENTITIES}
    expected: dict[str, float] = {}
    for e in top:
        for p in links[e]:
            expected[p] = expected.get(p, 0.0) + scores[e]
    assert dict(zip(state.passages, state.passage_scores, strict=True)) == pytest.approx(expected)


# -- relational queries and hypergraph primitives -------------------------------------------------


def test_relational_query_chain_resolves_placeholders() -> None:
    result = relational_query(
        toy_view(), [("Ada Lovelace", "daughter of", "?p"), ("?p", "died in", "?place")]
    )
    assert result.bindings == {"?p": ["byron", "milbanke"], "?place": ["miss", "y1824"]}
    assert result.binding_names("?place") == ["Missolonghi", "1824"]
    assert [t.relation_id for t in result.triples] == ["r1", "r2", "r5", "r7"]
    assert result.passage_ids == ["p_ada", "p_byron"]
    text = result.linearise()
    assert "(Lord Byron, died in, Missolonghi) [p_byron]" in text
    assert "?place = Missolonghi, 1824" in text


def test_relational_query_patterns_and_placeholder_forms() -> None:
    view = toy_view()
    subject = relational_query(view, "(?who, designed, Analytical Engine)")
    assert subject.binding_names("?who") == ["Charles Babbage"]
    inverse = relational_query(view, ("Lord Byron", "married", "Entity#1"))
    assert inverse.binding_names("#1") == ["Annabella Milbanke"]  # matched against direction
    free = relational_query(view, TriplePattern("?a", "born in", "?b"))
    assert {t.relation_id for t in free.triples} == {"r6", "r10"}
    missing = relational_query(view, ("Zorblax", "born in", "?x"))
    assert missing.triples == [] and missing.unresolved == ["no entity matches 'Zorblax'"]
    with pytest.raises(ValueError, match="three parts"):
        TriplePattern.parse("(a, b)")


def test_retrieve_subgraph_by_id_and_text() -> None:
    view = toy_view()
    by_id = retrieve_subgraph(view, "t_life")
    assert by_id.text.splitlines() == [
        "Topic t_life: born, died, missolonghi (2 hyperedges)",
        "HyperEdge_1: <Lord Byron died at Missolonghi in 1824> involves "
        "[Lord Byron, Missolonghi, 1824]",
        "HyperEdge_2: <Lord Byron was born in London> involves [Lord Byron, London]",
    ]
    assert by_id.passage_ids == ["p_byron"]
    by_text = retrieve_subgraph(view, "who wrote about the computer engine")
    assert by_text.text.splitlines()[0].startswith("Topic t_computing")
    assert by_text.text.splitlines()[1].startswith("HyperEdge_1: <Ada Lovelace wrote about")
    assert by_text.passage_ids == ["p_ada", "p_babbage", "p_engine"]


def test_node_feature_and_neighbor_check() -> None:
    view = toy_view()
    aliases = node_feature(view, "George Gordon Byron", "aliases")
    assert aliases.text == "Entity byron (Lord Byron)\naliases: George Gordon Byron"
    assert aliases.passage_ids == ["p_ada", "p_byron", "p_milbanke"]
    described = node_feature(view, "engine", "description")
    assert described.text.endswith("description: a mechanical computer")
    assert not node_feature(view, "engine", "colour").found
    died = neighbor_check(view, "Lord Byron", "died")
    assert died.text.splitlines() == [
        "Neighbours of Lord Byron (byron) for relation 'died'",
        "HyperEdge_1: <Lord Byron died at Missolonghi in 1824> involves "
        "[Lord Byron, Missolonghi, 1824]",
        "Relation: (Lord Byron, died in, Missolonghi)",
        "Relation: (Lord Byron, died in year, 1824)",
    ]
    assert died.passage_ids == ["p_byron"]
    assert not neighbor_check(view, "Nobody Atall").found


# -- the registry and a real offline graph --------------------------------------------------------


def test_index_without_graph_names_the_command(tiny_index: object) -> None:
    with pytest.raises(
        GraphNotFoundError, match="has no knowledge graph; rebuild it with `graphseek index"
    ):
        graph_view(tiny_index)


@pytest.mark.slow
def test_higra_end_to_end_on_an_offline_graph(tmp_path: Path, tiny_passages: list[Passage]) -> None:
    from graphseek.knowledge.graph.build import build_graph
    from graphseek.knowledge.graph.settings import QUIET
    from graphseek.knowledge.index import Index
    from graphseek.tools.retrievers import retrieve, retriever_names

    index = Index.build(tiny_passages, tmp_path / "index", show_progress=False)
    build_graph(index.passages, index.dir_for("graph"), run=QUIET)
    index = Index.open(tmp_path / "index")
    assert {"higra", "progressive"} <= set(retriever_names())

    hits = retrieve(index, "Where did Ada Lovelace's father die?", 5, name="higra")
    ids = [h.passage.id for h in hits]
    assert ids[0] == "ada" and "byron" in ids
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]

    hits = retrieve(index, "Who designed the Analytical Engine?", 3, name="progressive")
    assert {"engine", "babbage"} & {h.passage.id for h in hits}
