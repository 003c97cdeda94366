"""G-RAGent's retrieval primitives over the hyperedge layer (§2.2).

- `retrieve_subgraph(source, topic)`: a topic's sub-hypergraph H_T. `topic` is a topic id, or free
  text matched to the nearest topic (topic labels and keywords by BM25, topic centroids of the
  hyperedge embeddings by cosine when an embedder is at hand, and votes of the hyperedges most
  similar to the text, fused by RRF). With free text, the topic's hyperedges most similar to it
  come first.
- `node_feature(source, entity, attr)`: one attribute of an entity (name, aliases, types,
  description, passages, or all of them).
- `neighbor_check(source, entity, relation=None)`: the hyperedges an entity takes part in (and its
  binary relations), those matching `relation` first when it is given.

`source` is an index (its graph is loaded once, see `graph_view`) or a `GraphView`. Over an
index that keeps its graph in its store (PostgreSQL, `index.graph_neighbourhood()`) nothing is
loaded whole: the primitives find entities on the catalogue (`neighbourhood.RemoteGraph`) and
topics on the hyperedge catalogue (`RemoteGraph.hyper_view`: topics, hyperedge texts and topic
centroids, read once per revision), then read, in one indexed query each, the hyperedges they
show (by id, or by member entity), the entity's relations and its passage links; the output is
the directory's. Every primitive returns a `GraphText`: hyperedges linearised as
``HyperEdge_j: <relation> involves [name_1, ..., name_k]`` (G-RAGent §2.1), and the passage ids
that ground them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

import numpy as np

from graphseek.knowledge.fusion import rrf
from graphseek.knowledge.graph.models import HyperEdge, Topic, linearise_hyperedge
from graphseek.tools.graph_access import (
    GraphNotFoundError,
    GraphText,
    GraphView,
    graph_view,
    label_similarity,
    reads_neighbourhoods,
    resolve_entity,
    top_positions,
)

Attribute = Literal["name", "aliases", "types", "description", "passages", "all"]
ATTRIBUTES: tuple[str, ...] = get_args(Attribute)
TOPIC_VOTE_DEPTH = 20


def _remote(source: Any) -> Any:
    """The `RemoteGraph` of an index that keeps its graph in its store, else None."""
    if not reads_neighbourhoods(source):
        return None
    from graphseek.tools.neighbourhood import remote_graph

    return remote_graph(source)


def _embedder(source: Any) -> Callable[[str], np.ndarray] | None:
    embed = None if isinstance(source, GraphView) else getattr(source, "embed", None)
    if embed is None:
        return None
    return lambda text: np.asarray(embed([text])[0], dtype=np.float32)


def topics_of(source: Any) -> list[Topic] | None:
    """The topics of the graph of `source` (None when it has no graph); over a graph kept in
    its store, read with the hyperedge catalogue, not with the graph."""
    try:
        remote = _remote(source)
        if remote is not None:
            return remote.topics()  # type: ignore[no-any-return]
        return list(graph_view(source).topics)
    except (GraphNotFoundError, NotImplementedError):
        return None


def _names(view: GraphView) -> dict[str, str]:
    return dict(zip(view.entity_ids, view.names, strict=True))


def _passages(edges: list[HyperEdge]) -> list[str]:
    return list(dict.fromkeys(pid for edge in edges for pid in edge.passage_ids))


def find_topic(view: GraphView, text: str, query_vector: np.ndarray | None = None) -> int | None:
    """The topic position for a topic id, or the topic nearest to free text (None if none)."""
    if not view.topics:
        return None
    text = text.strip()
    if text in view.topic_pos:
        return view.topic_pos[text]
    rankings: list[list[int]] = []
    if view.topic_bm25 is not None:
        rankings.append(top_positions(view.topic_bm25.scores(text), len(view.topics)))
    if query_vector is not None and view.topic_vectors is not None:
        rankings.append(
            top_positions(view.topic_vectors @ query_vector, len(view.topics), positive=False)
        )
    if view.hyperedge_bm25 is not None:
        votes: dict[int, float] = {}
        for rank, h in enumerate(top_positions(view.hyperedge_bm25.scores(text), TOPIC_VOTE_DEPTH)):
            t = view.topic_pos.get(view.hyperedges[h].topic_id or "")
            if t is not None:
                votes[t] = votes.get(t, 0.0) + 1.0 / (1 + rank)
        if votes:
            rankings.append(sorted(votes, key=lambda t: (-votes[t], t)))
    rankings = [r for r in rankings if r]
    if not rankings:
        return None
    return int(rrf(rankings, k=10)[0][0])


def retrieve_subgraph(source: Any, topic: str, *, max_edges: int = 30) -> GraphText:
    """The sub-hypergraph of a topic (id or free text), at most `max_edges` hyperedges."""
    remote = _remote(source)
    view = remote.hyper_view() if remote is not None else graph_view(source)
    embed = _embedder(source)
    exact = topic.strip() in view.topic_pos
    qv = embed(topic) if embed is not None and not exact and topic.strip() else None
    t = find_topic(view, topic, view.graph_query(topic, qv) if qv is not None else None)
    if t is None:
        return GraphText(f"No topic matches {topic!r}.", found=False)
    members = list(view.topic_members[t])
    if not exact and view.hyperedge_bm25 is not None and members:
        scores = view.hyperedge_bm25.scores(topic)[members]
        order = np.lexsort((np.arange(len(members)), -scores))
        members = [members[i] for i in order]
    shown = [view.hyperedges[h] for h in members[:max_edges]]
    if remote is not None:  # the catalogue's hyperedges have no members: read those shown
        whole = {h.id: h for h in remote.source.hyperedges(h.id for h in shown)}
        shown = [whole[h.id] for h in shown]
    info = view.topics[t]
    names = _names(view)
    lines = [
        f"Topic {info.id}: {info.label} ({len(members)} hyperedges"
        + (f", showing {len(shown)}" if len(shown) < len(members) else "")
        + ")"
    ]
    lines += [linearise_hyperedge(edge, names, j) for j, edge in enumerate(shown, 1)]
    entity_ids = list(dict.fromkeys(e for edge in shown for e in edge.entity_ids))
    return GraphText("\n".join(lines), _passages(shown), entity_ids)


def node_feature(source: Any, entity: str, attr: Attribute | str = "all") -> GraphText:
    """One attribute of an entity (given by id, name or alias)."""
    remote = _remote(source)
    view = remote.base if remote is not None else graph_view(source)
    if attr not in ATTRIBUTES:
        return GraphText(
            f"Unknown attribute {attr!r}; use one of {', '.join(ATTRIBUTES)}.", found=False
        )
    e = resolve_entity(view, entity)
    if e is None:
        return GraphText(f"No entity matches {entity!r}.", found=False)
    if remote is not None:  # read the entity's passage links
        from graphseek.tools.neighbourhood import LocalGraph

        local = LocalGraph(remote)
        local.link([e])
        passages = local.view().passages_of(e)
    else:
        passages = view.passages_of(e)
    name = view.names[e]
    values: dict[str, str] = {
        "name": name,
        "aliases": ", ".join(view.aliases[e]) or "(none)",
        "types": ", ".join(view.types[e]) or "(none)",
        "description": view.descriptions[e] or "(none)",
        "passages": ", ".join(passages) or "(none)",
    }
    keys = [k for k in ATTRIBUTES if k != "all"] if attr == "all" else [attr]
    lines = [f"Entity {view.entity_ids[e]} ({name})"]
    lines += [f"{k}: {values[k]}" for k in keys]
    return GraphText("\n".join(lines), passages, [view.entity_ids[e]])


def neighbor_check(
    source: Any, entity: str, relation: str | None = None, *, max_edges: int = 20
) -> GraphText:
    """The hyperedges and binary relations of an entity (at most `max_edges` of each); with
    `relation`, only those whose text shares a word stem with it, best match first."""
    remote = _remote(source)
    view = remote.base if remote is not None else graph_view(source)
    e = resolve_entity(view, entity)
    if e is None:
        return GraphText(f"No entity matches {entity!r}.", found=False)
    if remote is not None:  # read the entity's relations and hyperedges
        from graphseek.tools.neighbourhood import LocalGraph

        local = LocalGraph(remote)
        local.expand([e])
        view = local.view()
        all_edges = remote.source.hyperedges_of([view.entity_ids[e]])
    else:
        all_edges = [view.hyperedges[int(h)] for h in view.hyperedges_of(e)]
    names = _names(view)
    edges = list(range(len(all_edges)))
    rels = [int(r) for r in view.relations_of(e)]
    if relation:
        edges = _filter(edges, [all_edges[h].relation for h in edges], relation)
        rels = _filter(rels, [view.rel_labels[r] for r in rels], relation)
    else:
        order = {"extracted": 0, "predicted": 1}
        kinds = view.rel_kinds
        rels.sort(key=lambda r: (order.get(kinds[r], 2), r))
    edges, rels = edges[:max_edges], rels[:max_edges]
    header = f"Neighbours of {view.names[e]} ({view.entity_ids[e]})" + (
        f" for relation {relation!r}" if relation else ""
    )
    lines = [header]
    shown = [all_edges[h] for h in edges]
    lines += [linearise_hyperedge(edge, names, j) for j, edge in enumerate(shown, 1)]
    for r in rels:
        s, label, t = view.relation_triple(r)
        lines.append(f"Relation: ({s}, {label}, {t})")
    if len(lines) == 1:
        lines.append("(no hyperedge or relation found)")
    passages = _passages(shown)
    passages += [p for r in rels for p in view.rel_passages[r] if p not in passages]
    neighbours = {x for edge in shown for x in edge.entity_ids}
    neighbours |= {
        view.entity_ids[int(x)] for r in rels for x in (view.rel_source[r], view.rel_target[r])
    }
    return GraphText(
        "\n".join(lines),
        list(dict.fromkeys(passages)),
        [view.entity_ids[e], *sorted(neighbours - {view.entity_ids[e]})],
        found=bool(edges or rels),
    )


def _filter(items: list[int], texts: list[str], relation: str) -> list[int]:
    scores = [label_similarity(relation, t) for t in texts]
    matched = [i for i, s in zip(items, scores, strict=True) if s > 0]
    if not matched:
        return []
    best = {i: s for i, s in zip(items, scores, strict=True)}
    return sorted(matched, key=lambda i: (-best[i], i))
