"""Graph retrieval over a graph that stays in its store: each query reads its neighbourhood.

An index that serves its graph one neighbourhood at a time (`index.graph_neighbourhood()`,
`graphseek.knowledge.storage.reads_neighbourhoods`: the PostgreSQL backend,
`graphseek.knowledge.postgres.neighbourhood`, and a directory index opened with
``graph_reads="neighbourhood"``, `graphseek.knowledge.graph.store.neighbourhood`) is not loaded into a
`GraphView` by the graph retrievers. Instead:

- the **catalogue** (entities' ids, names, aliases, types, number of linked passages; the
  distinct relation labels) is read once per index revision into a `GraphView` with every
  entity and no relation (`RemoteGraph.base`); it finds the seeds, exactly as over the whole
  graph (names in the query, hybrid entity similarity, tie-breaks by passage count). Its entity
  vectors stay in the database (`EntityVectors`): the dense side of entity similarity is the
  database's nearest entities, scored as the whole matrix would score them;
- per query, a `LocalGraph` reads what the algorithm touches, a frontier per query: the
  relations incident to the seeds and, where needed, to their neighbours (HiGra's radius-r
  subgraph; A2RAG's local and bridge stages), the passages linked to the subgraph's entities,
  and for A2RAG's Stage 3 the rows of the nodes push PPR pushes (`progressive.entity_ppr`;
  the store's ``entity_rows``, one per node). Its `view()` is a `GraphView` over the global
  entity positions holding only those rows, so the algorithms of `higra` and `progressive` run
  on it unchanged. `run_stage` does this for one of A2RAG's stages; the graph tools
  (`lc_tools`) and the adaptive workflow's stages (`tools.graph_context`) use it too.

Results. HiGra (radius r) and A2RAG's three stages read every row they use, so their passages
equal the in-memory run's: Stage 3 is the same push PPR on both (the directory backend runs it
on its in-memory matrix; the neighbour counts that set the push thresholds come with the
catalogue), reading the rows in the same order, so the scores are the same. One difference:
HiGra's relation context ranks by similarity the neighbourhood's relations only (the passages do
not depend on it).
"""

from __future__ import annotations

import contextvars
import copy
import dataclasses
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from graphseek.knowledge.graph.models import Topic
from graphseek.tools.graph_access import (
    GraphView,
    passage_search_for,
    reads_neighbourhoods,
    revision_of,
)
from graphseek.tools.graph_arrays import relation_fields, single_threaded_blas, topic_matrix
from graphseek.tools.higra import (
    HiGraConfig,
    HiGraRetriever,
    extract_subgraph,
    subgraph_relations,
)
from graphseek.tools.ppr import row_positions, top_nodes, transition_rows
from graphseek.tools.progressive import (
    ProgressiveConfig,
    ProgressiveRetriever,
    ProgressiveState,
    StepName,
    _TokenIndex,
    check,
    entity_ppr,
    run_step,
    stage_bridge,
    stage_local,
    stage_ppr,
)

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

#: cached properties of the catalogue view that every per-query view shares
_SHARED = (
    "entity_pos",
    "passage_pos",
    "name_index",
    "max_name_tokens",
    "entity_bm25",
    "passage_degree",
    "_label_token_index",
)
#: cached properties of the hyperedge catalogue's view computed once per revision: the topic
#: groups and the topic and hyperedge rankings
_HYPER_RANKINGS = ("topic_pos", "topic_members", "topic_bm25", "hyperedge_bm25")


#: how many nearest entities `EntityVectors @ q` asks the database for: deeper than any
#: ranking of the retrievers (HiGra's 4 x candidate_depth = 320 is the deepest)
DENSE_CANDIDATES = 1024


class EntityVectors:
    """The entity vectors of a graph kept in its store, as the algorithms use a matrix of them:
    ``vectors[positions]`` reads those rows; ``vectors @ q`` (cosine similarity of every
    entity, the query vector being unit) asks the database for the `DENSE_CANDIDATES` nearest
    entities (pgvector, exact), reads their vectors and scores them with the same float32
    product as the whole matrix would; every other entity scores -inf. So any ranking of up
    to `DENSE_CANDIDATES` entities by these scores is the whole matrix's, while a worker holds
    no vectors."""

    def __init__(self, source: Any, n: int) -> None:
        self.source = source
        self.n = n
        self.shape = (n, int(source.dim))
        self.dtype = np.dtype(np.float32)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, positions: Any) -> np.ndarray:
        if isinstance(positions, int | np.integer):
            return self.source.entity_vectors([int(positions)])[0]  # type: ignore[no-any-return]
        return self.source.entity_vectors(np.asarray(positions, dtype=np.int64).tolist())  # type: ignore[no-any-return]

    def __matmul__(self, query_vector: np.ndarray) -> np.ndarray:
        qv = np.asarray(query_vector, dtype=np.float32)
        found, vectors = self.source.nearest_entities(qv, DENSE_CANDIDATES)
        have = dict(zip(found, vectors, strict=True))
        near = np.sort(np.asarray(found, dtype=np.int64))

        def read(positions: np.ndarray) -> np.ndarray:  # the tail block's other rows, if any
            missing = [int(p) for p in positions if int(p) not in have]
            have.update(zip(missing, self[missing], strict=True))
            return np.vstack([have[int(p)] for p in positions]).astype(np.float32)

        scores = np.full(self.n, -np.inf, dtype=np.float32)
        if len(near):
            rows, matrix = same_kernel_rows(near, self.n, read)
            with single_threaded_blas():  # as the whole matrix's product
                product = matrix @ qv
            keep = np.isin(rows, near)  # (not the padding, nor the tail's other rows)
            scores[rows[keep]] = product[keep]
        return scores


#: rows a BLAS matrix-vector kernel handles in one block (the product of a row in a full
#: block does not depend on the other rows; the last, partial block is computed differently)
KERNEL_BLOCK = 16


def same_kernel_rows(
    positions: np.ndarray, n: int, read: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(row positions, -1 for padding; their vectors) laid out so that ``matrix @ q`` gives
    each row the float32 product the whole n-row matrix gives it: rows of the whole matrix's
    full blocks in full blocks (zero rows pad the last), then, if any is asked for, the whole
    matrix's partial tail block, read whole and last, as in the whole matrix."""
    tail = n % KERNEL_BLOCK
    body = positions[positions < n - tail]
    layout = [body, np.full(-len(body) % KERNEL_BLOCK, -1, dtype=np.int64)]
    if tail and (positions >= n - tail).any():
        layout.append(np.arange(n - tail, n, dtype=np.int64))
    rows = np.concatenate(layout)
    real = rows >= 0
    read_rows = read(rows[real])
    matrix = np.zeros((len(rows), read_rows.shape[1]), dtype=np.float32)
    matrix[real] = read_rows
    return rows, matrix


def _fields_and_shared(view: GraphView) -> dict[str, Any]:
    """A view's fields and the shared cached properties (`_SHARED`), without the other cached
    properties (they depend on the relations or hyperedges a copy replaces)."""
    fields = {f.name for f in dataclasses.fields(view)}
    return {k: v for k, v in view.__dict__.items() if k in fields or k in _SHARED}


class RemoteGraph:
    """An index's graph as a catalogue view plus a source of neighbourhood reads."""

    def __init__(self, source: Any, passage_ids: Sequence[str], titles: Sequence[str]) -> None:
        self.source = source
        cat = source.catalogue()
        n = len(cat.entity_ids)
        empty = np.zeros(0, dtype=np.int64)
        base = GraphView(
            entity_ids=cat.entity_ids,
            names=cat.names,
            aliases=cat.aliases,
            types=cat.types,
            descriptions=cat.descriptions,
            relation_ids=[],
            rel_source=empty,
            rel_target=empty,
            rel_labels=[],
            rel_passages=[],
            passage_ids=list(passage_ids),
            passage_titles=list(titles),
            links=sp.csr_matrix((n, len(passage_ids)), dtype=np.float64),
            adjacency=sp.csr_matrix((n, n), dtype=np.float64),
            entity_vectors=EntityVectors(source, n) if cat.has_entity_vectors else None,  # type: ignore[arg-type]
            source=str(getattr(source, "source", "")),
            vector_space=cat.vector_space,
        )
        # what the whole graph would give: passage counts, and the labels of every relation
        base.__dict__["passage_degree"] = cat.passage_degree
        #: neighbours of every entity on the undirected graph (push PPR's thresholds), and
        #: whether the store serves that graph's rows (else they come from the relations)
        self.degree = cat.degree
        self.has_rows = cat.has_rows
        labels = list(cat.relation_labels)
        base.__dict__["_label_token_index"] = (labels, _TokenIndex(labels))
        for key in _SHARED:  # compute once (name index, entity BM25, ...)
            getattr(base, key)
        self.base = base
        self._hyper: GraphView | None = None
        self._relations: GraphView | None = None
        self._hyper_lock = threading.Lock()

    def hyper_view(self) -> GraphView:
        """The catalogue view with the hyperedge catalogue (read on first use): every topic and
        every hyperedge's relation text and topic, without members or passages, with the
        topic and hyperedge rankings computed once (BM25 over the topics and the hyperedges,
        the topic centroids the server averaged). G-RAGent's `retrieve_subgraph` finds its
        topic on it, then reads the hyperedges it shows (`hyperedges`)."""
        with self._hyper_lock:
            if self._hyper is None:
                source = self.source
                view = copy.copy(self.base)
                view.__dict__ = _fields_and_shared(self.base)
                view.topics = source.topics()
                view.hyperedges = source.hyperedge_labels()
                centroids = source.topic_centroids()
                vectors = None
                if centroids is not None and view.topics:
                    dim = len(next(iter(centroids.values()))) if centroids else source.dim
                    vectors = topic_matrix(view.topics, centroids, dim)
                view.__dict__["topic_vectors"] = vectors
                for key in _HYPER_RANKINGS:
                    getattr(view, key)
                self._hyper = view
            return self._hyper

    def relation_view(self) -> GraphView:
        """The catalogue view with every relation's ends, label, weight and kind but no
        passages (read on first use per revision): what ranking every relation by its
        verbalisation needs (`dual_channel`'s triple pattern with no anchored end, BM25 over all
        relations, whose statistics are those of the whole set). The passages of the relations
        it matches are read by id."""
        with self._hyper_lock:
            if self._relations is None:
                pos = self.base.entity_pos
                rows = [r for r in self.source.relation_list() if r[1] in pos and r[3] in pos]
                view = copy.copy(self.base)
                view.__dict__ = _fields_and_shared(self.base)
                view.relation_ids = [r[0] for r in rows]
                view.rel_source = np.array([pos[r[1]] for r in rows], dtype=np.int64)
                view.rel_target = np.array([pos[r[3]] for r in rows], dtype=np.int64)
                view.rel_labels = [r[2] for r in rows]
                view.rel_passages = [[] for _ in rows]
                view.rel_kinds = [r[5] for r in rows]
                view.rel_weights = np.array([r[4] for r in rows], dtype=np.float64)
                view.relation_bm25  # noqa: B018  (built once)
                self._relations = view
            return self._relations

    def topics(self) -> list[Topic]:
        """The topics (from the hyperedge catalogue)."""
        return list(self.hyper_view().topics)

    @property
    def reads(self) -> Any:
        return self.source.reads


class LocalGraph:
    """The rows of a `RemoteGraph` one query has read, and views over them.

    Entities are "expanded" once all their incident relations are read, "linked" once all
    their passage links are read; the algorithms use only the rows of such entities."""

    def __init__(self, remote: RemoteGraph) -> None:
        self.remote = remote
        self.base = remote.base
        self._relations: dict[str, Any] = {}
        self._in_adjacency: set[str] = set()  # relations whose weight the adjacency holds
        self._expanded: set[int] = set()
        self._linked: set[int] = set()
        self._linked_passages: set[str] = set()
        self._links: set[tuple[int, int]] = set()
        self._adjacency: dict[int, dict[int, float]] = {}
        self._relation_vectors: dict[str, np.ndarray] = {}
        # rows read for push PPR: node -> (start, count) in the buffers
        self._row_start = np.full(self.base.n_entities, -1, dtype=np.int64)
        self._row_count = np.zeros(self.base.n_entities, dtype=np.int64)
        self._row_nbrs = np.zeros(0, dtype=np.int64)
        self._row_weights = np.zeros(0, dtype=np.float64)
        self._view: GraphView | None = None

    # -- reads ------------------------------------------------------------------------------

    def expand(self, entities: Iterable[int]) -> None:
        """Read the relations incident to these entity positions (one query)."""
        todo = sorted({int(e) for e in entities} - self._expanded)
        if not todo:
            return
        ids = [self.base.entity_ids[e] for e in todo]
        pos = self.base.entity_pos
        for row in self.remote.source.incident_relations(ids):
            if row.id in self._in_adjacency or row.source not in pos or row.target not in pos:
                continue
            self._relations[row.id] = row
            self._in_adjacency.add(row.id)
            a, b = pos[row.source], pos[row.target]
            if a != b:  # the store's symmetric adjacency: summed weights, no loops
                for x, y in ((a, b), (b, a)):
                    nbrs = self._adjacency.setdefault(x, {})
                    nbrs[y] = float(np.float32(nbrs.get(y, 0.0)) + np.float32(row.weight))
        self._expanded.update(todo)
        self._view = None

    def read_relations(self, relation_ids: Iterable[str]) -> None:
        """Read these relations by id (one query): evidence a retrieval carries from an earlier
        stage, whose endpoints this graph may not have expanded."""
        todo = sorted(set(relation_ids) - set(self._relations))
        if not todo:
            return
        pos = self.base.entity_pos
        for row in self.remote.source.relations(todo):
            if row.source in pos and row.target in pos:
                self._relations[row.id] = row
        self._view = None

    def link(self, entities: Iterable[int]) -> None:
        """Read the passages linked to these entity positions (one query)."""
        todo = sorted({int(e) for e in entities} - self._linked)
        if not todo:
            return
        self._add_links(self.remote.source.links_of([self.base.entity_ids[e] for e in todo]))
        self._linked.update(todo)

    def link_passages(self, passage_ids: Iterable[str]) -> None:
        """Read the entities linked to these passages (one query)."""
        todo = sorted(set(passage_ids) - self._linked_passages)
        if not todo:
            return
        self._add_links(self.remote.source.links_of_passages(todo))
        self._linked_passages.update(todo)

    def _add_links(self, pairs: Iterable[tuple[str, str]]) -> None:
        epos, ppos = self.base.entity_pos, self.base.passage_pos
        for eid, pid in pairs:
            e, p = epos.get(eid), ppos.get(pid)
            if e is not None and p is not None:
                self._links.add((e, p))
        self._view = None

    def read_relation_vectors(self, relations: Iterable[str]) -> None:
        todo = sorted(set(relations) - set(self._relation_vectors))
        if todo:
            self._relation_vectors.update(self.remote.source.relation_vectors(todo))
            self._view = None

    def rows(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Neighbours and transition probabilities of `nodes` (ascending) on the undirected
        entity graph, those not read yet in one query: `push_pagerank`'s reader, the same rows,
        in the same order and with the same values, as `csr_rows` over the whole graph's
        matrix. The rows come from the store's ``entity_rows`` (one per node), or for an index
        without them from the nodes' relations (`expand`)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        todo = nodes[self._row_start[nodes] < 0]
        if len(todo) and self.remote.has_rows:
            self._add_rows(todo, *self.remote.source.entity_rows(todo))
        elif len(todo):
            self.expand(todo)
            rows = [self._adjacency.get(u, {}) for u in todo.tolist()]
            keys = [sorted(k for k, w in row.items() if w > 0) for row in rows]
            self._add_rows(
                todo,
                todo,
                np.array([len(k) for k in keys], dtype=np.int64),
                np.array([k for ks in keys for k in ks], dtype=np.int64),
                np.array([row[k] for row, ks in zip(rows, keys, strict=True) for k in ks]),
            )
        counts = self._row_count[nodes]
        at = row_positions(self._row_start[nodes], counts)
        weights = self._row_weights[at]
        return counts, self._row_nbrs[at], transition_rows(counts, weights)

    def _add_rows(
        self,
        asked: np.ndarray,
        found: np.ndarray,
        counts: np.ndarray,
        nbrs: np.ndarray,
        weights: np.ndarray,
    ) -> None:
        """Keep rows read for `asked` (`found` and their rows; the others have none)."""
        self._row_start[asked] = len(self._row_nbrs)
        self._row_count[asked] = 0
        self._row_start[found] = len(self._row_nbrs) + np.cumsum(counts) - counts
        self._row_count[found] = counts
        self._row_nbrs = np.concatenate([self._row_nbrs, nbrs])
        self._row_weights = np.concatenate([self._row_weights, np.asarray(weights, np.float64)])

    # -- views ------------------------------------------------------------------------------

    def view(self) -> GraphView:
        """A `GraphView` over every entity (global positions) with the rows read so far."""
        if self._view is not None:
            return self._view
        base = self.base
        pos = base.entity_pos
        rels = sorted(self._relations.values(), key=lambda r: r.ord)
        n, m = base.n_entities, base.n_passages
        rows, cols, vals = [], [], []
        for a, nbrs in self._adjacency.items():
            for b, w in nbrs.items():
                rows.append(a)
                cols.append(b)
                vals.append(w)
        adjacency = sp.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
        links = sorted(self._links)
        link_matrix = sp.csr_matrix(
            (np.ones(len(links)), ([e for e, _ in links], [p for _, p in links])),
            shape=(n, m),
            dtype=np.float64,
        )
        relation_vectors, relation_rows = None, None
        if self._relation_vectors:
            ids = sorted(self._relation_vectors)
            row_of = {rid: i for i, rid in enumerate(ids)}
            relation_vectors = np.vstack([self._relation_vectors[r] for r in ids]).astype(
                np.float32
            )
            relation_rows = np.array([row_of.get(r.id, -1) for r in rels], dtype=np.int64)
        view = GraphView(
            entity_ids=base.entity_ids,
            names=base.names,
            aliases=base.aliases,
            types=base.types,
            descriptions=base.descriptions,
            **relation_fields(rels, pos),
            passage_ids=base.passage_ids,
            passage_titles=base.passage_titles,
            links=link_matrix,
            adjacency=adjacency,
            entity_vectors=base.entity_vectors,
            relation_vectors=relation_vectors,
            relation_vector_rows=relation_rows,
            source=base.source,
            vector_space=base.vector_space,
        )
        for key in _SHARED:
            view.__dict__[key] = base.__dict__[key]
        self._view = view
        return view


# -- one remote graph per index object and revision ----------------------------------------------

_remote: weakref.WeakKeyDictionary[Any, tuple[str, RemoteGraph]] = weakref.WeakKeyDictionary()
_remote_lock = threading.Lock()


def remote_graph(index: IndexStore) -> RemoteGraph:
    """The catalogue and neighbourhood reader of `index` (read once per index revision)."""
    revision = revision_of(index)
    with _remote_lock:
        hit = _remote.get(index)
        if hit is not None and hit[0] == revision:
            return hit[1]
    from graphseek.errors import IndexNotFoundError
    from graphseek.tools.graph_access import GraphNotFoundError

    try:
        source = index.graph_neighbourhood()
    except IndexNotFoundError as exc:
        raise GraphNotFoundError(str(exc)) from exc
    passages = index.passages
    remote = RemoteGraph(source, [p.id for p in passages], [p.title for p in passages])
    with _remote_lock:
        _remote[index] = (revision, remote)
    return remote


# -- HiGraRetriever -------------------------------------------------------------------------------


class HiGraNeighbourhood(HiGraRetriever):
    """`HiGraRetriever` whose phase 3 reads the radius-r subgraph of the seeds from the store
    (r + 1 frontier reads of relations, one of links, one of relation vectors)."""

    def __init__(self, remote: RemoteGraph, passage_search: Any, **kwargs: Any) -> None:
        super().__init__(remote.base, passage_search, **kwargs)
        self.remote = remote

    @classmethod
    def from_index(cls, index: IndexStore, config: HiGraConfig | None = None) -> HiGraNeighbourhood:
        search = passage_search_for(index)
        return cls(remote_graph(index), search, embed=search.embed, lookup=index.get, config=config)

    def _subgraph(
        self, seeds: Sequence[int], priority: Callable[[np.ndarray], np.ndarray]
    ) -> tuple[GraphView, np.ndarray, np.ndarray]:
        cfg = self.config
        local = LocalGraph(self.remote)
        selected = np.asarray(list(dict.fromkeys(int(s) for s in seeds)), dtype=np.int64)
        for hop in range(1, cfg.radius + 1):
            # the rows the next hop walks from; extract_subgraph's hub cap needs full rows
            local.expand(selected)
            selected = extract_subgraph(
                local.view(),
                seeds,
                hop,
                max_neighbors=cfg.max_neighbors,
                max_entities=cfg.max_subgraph_entities,
                priority=priority,
            )
        local.expand(selected)  # relations between two subgraph entities
        local.link(selected)
        view = local.view()
        relations = subgraph_relations(view, np.sort(selected))
        local.read_relation_vectors(view.relation_ids[int(r)] for r in relations)
        view = local.view()
        return view, selected, subgraph_relations(view, np.sort(selected))


# -- A2RAG's progressive retriever ----------------------------------------------------------------

_local_graph: contextvars.ContextVar[LocalGraph | None] = contextvars.ContextVar(
    "graphseek_local_graph", default=None
)


class ProgressiveNeighbourhood(ProgressiveRetriever):
    """`ProgressiveRetriever` whose stages read what they need from the store: Stage 1 the
    seeds' relations, Stage 2 their neighbours' relations (the L = 2 hop ball), Stage 3 the rows
    of the nodes `entity_ppr` pushes and the links of the top-M nodes."""

    def __init__(self, remote: RemoteGraph, passage_search: Any = None, **kwargs: Any) -> None:
        super().__init__(remote.base, passage_search, **kwargs)
        self.remote = remote

    @classmethod
    def from_index(
        cls, index: IndexStore, config: ProgressiveConfig | None = None
    ) -> ProgressiveNeighbourhood:
        search = passage_search_for(index)
        return cls(remote_graph(index), search, embed=search.embed, lookup=index.get, config=config)

    def _retrieve(
        self,
        query: str,
        k: int,
        entity_seeds: Sequence[str] | None,
        extra_seeds: Sequence[str] = (),
    ) -> Any:
        token = _local_graph.set(LocalGraph(self.remote))
        try:
            return super()._retrieve(query, k, entity_seeds, extra_seeds)
        finally:
            _local_graph.reset(token)

    def _step(
        self, step: StepName, state: ProgressiveState, ranking: Sequence[str]
    ) -> tuple[GraphView, ProgressiveState]:
        local = _local_graph.get()
        if local is None:  # called outside `retrieve`
            local = LocalGraph(self.remote)
        view, state = run_stage(local, step, state, self.config, passage_ranking=ranking)
        if step == "stage_ppr":
            local.link_passages(state.passages)  # the check reads their entities
            view = local.view()
        return view, check(view, state, self.config)

    @property
    def base_view(self) -> GraphView:
        return self.remote.base


def run_stage(
    graph: LocalGraph | GraphView,
    step: StepName,
    state: ProgressiveState,
    config: ProgressiveConfig | None = None,
    *,
    passage_ranking: Sequence[str] = (),
) -> tuple[GraphView, ProgressiveState]:
    """Run one of A2RAG's stages (no sufficiency check) and return the view it ran on with the
    new state. On a whole graph's `GraphView`, `progressive.run_step`. On a `LocalGraph`, first
    read what the stage needs: Stage 1 the seeds' relations, Stage 2 their neighbours' too (the
    L = 2 hop ball), Stage 3 the rows of the nodes `entity_ppr` pushes and the links of the
    top-M nodes; the relations of `state` (evidence of earlier stages) are read by id, so
    `evidence_passages` sees them."""
    if isinstance(graph, GraphView):
        return graph, run_step(graph, step, state, config, passage_ranking=passage_ranking)
    local = graph
    cfg = config or ProgressiveConfig()
    pos = local.base.entity_pos
    seeds = [pos[e] for e in state.entity_seeds]
    local.read_relations(state.relations)
    local.expand(seeds)
    if step == "stage_local":
        view = local.view()
        return view, stage_local(view, state, cfg)
    if step == "stage_bridge":
        if cfg.bridge_hops >= 2:  # the ball's second hop walks from the seeds' neighbours
            view = local.view()
            local.expand({int(v) for s in seeds for v in view.neighbors(s)})
        view = local.view()
        return view, stage_bridge(view, state, cfg)
    scores = None
    if seeds:
        scores = entity_ppr(local.rows, local.remote.degree, seeds, cfg)
        local.link(top_nodes(scores, cfg.top_m))
    view = local.view()
    return view, stage_ppr(view, state, cfg, passage_ranking=passage_ranking, scores=scores)


def local_graph(index: IndexStore) -> LocalGraph | None:
    """A fresh `LocalGraph` of `index` when it serves its graph one neighbourhood at a time
    (`reads_neighbourhoods`), else None (load the whole graph with `graph_view`)."""
    if not reads_neighbourhoods(index):
        return None
    return LocalGraph(remote_graph(index))


def higra_neighbourhood(index: IndexStore, config: HiGraConfig | None = None) -> HiGraNeighbourhood:
    return HiGraNeighbourhood.from_index(index, config or HiGraConfig())


def progressive_neighbourhood(
    index: IndexStore, config: ProgressiveConfig | None = None
) -> ProgressiveNeighbourhood:
    return ProgressiveNeighbourhood.from_index(index, config or ProgressiveConfig())


__all__ = [
    "HiGraNeighbourhood",
    "LocalGraph",
    "ProgressiveNeighbourhood",
    "RemoteGraph",
    "higra_neighbourhood",
    "local_graph",
    "progressive_neighbourhood",
    "remote_graph",
    "run_stage",
]
