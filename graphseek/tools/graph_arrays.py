"""`GraphView`: an index's knowledge graph as arrays, with its rankings (hybrid entity and
relation similarity), mention matching (`match_mentions`) and name resolution
(`resolve_entity`); plus the small ranking helpers they share. Loading a view from an index is
`graphseek.tools.graph_access.graph_view`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from graphseek.knowledge.adjacency import undirected_adjacency
from graphseek.knowledge.dense import top_positions
from graphseek.knowledge.fusion import rrf
from graphseek.knowledge.graph.models import CONCEPT, Entity, HyperEdge, Relation, Topic
from graphseek.knowledge.sparse import STOPWORDS, BM25Index, tokenize
from graphseek.knowledge.text import split_qualifier
from graphseek.tools.names import (
    MAX_NAME_TOKENS,
    _cased_tokens,
    mention_stopwords,
    name_key,
)

#: reciprocal-rank-fusion constant of the hybrid entity / relation similarity (as the index's)
SIMILARITY_RRF_K = 60


# -- BLAS threads ---------------------------------------------------------------------------------

_blas_controller: Any = None


def single_threaded_blas() -> AbstractContextManager[Any]:
    """A context in which numpy's OpenBLAS runs on one thread.

    Retrieval's matrix-vector products are small; with more threads, OpenBLAS workers keep
    spinning after each call and starve the query encoder (its own thread pool), which on a
    machine with few cores makes each query embedding several times slower. The encoder's own
    threads are not affected.
    """
    global _blas_controller
    try:
        if _blas_controller is None:
            from threadpoolctl import ThreadpoolController

            _blas_controller = ThreadpoolController().select(internal_api="openblas")
        return _blas_controller.limit(limits=1)  # type: ignore[no-any-return]
    except Exception:  # threadpoolctl missing or no OpenBLAS: nothing to limit
        return nullcontext()


# -- ranking helpers -----------------------------------------------------------------------------


def ranks_of(ranking: Sequence[int]) -> dict[int, int]:
    """1-based rank of every item of a ranking (first occurrence)."""
    out: dict[int, int] = {}
    for r, item in enumerate(ranking, start=1):
        out.setdefault(item, r)
    return out


# -- the view -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    """An entity found in a query by name: the matched span (token positions) and how."""

    entity: int
    start: int
    end: int
    text: str
    proper: bool
    concept: bool

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


@dataclass(eq=False)
class GraphView:
    """An index's knowledge graph as arrays (positions everywhere; ids at the edges)."""

    entity_ids: list[str]
    names: list[str]
    aliases: list[list[str]]
    types: list[list[str]]
    descriptions: list[str]
    relation_ids: list[str]
    rel_source: np.ndarray  # int64 entity positions
    rel_target: np.ndarray
    rel_labels: list[str]
    rel_passages: list[list[str]]
    passage_ids: list[str]
    links: sp.csr_matrix  # (entities, passages), > 0 where the entity is linked to the passage
    adjacency: sp.csr_matrix  # (entities, entities), directed, summed relation weights
    rel_kinds: list[str] = field(default_factory=list)
    rel_weights: np.ndarray | None = None  # float64 per relation (default 1.0)
    passage_titles: list[str] = field(default_factory=list)
    hyperedges: list[HyperEdge] = field(default_factory=list)
    topics: list[Topic] = field(default_factory=list)
    entity_vectors: np.ndarray | None = None
    #: vectors of some relations; `relation_vector_rows[r]` is relation r's row, -1 if none
    relation_vectors: np.ndarray | None = None
    relation_vector_rows: np.ndarray | None = None
    hyperedge_vectors: np.ndarray | None = None
    source: str = ""
    #: the space of the entity, relation and hyperedge vectors (`GraphSettings.vectors`)
    vector_space: str = "minilm"

    def __post_init__(self) -> None:
        if not self.rel_kinds:
            self.rel_kinds = ["extracted"] * len(self.relation_ids)
        if self.rel_weights is None:
            self.rel_weights = np.ones(len(self.relation_ids), dtype=np.float64)
        if self.relation_vectors is not None and self.relation_vector_rows is None:
            if len(self.relation_vectors) != self.n_relations:
                raise ValueError(
                    f"{len(self.relation_vectors)} relation vectors for {self.n_relations} "
                    "relations; pass relation_vector_rows"
                )
            self.relation_vector_rows = np.arange(self.n_relations)
        if self.entity_vectors is not None and len(self.entity_vectors) != self.n_entities:
            raise ValueError(
                f"{len(self.entity_vectors)} entity vectors for {self.n_entities} entities"
            )

    # ------------------------------------------------------------------------------- building

    @classmethod
    def from_models(
        cls,
        entities: Sequence[Entity],
        relations: Sequence[Relation],
        passage_ids: Sequence[str] | None = None,
        *,
        links: Mapping[str, Iterable[str]] | None = None,
        hyperedges: Sequence[HyperEdge] = (),
        topics: Sequence[Topic] = (),
        entity_vectors: np.ndarray | None = None,
        relation_vectors: np.ndarray | None = None,
        passage_titles: Sequence[str] | None = None,
        source: str = "",
    ) -> GraphView:
        """A view of entity and relation models. `links` maps entity ids to the passages they
        are linked to (default: each entity's `passage_ids`); `passage_ids` fixes the passage
        order (default: order of first appearance in the links and relations)."""
        entity_ids = [e.id for e in entities]
        pos = {eid: i for i, eid in enumerate(entity_ids)}
        if len(pos) != len(entity_ids):
            raise ValueError("duplicate entity ids")
        link_map = (
            {e.id: list(e.passage_ids) for e in entities}
            if links is None
            else {k: list(v) for k, v in links.items()}
        )
        if passage_ids is None:
            seen: dict[str, None] = {}
            for e in entities:
                for pid in link_map.get(e.id, ()):
                    seen.setdefault(pid)
            for r in relations:
                for pid in r.passage_ids:
                    seen.setdefault(pid)
            passage_ids = list(seen)
        ppos = {pid: j for j, pid in enumerate(passage_ids)}
        rows, cols = [], []
        for eid, pids in link_map.items():
            if eid not in pos:
                raise ValueError(f"link for unknown entity {eid!r}")
            for pid in dict.fromkeys(pids):
                if pid in ppos:
                    rows.append(pos[eid])
                    cols.append(ppos[pid])
        link_matrix = sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(len(entity_ids), len(passage_ids))
        )
        rels = relation_fields([r for r in relations if r.source in pos and r.target in pos], pos)
        return cls(
            **entity_fields(entities),
            **rels,
            passage_ids=list(passage_ids),
            passage_titles=list(passage_titles or ()),
            links=link_matrix,
            adjacency=adjacency_from_relations(
                rels["rel_source"], rels["rel_target"], rels["rel_weights"], len(entity_ids)
            ),
            hyperedges=list(hyperedges),
            topics=list(topics),
            entity_vectors=entity_vectors,
            relation_vectors=relation_vectors,
            source=source,
        )

    # ------------------------------------------------------------------------------ basic lookups

    def graph_query(self, text: str, vector: np.ndarray | None) -> np.ndarray | None:
        """`text`'s vector in the space of this graph's vectors: `vector` (its MiniLM vector, as
        passage search uses) when the graph embeds with MiniLM; its static encoding when the
        graph's vectors are static (`graphseek.knowledge.static_embedder`)."""
        if self.vector_space != "static":
            return vector
        if not text.strip():
            return None
        from graphseek.knowledge.static_embedder import get_static_encoder

        return get_static_encoder().encode([text])[0]

    @property
    def n_entities(self) -> int:
        return len(self.entity_ids)

    @property
    def n_relations(self) -> int:
        return len(self.relation_ids)

    @property
    def n_passages(self) -> int:
        return len(self.passage_ids)

    def __repr__(self) -> str:
        return (
            f"GraphView(entities={self.n_entities}, relations={self.n_relations}, "
            f"passages={self.n_passages}, hyperedges={len(self.hyperedges)}, "
            f"topics={len(self.topics)})"
        )

    @cached_property
    def entity_pos(self) -> dict[str, int]:
        return {eid: i for i, eid in enumerate(self.entity_ids)}

    @cached_property
    def passage_pos(self) -> dict[str, int]:
        return {pid: j for j, pid in enumerate(self.passage_ids)}

    @cached_property
    def relation_pos(self) -> dict[str, int]:
        return {rid: i for i, rid in enumerate(self.relation_ids)}

    @cached_property
    def undirected(self) -> sp.csr_matrix:
        """The entity adjacency with every edge both ways (the larger weight kept), no loops."""
        return undirected_adjacency(self.adjacency)

    @cached_property
    def incidence(self) -> sp.csr_matrix:
        """(entities, relations): 1 where the entity is the source or the target."""
        n = self.n_relations
        rows = np.concatenate([self.rel_source, self.rel_target])
        cols = np.concatenate([np.arange(n), np.arange(n)])
        m = sp.csr_matrix(
            (np.ones(2 * n), (rows, cols)), shape=(self.n_entities, n), dtype=np.float64
        )
        m.data[:] = 1.0
        return m

    @cached_property
    def title_links(self) -> sp.csr_matrix:
        """(entities, passages): 1 where a linked passage's title names the entity (its own
        article: "Seven Women (1944 film)" names "Seven Women" too)."""
        rows, cols = [], []
        index = self.name_index
        for j, title in enumerate(self.passage_titles):
            if not title:
                continue
            keys = {name_key(title), name_key(split_qualifier(title)[0])}
            for key in keys:
                for e in index.get(key, ()):
                    rows.append(e)
                    cols.append(j)
        m = sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(self.n_entities, self.n_passages)
        )
        m.data[:] = 1.0
        return m.multiply(self.links).tocsr()

    @cached_property
    def links_t(self) -> sp.csr_matrix:
        """(passages, entities): the link matrix transposed."""
        return self.links.T.tocsr()

    @cached_property
    def passage_degree(self) -> np.ndarray:
        """Number of passages each entity is linked to."""
        return np.diff(self.links.indptr)

    def is_concept(self, e: int) -> bool:
        """Whether the entity is only a generic concept (noun chunk), not a named entity."""
        types = self.types[e]
        return bool(types) and all(t == CONCEPT for t in types)

    def relations_of(self, e: int) -> np.ndarray:
        """Positions of the relations incident to entity `e`."""
        m = self.incidence
        return m.indices[m.indptr[e] : m.indptr[e + 1]]

    def passages_of(self, e: int) -> list[str]:
        """Passage ids linked to entity `e`."""
        m = self.links
        return [self.passage_ids[j] for j in m.indices[m.indptr[e] : m.indptr[e + 1]]]

    def entities_of_passage(self, pid: str) -> list[int]:
        j = self.passage_pos.get(pid)
        if j is None:
            return []
        m = self.links_t
        return [int(i) for i in m.indices[m.indptr[j] : m.indptr[j + 1]]]

    def neighbors(self, e: int) -> np.ndarray:
        m = self.undirected
        return m.indices[m.indptr[e] : m.indptr[e + 1]]

    def relation_text(self, r: int) -> str:
        """``source label target`` (HiGra's verbalised relation)."""
        return (
            f"{self.names[int(self.rel_source[r])]} {self.rel_labels[r]} "
            f"{self.names[int(self.rel_target[r])]}"
        )

    def relation_triple(self, r: int) -> tuple[str, str, str]:
        return (
            self.names[int(self.rel_source[r])],
            self.rel_labels[r],
            self.names[int(self.rel_target[r])],
        )

    def entity_text(self, e: int) -> str:
        """Name, aliases and types: the string entity similarity ranks (HiGra §4.1)."""
        parts = [self.names[e], *self.aliases[e]]
        types = [t for t in self.types[e] if t != CONCEPT]
        if types:
            parts.append(" ".join(t.lower().replace("_", " ") for t in types))
        return " | ".join(parts)

    # ----------------------------------------------------------------------------- similarity

    @cached_property
    def entity_bm25(self) -> BM25Index | None:
        return _bm25([self.entity_text(e) for e in range(self.n_entities)])

    @cached_property
    def relation_bm25(self) -> BM25Index | None:
        return _bm25([self.relation_text(r) for r in range(self.n_relations)])

    def entity_similarity(
        self, query: str, query_vector: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(BM25 scores, cosine scores or None) of every entity for the query."""
        bm25 = self.entity_bm25.scores(query) if self.entity_bm25 is not None else None
        lexical = bm25 if bm25 is not None else np.zeros(self.n_entities, dtype=np.float32)
        dense = None
        if query_vector is not None and self.entity_vectors is not None and self.n_entities:
            with single_threaded_blas():  # (a row's product then does not depend on threads)
                dense = self.entity_vectors @ np.asarray(query_vector, dtype=np.float32)
        return lexical, dense

    def rank_entities(
        self, query: str, k: int, query_vector: np.ndarray | None = None, *, depth: int = 0
    ) -> list[tuple[int, float]]:
        """The `k` most similar entities (hybrid RRF of BM25 and dense), best first."""
        lexical, dense = self.entity_similarity(query, query_vector)
        return hybrid_ranking(lexical, dense, k, depth=depth)

    def relation_similarity(
        self,
        query: str,
        query_vector: np.ndarray | None = None,
        subset: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """(BM25, cosine or None) of relations for the query; only `subset` positions if given
        (then the arrays are aligned with `subset`)."""
        if self.relation_bm25 is not None:
            lexical = self.relation_bm25.scores(query)
        else:
            lexical = np.zeros(self.n_relations, dtype=np.float32)
        dense = None
        if query_vector is not None and self.relation_vectors is not None:
            assert self.relation_vector_rows is not None
            q = np.asarray(query_vector, dtype=np.float32)
            rows = (
                self.relation_vector_rows if subset is None else self.relation_vector_rows[subset]
            )
            dense = np.full(len(rows), -1.0, dtype=np.float32)
            has = rows >= 0
            if has.any():
                dense[has] = self.relation_vectors[rows[has]] @ q
        if subset is not None:
            lexical = lexical[subset]
        return lexical, dense

    def rank_relations(
        self, query: str, k: int, query_vector: np.ndarray | None = None, *, depth: int = 0
    ) -> list[tuple[int, float]]:
        """The `k` relations whose verbalisation is most similar to the query, best first."""
        lexical, dense = self.relation_similarity(query, query_vector)
        return hybrid_ranking(lexical, dense, k, depth=depth)

    # -------------------------------------------------------------------------- hyperedges

    @cached_property
    def hyperedge_incidence(self) -> sp.csr_matrix:
        """(entities, hyperedges): 1 where the entity is a member of the hyperedge."""
        rows, cols = [], []
        for h, edge in enumerate(self.hyperedges):
            for eid in dict.fromkeys(edge.entity_ids):
                e = self.entity_pos.get(eid)
                if e is not None:
                    rows.append(e)
                    cols.append(h)
        return sp.csr_matrix(
            (np.ones(len(rows)), (rows, cols)), shape=(self.n_entities, len(self.hyperedges))
        )

    def hyperedges_of(self, e: int) -> np.ndarray:
        m = self.hyperedge_incidence
        return m.indices[m.indptr[e] : m.indptr[e + 1]]

    @cached_property
    def hyperedge_bm25(self) -> BM25Index | None:
        return _bm25([h.relation for h in self.hyperedges])

    @cached_property
    def topic_pos(self) -> dict[str, int]:
        return {t.id: i for i, t in enumerate(self.topics)}

    @cached_property
    def topic_members(self) -> list[list[int]]:
        """Hyperedge positions of every topic (in hyperedge order)."""
        members: list[list[int]] = [[] for _ in self.topics]
        for h, edge in enumerate(self.hyperedges):
            t = self.topic_pos.get(edge.topic_id or "")
            if t is not None:
                members[t].append(h)
        return members

    @cached_property
    def topic_bm25(self) -> BM25Index | None:
        return _bm25([f"{t.label} {' '.join(t.keywords)}" for t in self.topics])

    @cached_property
    def topic_vectors(self) -> np.ndarray | None:
        """Normalised mean of each topic's hyperedge vectors (None without hyperedge vectors)."""
        if self.hyperedge_vectors is None or not self.topics:
            return None
        means = {
            self.topics[t].id: mean_vector(self.hyperedge_vectors[members])
            for t, members in enumerate(self.topic_members)
            if members
        }
        return topic_matrix(self.topics, means, self.hyperedge_vectors.shape[1])

    # ------------------------------------------------------------------------------ names

    @cached_property
    def name_index(self) -> dict[str, list[int]]:
        """Name key -> entity positions (names, aliases, and names without a "(qualifier)")."""
        index: dict[str, list[int]] = {}
        for e in range(self.n_entities):
            keys: dict[str, None] = {}
            for name in (self.names[e], *self.aliases[e]):
                keys.setdefault(name_key(name))
                base, qualifier = split_qualifier(name)
                if qualifier:
                    keys.setdefault(name_key(base))
            for key in keys:
                if key:
                    index.setdefault(key, []).append(e)
        return index

    @cached_property
    def max_name_tokens(self) -> int:
        return min(MAX_NAME_TOKENS, max((len(k.split()) for k in self.name_index), default=1))


def entity_fields(entities: Sequence[Entity]) -> dict[str, Any]:
    """The entity fields of a `GraphView` (ids, names, aliases, types, descriptions by
    position) from the graph's `Entity` models, in their order."""
    return {
        "entity_ids": [e.id for e in entities],
        "names": [e.name for e in entities],
        "aliases": [list(e.aliases) for e in entities],
        "types": [list(e.types) for e in entities],
        "descriptions": [e.description for e in entities],
    }


def relation_fields(relations: Sequence[Any], pos: Mapping[str, int]) -> dict[str, Any]:
    """The relation fields of a `GraphView` (ids, end positions, labels, provenance passages,
    kinds, weights) from relations with `id`, `source`, `label`, `target`, `passage_ids`,
    `kind` and `weight` (the graph's `Relation` models, or the rows a store reads per query),
    in their order; both ends of each must be in `pos` (entity id -> position)."""
    return {
        "relation_ids": [r.id for r in relations],
        "rel_source": np.array([pos[r.source] for r in relations], dtype=np.int64),
        "rel_target": np.array([pos[r.target] for r in relations], dtype=np.int64),
        "rel_labels": [r.label for r in relations],
        "rel_passages": [list(r.passage_ids) for r in relations],
        "rel_kinds": [r.kind for r in relations],
        "rel_weights": np.array([r.weight for r in relations], dtype=np.float64),
    }


@dataclass
class GraphText:
    """Graph evidence linearised for a prompt, with the passages that ground it."""

    text: str
    passage_ids: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    found: bool = True


def adjacency_from_relations(
    src: np.ndarray, dst: np.ndarray, weights: np.ndarray | None, n: int
) -> sp.csr_matrix:
    """Directed entity adjacency: summed weights of the relations source -> target, no loops."""
    if weights is None:
        weights = np.ones(len(src))
    keep = src != dst
    a = sp.csr_matrix((weights[keep], (src[keep], dst[keep])), shape=(n, n), dtype=np.float64)
    a.sum_duplicates()
    return a


def hybrid_ranking(
    lexical: np.ndarray, dense: np.ndarray | None, k: int, *, depth: int = 0
) -> list[tuple[int, float]]:
    """RRF (k=60) of the top-`depth` lexical and dense positions; the fused top `k`."""
    depth = max(depth, k * 4, 20)
    lists = [top_positions(lexical, depth)]
    if dense is not None:
        lists.append(top_positions(dense, depth, positive=False))
    if len(lists) == 1:
        return [(p, float(lexical[p])) for p in lists[0][:k]]
    return [(int(p), s) for p, s in rrf(lists, k=SIMILARITY_RRF_K)[:k]]


def mean_vector(vectors: np.ndarray) -> np.ndarray:
    """The mean of float32 rows as pgvector's ``avg`` computes it: float64 sums, row after row,
    divided by the count, rounded to float32 (so a Postgres index's server-side topic
    centroids equal the directory's)."""
    total = np.asarray(vectors, dtype=np.float32).astype(np.float64).sum(axis=0)
    return (total / len(vectors)).astype(np.float32)


def topic_matrix(topics: Sequence[Topic], means: dict[str, np.ndarray], dim: int) -> np.ndarray:
    """One unit row per topic: its hyperedges' mean vector normalised (zeros for a topic
    without one)."""
    out = np.zeros((len(topics), dim), dtype=np.float32)
    for t, topic in enumerate(topics):
        v = means.get(topic.id)
        if v is not None:
            out[t] = v / max(float(np.linalg.norm(v)), 1e-12)
    return out


def _bm25(texts: list[str]) -> BM25Index | None:
    if not texts or not any(tokenize(t) for t in texts):
        return None
    return BM25Index.build(texts)


# -- mention matching and name resolution --------------------------------------------------------


def match_mentions(view: GraphView, query: str) -> list[Mention]:
    """Entities named in `query`: every token n-gram equal to a name or alias key.

    A match inside a longer match is dropped ("Lothair" inside "Lothair II"); spans made only of
    stopwords or question words are skipped. `proper` marks spans with a capitalised word (after
    the first word of the query) or a digit; `concept` marks generic noun-chunk entities.
    """
    tokens = _cased_tokens(query)
    words = [t for t, _ in tokens]
    skip = mention_stopwords()  # the question words and the run's profile's own
    index = view.name_index
    found: list[Mention] = []
    max_len = view.max_name_tokens
    for start in range(len(words)):
        for end in range(start + 1, min(len(words), start + max_len) + 1):
            span = words[start:end]
            if all(w in STOPWORDS or w in skip for w in span):
                continue
            entities = index.get(" ".join(span))
            if not entities:
                continue
            proper = any(cap for j, (_, cap) in enumerate(tokens[start:end], start) if j > 0)
            proper = proper or any(w.isdigit() for w in span)
            for e in entities:
                found.append(
                    Mention(
                        entity=e,
                        start=start,
                        end=end,
                        text=" ".join(span),
                        proper=proper,
                        concept=view.is_concept(e),
                    )
                )
    spans = {(m.start, m.end) for m in found}

    def nested(m: Mention) -> bool:
        return any(
            s <= m.start and m.end <= t and (t - s) > m.length for s, t in spans if (s, t) != m.span
        )

    return [m for m in found if not nested(m)]


def resolve_entity(
    view: GraphView,
    text: str,
    query_vector: np.ndarray | None = None,
) -> int | None:
    """The entity an id, a name or an alias denotes: exact id, then exact name/alias key
    (ties to the entity with most passages), then the best similarity match; None if nothing
    shares a word with it."""
    text = text.strip()
    if not text:
        return None
    if text in view.entity_pos:
        return view.entity_pos[text]
    exact = view.name_index.get(name_key(text))
    if exact:
        named = [e for e in exact if not view.is_concept(e)] or exact
        return max(named, key=lambda e: (view.names[e] == text, view.passage_degree[e], -e))
    ranked = view.rank_entities(text, 1, query_vector)
    return ranked[0][0] if ranked else None
