"""Semantic bridging (LinearRAG's retrieval, without an LLM): from the question's entities,
through the sentences that mention them, to the second hop's entities and passages.

Over a `GraphView` and its sentence layer (`graphseek.knowledge.graph.store.sentences`):

1. **Seeds**: the entities the question names (`match_mentions` / `offline_seeds`, as HiGra's
   offline path), each with score 1. A question that names none falls back to dense search.
2. **Bridging rounds** (at most `rounds`): each entity activated in the last round, if its
   score is at least `threshold` (δ), takes its `sentences_per_round` sentences most similar
   to the question (cosine, MiniLM) among those it is linked to and no earlier round took;
   every other named entity of such a sentence is activated with score (its activator's score
   × the sentence's similarity) when that is at least δ; an entity's weight sums what it gets.
   Generic concepts ("son", "film") and dates or amounts (`skip_types`) are not activated:
   they are hubs, or name no page, not bridges.
3. **Personalised PageRank** (damping `damping`) over entities and passages joined by the
   entity–passage links, restarting at the activated entities (their weights) and at every
   passage with a prior: `passage_ratio` × its min-max-normalised dense score (top
   `prior_depth`) plus log(1 + the summed score / tier of the active entities it holds),
   times `passage_weight`.
4. Passages by PPR score; ties, and the rest up to k, by dense score.

The bridge sentences (which entity led where, through which sentence) come back with the
result (`BridgeResult.bridges`), so a caller can show or follow the second hop.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from graphseek.errors import IndexNotFoundError
from graphseek.knowledge.fusion import rrf
from graphseek.knowledge.graph.store.sentences import NAMED, SentenceLayer
from graphseek.knowledge.passages import Hit, Passage
from graphseek.tools.graph_access import (
    GraphView,
    graph_view,
    match_mentions,
    single_threaded_blas,
)
from graphseek.tools.higra import Seed, offline_seeds
from graphseek.tools.ppr import PageRank

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore


class NoSentenceLayerError(IndexNotFoundError):
    """The index's graph has no sentence nodes (built before they existed, or without them)."""


@dataclass(frozen=True)
class BridgeConfig:
    """Semantic bridging's parameters, chosen on the dev slices only (2Wiki 0-199, MuSiQue train,
    HotpotQA train, the four documentation genres; docs/evaluation.md, "Semantic bridging")."""

    #: sentences an active entity contributes per round (LinearRAG: 1 on 2Wiki, 4 on MuSiQue;
    #: here 1: 2 gained 0.7 point of 2Wiki Recall@5 and lost 0.8 on MuSiQue, 3-4 on the genres)
    sentences_per_round: int = 1
    #: δ: an entity spreads, and is activated, only with at least this score (0.35: 2Wiki wants
    #: 0.35-0.45, MuSiQue 0.2-0.35)
    threshold: float = 0.35
    #: bridging rounds after the seeds
    rounds: int = 3
    #: PPR damping (probability of following an edge)
    damping: float = 0.5
    #: weight of the passages' restart mass relative to the entities'
    passage_weight: float = 0.05
    #: weight of the dense score inside a passage's prior
    passage_ratio: float = 2.0
    #: passages given a prior
    prior_depth: int = 200
    #: the passage ranking behind the priors (and the fallback): "dense" (LinearRAG's) or
    #: "hybrid" (BM25 + dense fused by reciprocal rank, `passage_search`)
    prior: str = "dense"
    #: > 0: the PPR ranking fused with that hybrid ranking by reciprocal rank with this
    #: constant (top `fusion_depth` of each); 0: the PPR ranking alone
    fusion_k: int = 0
    fusion_depth: int = 50
    #: the title entity of a passage reaches all its sentences (edges of kind TITLED)
    title_edges: bool = True
    #: weight of the link between an entity and the passage titled by its name (others: 1)
    title_link_weight: float = 3.0
    #: the PPR graph holds only the entities bridging may activate (not concepts, dates):
    #: fewer edges, and no walk through a hub such as "film"
    ppr_named_only: bool = True
    #: entity types never activated (dates and amounts name no page to go on to)
    skip_types: tuple[str, ...] = ("DATE", "TIME", "CARDINAL", "ORDINAL", "PERCENT", "MONEY")
    #: seeds at most, and per ambiguous mention
    max_seeds: int = 5
    seeds_per_mention: int = 2
    #: PPR tolerance (L1) and iteration cap (1e-6 ranked every dev slice as 1e-7 did)
    tol: float = 1e-6
    max_iter: int = 60


@dataclass(frozen=True)
class Bridge:
    """One step of bridging: `source` (an entity name) reached `targets` through a sentence."""

    round: int
    source: str
    sentence: str
    passage_id: str
    similarity: float
    targets: tuple[str, ...]
    #: the activation each target got: the source's score x `similarity`
    weight: float = 0.0
    #: each target's entity types, in the order of `targets`
    target_types: tuple[tuple[str, ...], ...] = ()


@dataclass
class BridgeResult:
    query: str
    passage_ids: list[str]
    scores: list[float]
    seeds: list[str]
    activated: dict[str, float]
    bridges: list[Bridge]
    fallback: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)


class BridgeRetriever:
    """Semantic bridging over a `GraphView` and its `SentenceLayer` (the module docstring).

    `dense(query_vector, k)` gives (passage id, cosine) pairs best first, `hybrid(query, k,
    query_vector)` (passage id, score) pairs of the index's hybrid search (`BridgeConfig.
    prior`); `embed(query)` the query's MiniLM vector (the sentences' space); `dense_embed` the
    index embedder's vector when it differs."""

    def __init__(
        self,
        view: GraphView,
        layer: SentenceLayer,
        *,
        embed: Callable[[str], np.ndarray],
        dense: Callable[[np.ndarray, int], list[tuple[str, float]]],
        dense_embed: Callable[[str], np.ndarray] | None = None,
        hybrid: Callable[[str, int, np.ndarray], list[tuple[str, float]]] | None = None,
        contents: Callable[[str], str] | None = None,
        lookup: Callable[[str], Passage] | None = None,
        config: BridgeConfig | None = None,
    ) -> None:
        self.view = view
        self.layer = layer
        self.embed = embed
        self.dense = dense
        self.dense_embed = dense_embed
        self.hybrid = hybrid
        self.contents = contents
        self.lookup = lookup
        self.config = config or BridgeConfig()
        ne, npass = view.n_entities, len(view.passage_ids)
        edges = layer.edges_for(view.entity_ids)
        self._named_edges = (edges == NAMED).astype(np.float32).tocsr()
        self._all_edges = (edges > 0).astype(np.float32).tocsr()
        self._sentence_entities = self._named_edges.T.tocsr()  # who a sentence names
        skip = set(self.config.skip_types)
        self._skipped = np.array([bool(skip & set(view.types[e])) for e in range(ne)], dtype=bool)
        self._named = (
            np.array([not view.is_concept(e) for e in range(ne)], dtype=bool) & ~self._skipped
        )
        ppos = {pid: j for j, pid in enumerate(view.passage_ids)}
        layer_to_view = np.array([ppos.get(p, -1) for p in layer.passage_ids], dtype=np.int64)
        self._sentence_passage = layer_to_view[layer.passage.astype(np.int64)]
        self._passage_pos = ppos
        links = sp.csr_matrix(view.links, dtype=np.float64)
        links.data[:] = 1.0
        self._links = links
        self._title_links = (
            sp.csr_matrix(view.title_links, dtype=np.float64)
            if view.passage_titles
            else sp.csr_matrix(links.shape)
        )
        self._prepare()
        self._n_entities, self._n_passages = ne, npass

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_index(cls, index: IndexStore, config: BridgeConfig | None = None) -> BridgeRetriever:
        """The retriever of an index's graph and sentence layer; `NoSentenceLayerError` (one
        line, how to rebuild) when the graph has no sentence nodes."""
        view = graph_view(index)
        layer = sentence_layer_of(index)
        from graphseek.knowledge.embedder import get_embedder

        minilm = get_embedder()
        own = getattr(index, "embedder", None)
        same = own is minilm or getattr(own, "name", None) == getattr(minilm, "name", "")

        def embed(query: str) -> np.ndarray:
            return np.asarray(minilm.encode([query])[0], dtype=np.float32)

        def index_embed(query: str) -> np.ndarray:
            return np.asarray(index.embed([query])[0], dtype=np.float32)

        passages = index.passages

        def dense(vector: np.ndarray, k: int) -> list[tuple[str, float]]:
            return [(passages[i].id, s) for i, s in index.dense_search(vector, k)]

        from graphseek.tools.graph_access import passage_search_for

        return cls(
            view,
            layer,
            embed=index_embed if same else embed,
            dense=dense,
            hybrid=passage_search_for(index),
            dense_embed=None if same else index_embed,
            contents=lambda pid: index.get(pid).content,
            lookup=index.get,
            config=config,
        )

    def _prepare(self) -> None:
        """The PPR graph: entities and passages joined by their links, an entity's link to the
        passage titled by its name weighing `title_link_weight`."""
        weighted = self._links + (self.config.title_link_weight - 1.0) * self._title_links
        if self.config.ppr_named_only:
            weighted = sp.diags(self._named.astype(np.float64)) @ weighted
        weighted = sp.csr_matrix(weighted)
        weighted.data = np.maximum(weighted.data, 0.0)
        weighted.eliminate_zeros()
        # entities with no link left (concepts, dates, unlinked names) are not in the walk:
        # at 2Wiki scale they were half the entities (28,803 of 57,481), each an idle dangling node
        self._ppr_entities = np.flatnonzero(np.diff(weighted.indptr) > 0)
        linked = weighted[self._ppr_entities]
        graph = sp.bmat([[None, linked], [linked.T, None]], format="csr")
        self._pagerank = PageRank.from_adjacency(graph)

    def with_config(self, **changes: Any) -> BridgeRetriever:
        clone = copy.copy(self)
        clone.config = replace(self.config, **changes)
        if (clone.config.title_link_weight, clone.config.ppr_named_only) != (
            self.config.title_link_weight,
            self.config.ppr_named_only,
        ):
            clone._prepare()
        return clone

    # -- retrieval ----------------------------------------------------------------------------

    def retrieve(self, query: str, k: int = 5) -> BridgeResult:
        with single_threaded_blas():
            return self._retrieve(query, k)

    def _retrieve(self, query: str, k: int) -> BridgeResult:
        cfg, view = self.config, self.view
        timings: dict[str, float] = {}
        t0 = t = time.perf_counter()
        qv = self.embed(query)
        dv = self.dense_embed(query) if self.dense_embed is not None else qv
        depth = max(cfg.prior_depth, k)
        if cfg.prior == "hybrid" and self.hybrid is not None:
            dense = self.hybrid(query, depth, dv)
        else:
            dense = self.dense(dv, depth)
        timings["similarity"] = _ms(t)
        t = time.perf_counter()
        activation = self._activate(query, qv)
        if activation is None:
            ids = [pid for pid, _ in dense[:k]]
            result = BridgeResult(
                query, ids, [s for _, s in dense[:k]], [], {}, [], fallback=True, timings=timings
            )
            return self._with_hits(result)
        seeds, weights, tier, bridges = activation
        timings["bridging"] = _ms(t)

        # passage priors and PPR
        t = time.perf_counter()
        npass = self._n_passages
        prior = np.zeros(npass)
        if dense:
            scores = np.array([s for _, s in dense])
            lo, hi = float(scores.min()), float(scores.max())
            norm = (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
            for (pid, _), value in zip(dense, norm.tolist(), strict=True):
                j = self._passage_pos.get(pid)
                if j is not None:
                    prior[j] = cfg.passage_ratio * value
        active = np.flatnonzero(weights > 0)
        bonus = self._links[active].T @ (weights[active] / np.maximum(tier[active], 1))
        prior += np.log1p(np.asarray(bonus).ravel() * np.log(2.0))
        walked = self._ppr_entities
        restart = np.concatenate([weights[walked], prior * cfg.passage_weight])
        ppr = self._pagerank.run(restart, alpha=cfg.damping, tol=cfg.tol, max_iter=cfg.max_iter)
        passage_scores = ppr[len(walked) :]
        dense_rank = np.full(npass, len(dense) + 1, dtype=np.int64)
        for r, (pid, _) in enumerate(dense):
            j = self._passage_pos.get(pid)
            if j is not None:
                dense_rank[j] = r
        order = np.lexsort((dense_rank, -passage_scores))
        ranked = [int(j) for j in order[: max(k, 1)] if passage_scores[j] > 0]
        ids = [view.passage_ids[j] for j in ranked]
        got = [float(passage_scores[j]) for j in ranked]
        for pid, _ in dense:  # the rest by dense score
            if len(ids) >= k:
                break
            if pid not in ids:
                ids.append(pid)
                got.append(0.0)
        if cfg.fusion_k > 0 and self.hybrid is not None:
            depth = max(cfg.fusion_depth, k)
            graph = [view.passage_ids[int(j)] for j in order[:depth] if passage_scores[j] > 0]
            lexical = [pid for pid, _ in self.hybrid(query, depth, dv)]
            fused = rrf([graph, lexical], k=cfg.fusion_k)[:k]
            ids, got = [pid for pid, _ in fused], [float(x) for _, x in fused]
        timings["ppr"] = _ms(t)
        timings["total"] = _ms(t0)
        activated = {
            view.names[e]: float(weights[e]) for e in np.argsort(-weights)[:50] if weights[e] > 0
        }
        result = BridgeResult(
            query,
            ids[:k],
            got[:k],
            [s.name for s in seeds],
            activated,
            bridges,
            timings=timings,
        )
        return self._with_hits(result)

    def bridged(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The entities the bridging rounds activate for `query` beyond its seeds (the ones it
        names), best first: (entity id, summed activation), at most `limit`; [] when the query
        names no entity. What `Context.bridge_seeds` adds to higra's and progressive's seeds."""
        with single_threaded_blas():
            activation = self._activate(query, self.embed(query))
        if activation is None:
            return []
        _, weights, tier, _ = activation
        reached = np.flatnonzero(tier > 1)
        order = reached[np.lexsort((reached, -weights[reached]))][:limit]
        return [(self.view.entity_ids[int(e)], float(weights[e])) for e in order]

    def bridges(self, query: str) -> list[Bridge]:
        """The bridging rounds' bridges for `query` alone (no PageRank), in the order they were
        found; [] when the query names no entity. What a workflow offers as the next hop's
        subject (`graphseek.tools.graph_context.question_bridges`)."""
        with single_threaded_blas():
            activation = self._activate(query, self.embed(query))
        return [] if activation is None else activation[3]

    def _activate(
        self, query: str, qv: np.ndarray
    ) -> tuple[list[Seed], np.ndarray, np.ndarray, list[Bridge]] | None:
        """The question's entity seeds, then the bridging rounds (the module docstring, step 2):
        the seeds, each entity's summed activation (`weights`), the round it was first reached
        (`tier`: 1 for a seed, 0 never) and the bridges; None when the question names no
        entity."""
        cfg, view, layer = self.config, self.view, self.layer
        mentions = match_mentions(view, query)
        seeds = offline_seeds(
            view,
            query,
            [],
            max_seeds=cfg.max_seeds,
            per_mention=cfg.seeds_per_mention,
            mentions=mentions,
        )
        # (numbers and dates stay seeds: dropping them cost 0.2-1 point of Recall@5 on 2Wiki,
        # MuSiQue and HotpotQA for 3.5 on configref)
        seeds = [s for s in seeds if s.source == "mention"]
        if not seeds:
            return None
        ne = self._n_entities
        weights = np.zeros(ne)
        tier = np.zeros(ne, dtype=np.int64)
        current: dict[int, float] = {}
        for s in seeds:
            e = view.entity_pos[s.entity_id]
            current[e] = 1.0
            weights[e] = 1.0
            tier[e] = 1
        used = np.zeros(len(layer), dtype=bool)
        spread = self._all_edges if cfg.title_edges else self._named_edges
        bridges: list[Bridge] = []
        vectors = layer.vectors
        for round_no in range(1, cfg.rounds + 1):
            following: dict[int, float] = {}
            for e, score in current.items():
                if score < cfg.threshold:
                    continue
                row = spread.indices[spread.indptr[e] : spread.indptr[e + 1]]
                row = row[~used[row]]
                if not len(row):
                    continue
                sims = vectors[row].astype(np.float32) @ qv
                top = np.argsort(-sims, kind="stable")[: cfg.sentences_per_round]
                for j in top.tolist():
                    sentence, sim = int(row[j]), float(sims[j])
                    used[sentence] = True
                    named = self._sentence_entities
                    reached = named.indices[named.indptr[sentence] : named.indptr[sentence + 1]]
                    gained: list[int] = []
                    value = score * sim
                    if value < cfg.threshold:
                        continue
                    for other in reached.tolist():
                        if other == e or not self._named[other]:
                            continue
                        weights[other] += value
                        if tier[other] == 0:
                            tier[other] = round_no + 1
                        if value > following.get(other, 0.0):
                            following[other] = value
                        gained.append(other)
                    if gained:
                        bridges.append(self._bridge(round_no, e, sentence, sim, value, gained))
            if not following:
                break
            current = following
        return seeds, weights, tier, bridges

    def _bridge(
        self,
        round_no: int,
        source: int,
        sentence: int,
        sim: float,
        value: float,
        gained: Sequence[int],
    ) -> Bridge:
        layer, view = self.layer, self.view
        pid = layer.passage_ids[int(layer.passage[sentence])]
        text = layer.text(sentence, self.contents(pid)) if self.contents is not None else ""
        names = tuple(view.names[e] for e in gained)
        types = tuple(tuple(view.types[e]) for e in gained)
        return Bridge(round_no, view.names[source], text, pid, sim, names, value, types)

    def _with_hits(self, result: BridgeResult) -> BridgeResult:
        if self.lookup is not None:
            result.hits = [
                Hit(passage=self.lookup(pid), score=score, rank=r)
                for r, (pid, score) in enumerate(
                    zip(result.passage_ids, result.scores, strict=True), start=1
                )
            ]
        return result


def sentence_layer_of(index: IndexStore) -> SentenceLayer:
    """The sentence layer of an index's graph (`GraphStore.sentence_layer`, either backend);
    `NoSentenceLayerError` when it has none."""
    store = index.open_graph_store()
    try:
        layer = store.sentence_layer()
    finally:
        store.close()
    if layer is None:
        raise NoSentenceLayerError(
            f"The index at {index.location_text} has no sentence nodes (its graph was built "
            "before graphseek kept sentences, or without them), which the bridge retriever "
            "needs; rebuild it with `graphseek index CORPUS --out DIR`."
        )
    return layer


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1000.0
