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

`source` is an index (its graph is loaded once, see `graph_view`) or a `GraphView`. Every
primitive returns a `GraphText`: hyperedges linearised as ``HyperEdge_j: <relation> involves
[name_1, ..., name_k]`` (G-RAGent §2.1), and the passage ids that ground them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

import numpy as np

from graphseek.knowledge.fusion import rrf
from graphseek.knowledge.graph.models import linearise_hyperedge
from graphseek.tools.graph_access import (
    GraphText,
    GraphView,
    graph_view,
    label_similarity,
    resolve_entity,
    top_positions,
)

Attribute = Literal["name", "aliases", "types", "description", "passages", "all"]
ATTRIBUTES: tuple[str, ...] = get_args(Attribute)
TOPIC_VOTE_DEPTH = 20


def _view_and_embed(source: Any) -> tuple[GraphView, Callable[[str], np.ndarray] | None]:
    if isinstance(source, GraphView):
        return source, None
    view = graph_view(source)
    embed = getattr(source, "embed", None)
    if embed is None:
        return view, None
    return view, lambda text: np.asarray(embed([text])[0], dtype=np.float32)


def _names(view: GraphView) -> dict[str, str]:
    return dict(zip(view.entity_ids, view.names, strict=True))


def _hyperedge_passages(view: GraphView, positions: list[int]) -> list[str]:
    return list(dict.fromkeys(pid for h in positions for pid in view.hyperedges[h].passage_ids))


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
    view, embed = _view_and_embed(source)
    exact = topic.strip() in view.topic_pos
    qv = embed(topic) if embed is not None and not exact and topic.strip() else None
    t = find_topic(view, topic, qv)
    if t is None:
        return GraphText(f"No topic matches {topic!r}.", found=False)
    members = list(view.topic_members[t])
    if not exact and view.hyperedge_bm25 is not None and members:
        scores = view.hyperedge_bm25.scores(topic)[members]
        order = np.lexsort((np.arange(len(members)), -scores))
        members = [members[i] for i in order]
    shown = members[:max_edges]
    info = view.topics[t]
    names = _names(view)
    lines = [
        f"Topic {info.id}: {info.label} ({len(members)} hyperedges"
        + (f", showing {len(shown)}" if len(shown) < len(members) else "")
        + ")"
    ]
    lines += [linearise_hyperedge(view.hyperedges[h], names, j) for j, h in enumerate(shown, 1)]
    entity_ids = list(dict.fromkeys(e for h in shown for e in view.hyperedges[h].entity_ids))
    return GraphText("\n".join(lines), _hyperedge_passages(view, shown), entity_ids)


def node_feature(source: Any, entity: str, attr: Attribute | str = "all") -> GraphText:
    """One attribute of an entity (given by id, name or alias)."""
    view, _ = _view_and_embed(source)
    if attr not in ATTRIBUTES:
        return GraphText(
            f"Unknown attribute {attr!r}; use one of {', '.join(ATTRIBUTES)}.", found=False
        )
    e = resolve_entity(view, entity)
    if e is None:
        return GraphText(f"No entity matches {entity!r}.", found=False)
    name = view.names[e]
    values: dict[str, str] = {
        "name": name,
        "aliases": ", ".join(view.aliases[e]) or "(none)",
        "types": ", ".join(view.types[e]) or "(none)",
        "description": view.descriptions[e] or "(none)",
        "passages": ", ".join(view.passages_of(e)) or "(none)",
    }
    keys = [k for k in ATTRIBUTES if k != "all"] if attr == "all" else [attr]
    lines = [f"Entity {view.entity_ids[e]} ({name})"]
    lines += [f"{k}: {values[k]}" for k in keys]
    return GraphText("\n".join(lines), view.passages_of(e), [view.entity_ids[e]])


def neighbor_check(
    source: Any, entity: str, relation: str | None = None, *, max_edges: int = 20
) -> GraphText:
    """The hyperedges and binary relations of an entity (at most `max_edges` of each); with
    `relation`, only those whose text shares a word stem with it, best match first."""
    view, _ = _view_and_embed(source)
    e = resolve_entity(view, entity)
    if e is None:
        return GraphText(f"No entity matches {entity!r}.", found=False)
    names = _names(view)
    edges = [int(h) for h in view.hyperedges_of(e)]
    rels = [int(r) for r in view.relations_of(e)]
    if relation:
        edges = _filter(edges, [view.hyperedges[h].relation for h in edges], relation)
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
    lines += [linearise_hyperedge(view.hyperedges[h], names, j) for j, h in enumerate(edges, 1)]
    for r in rels:
        s, label, t = view.relation_triple(r)
        lines.append(f"Relation: ({s}, {label}, {t})")
    if len(lines) == 1:
        lines.append("(no hyperedge or relation found)")
    passages = _hyperedge_passages(view, edges)
    passages += [p for r in rels for p in view.rel_passages[r] if p not in passages]
    neighbours = {x for h in edges for x in view.hyperedges[h].entity_ids}
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
