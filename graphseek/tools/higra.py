"""HiGraRetriever (HiGraAgent §4): similarity ranks, seed entities, a radius-r subgraph,
personalised PageRank, rank fusion, and the final context of relations and passages.

The six phases, for a query q over a `GraphView` and a passage ranker:

1. **Similarity ranks**: entities by name, aliases and types; relations by their verbalisation
   "source label target"; passages by the index's hybrid search (top `passage_top_k`). Entity
   and relation similarity are hybrid too (BM25 and, when the graph has embeddings, cosine,
   fused by RRF); one query embedding serves every similarity.
2. **Seed entities**: the top `ontology_top_k` entities by similarity are the candidates; a chat
   model picks the seeds among them (context-aware recognition, prompt in
   `graphseek.tools.prompts`), or, offline, entities whose name or alias
   occurs in the query (`match_mentions`: longest match, named entities before generic
   concepts, candidates' similarity breaking ties), falling back to the best candidates.
3. **Subgraph**: entities within `radius` hops of a seed on the undirected entity layer (a node
   with more than `max_neighbors` neighbours contributes only the heaviest / most query-similar
   ones, so that hubs stay cheap), and the relations between them.
4. **Structural ranks**: PPR on the subgraph, restarting at the seeds (uniform); relations
   scored by the mean of their endpoints' scores; passages by a second PPR on the subgraph
   augmented with the passages linked to its entities.
5. **Fusion**: for relations and for passages, rrf(c) = 1 / (k_ppr + rank_ppr(c)) +
   1 / (k_sem + rank_sim(c)).
6. **Context**: top `prune_top_k` relations; passages = top `entity_passage_top_k` fused ∪ top
   `similarity_passage_top_k` by similarity, ordered by fused score.

Defaults are HiGraAgent's Table 4 (`HiGraConfig`). What the paper's parameter names map to is
documented on each field.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp
from pydantic import BaseModel, Field

from graphseek.knowledge.passages import Hit, Passage
from graphseek.tools.graph_access import (
    GraphView,
    Mention,
    PassageSearch,
    graph_view,
    hybrid_ranking,
    label_similarity,
    match_mentions,
    passage_search_for,
    single_threaded_blas,
    top_positions,
)
from graphseek.tools.ppr import PageRank

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

SeedSource = Literal["llm", "mention", "similarity", "given", "bridge"]


@dataclass(frozen=True)
class HiGraConfig:
    """HiGraRetriever parameters; defaults from HiGraAgent Table 4 where the paper gives one."""

    #: "Ontology top-k": candidate entities (by similarity) offered to seed recognition
    ontology_top_k: int = 20
    #: "Entity-passage top-k": fused (graph + similarity) passages in the final context
    entity_passage_top_k: int = 10
    #: "Similarity-passage top-k": similarity-only passages added to the final context
    similarity_passage_top_k: int = 5
    #: "Prune top-k": relations kept in the final context
    prune_top_k: int = 10
    #: "PPR alpha": damping factor (probability of following an edge)
    alpha: float = 0.85
    #: "RRF semantic constant" and "RRF PPR constant"
    rrf_semantic_k: float = 10.0
    rrf_ppr_k: float = 10.0
    #: "Passage top-k (Hybrid Retrieval)": depth of the passage similarity ranking
    passage_top_k: int = 20
    #: subgraph radius r (hops on the entity layer)
    radius: int = 1
    #: at most this many seeds
    max_seeds: int = 5
    #: seeds per ambiguous mention (several entities share the matched name)
    seeds_per_mention: int = 2
    #: neighbours a node contributes to the subgraph (heaviest, then most query-similar)
    max_neighbors: int = 200
    #: cap on subgraph entities
    max_subgraph_entities: int = 3000
    #: weight of an entity-passage edge relative to an entity-entity edge in the passage PPR
    passage_edge_weight: float = 1.0
    #: relations considered by similarity outside the subgraph (lexical top-n)
    relation_similarity_depth: int = 50
    #: edge weight multipliers by relation kind, e.g. (("cooccurrence", 0.5),) (paper: none)
    relation_kind_weights: tuple[tuple[str, float], ...] = ()
    #: relations whose label shares a word stem with the query weigh (1 + this) (paper: 0)
    query_relation_boost: float = 0.0
    #: weight of the link between an entity and the passage titled by its name (paper: 1)
    title_link_weight: float = 1.0
    #: lexical entity candidates scored when the offline path found names in the query
    candidate_depth: int = 80
    #: always rank every entity by dense similarity (the offline path otherwise scores only
    #: the candidates, see `HiGraRetriever.retrieve`)
    full_entity_similarity: bool = False
    #: fused passages kept in the result (for `ranking` / `hits` beyond the context)
    max_ranked: int = 100
    #: PPR tolerance (L1) and iteration cap
    tol: float = 1e-7
    max_iter: int = 60


# -- result types ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """A seed entity, with how it was chosen."""

    entity_id: str
    name: str
    source: SeedSource
    score: float = 0.0


@dataclass(frozen=True)
class RankedRelation:
    """A relation of the final context, with the passages it was extracted from."""

    id: str
    source: str
    label: str
    target: str
    score: float
    passage_ids: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return f"{self.source} {self.label} {self.target}"


@dataclass(frozen=True)
class RankedPassage:
    """A passage of the final context: fused score and both ranks (None = not ranked)."""

    id: str
    score: float
    ppr_rank: int | None
    sim_rank: int | None


@dataclass
class HiGraResult:
    """Everything HiGraRetriever produced for one query."""

    query: str
    passages: list[RankedPassage]
    relations: list[RankedRelation]
    seeds: list[Seed]
    candidates: list[str]
    fused: list[RankedPassage]
    subgraph_entities: int = 0
    subgraph_relations: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    usage: Any = None
    hits: list[Hit] = field(default_factory=list)
    note: str = ""

    @property
    def passage_ids(self) -> list[str]:
        return [p.id for p in self.passages]

    def ranking(self) -> list[RankedPassage]:
        """The final context first, then the rest of the fused ranking."""
        seen = {p.id for p in self.passages}
        return [*self.passages, *(p for p in self.fused if p.id not in seen)]


class EntitySelection(BaseModel):
    """The recogniser's structured output."""

    reasoning: str = Field(default="", description="Why these entities, in one or two sentences.")
    entity_ids: list[str] = Field(
        default_factory=list, description="Ids of the chosen candidates, most important first."
    )


# -- phase 2: seeds -------------------------------------------------------------------------------


def offline_seeds(
    view: GraphView,
    query: str,
    candidates: Sequence[int],
    *,
    max_seeds: int = 5,
    per_mention: int = 2,
    mentions: Sequence[Mention] | None = None,
) -> list[Seed]:
    """Seeds without a model: entities named in the query, else the best candidates.

    Proper-noun spans (a capitalised word after the first word of the query, or a digit) are
    used when there are any: a lower-case match ("director", "place of birth") is a generic
    word even where the graph types it as a name, and as a seed it would be a hub. Without
    proper spans: multi-word named entities, then any multi-word match, then any match. Longer
    spans come first; among entities sharing one span, named entities before generic
    concepts, then those ranked higher by similarity, then those linked to more passages, at
    most `per_mention` per span.
    """
    cand_rank = {e: r for r, e in enumerate(candidates)}
    if mentions is None:
        mentions = match_mentions(view, query)
    pool = (
        [m for m in mentions if m.proper]
        or [m for m in mentions if not m.concept and m.length > 1]
        or [m for m in mentions if m.length > 1]
        or mentions
    )
    concept = {m.entity: m.concept for m in pool}
    by_span: dict[tuple[int, int], list[int]] = {}
    for m in pool:
        by_span.setdefault(m.span, []).append(m.entity)
    spans = sorted(
        by_span,
        key=lambda s: (-(s[1] - s[0]), s[0]),
    )
    seeds: list[Seed] = []
    chosen: set[int] = set()
    for s in spans:
        entities = sorted(
            dict.fromkeys(by_span[s]),
            key=lambda e: (
                concept[e],
                cand_rank.get(e, len(cand_rank)),
                -view.passage_degree[e],
                e,
            ),
        )
        for e in entities[:per_mention]:
            if e in chosen:
                continue
            chosen.add(e)
            seeds.append(Seed(view.entity_ids[e], view.names[e], "mention", float(s[1] - s[0])))
    if not seeds:
        for e in candidates[:2]:
            seeds.append(Seed(view.entity_ids[e], view.names[e], "similarity"))
    return seeds[:max_seeds]


def llm_seeds(
    model: Any,
    view: GraphView,
    query: str,
    candidates: Sequence[int],
    *,
    max_seeds: int = 5,
    max_retries: int = 2,
    callbacks: Sequence[Any] = (),
) -> tuple[list[Seed], Any]:
    """Seeds chosen by a chat model among the candidates (ids not offered are ignored);
    `callbacks` (the run's budget guard) see the request."""
    from graphseek.llm import invoke_structured
    from graphseek.tools.prompts import ENTITY_RECOGNITION_SYSTEM, ENTITY_RECOGNITION_USER

    lines = []
    for e in candidates:
        extra = []
        if view.aliases[e]:
            extra.append("aliases: " + ", ".join(view.aliases[e][:5]))
        if view.types[e]:
            extra.append("types: " + ", ".join(view.types[e][:4]))
        suffix = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"[{view.entity_ids[e]}] {view.names[e]}{suffix}")
    messages = [
        ("system", ENTITY_RECOGNITION_SYSTEM.format(max_seeds=max_seeds)),
        ("human", ENTITY_RECOGNITION_USER.format(question=query, candidates="\n".join(lines))),
    ]
    out, usage = invoke_structured(
        model, EntitySelection, messages, max_retries=max_retries, callbacks=callbacks
    )
    offered = {view.entity_ids[e]: e for e in candidates}
    seeds = []
    for eid in dict.fromkeys(out.entity_ids):
        pos = offered.get(eid.strip())
        if pos is not None:
            seeds.append(Seed(view.entity_ids[pos], view.names[pos], "llm"))
    return seeds[:max_seeds], usage


# -- phase 3: subgraph ----------------------------------------------------------------------------


def extract_subgraph(
    view: GraphView,
    seeds: Sequence[int],
    radius: int,
    *,
    max_neighbors: int = 200,
    max_entities: int = 3000,
    priority: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Entity positions within `radius` hops of a seed (seeds first, then by discovery).

    A node with more than `max_neighbors` neighbours contributes its heaviest edges first, then
    the neighbours with the highest `priority` (e.g. similarity to the query).
    """
    a = view.undirected
    selected: dict[int, None] = dict.fromkeys(int(s) for s in seeds)
    frontier = list(selected)
    for _ in range(radius):
        following: list[int] = []
        for e in frontier:
            lo, hi = a.indptr[e], a.indptr[e + 1]
            nbrs = a.indices[lo:hi]
            if len(nbrs) > max_neighbors:
                weights = a.data[lo:hi]
                pr = priority(nbrs) if priority is not None else np.zeros(len(nbrs))
                order = np.lexsort((nbrs, -pr, -weights))[:max_neighbors]
                nbrs = nbrs[order]
            for n in nbrs.tolist():
                if n not in selected:
                    selected[n] = None
                    following.append(n)
            if len(selected) >= max_entities:
                break
        frontier = following
        if len(selected) >= max_entities or not frontier:
            break
    return np.fromiter(selected, dtype=np.int64, count=len(selected))[
        : max(max_entities, len(seeds))
    ]


def subgraph_relations(view: GraphView, entities: np.ndarray) -> np.ndarray:
    """Relations with both endpoints among `entities` (sorted positions)."""
    if not len(entities) or not view.n_relations:
        return np.zeros(0, dtype=np.int64)
    inside = np.zeros(view.n_entities, dtype=bool)
    inside[entities] = True
    candidates = np.unique(view.incidence[entities].indices)
    keep = inside[view.rel_source[candidates]] & inside[view.rel_target[candidates]]
    return candidates[keep].astype(np.int64)


# -- phases 4 and 5 -------------------------------------------------------------------------------


def rank_order(scores: np.ndarray, ids: np.ndarray) -> list[int]:
    """`ids` with a positive score, best first; ties by id."""
    keep = scores > 0
    s, i = scores[keep], ids[keep]
    return [int(x) for x in i[np.lexsort((i, -s))]]


def fuse_ranks(
    ppr: Sequence[Any],
    sim: Sequence[Any],
    k_ppr: float,
    k_sim: float,
    limit: int | None = None,
) -> list[tuple[Any, float, int | None, int | None]]:
    """(item, rrf score, ppr rank, sim rank), best first, the top `limit` (all if None):
    rrf = 1 / (k_ppr + ppr rank) + 1 / (k_sim + sim rank), a missing rank adding nothing.
    Ties go to the best single rank, then the PPR rank, then first appearance."""
    items = list(dict.fromkeys([*ppr, *sim]))
    if not items:
        return []
    pos = {x: i for i, x in enumerate(items)}
    n = len(items)
    a = np.full(n, np.inf)
    b = np.full(n, np.inf)
    for ranks, ranking in ((a, ppr), (b, sim)):
        for r, x in enumerate(ranking, 1):
            i = pos[x]
            if ranks[i] == np.inf:
                ranks[i] = r
    score = np.where(np.isfinite(a), 1.0 / (k_ppr + a), 0.0)
    score += np.where(np.isfinite(b), 1.0 / (k_sim + b), 0.0)
    order = np.lexsort((np.arange(n), a, np.minimum(a, b), -score))
    if limit is not None:
        order = order[:limit]
    return [
        (
            items[i],
            float(score[i]),
            int(a[i]) if np.isfinite(a[i]) else None,
            int(b[i]) if np.isfinite(b[i]) else None,
        )
        for i in order.tolist()
    ]


# -- the retriever --------------------------------------------------------------------------------


class HiGraRetriever:
    """HiGraAgent's retriever over a `GraphView` and a passage ranker (see the module docstring).

    `HiGraRetriever.from_index(index)` wires the index's graph, hybrid search, embedder and
    passages; tests build one by hand from a `GraphView` and any `PassageSearch`.
    """

    def __init__(
        self,
        view: GraphView,
        passage_search: PassageSearch,
        *,
        embed: Callable[[str], np.ndarray] | None = None,
        lookup: Callable[[str], Passage] | None = None,
        config: HiGraConfig | None = None,
    ) -> None:
        self.view = view
        self.passage_search = passage_search
        self.embed = embed
        self.lookup = lookup
        self.config = config or HiGraConfig()

    @classmethod
    def from_index(cls, index: IndexStore, config: HiGraConfig | None = None) -> HiGraRetriever:
        search = passage_search_for(index)
        view = graph_view(index)
        return cls(view, search, embed=search.embed, lookup=index.get, config=config)

    def with_config(self, **changes: Any) -> HiGraRetriever:
        clone = copy.copy(self)  # the same class, graph and search: only the config changes
        clone.config = replace(self.config, **changes)
        return clone

    def retrieve(
        self,
        query: str,
        *,
        model: Any = None,
        seeds: Sequence[str] | None = None,
        max_retries: int = 2,
        callbacks: Sequence[Any] = (),
        extra_seeds: Sequence[tuple[str, float]] = (),
    ) -> HiGraResult:
        """Run the six phases for `query`. `model`: a chat model for seed recognition (None:
        offline), its request seen by `callbacks` (the run's budget guard); `seeds`: entity ids
        (or names) to use instead of recognition; `extra_seeds`: (entity id, weight) pairs
        added to the recognised seeds, each restarting the PageRanks with its weight (a seed's
        is 1): the entities semantic bridging reached (`Context.bridge_seeds`)."""
        with single_threaded_blas():
            return self._retrieve(query, model, seeds, max_retries, callbacks, extra_seeds)

    def _retrieve(
        self,
        query: str,
        model: Any,
        seeds: Sequence[str] | None,
        max_retries: int,
        callbacks: Sequence[Any] = (),
        extra_seeds: Sequence[tuple[str, float]] = (),
    ) -> HiGraResult:
        cfg, view = self.config, self.view
        timings: dict[str, float] = {}
        t_start = t = time.perf_counter()

        # phase 1: similarity ranks
        qv = self.embed(query) if self.embed is not None and query.strip() else None
        gv = view.graph_query(query, qv)  # against the graph's vectors
        lexical, _ = view.entity_similarity(query, None)
        mentions = match_mentions(view, query) if seeds is None and model is None else []
        # offline with names found, the entity ranking only breaks ties among the mentioned
        # entities: score the lexical candidates and the mentions instead of every entity
        partial = bool(mentions) and not cfg.full_entity_similarity
        candidates = self._entity_candidates(lexical, gv, mentions if partial else None)
        passage_sim = self.passage_search(query, cfg.passage_top_k, qv)
        timings["similarity"] = _ms(t)

        # phase 2: seeds
        t = time.perf_counter()
        usage, note = None, ""
        chosen: list[Seed] = []
        if seeds is not None:
            chosen = _given_seeds(view, seeds)
        elif model is not None:
            offered = candidates[: cfg.ontology_top_k]
            try:
                chosen, usage = llm_seeds(
                    model,
                    view,
                    query,
                    offered,
                    max_seeds=cfg.max_seeds,
                    max_retries=max_retries,
                    callbacks=callbacks,
                )
            except Exception as exc:  # a failed recogniser must not fail retrieval
                note = f"entity recognition failed ({type(exc).__name__}); used offline seeds"
                usage = getattr(exc, "usage", None)
            if not chosen and not note:
                note = "the recogniser chose no candidate; used offline seeds"
        if not chosen:
            chosen = offline_seeds(
                view,
                query,
                candidates,
                max_seeds=cfg.max_seeds,
                per_mention=cfg.seeds_per_mention,
                mentions=mentions or None,
            )
        restart_weight = dict.fromkeys((view.entity_pos[s.entity_id] for s in chosen), 1.0)
        for eid, weight in extra_seeds:
            e = view.entity_pos.get(eid)
            if e is not None and e not in restart_weight and weight > 0:
                restart_weight[e] = float(weight)
                chosen.append(Seed(eid, view.names[e], "bridge", float(weight)))
        seed_pos = list(restart_weight)
        timings["seeds"] = _ms(t)

        # phase 3: subgraph (`view` from here on holds it: the whole graph, or, over a graph
        # read one neighbourhood at a time, what was read of it)
        t = time.perf_counter()
        view, entities, relations = self._subgraph(seed_pos, self._priority(lexical, gv))
        timings["subgraph"] = _ms(t)

        # phase 4: structural ranks
        t = time.perf_counter()
        rel_ppr: list[int] = []
        passage_ppr: list[str] = []
        if len(seed_pos):
            local = {int(e): i for i, e in enumerate(entities)}
            sub = self._subgraph_matrix(view, entities, relations, query)
            restart = {local[s]: restart_weight[s] for s in seed_pos}
            ent_scores = PageRank.from_adjacency(sub).run(
                restart, alpha=cfg.alpha, tol=cfg.tol, max_iter=cfg.max_iter
            )
            full = np.zeros(view.n_entities)
            full[entities] = ent_scores
            if len(relations):
                rel_scores = full[view.rel_source[relations]] + full[view.rel_target[relations]]
                rel_ppr = rank_order(rel_scores / 2.0, relations)
            block, cols = self._passage_block(view, entities)
            if len(cols):
                m = len(entities)
                sub_coo, block_coo = sub.tocoo(), block.tocoo()
                aug = sp.csr_matrix(
                    (
                        np.concatenate([sub_coo.data, block_coo.data, block_coo.data]),
                        (
                            np.concatenate([sub_coo.row, block_coo.row, block_coo.col + m]),
                            np.concatenate([sub_coo.col, block_coo.col + m, block_coo.row]),
                        ),
                    ),
                    shape=(m + len(cols), m + len(cols)),
                )
                scores = PageRank.from_adjacency(aug).run(
                    restart, alpha=cfg.alpha, tol=cfg.tol, max_iter=cfg.max_iter
                )[m:]
                order = rank_order(scores, np.arange(len(cols)))
                passage_ppr = [view.passage_ids[int(cols[j])] for j in order]
        timings["ppr"] = _ms(t)

        # phase 5: fusion
        t = time.perf_counter()
        rel_sim = self._relation_similarity(view, query, gv, relations)
        fused_rel = fuse_ranks(
            rel_ppr, rel_sim, cfg.rrf_ppr_k, cfg.rrf_semantic_k, limit=cfg.prune_top_k
        )
        sim_ids = [pid for pid, _ in passage_sim]
        fused = [
            RankedPassage(pid, score, a, b)
            for pid, score, a, b in fuse_ranks(
                passage_ppr,
                sim_ids,
                cfg.rrf_ppr_k,
                cfg.rrf_semantic_k,
                limit=max(cfg.max_ranked, cfg.entity_passage_top_k),
            )
        ]
        timings["fusion"] = _ms(t)

        # phase 6: context
        keep = {p.id for p in fused[: cfg.entity_passage_top_k]}
        keep.update(sim_ids[: cfg.similarity_passage_top_k])
        context = [p for p in fused if p.id in keep]
        top_relations = [
            RankedRelation(
                view.relation_ids[r],
                *view.relation_triple(r),
                score=score,
                passage_ids=tuple(view.rel_passages[r]),
            )
            for r, score, _, _ in fused_rel[: cfg.prune_top_k]
        ]
        timings["total"] = _ms(t_start)
        result = HiGraResult(
            query=query,
            passages=context,
            relations=top_relations,
            seeds=chosen,
            candidates=[view.entity_ids[e] for e in candidates[: cfg.ontology_top_k]],
            fused=fused,
            subgraph_entities=len(entities),
            subgraph_relations=len(relations),
            timings=timings,
            usage=usage,
            note=note,
        )
        if self.lookup is not None:
            result.hits = self._hits(context)
        return result

    def _entity_candidates(
        self, lexical: np.ndarray, qv: np.ndarray | None, mentions: Sequence[Mention] | None
    ) -> list[int]:
        """Entities ranked by hybrid similarity: over every entity, or (`mentions` given) over
        the lexical top candidates and the mentioned entities only."""
        view, cfg = self.view, self.config
        if mentions is None:
            dense = None
            if qv is not None and view.entity_vectors is not None and view.n_entities:
                dense = view.entity_vectors @ qv
            depth = max(cfg.ontology_top_k, cfg.candidate_depth)
            return [e for e, _ in hybrid_ranking(lexical, dense, depth)]
        subset = np.unique(
            np.concatenate(
                [
                    np.asarray(top_positions(lexical, cfg.candidate_depth), dtype=np.int64),
                    np.asarray([m.entity for m in mentions], dtype=np.int64),
                ]
            )
        )
        dense = None
        if qv is not None and view.entity_vectors is not None:
            dense = view.entity_vectors[subset] @ qv
        ranked = hybrid_ranking(lexical[subset], dense, len(subset))
        return [int(subset[i]) for i, _ in ranked]

    def _priority(
        self, lexical: np.ndarray, qv: np.ndarray | None
    ) -> Callable[[np.ndarray], np.ndarray]:
        """Query similarity of some entities (cosine if the graph has vectors, else BM25)."""
        vectors = self.view.entity_vectors
        if qv is None or vectors is None:
            return lambda nodes: lexical[nodes]
        return lambda nodes: vectors[nodes] @ qv

    def _subgraph(
        self, seeds: Sequence[int], priority: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[GraphView, np.ndarray, np.ndarray]:
        """Phase 3: (a view holding the subgraph, its entities, its relations). Here the view
        is the whole graph; `graphseek.tools.neighbourhood` reads the neighbourhood instead."""
        view, cfg = self.view, self.config
        entities = extract_subgraph(
            view,
            seeds,
            cfg.radius,
            max_neighbors=cfg.max_neighbors,
            max_entities=cfg.max_subgraph_entities,
            priority=priority,
        )
        return view, entities, subgraph_relations(view, np.sort(entities))

    def _passage_block(
        self, view: GraphView, entities: np.ndarray
    ) -> tuple[sp.csr_matrix, np.ndarray]:
        """(subgraph entities x linked passages) link weights, and the passage positions."""
        cfg = self.config
        links = view.links[entities]
        cols, local = np.unique(links.indices, return_inverse=True)
        block = sp.csr_matrix(
            (links.data * cfg.passage_edge_weight, local.ravel(), links.indptr),
            shape=(len(entities), len(cols)),
        )
        if cfg.title_link_weight != 1.0 and view.passage_titles and len(cols):
            titled = view.title_links[entities]
            extra = sp.csr_matrix(
                (
                    titled.data * (cfg.title_link_weight - 1.0),
                    np.searchsorted(cols, titled.indices),
                    titled.indptr,
                ),
                shape=block.shape,
            )
            block = (block + extra).tocsr()
        return block, cols

    def _subgraph_matrix(
        self, view: GraphView, entities: np.ndarray, relations: np.ndarray, query: str
    ) -> Any:
        """Symmetric adjacency of the subgraph (local positions), summed relation weights,
        with the configured kind multipliers and query-relation boost."""
        cfg = self.config
        m = len(entities)
        local = np.full(view.n_entities, -1, dtype=np.int64)
        local[entities] = np.arange(m)
        a, b = local[view.rel_source[relations]], local[view.rel_target[relations]]
        assert view.rel_weights is not None
        w = view.rel_weights[relations].astype(np.float64, copy=True)
        if cfg.relation_kind_weights:
            factors = dict(cfg.relation_kind_weights)
            w *= np.array([factors.get(view.rel_kinds[r], 1.0) for r in relations.tolist()])
        if cfg.query_relation_boost:
            boost = [
                1.0 + cfg.query_relation_boost * label_similarity(query, view.rel_labels[r])
                for r in relations.tolist()
            ]
            w *= np.asarray(boost)
        keep = (a != b) & (w > 0)
        a, b, w = a[keep], b[keep], w[keep]
        sub = sp.csr_matrix(
            (np.concatenate([w, w]), (np.concatenate([a, b]), np.concatenate([b, a]))),
            shape=(m, m),
        )
        sub.sum_duplicates()
        return sub

    def hits(self, result: HiGraResult, k: int) -> list[Hit]:
        """The top `k` passages of a result as `Hit`s (the context, then the fused ranking)."""
        return self._hits(result.ranking()[:k])

    def _hits(self, ranked: Sequence[RankedPassage]) -> list[Hit]:
        if self.lookup is None:
            raise ValueError("this HiGraRetriever has no passage lookup; pass lookup=...")
        return [
            Hit(passage=self.lookup(p.id), score=p.score, rank=r)
            for r, p in enumerate(ranked, start=1)
        ]

    def _relation_similarity(
        self, view: GraphView, query: str, qv: np.ndarray | None, relations: np.ndarray
    ) -> list[int]:
        cfg = self.config
        if not view.n_relations or not query.strip():
            return []
        lexical_all, _ = view.relation_similarity(query)
        outside = [r for r, _ in hybrid_ranking(lexical_all, None, cfg.relation_similarity_depth)]
        subset = np.unique(np.concatenate([relations, np.asarray(outside, dtype=np.int64)]))
        if not len(subset):
            return []
        _, dense = view.relation_similarity(query, qv, subset) if qv is not None else (None, None)
        ranked = hybrid_ranking(lexical_all[subset], dense, len(subset))
        return [int(subset[i]) for i, _ in ranked]


def _given_seeds(view: GraphView, seeds: Sequence[str]) -> list[Seed]:
    from graphseek.tools.graph_access import resolve_entity

    out = []
    for s in seeds:
        e = resolve_entity(view, s)
        if e is not None:
            out.append(Seed(view.entity_ids[e], view.names[e], "given"))
    return out


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000.0


def higra_retrieve(
    index: IndexStore,
    query: str,
    k: int = 5,
    *,
    config: HiGraConfig | None = None,
    model: Any = None,
) -> HiGraResult:
    """HiGraRetriever over an index's graph; `result.hits` holds the context passages."""
    retriever = HiGraRetriever.from_index(index, config)
    return retriever.retrieve(query, model=model)
