"""The knowledge graph of an index as a `GraphView` (`graph_view(index)`, cached per index
revision), and, re-exported here, the lookups every graph retriever shares.

A `GraphView` holds an index's graph in the shape the algorithms want: entity ids, names,
aliases, types and descriptions by position; relations as (source, label, target) position
triples with their provenance passages; a CSR entity -> passage link matrix; a CSR entity
adjacency; hyperedges and topics; and optional entity and relation embeddings. It can be built by
hand from the pydantic models (`GraphView.from_models`, as the tests do) or loaded from the graph
store of an index (`graph_view(index)`, cached per index).

Shared lookups, all plain Python over the view:

- `GraphView.rank_entities` / `rank_relations`: hybrid (BM25 + dense, reciprocal-rank fused)
  similarity of entity strings (name, aliases, types) and verbalised relations
  ("source label target") to a query.
- `match_mentions`: entities whose name or alias occurs in the query (normalised token n-grams,
  the longest match wins), the offline stand-in for an entity recogniser.
- `resolve_entity`: one entity for a name, an alias or an id.
- `passage_search_for(index)`: the index's hybrid passage search, with the query vector reused.

Where the code lives: `graph_arrays` (`GraphView`, rankings, `match_mentions`,
`resolve_entity`), `names` (name tokens and keys), `passage_search` (`passage_search_for`); this
module loads and caches views.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from graphseek.errors import IndexNotFoundError
from graphseek.knowledge.graph.store import vector_space
from graphseek.knowledge.storage import reads_neighbourhoods
from graphseek.tools.graph_arrays import (
    SIMILARITY_RRF_K,
    GraphText,
    GraphView,
    Mention,
    adjacency_from_relations,
    entity_fields,
    hybrid_ranking,
    match_mentions,
    ranks_of,
    relation_fields,
    resolve_entity,
    single_threaded_blas,
    top_positions,
)
from graphseek.tools.names import (
    MAX_NAME_TOKENS,
    QUESTION_WORDS,
    content_words,
    label_similarity,
    name_key,
    name_tokens,
    stem_match,
)
from graphseek.tools.passage_search import (
    IndexPassageSearch,
    PassageSearch,
    passage_lookup_for,
    passage_search_for,
)

if TYPE_CHECKING:
    from graphseek.knowledge.graph.store import GraphStore
    from graphseek.knowledge.storage import IndexStore

__all__ = [
    "GraphNotFoundError",
    "GraphText",
    "GraphView",
    "IndexPassageSearch",
    "MAX_NAME_TOKENS",
    "Mention",
    "PassageSearch",
    "QUESTION_WORDS",
    "SIMILARITY_RRF_K",
    "adjacency_from_relations",
    "content_words",
    "graph_view",
    "hybrid_ranking",
    "label_similarity",
    "load_graph_view",
    "match_mentions",
    "name_key",
    "name_tokens",
    "passage_lookup_for",
    "passage_search_for",
    "ranks_of",
    "reads_neighbourhoods",
    "resolve_entity",
    "revision_of",
    "set_graph_view",
    "single_threaded_blas",
    "stem_match",
    "top_positions",
    "view_of_store",
]


class GraphNotFoundError(IndexNotFoundError):
    """The index has no knowledge graph (build one with ``graphseek index``, which builds graphs unless ``--no-graph``)."""


# -- loading from an index ------------------------------------------------------------------------

_views: weakref.WeakKeyDictionary[Any, tuple[str, GraphView]] = weakref.WeakKeyDictionary()
_views_lock = threading.Lock()


def revision_of(index: IndexStore) -> str:
    """`index.revision` (changes when the index is rewritten), "" for objects without one."""
    return str(getattr(index, "revision", ""))


_per_revision_lock = threading.Lock()


def per_revision(
    cache: weakref.WeakKeyDictionary[Any, tuple[str, Any]], index: IndexStore, make: Any
) -> Any:
    """`make()`'s object for `index`, kept in `cache` per index object and revision: made once,
    and again after the index is rewritten (a retriever's tables over its passages or graph)."""
    revision = revision_of(index)
    with _per_revision_lock:
        hit = cache.get(index)
    if hit is not None and hit[0] == revision:
        return hit[1]
    made = make()
    with _per_revision_lock:
        cache[index] = (revision, made)
    return made


def graph_view(index: IndexStore | GraphView) -> GraphView:
    """The knowledge graph of `index` as a `GraphView` (loaded once per index object and
    revision: after `index.add_documents` / `delete_documents` it is loaded again).

    Raises `GraphNotFoundError` when the index has no graph (build it with
    ``graphseek index``).
    """
    if isinstance(index, GraphView):
        return index
    revision = revision_of(index)
    with _views_lock:
        cached = _views.get(index)
        if cached is None or cached[0] != revision:
            cached = (revision, load_graph_view(index))
            _views[index] = cached
        return cached[1]


def set_graph_view(index: IndexStore, view: GraphView) -> None:
    """Attach a view to an index object (tests, or a graph built in memory)."""
    with _views_lock:
        _views[index] = (revision_of(index), view)


def load_graph_view(index: IndexStore) -> GraphView:
    """Read the graph store of `index` (`IndexStore.open_graph_store`, either backend) into a
    `GraphView`. (When the index serves neighbourhoods, `graphseek.tools.neighbourhood` reads
    per query instead.)"""
    opener = getattr(index, "open_graph_store", None)
    if opener is None:  # not an `IndexStore` (a stand-in with passages only)
        raise GraphNotFoundError(
            f"The index at {getattr(index, 'path', index)} has no knowledge graph; "
            "build one with `graphseek index` (graphs are built unless --no-graph)."
        )
    try:
        store = opener()
    except IndexNotFoundError as exc:
        raise GraphNotFoundError(str(exc)) from exc
    try:
        return view_of_store(store, source=index.location_text)
    finally:
        store.close()


def view_of_store(store: GraphStore, source: str = "") -> GraphView:
    """A `GraphView` of an open graph store (`graphseek.knowledge.graph.store.GraphStore`)."""
    entities = store.entities()
    relations = store.relations()
    links, link_rows, passage_ids = store.entity_passage_matrix()
    entity_ids = [e.id for e in entities]
    if list(link_rows) != entity_ids:
        raise ValueError(f"graph store {source}: link matrix rows are not the entity order")
    adjacency, adjacency_ids = store.adjacency()
    if list(adjacency_ids) != entity_ids:
        raise ValueError(f"graph store {source}: adjacency rows are not the entity order")
    pos = {eid: i for i, eid in enumerate(entity_ids)}
    kept = [r for r in relations if r.source in pos and r.target in pos]
    entity_vectors: np.ndarray | None = None
    vectors, vector_ids = store.entity_embeddings()
    if len(vectors) == len(entity_ids) and list(vector_ids) == entity_ids and len(vectors):
        entity_vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    relation_vectors, relation_rows = None, None
    rvectors, rids = store.relation_embeddings()
    if len(rvectors) and len(rvectors) == len(rids):
        row_of = {rid: i for i, rid in enumerate(rids)}
        relation_rows = np.array([row_of.get(r.id, -1) for r in kept], dtype=np.int64)
        relation_vectors = np.ascontiguousarray(rvectors, dtype=np.float32)
    hyperedges = store.hyperedges()
    hvectors, hids = store.hyperedge_embeddings()
    hyperedge_vectors = None
    if len(hvectors) == len(hyperedges) and list(hids) == [h.id for h in hyperedges]:
        hyperedge_vectors = np.ascontiguousarray(hvectors, dtype=np.float32) if len(hids) else None
    links = sp.csr_matrix(links, dtype=np.float64)
    links.data[:] = 1.0
    by_id = {p.id: p.title for p in store.passages()}
    titles = [by_id.get(pid, "") for pid in passage_ids]
    return GraphView(
        **entity_fields(entities),
        **relation_fields(kept, pos),
        passage_ids=list(passage_ids),
        passage_titles=titles,
        links=links,
        adjacency=sp.csr_matrix(adjacency, dtype=np.float64),
        hyperedges=hyperedges,
        topics=store.topics(),
        entity_vectors=entity_vectors,
        relation_vectors=relation_vectors,
        relation_vector_rows=relation_rows,
        hyperedge_vectors=hyperedge_vectors,
        source=source,
        vector_space=vector_space(store.manifest),
    )
