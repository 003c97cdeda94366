"""Exact-match merging (HiGra §3.2): mentions sharing a name key and a type become base entities.

See `exact_groups`; `UnionFind` closes the merges transitively (here and in semantic merging).
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
from scipy.sparse import csgraph
from scipy.sparse import csr_matrix as _csr

from graphseek.knowledge.graph.algorithms.records import GENERIC_TYPES
from graphseek.knowledge.graph.memory.mention_columns import MentionColumns
from graphseek.knowledge.graph.models import UNTYPED, Mention
from graphseek.knowledge.ragged import Groups
from graphseek.knowledge.text import normalize_name


class UnionFind:
    """Union-find over 0..n-1 with path halving; `groups()` lists members in index order."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            self.parent[rb] = ra

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self.parent)):
            out[self.find(i)].append(i)
        return sorted(out.values(), key=lambda g: g[0])


def _bucket_types(members: Sequence[Mention]) -> list[str]:
    """The types a passage-level group is bucketed under: all its types when its mentions agree
    (their type sets pairwise intersect), else its most frequent type; generic types only when
    no specific type is present."""
    sets = [set(m.types or [UNTYPED]) for m in members]
    specific = [t - GENERIC_TYPES for t in sets if t - GENERIC_TYPES]
    if not specific:
        return sorted(set().union(*sets))
    if all(a & b for n, a in enumerate(specific) for b in specific[n + 1 :]):
        return sorted(set().union(*specific))
    counts = Counter(t for types in specific for t in types)
    return [min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]]


def exact_groups(mentions: Sequence[Mention]) -> Groups:
    """Groups of mention indices merged by HiGra's exact-match rule (shared key and type), in
    order of their first member, each in index order.

    One sense per discourse first: mentions of one passage sharing a name or alias key are one
    entity whatever their types (a tagger calling "Akron" GPE in one sentence and ORG in the
    next). Such a passage group then takes part in the global rule with *one* type set
    (`_bucket_types`), so a tagging error cannot chain every GPE "Akron" to every ORG "Akron"
    of the corpus.

    The groups are the connected components of a graph over the mentions whose edges join each
    passage group's members to its first and each passage group to the first one bucketed
    under the same (key, type). Passages are taken one at a time, so only one passage's keys are
    held, and the edges are integer arrays, not the whole corpus's key sets and (passage, key)
    table at once."""
    n = len(mentions)
    if n == 0:
        return Groups.of([])
    passage = _passage_numbers(mentions)
    by_passage = np.argsort(passage, kind="stable")  # each passage's mentions in index order
    starts = np.flatnonzero(np.diff(passage[by_passage])) + 1
    del passage
    rows, cols = array("q"), array("q")
    first: dict[tuple[str, str], int] = {}
    for run in np.split(by_passage, starts):
        members = run.tolist()
        items = [mentions[i] for i in members]  # made once from `MentionColumns`
        for local, group_keys in _passage_groups(items):
            group = [members[k] for k in local]
            head = group[0]
            rows.extend([head] * (len(group) - 1))
            cols.extend(group[1:])
            types = _bucket_types([items[k] for k in local])
            for key in group_keys:
                for t in types:
                    j = first.setdefault((key, t), head)
                    if j != head:
                        rows.append(head)
                        cols.append(j)
    del first, by_passage, starts
    _, labels = components(n, rows, cols)
    del rows, cols
    order = np.argsort(labels, kind="stable")  # each component's members in index order
    starts = np.concatenate([[0], np.flatnonzero(np.diff(labels[order])) + 1, [n]])
    del labels
    groups = Groups(order, starts)
    return groups.take(np.argsort(groups.flat[starts[:-1]], kind="stable"))


def _passage_numbers(mentions: Sequence[Mention]) -> np.ndarray:
    """Each mention's passage as a number (int64; in order of first sight for a plain
    sequence, the columns' own codes for `MentionColumns`)."""
    if isinstance(mentions, MentionColumns):
        return mentions.codes("passage").astype(np.int64)
    numbers: dict[str, int] = {}
    return np.fromiter(
        (numbers.setdefault(m.passage_id, len(numbers)) for m in mentions),
        dtype=np.int64,
        count=len(mentions),
    )


def components(n: int, rows: Sequence[int], cols: Sequence[int]) -> tuple[int, np.ndarray]:
    """Connected components of the undirected graph over 0..n-1 with the edges
    (rows[k], cols[k]): their count and each node's component label."""
    if n == 0:
        return 0, np.zeros(0, dtype=np.int32)
    edges = _csr(
        (np.ones(len(rows), dtype=np.int8), (np.asarray(rows), np.asarray(cols))), shape=(n, n)
    )
    count, labels = csgraph.connected_components(edges, directed=False)
    return int(count), labels


def _passage_groups(mentions: Sequence[Mention]) -> list[tuple[list[int], set[str]]]:
    """The mentions of one passage (in index order) grouped by a shared name or alias key, in
    order of their first member, with each group's keys; members as positions in `mentions`."""
    keys = [{normalize_name(s) for s in (m.name, *m.aliases)} - {""} for m in mentions]
    local = UnionFind(len(mentions))
    seen: dict[str, int] = {}
    for k, found in enumerate(keys):
        for key in found:
            j = seen.setdefault(key, k)
            if j != k:
                local.union(k, j)
    return [(group, set().union(*(keys[k] for k in group))) for group in local.groups()]


def raw_entity_count(mentions: Sequence[Mention]) -> tuple[int, np.ndarray]:
    """Entities before alignment: one per distinct (normalised name, type set), numbered in
    order of first sight. Returns the count and each mention's raw node number (int32). From
    `MentionColumns`, each distinct name and type list is keyed once."""
    index: dict[tuple[str, tuple[str, ...]], int] = {}
    if isinstance(mentions, MentionColumns):
        name_key = [normalize_name(s) or s.lower() for s in mentions.names]
        type_key = [tuple(sorted(set(t))) for t in mentions.types]
        node_of: dict[tuple[int, int], int] = {}
        out = np.empty(len(mentions), dtype=np.int32)
        pairs = zip(mentions.codes("name").tolist(), mentions.codes("types").tolist(), strict=True)
        for k, pair in enumerate(pairs):
            node = node_of.get(pair)
            if node is None:
                key = (name_key[pair[0]], type_key[pair[1]])
                node = node_of[pair] = index.setdefault(key, len(index))
            out[k] = node
        return len(index), out
    nodes = np.fromiter(
        (
            index.setdefault(
                (normalize_name(m.name) or m.name.lower(), tuple(sorted(set(m.types)))),
                len(index),
            )
            for m in mentions
        ),
        dtype=np.int32,
        count=len(mentions),
    )
    return len(index), nodes
