"""A2RAG's progressive retriever (§III-C): local-first, escalating only when evidence falls short.

The retriever state (`ProgressiveState`, a pydantic model so it can live in a LangGraph state
and be checkpointed) holds the query, the aligned entity and relation seeds, the accumulated
evidence (relations in Stages 1-2, provenance passages in Stage 3) and one record per stage.
Each step is a separate pure function over a `GraphView`, so a workflow can escalate through
conditional edges:

- `start(view, query, ...)`: seed extraction and alignment. Entity seeds are the entities named
  in the query (mention matching, ties broken by hybrid similarity; the best similar entities if
  none is named). Relation seeds are the relation labels of the graph that share a word stem
  with a content word of the query left after the entity mentions ("born" -> "born in").
- `stage_local`: Stage 1, the 1-hop relations of every entity seed; when relation seeds exist,
  only relations whose label is one of them.
- `stage_bridge`: Stage 2, bridge nodes within `bridge_hops` hops of at least two seeds on the
  graph with inverse edges, best first (more seeds reached, shorter total distance), at most
  `max_bridges`, with up to `paths_per_pair` shortest paths from each bridge to each seed it
  reaches; the paths' relations are the evidence.
- `stage_ppr`: Stage 3, personalised PageRank over the graph with inverse edges, restart
  distribution on the seeds proportional to 1 / degree (A2RAG eq. 10), teleport 1 - `alpha`,
  computed by local push (`entity_ppr`: ACL's degree-scaled threshold `push_eps`, so it reads
  the rows around the seeds, not the graph, and every backend gives the same scores);
  the top `top_m` nodes are mapped back to the passages they are linked to (their provenance),
  a passage scoring the summed PPR of its top nodes.
- `sufficient`: the offline sufficiency check (below); `check` records its verdict in the state
  and `next_step` routes: "stage_bridge", "stage_ppr" or "done". Stage 3 always ends the run.

Offline sufficiency (an escalation signal, not a certificate of correctness): there is evidence;
every entity seed is covered (an endpoint of an evidence relation, or linked to an evidence
passage); for a query over several seeds that is not a comparison ("A or B", "both", "same"),
the seeds are connected by the evidence relations; when relation seeds exist, an evidence
relation carries one of them; and when the question's wh-form implies an answer type (when ->
DATE, where -> places, who -> PERSON/ORG), some non-seed entity in the evidence has that type.

`progressive_retrieve(index, query, k)` runs everything with escalation and returns the
passages (evidence provenance, then the index's hybrid ranking to fill up to k).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, Field

from graphseek.knowledge.passages import Hit, Passage
from graphseek.knowledge.sparse import STOPWORDS
from graphseek.tools.graph_access import (
    GraphView,
    PassageSearch,
    graph_view,
    match_mentions,
    name_tokens,
    passage_search_for,
    single_threaded_blas,
)
from graphseek.tools.higra import offline_seeds
from graphseek.tools.names import seed_stopwords
from graphseek.tools.ppr import BatchRows, csr_rows, push_pagerank, top_nodes

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

StepName = Literal["stage_local", "stage_bridge", "stage_ppr", "done"]
STAGE_NAMES = {1: "local", 2: "bridge", 3: "ppr"}


@dataclass(frozen=True)
class ProgressiveConfig:
    """Budgets of the three stages and of the seeds."""

    max_seeds: int = 5
    #: candidate entities (by similarity) used to break ties between same-name entities
    candidate_top_k: int = 20
    #: Stage 1: at most this many relations per seed
    local_max_relations: int = 50
    #: Stage 2: hop budget L, bridges kept, shortest paths per (bridge, seed) pair
    bridge_hops: int = 2
    max_bridges: int = 5
    paths_per_pair: int = 2
    #: a node with more neighbours than this is not expanded during bridge search (hubs)
    bridge_max_degree: int = 500
    #: Stage 3: damping (teleport = 1 - alpha), top-M nodes mapped back, passages kept
    alpha: float = 0.85
    top_m: int = 10
    max_passages: int = 10
    #: residual threshold of the push PPR (`graphseek.tools.ppr.push_pagerank`: a node is
    #: pushed once its residual reaches push_eps * its number of neighbours). The default is
    #: the largest that keeps progressive's Recall@k that of exact PPR (power iteration) on the
    #: dev slices: a larger one reads fewer rows but moves recall (`benchmarks/retrieval.py
    #: --exact-ppr` prints both; docs/performance.md gives the figures)
    push_eps: float = 1e-6


class StageRecord(BaseModel):
    """What one stage did and what the sufficiency check said after it."""

    stage: int
    name: str
    relations_added: int = 0
    passages_added: int = 0
    sufficient: bool | None = None
    reason: str = ""
    ms: float = 0.0


class ProgressiveState(BaseModel):
    """The retriever state carried across stages (ids, so it serialises)."""

    query: str
    entity_seeds: list[str] = Field(default_factory=list, description="Entity ids.")
    relation_seeds: list[str] = Field(default_factory=list, description="Relation labels.")
    answer_labels: list[str] = Field(default_factory=list)
    comparison: bool = False
    relations: list[str] = Field(default_factory=list, description="Evidence relation ids.")
    bridges: list[str] = Field(default_factory=list, description="Bridge entity ids (Stage 2).")
    passages: list[str] = Field(
        default_factory=list, description="Stage 3 passage ids, best first."
    )
    passage_scores: list[float] = Field(default_factory=list)
    stage: int = 0
    sufficient: bool = False
    records: list[StageRecord] = Field(default_factory=list)

    @property
    def ended_at(self) -> str:
        return STAGE_NAMES.get(self.stage, "none")


@dataclass(frozen=True)
class Verdict:
    sufficient: bool
    reason: str


# -- seeds ----------------------------------------------------------------------------------------

_WH_LABELS: list[tuple[re.Pattern[str], list[str]]] = [
    (re.compile(r"\b(when|what year|which year|what date|which date|what time)\b"), ["DATE"]),
    (
        re.compile(
            r"\b(where|what (country|city|place|town|state)|which (country|city|place|town|state))\b"
        ),
        ["GPE", "LOC", "FAC"],
    ),
    (re.compile(r"^\s*(who|whom|whose)\b|\b(which|what) (person|man|woman)\b"), ["PERSON", "ORG"]),
]
_COMPARISON = re.compile(r"\b(or|both|same|either|neither)\b")


def answer_labels(query: str) -> list[str]:
    """Entity types the answer should have, from the question's wh-form ([] if unknown)."""
    low = query.lower()
    for pattern, labels in _WH_LABELS:
        if pattern.search(low):
            return list(labels)
    return []


def is_comparison(query: str) -> bool:
    return bool(_COMPARISON.search(query.lower()))


def relation_seeds(view: GraphView, query: str, mention_tokens: set[int]) -> list[str]:
    """Relation labels sharing a stem with a content word of the query outside the mentions."""
    skip = seed_stopwords()
    words = [
        w
        for i, w in enumerate(name_tokens(query))
        if i not in mention_tokens
        and w not in STOPWORDS
        and w not in skip
        and len(w) >= 3
        and not w.isdigit()
    ]
    if not words:
        return []
    labels, index = _label_index(view)
    hits: set[int] = set()
    for w in words:
        for token in index.matching(w):
            hits.update(index.labels[token])
    return [labels[i] for i in sorted(hits)]


class _TokenIndex:
    """The label tokens, indexed so that every token `stem_match`-ing a word is found without
    scanning them all: equal, a prefix of the word (>= 3 letters), the word a prefix of it
    (word >= 3 letters), or both >= 5 letters with the same first 5."""

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            for t in dict.fromkeys(t for t in name_tokens(label) if t not in STOPWORDS):
                self.labels.setdefault(t, []).append(i)
        self.sorted = sorted(self.labels)
        self.by_five: dict[str, list[str]] = {}
        for t in self.sorted:
            if len(t) >= 5:
                self.by_five.setdefault(t[:5], []).append(t)

    def matching(self, word: str) -> set[str]:
        from bisect import bisect_left

        found = {word} if word in self.labels else set()
        for n in range(3, len(word)):  # tokens that are a prefix of the word
            if word[:n] in self.labels:
                found.add(word[:n])
        if len(word) >= 3:  # tokens the word is a prefix of
            for k in range(bisect_left(self.sorted, word), len(self.sorted)):
                if not self.sorted[k].startswith(word):
                    break
                found.add(self.sorted[k])
        if len(word) >= 5:
            found.update(self.by_five.get(word[:5], ()))
        return found


def _label_index(view: GraphView) -> tuple[list[str], _TokenIndex]:
    cached = view.__dict__.get("_label_token_index")
    if cached is None:
        labels = sorted(set(view.rel_labels))
        cached = (labels, _TokenIndex(labels))
        view.__dict__["_label_token_index"] = cached
    return cached  # type: ignore[no-any-return]


def start(
    view: GraphView,
    query: str,
    *,
    query_vector: np.ndarray | None = None,
    config: ProgressiveConfig | None = None,
    entity_seeds: Sequence[str] | None = None,
    extra_seeds: Sequence[str] = (),
) -> ProgressiveState:
    """Extract and align the seeds of `query` (or take `entity_seeds` ids as given), then add
    `extra_seeds` (entity ids: the entities semantic bridging reached, `Context.bridge_seeds`);
    the relation seeds are the words left after the query's own entities."""
    cfg = config or ProgressiveConfig()
    if entity_seeds is None:
        candidates = [e for e, _ in view.rank_entities(query, cfg.candidate_top_k, query_vector)]
        seeds = offline_seeds(view, query, candidates, max_seeds=cfg.max_seeds)
        entity_seeds = [s.entity_id for s in seeds]
    chosen = {view.entity_pos[e] for e in entity_seeds if e in view.entity_pos}
    covered = {
        i for m in match_mentions(view, query) if m.entity in chosen for i in range(m.start, m.end)
    }
    return ProgressiveState(
        query=query,
        entity_seeds=[
            e for e in dict.fromkeys([*entity_seeds, *extra_seeds]) if e in view.entity_pos
        ],
        relation_seeds=relation_seeds(view, query, covered),
        answer_labels=answer_labels(query),
        comparison=is_comparison(query),
    )


# -- stages ---------------------------------------------------------------------------------------


def _record(
    state: ProgressiveState, stage: int, t: float, relations: list[str], passages: list[str]
) -> ProgressiveState:
    rec = StageRecord(
        stage=stage,
        name=STAGE_NAMES[stage],
        relations_added=len(relations),
        passages_added=len(passages),
        ms=(time.perf_counter() - t) * 1000.0,
    )
    return state.model_copy(
        update={
            "stage": stage,
            "relations": [*state.relations, *(r for r in relations if r not in state.relations)],
            "records": [*state.records, rec],
            "sufficient": False,
        }
    )


def stage_local(
    view: GraphView, state: ProgressiveState, config: ProgressiveConfig | None = None
) -> ProgressiveState:
    """Stage 1: the relations incident to each entity seed (filtered by the relation seeds)."""
    cfg = config or ProgressiveConfig()
    t = time.perf_counter()
    allowed = set(state.relation_seeds)
    added: list[str] = []
    for eid in state.entity_seeds:
        rels = view.relations_of(view.entity_pos[eid])
        if allowed:
            rels = np.array([r for r in rels if view.rel_labels[r] in allowed], dtype=np.int64)
        for r in rels[: cfg.local_max_relations]:
            added.append(view.relation_ids[int(r)])
    return _record(state, 1, t, list(dict.fromkeys(added)), [])


def _distances(view: GraphView, source: int, hops: int, max_degree: int) -> np.ndarray:
    """Hop distance from `source` (-1 beyond `hops`) on the undirected graph; nodes with more
    than `max_degree` neighbours are reached but not expanded."""
    a = view.undirected
    degree = np.diff(a.indptr)
    dist = np.full(view.n_entities, -1, dtype=np.int64)
    dist[source] = 0
    frontier = np.array([source])
    for d in range(1, hops + 1):
        frontier = frontier[degree[frontier] <= max_degree] if d > 1 else frontier
        if not len(frontier):
            break
        rows = a[frontier]
        nxt = np.unique(rows.indices)
        nxt = nxt[dist[nxt] < 0]
        dist[nxt] = d
        frontier = nxt
    return dist


def _shortest_paths(view: GraphView, dist: np.ndarray, node: int, limit: int) -> list[list[int]]:
    """Up to `limit` shortest node paths from `node` back to the distance-0 node."""
    a = view.undirected
    paths: list[list[int]] = []

    def walk(v: int, path: list[int]) -> None:
        if len(paths) >= limit:
            return
        if dist[v] == 0:
            paths.append(path)
            return
        nbrs = a.indices[a.indptr[v] : a.indptr[v + 1]]
        for u in sorted(int(u) for u in nbrs if dist[u] == dist[v] - 1):
            walk(u, [*path, u])
            if len(paths) >= limit:
                return

    walk(node, [node])
    return paths


def _pair_relations(view: GraphView) -> dict[tuple[int, int], list[int]]:
    cached = view.__dict__.get("_pair_relations")
    if cached is None:
        cached = {}
        for r, (s, t) in enumerate(
            zip(view.rel_source.tolist(), view.rel_target.tolist(), strict=True)
        ):
            cached.setdefault((min(s, t), max(s, t)), []).append(r)
        view.__dict__["_pair_relations"] = cached
    return cached  # type: ignore[no-any-return]


def stage_bridge(
    view: GraphView, state: ProgressiveState, config: ProgressiveConfig | None = None
) -> ProgressiveState:
    """Stage 2: bridges within L hops of at least two seeds, and short paths to those seeds."""
    cfg = config or ProgressiveConfig()
    t = time.perf_counter()
    seeds = [view.entity_pos[e] for e in state.entity_seeds]
    added: list[str] = []
    bridges: list[str] = []
    if len(seeds) >= 2:
        dists = [_distances(view, s, cfg.bridge_hops, cfg.bridge_max_degree) for s in seeds]
        reach = np.stack([d >= 0 for d in dists])
        count = reach.sum(axis=0)
        total = np.where(reach, np.stack(dists), 0).sum(axis=0)
        candidates = np.flatnonzero(count >= 2)
        seed_set = set(seeds)
        candidates = np.array([c for c in candidates if c not in seed_set], dtype=np.int64)
        if len(candidates) == 0:  # seeds adjacent to each other: the seeds bridge themselves
            candidates = np.array([s for s in seeds if count[s] >= 2], dtype=np.int64)
        order = np.lexsort((candidates, total[candidates], -count[candidates]))
        pairs = _pair_relations(view)
        for b in candidates[order][: cfg.max_bridges].tolist():
            bridges.append(view.entity_ids[b])
            for d in dists:
                if d[b] < 0:
                    continue
                for path in _shortest_paths(view, d, b, cfg.paths_per_pair):
                    for u, v in zip(path, path[1:], strict=False):
                        rels = pairs.get((min(u, v), max(u, v)), [])
                        if rels:
                            added.append(view.relation_ids[rels[0]])
    new = _record(state, 2, t, list(dict.fromkeys(added)), [])
    return new.model_copy(update={"bridges": bridges})


def _push_graph(view: GraphView) -> tuple[BatchRows, np.ndarray]:
    """The reader and degrees of the view's undirected entity graph, cached on the view."""
    cached = view.__dict__.get("_push_graph")
    if cached is None:
        a = view.undirected
        cached = (csr_rows(a), np.diff(a.indptr))
        view.__dict__["_push_graph"] = cached
    return cached  # type: ignore[no-any-return]


def entity_ppr(
    rows: BatchRows, degree: np.ndarray, seeds: Sequence[int], config: ProgressiveConfig
) -> np.ndarray:
    """Stage 3's entity scores: push PPR from the seeds, restart proportional to 1 / degree
    (A2RAG eq. 10). Every backend calls this with its own reader of the same rows."""
    return push_pagerank(
        rows,
        dict.fromkeys(seeds, 1.0),
        degree,
        alpha=config.alpha,
        eps=config.push_eps,
        degree_normalize=True,
    )


def stage_ppr(
    view: GraphView,
    state: ProgressiveState,
    config: ProgressiveConfig | None = None,
    *,
    passage_ranking: Sequence[str] = (),
    scores: np.ndarray | None = None,
) -> ProgressiveState:
    """Stage 3: degree-normalised PPR with inverse edges, top-M nodes mapped back to passages.

    Ties between passages go to the better rank in `passage_ranking` (e.g. hybrid search).
    `scores`: the entities' PPR scores when already computed (`entity_ppr` over a graph read one
    neighbourhood at a time; `view.links` must then hold the top-M rows)."""
    cfg = config or ProgressiveConfig()
    t = time.perf_counter()
    seeds = [view.entity_pos[e] for e in state.entity_seeds]
    passages: list[str] = []
    scores_out: list[float] = []
    if seeds and view.n_entities:
        if scores is None:
            scores = entity_ppr(*_push_graph(view), seeds, cfg)
        top = top_nodes(scores, cfg.top_m)
        weights = sp.csr_matrix(
            (scores[top], (np.zeros(len(top), dtype=np.int64), np.arange(len(top)))),
            shape=(1, len(top)),
        )
        passage_scores = np.asarray((weights @ view.links[top]).todense()).ravel()
        sim_rank = {pid: r for r, pid in enumerate(passage_ranking)}
        cols = np.flatnonzero(passage_scores > 0)
        ordered = sorted(
            cols.tolist(),
            key=lambda j: (
                -passage_scores[j],
                sim_rank.get(view.passage_ids[j], len(sim_rank)),
                j,
            ),
        )[: cfg.max_passages]
        passages = [view.passage_ids[j] for j in ordered]
        scores_out = [float(passage_scores[j]) for j in ordered]
    new = _record(state, 3, t, [], passages)
    return new.model_copy(update={"passages": passages, "passage_scores": scores_out})


# -- sufficiency and routing ----------------------------------------------------------------------


def _support(view: GraphView, state: ProgressiveState) -> dict[str, int]:
    """Provenance passage id -> number of evidence relations it supports."""
    support: dict[str, int] = {}
    for rid in state.relations:
        r = view.relation_pos.get(rid)
        if r is None:
            continue
        for pid in view.rel_passages[r]:
            support[pid] = support.get(pid, 0) + 1
    return support


def evidence_passages(view: GraphView, state: ProgressiveState) -> list[str]:
    """Evidence passages: Stage 3's, then the provenance of the evidence relations (by how many
    evidence relations each supports)."""
    support = _support(view, state)
    order = {pid: i for i, pid in enumerate(support)}
    ranked = sorted(support, key=lambda pid: (-support[pid], order[pid]))
    return list(dict.fromkeys([*state.passages, *ranked]))


def sufficient(
    view: GraphView, state: ProgressiveState, config: ProgressiveConfig | None = None
) -> Verdict:
    """The offline sufficiency heuristic (see the module docstring)."""
    seeds = [view.entity_pos[e] for e in state.entity_seeds]
    rels = [view.relation_pos[r] for r in state.relations if r in view.relation_pos]
    passages = evidence_passages(view, state)
    if not rels and not passages:
        return Verdict(False, "no evidence")
    if not seeds:
        return Verdict(True, "no seeds to cover; evidence found")
    endpoints = {int(x) for r in rels for x in (view.rel_source[r], view.rel_target[r])}
    linked: set[int] = set()
    for pid in state.passages:
        linked.update(view.entities_of_passage(pid))
    uncovered = [s for s in seeds if s not in endpoints and s not in linked]
    if uncovered:
        return Verdict(False, f"no evidence for seed {view.names[uncovered[0]]!r}")
    if len(seeds) > 1 and not state.comparison and not state.passages:
        if not _connected(seeds, rels, view):
            return Verdict(False, "the evidence does not connect the seeds")
    if state.relation_seeds and not state.passages:
        wanted = set(state.relation_seeds)
        if not any(view.rel_labels[r] in wanted for r in rels):
            return Verdict(False, "no evidence relation matches the question's relation")
    if state.answer_labels and not state.comparison:
        labels = set(state.answer_labels)
        pool = (endpoints | linked) - set(seeds)
        if not any(labels.intersection(view.types[e]) for e in pool):
            return Verdict(False, f"no {'/'.join(state.answer_labels)} entity in the evidence")
    return Verdict(True, "seeds covered and connected; an answer-type entity is present")


def _connected(seeds: list[int], rels: list[int], view: GraphView) -> bool:
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r in rels:
        a, b = find(int(view.rel_source[r])), find(int(view.rel_target[r]))
        if a != b:
            parent[a] = b
    return len({find(s) for s in seeds}) == 1


def check(
    view: GraphView, state: ProgressiveState, config: ProgressiveConfig | None = None
) -> ProgressiveState:
    """Run `sufficient` and record the verdict on the state and its last stage record."""
    verdict = sufficient(view, state, config)
    records = list(state.records)
    if records:
        records[-1] = records[-1].model_copy(
            update={"sufficient": verdict.sufficient, "reason": verdict.reason}
        )
    return state.model_copy(update={"sufficient": verdict.sufficient, "records": records})


def next_step(state: ProgressiveState) -> StepName:
    """Where a checked state goes: the next stage, or "done" when sufficient or after Stage 3."""
    if state.sufficient or state.stage >= 3:
        return "done"
    return "stage_bridge" if state.stage == 1 else "stage_ppr"


# -- convenience ----------------------------------------------------------------------------------


@dataclass
class ProgressiveResult:
    state: ProgressiveState
    passages: list[tuple[str, float]]
    hits: list[Hit]
    timings: dict[str, float]

    @property
    def ended_at(self) -> str:
        return self.state.ended_at


def run_step(
    view: GraphView,
    step: StepName,
    state: ProgressiveState,
    config: ProgressiveConfig | None = None,
    *,
    passage_ranking: Sequence[str] = (),
) -> ProgressiveState:
    """One of the three stages on `view` (no sufficiency check); `passage_ranking` breaks
    Stage 3's ties (`stage_ppr`)."""
    cfg = config or ProgressiveConfig()
    if step == "stage_local":
        return stage_local(view, state, cfg)
    if step == "stage_bridge":
        return stage_bridge(view, state, cfg)
    return stage_ppr(view, state, cfg, passage_ranking=passage_ranking)


class ProgressiveRetriever:
    """Seeds, then Stage 1 -> 2 -> 3 with a sufficiency check after each."""

    def __init__(
        self,
        view: GraphView,
        passage_search: PassageSearch | None = None,
        *,
        embed: Callable[[str], np.ndarray] | None = None,
        lookup: Callable[[str], Passage] | None = None,
        config: ProgressiveConfig | None = None,
    ) -> None:
        self.view = view
        self.passage_search = passage_search
        self.embed = embed
        self.lookup = lookup
        self.config = config or ProgressiveConfig()

    @classmethod
    def from_index(
        cls, index: IndexStore, config: ProgressiveConfig | None = None
    ) -> ProgressiveRetriever:
        search = passage_search_for(index)
        return cls(graph_view(index), search, embed=search.embed, lookup=index.get, config=config)

    def retrieve(
        self,
        query: str,
        k: int = 5,
        *,
        entity_seeds: Sequence[str] | None = None,
        extra_seeds: Sequence[str] = (),
    ) -> ProgressiveResult:
        """Seeds (`start`: recognised, or `entity_seeds`, plus `extra_seeds`), then the stages
        with escalation; the top-`k` passages as hits."""
        with single_threaded_blas():
            return self._retrieve(query, k, entity_seeds, extra_seeds)

    def _retrieve(
        self,
        query: str,
        k: int,
        entity_seeds: Sequence[str] | None,
        extra_seeds: Sequence[str] = (),
    ) -> ProgressiveResult:
        view, cfg = self.view, self.config
        timings: dict[str, float] = {}
        t0 = t = time.perf_counter()
        qv = self.embed(query) if self.embed is not None and query.strip() else None
        sim: list[tuple[str, float]] = []
        if self.passage_search is not None:
            sim = self.passage_search(query, max(k, cfg.max_passages), qv)
        timings["similarity"] = _ms(t)
        t = time.perf_counter()
        gv = view.graph_query(query, qv)
        state = start(
            view,
            query,
            query_vector=gv,
            config=cfg,
            entity_seeds=entity_seeds,
            extra_seeds=extra_seeds,
        )
        timings["seeds"] = _ms(t)
        step: StepName = "stage_local"
        while step != "done":
            t = time.perf_counter()
            view, state = self._step(step, state, [p for p, _ in sim])
            timings[step] = _ms(t)
            step = next_step(state)
        ranked = self.rank_passages(state, sim, view=view)
        timings["total"] = _ms(t0)
        hits = []
        if self.lookup is not None:
            hits = [
                Hit(passage=self.lookup(pid), score=score, rank=r)
                for r, (pid, score) in enumerate(ranked[:k], start=1)
            ]
        return ProgressiveResult(state=state, passages=ranked, hits=hits, timings=timings)

    def _step(
        self, step: StepName, state: ProgressiveState, ranking: Sequence[str]
    ) -> tuple[GraphView, ProgressiveState]:
        """Run one stage and the sufficiency check; returns the view they ran on (here the
        whole graph; `graphseek.tools.neighbourhood` reads what the stage needs instead)."""
        view, cfg = self.view, self.config
        state = run_step(view, step, state, cfg, passage_ranking=ranking)
        return view, check(view, state, cfg)

    def rank_passages(
        self,
        state: ProgressiveState,
        sim: Sequence[tuple[str, float]],
        *,
        view: GraphView | None = None,
    ) -> list[tuple[str, float]]:
        """Stage 3 passages in PPR order, then the evidence relations' provenance (most supported
        first, ties by similarity rank), then the rest of the similarity ranking. `view`: the
        one the stages ran on (default: the retriever's)."""
        sim_rank = {pid: r for r, (pid, _) in enumerate(sim)}
        support = _support(view if view is not None else self.view, state)
        provenance = sorted(support, key=lambda p: (-support[p], sim_rank.get(p, len(sim_rank)), p))
        evidence = list(dict.fromkeys([*state.passages, *provenance]))
        n = len(evidence)
        out = [(pid, float(n - i)) for i, pid in enumerate(evidence)]
        seen = set(evidence)
        out.extend((pid, 0.0) for pid, _ in sim if pid not in seen)
        return out


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000.0


def progressive_retrieve(
    index: IndexStore, query: str, k: int = 5, *, config: ProgressiveConfig | None = None
) -> ProgressiveResult:
    """All stages with escalation over an index's graph; `result.hits` are the top-k passages."""
    return ProgressiveRetriever.from_index(index, config).retrieve(query, k)


__all__ = [
    "ProgressiveConfig",
    "ProgressiveResult",
    "ProgressiveRetriever",
    "ProgressiveState",
    "StageRecord",
    "Verdict",
    "answer_labels",
    "check",
    "entity_ppr",
    "evidence_passages",
    "next_step",
    "run_step",
    "progressive_retrieve",
    "relation_seeds",
    "stage_bridge",
    "stage_local",
    "stage_ppr",
    "start",
    "sufficient",
]
