"""Exact-match merging (HiGra §3.2): mentions sharing a name key and a type become base entities.

See `exact_groups`; `UnionFind` closes the merges transitively (here and in semantic merging).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from graphseek.knowledge.graph.models import UNTYPED, Mention
from graphseek.knowledge.graph.records import GENERIC_TYPES
from graphseek.knowledge.graph.text import normalize_name


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


def exact_groups(mentions: Sequence[Mention]) -> list[list[int]]:
    """Groups of mention indices merged by HiGra's exact-match rule (shared key and type).

    One sense per discourse first: mentions of one passage sharing a name or alias key are one
    entity whatever their types (a tagger calling "Akron" GPE in one sentence and ORG in the
    next). Such a passage group then takes part in the global rule with *one* type set
    (`_bucket_types`), so a tagging error cannot chain every GPE "Akron" to every ORG "Akron"
    of the corpus."""
    keys = [{normalize_name(s) for s in (m.name, *m.aliases)} - {""} for m in mentions]
    local = UnionFind(len(mentions))
    seen: dict[tuple[str, str], int] = {}
    for i, m in enumerate(mentions):
        for key in keys[i]:
            j = seen.setdefault((m.passage_id, key), i)
            if j != i:
                local.union(i, j)
    uf = UnionFind(len(mentions))
    first: dict[tuple[str, str], int] = {}
    for group in local.groups():
        head = group[0]
        for i in group[1:]:
            uf.union(head, i)
        group_keys = set().union(*(keys[i] for i in group))
        for key in group_keys:
            for t in _bucket_types([mentions[i] for i in group]):
                j = first.setdefault((key, t), head)
                if j != head:
                    uf.union(head, j)
    return uf.groups()


def raw_entity_count(mentions: Sequence[Mention]) -> tuple[int, list[int]]:
    """Entities before alignment: one per distinct (normalised name, type set). Returns the
    count and each mention's raw node index."""
    index: dict[tuple[str, tuple[str, ...]], int] = {}
    nodes = []
    for m in mentions:
        key = (normalize_name(m.name) or m.name.lower(), tuple(sorted(set(m.types))))
        nodes.append(index.setdefault(key, len(index)))
    return len(index), nodes
