"""GraphSearch's dual-channel retrieval (§3.2): semantic queries over passages, relational
queries over the graph.

- `semantic_query(index, query, k)`: the passages of one semantic sub-query (hybrid search).
- `relational_query(source, patterns)`: one triple pattern or a chain of them, ``(subject,
  relation, object)``, where a term starting with ``?`` (``?x``) or written ``Entity#1`` / ``#1``
  is a placeholder. Constant subjects and objects are resolved to entities by id, name or alias
  (exact key, else the most similar entities); the relation term is matched to relation labels
  by word stems (and BM25 on the verbalised relation when no endpoint is known). Each pattern
  binds its placeholders to the entities at the other end of the matched relations; a bound
  placeholder is a constant in the next patterns, so a chain such as
  ``[("The Worship of Venus", "creator", "?a"), ("?a", "place of death", "?b")]`` is resolved
  hop by hop. Relations are matched in both directions (extraction direction is noisy).

The result is a small subgraph: the matched triples with their provenance passages, the
bindings, and a linearisation for a prompt.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from graphseek.knowledge.passages import Hit
from graphseek.tools.graph_access import (
    GraphText,
    GraphView,
    graph_view,
    label_similarity,
    name_key,
    resolve_entity,
)

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

_PLACEHOLDER = re.compile(r"^(\?\w*|(?:entity)?\s*#\s*\d+)$", re.IGNORECASE)
_PATTERN_TEXT = re.compile(r"^\s*\(?\s*(?P<body>.*?)\s*\)?\s*$")
MAX_CANDIDATES = 3
#: cosine above which a relation matches a relation term without sharing a word with it
DENSE_MATCH = 0.5


def semantic_query(index: IndexStore, query: str, k: int = 5) -> list[Hit]:
    """The `k` passages most relevant to one semantic sub-query (the index's hybrid search)."""
    return list(index.search(query, k=k, method="hybrid"))


@dataclass(frozen=True)
class TriplePattern:
    """``(subject, relation, object)``; placeholders start with ``?`` or read ``Entity#n``."""

    subject: str
    relation: str
    object: str

    @classmethod
    def parse(cls, value: TriplePattern | Sequence[str] | str) -> TriplePattern:
        """From a pattern, a 3-sequence, or text ``"(s, r, o)"`` / ``"s | r | o"``."""
        if isinstance(value, TriplePattern):
            return value
        if isinstance(value, str):
            body = _PATTERN_TEXT.match(value)
            text = body.group("body") if body else value
            parts = [p.strip() for p in (text.split("|") if "|" in text else text.split(","))]
        else:
            parts = [str(p).strip() for p in value]
        if len(parts) != 3:
            raise ValueError(
                f"a triple pattern has three parts (subject, relation, object), got {value!r}"
            )
        return cls(*parts)

    def text(self) -> str:
        return f"({self.subject}, {self.relation}, {self.object})"


def is_placeholder(term: str) -> bool:
    return bool(_PLACEHOLDER.match(term.strip())) or not term.strip()


def _variable(term: str) -> str:
    t = term.strip()
    return t if t.startswith("?") else "#" + re.sub(r"\D", "", t)


@dataclass(frozen=True)
class Triple:
    """A relation that matched a pattern, with its provenance."""

    relation_id: str
    subject: str
    label: str
    object: str
    score: float
    pattern: int
    passage_ids: tuple[str, ...] = ()


@dataclass
class RelationalResult:
    """The subgraph a relational query found."""

    patterns: list[TriplePattern]
    triples: list[Triple] = field(default_factory=list)
    bindings: dict[str, list[str]] = field(default_factory=dict)  # variable -> entity ids
    names: dict[str, str] = field(default_factory=dict)  # entity id -> name
    unresolved: list[str] = field(default_factory=list)

    @property
    def passage_ids(self) -> list[str]:
        return list(dict.fromkeys(p for t in self.triples for p in t.passage_ids))

    @property
    def entity_ids(self) -> list[str]:
        return list(self.names)

    def binding_names(self, variable: str) -> list[str]:
        return [self.names.get(e, e) for e in self.bindings.get(variable, [])]

    def linearise(self) -> str:
        lines = []
        for i, pattern in enumerate(self.patterns):
            lines.append(f"Pattern {i + 1}: {pattern.text()}")
            matched = [t for t in self.triples if t.pattern == i]
            for t in matched:
                lines.append(f"  ({t.subject}, {t.label}, {t.object}) [{', '.join(t.passage_ids)}]")
            if not matched:
                lines.append("  (no matching relation)")
        for var, ids in self.bindings.items():
            lines.append(f"{var} = {', '.join(self.names.get(e, e) for e in ids) or '(unbound)'}")
        for note in self.unresolved:
            lines.append(f"unresolved: {note}")
        return "\n".join(lines)

    def to_text(self) -> GraphText:
        return GraphText(self.linearise(), self.passage_ids, self.entity_ids, bool(self.triples))


def _resolve_term(view: GraphView, term: str) -> list[int]:
    """Entities a constant term may denote: every exact name/alias match (named first, most
    passages first), else the single best resolution."""
    exact = view.name_index.get(name_key(term))
    if exact:
        ranked = sorted(exact, key=lambda e: (view.is_concept(e), -view.passage_degree[e], e))
        return ranked[:MAX_CANDIDATES]
    e = resolve_entity(view, term)
    return [] if e is None else [e]


def relational_query(
    source: Any,
    patterns: TriplePattern | Sequence[str] | str | Sequence[TriplePattern | Sequence[str] | str],
    *,
    bindings: dict[str, list[str]] | None = None,
    top_k: int = 5,
) -> RelationalResult:
    """Resolve one triple pattern or a chain of them against the graph of `source` (an index or
    a `GraphView`); see the module docstring. `bindings` pre-binds placeholders to entity ids."""
    local = None
    if not isinstance(source, GraphView):
        from graphseek.tools.neighbourhood import local_graph

        local = local_graph(source)  # a graph kept in its store: read around the anchors
    if local is not None:
        base = local.base
    else:
        base = source if isinstance(source, GraphView) else graph_view(source)
    embed = None if isinstance(source, GraphView) else getattr(source, "embed", None)
    items = _pattern_list(patterns)
    result = RelationalResult(patterns=items, bindings=dict(bindings or {}))
    for i, pattern in enumerate(items):
        ends: list[list[int] | None] = []  # None = free placeholder
        variables: list[str | None] = []
        for term in (pattern.subject, pattern.object):
            if is_placeholder(term):
                var = _variable(term)
                variables.append(var)
                bound = result.bindings.get(var)
                ends.append(
                    [base.entity_pos[e] for e in bound if e in base.entity_pos]
                    if bound is not None
                    else None
                )
            else:
                variables.append(None)
                found = _resolve_term(base, term)
                if not found:
                    result.unresolved.append(f"no entity matches {term!r}")
                ends.append(found)
        view = base if local is None else _local_view(local, ends, pattern.relation, embed)
        matches = _match(view, ends[0], pattern.relation, ends[1], top_k, embed)
        if local is not None and ends[0] is None and ends[1] is None:
            # ranked on the relations catalogue (no passages): read the matched relations
            local.read_relations(view.relation_ids[r] for r, _, _ in matches)
            view = _with_passages(view, local.view())
        for r, score, forward in matches:
            s, t = int(view.rel_source[r]), int(view.rel_target[r])
            subj, obj = (s, t) if forward else (t, s)
            result.triples.append(
                Triple(
                    view.relation_ids[r],
                    view.names[s],
                    view.rel_labels[r],
                    view.names[t],
                    score,
                    i,
                    tuple(view.rel_passages[r]),
                )
            )
            for e in (s, t):
                result.names.setdefault(view.entity_ids[e], view.names[e])
            for slot, node in ((0, subj), (1, obj)):
                name = variables[slot]
                if name is not None and ends[slot] is None:
                    bound = result.bindings.setdefault(name, [])
                    if view.entity_ids[node] not in bound:
                        bound.append(view.entity_ids[node])
        for slot in (0, 1):
            name = variables[slot]
            if name is not None and ends[slot] is None:
                result.bindings.setdefault(name, [])
    return result


def _with_passages(view: GraphView, read: GraphView) -> GraphView:
    """`view` (the relations catalogue) with the passages of the relations `read` holds."""
    passages = dict(zip(read.relation_ids, read.rel_passages, strict=True))
    out = copy.copy(view)
    out.rel_passages = [passages.get(rid, []) for rid in view.relation_ids]
    return out


def _local_view(local: Any, ends: list[list[int] | None], relation: str, embed: Any) -> GraphView:
    """What `_match` needs for one pattern over a graph kept in its store (a `LocalGraph`): the
    relations of its anchored end, with their vectors; for a pattern with no anchored end (it
    ranks every relation) the relations catalogue: every relation without its passages, read
    once per revision (`RemoteGraph.relation_view`), a scan of the relations table."""
    anchors = ends[0] if ends[0] is not None else ends[1]
    if anchors is None:
        return local.remote.relation_view()  # type: ignore[no-any-return]
    local.expand(anchors)
    if embed is not None and not is_placeholder(relation):
        view = local.view()
        local.read_relation_vectors(
            view.relation_ids[int(r)] for e in anchors for r in view.relations_of(e)
        )
    return local.view()  # type: ignore[no-any-return]


def _pattern_list(patterns: Any) -> list[TriplePattern]:
    if isinstance(patterns, TriplePattern | str):
        return [TriplePattern.parse(patterns)]
    items = list(patterns)
    if len(items) == 3 and all(isinstance(x, str) for x in items):
        return [TriplePattern.parse(items)]
    return [TriplePattern.parse(x) for x in items]


def _match(
    view: GraphView,
    subjects: list[int] | None,
    relation: str,
    objects: list[int] | None,
    k: int,
    embed: Any = None,
) -> list[tuple[int, float, bool]]:
    """(relation position, score, pattern subject is the relation's source) of the best `k`
    relations between the subject and object sets (None = any entity).

    A relation matches when its label shares a word stem with the relation term, or, with an
    embedder and relation vectors, when "<anchor name> <relation term>" is close to the
    verbalised relation (cosine >= `DENSE_MATCH`)."""
    free_label = is_placeholder(relation)
    if subjects is None and objects is None:
        if free_label or not view.n_relations:
            return []
        ranked = view.rank_relations(relation, k * 4)
        scored = [(r, label_similarity(relation, view.rel_labels[r]) + s) for r, s in ranked]
        scored.sort(key=lambda x: (-x[1], x[0]))
        return [(r, score, True) for r, score in scored[:k]]
    anchors = subjects if subjects is not None else objects
    assert anchors is not None
    candidates = {int(r) for e in anchors for r in view.relations_of(e)}
    subject_set = set(subjects) if subjects is not None else None
    object_set = set(objects) if objects is not None else None
    kinds = view.rel_kinds
    dense: dict[int, float] = {}
    if embed is not None and not free_label and candidates and view.relation_vectors is not None:
        order = sorted(candidates)
        text = f"{view.names[anchors[0]]} {relation}"
        qv = view.graph_query(text, embed([text])[0])
        _, sims = view.relation_similarity(relation, qv, np.asarray(order, dtype=np.int64))
        if sims is not None:
            dense = {r: float(x) for r, x in zip(order, sims, strict=True)}
    rows: list[tuple[int, float, bool]] = []
    for r in candidates:
        s, t = int(view.rel_source[r]), int(view.rel_target[r])
        for forward, (a, b) in ((True, (s, t)), (False, (t, s))):
            if subject_set is not None and a not in subject_set:
                continue
            if object_set is not None and b not in object_set:
                continue
            score = 1.0 if free_label else label_similarity(relation, view.rel_labels[r])
            if dense.get(r, 0.0) >= DENSE_MATCH:
                score += dense[r] / 2
            if kinds[r] == "extracted":
                score += 0.01
            rows.append((r, score, forward))
            break
    matched = [x for x in rows if x[1] > 0.01] or (rows if subject_set and object_set else [])
    matched.sort(key=lambda x: (-x[1], not x[2], x[0]))
    return matched[:k]
