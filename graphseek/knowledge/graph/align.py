"""Phase 2 of HiGra (§3.2): entity alignment, from mentions to entities.

1. **Exact-match merging**: two mentions merge when they share a normalised name or alias *and*
   at least one type (union-find over ``(name key, type)`` buckets, which is exactly the paper's
   pairwise condition closed transitively), or share a name key inside one passage (one sense
   per discourse; NER types of one name often differ between sentences; see `exact_groups`).
   The groups are the *base entities*.
2. **Semantic merging**: base entities are embedded (by default the normalised sum of their
   mentions' contextual vectors from the passage pass, `graphseek.knowledge.graph.contextual`,
   an entity without one getting no vector or, with `embed_outside`, its record string's;
   else MiniLM over ``"name; aliases; types"``); every pair within cosine distance `tau` of
   each other (FAISS range search, at most
   `max_neighbors` per entity; above `EXACT_PAIRS_MAX` base entities an HNSW search that
   finds nearly all of them in n log n instead of n^2 work) is a candidate, i.e. the clusters
   are the connected components of the radius graph (DBSCAN with ``min_samples=1``). Merges
   inside a cluster are decided
   - by the LLM (structured output, `MergeGroups`), one call per cluster chunk of at most
     `max_cluster_size` entities, in parallel; or
   - offline, per candidate pair: a name or alias of one matches one of the other
     (`names_match`: variants, acronyms, plurals; rapidfuzz for typos), the types are
     compatible (shared, same NER family, or one side generic ``CONCEPT``/``ENTITY`` with a
     capitalised name), and the descriptions, when both have one, are not unrelated
     (cosine >= `description_min`). A generic entity whose accepted partners have incompatible
     types is ambiguous and merges with none of them.
   Accepted pairs are closed transitively (union-find).

Provenance is kept: every entity lists the mention ids and passage ids it came from.

Incremental use: `AlignmentCache` carries the previous run's base-entity embeddings and pair
decisions. Base entities whose member mentions did not change keep their decisions with each
other; only new or changed base entities are searched and decided. With the offline decision this
gives exactly the entities of a full rebuild (up to `EXACT_PAIRS_MAX` base entities; above it the
approximate search of a rebuild can find a few pairs the update's did not, or the reverse); with
an LLM, clusters touched by new entities are re-asked (answers for unchanged prompts come from
the response cache).
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.contextual import base_vectors
from graphseek.knowledge.graph.models import CONCEPT, UNTYPED, Entity, Mention
from graphseek.knowledge.graph.text import names_match, normalize_name, stable_id

log = logging.getLogger(__name__)

GENERIC_TYPES = frozenset({CONCEPT, UNTYPED})
#: NER labels that may name the same referent when a tagger hesitates between them
TYPE_FAMILIES: dict[str, str] = {
    "PERSON": "person",
    "ORG": "org",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "WORK_OF_ART": "work",
    "PRODUCT": "work",
    "LAW": "work",
    "EVENT": "event",
    "DATE": "time",
    "TIME": "time",
}
#: types whose near-duplicates are different values, never worth a "similar" edge
VALUE_TYPES = frozenset({"DATE", "TIME", "MONEY", "PERCENT", "QUANTITY", "CARDINAL", "ORDINAL"})

Embed = Callable[[Sequence[str]], np.ndarray]


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


# -- records ------------------------------------------------------------------------------------


@dataclass
class EntityRecord:
    """Aggregated attributes of a group of mentions (a base or a final entity)."""

    name: str
    aliases: list[str]
    description: str
    types: list[str]
    mention_ids: list[str]
    passage_ids: list[str]

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]

    def embedding_text(self) -> str:
        """``"name; alias, alias; TYPE, TYPE"`` (the text semantic merging embeds)."""
        parts = [self.name]
        if self.aliases:
            parts.append(", ".join(self.aliases[:8]))
        parts.append(", ".join(self.types))
        return "; ".join(parts)


def aggregate(mentions: Sequence[Mention]) -> EntityRecord:
    """Name = the most frequent surface of the most frequent name key (ties: longer, then
    alphabetical); aliases = every other surface, one per key; types by frequency (``CONCEPT``
    and ``ENTITY`` dropped when a specific type is present); description = the most frequent.
    (Counts in plain dicts: called once per base and per final entity, tens of thousands of
    times a build, where `Counter` objects cost more than the counting.)"""
    key_counts: dict[str, int] = {}
    surfaces: dict[str, dict[str, int]] = {}
    for m in mentions:
        key = _name_key(m.name)
        key_counts[key] = key_counts.get(key, 0) + 1
        counts = surfaces.setdefault(key, {})
        counts[m.name] = counts.get(m.name, 0) + 1
    best_key = min(key_counts.items(), key=_frequent_longer)[0]
    name = _most_frequent({s: c for s, c in surfaces[best_key].items() if s})
    alias_keys: dict[str, dict[str, int]] = {}
    for m in mentions:
        for surface in (m.name, *m.aliases):
            key = _name_key(surface)
            if key != best_key:
                counts = alias_keys.setdefault(key, {})
                counts[surface] = counts.get(surface, 0) + 1
    aliases = [min(alias_keys[key].items(), key=_frequent_first)[0] for key in sorted(alias_keys)]
    type_counts: dict[str, int] = {}
    for m in mentions:
        for t in m.types:
            type_counts[t] = type_counts.get(t, 0) + 1
    types = [t for t, _ in sorted(type_counts.items(), key=_frequent_first)]
    specific = [t for t in types if t not in GENERIC_TYPES]
    types = specific or types or [UNTYPED]
    descriptions: dict[str, int] = {}
    for m in mentions:
        if m.description:
            descriptions[m.description] = descriptions.get(m.description, 0) + 1
    return EntityRecord(
        name=name,
        aliases=aliases,
        description=_most_frequent(descriptions),
        types=types,
        mention_ids=sorted(m.id for m in mentions),
        passage_ids=sorted({m.passage_id for m in mentions}),
    )


def _name_key(surface: str) -> str:
    return normalize_name(surface) or surface.lower()


def _frequent_longer(item: tuple[str, int]) -> tuple[int, int, str]:
    return -item[1], -len(item[0]), item[0]


def _frequent_first(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _most_frequent(counts: dict[str, int]) -> str:
    """The most frequent of counted non-empty values; ties go to the longer, then the
    alphabetically first ("" when there is none)."""
    return min(counts.items(), key=_frequent_longer)[0] if counts else ""


def types_compatible(a: Iterable[str], b: Iterable[str]) -> bool:
    """Shared type, same NER family, or one side only generic (``CONCEPT``/``ENTITY``)."""
    ta, tb = set(a), set(b)
    if not ta or not tb or ta & tb:
        return True
    if ta <= GENERIC_TYPES or tb <= GENERIC_TYPES:
        return True
    fa = {TYPE_FAMILIES[t] for t in ta if t in TYPE_FAMILIES}
    fb = {TYPE_FAMILIES[t] for t in tb if t in TYPE_FAMILIES}
    return bool(fa & fb)


def _looks_proper(name: str) -> bool:
    first = next((c for c in name if c.isalpha()), "")
    return first.isupper()


def _generic_may_join(a: EntityRecord, b: EntityRecord) -> bool:
    """A generic-only entity (a noun chunk) joins a typed one only when its name looks like a
    proper name: "Lothair II" missed by the tagger, not "film director" mis-tagged PERSON."""
    ga, gb = set(a.types) <= GENERIC_TYPES, set(b.types) <= GENERIC_TYPES
    if ga == gb:
        return True
    generic = a if ga else b
    return _looks_proper(generic.name)


def any_name_match(a: EntityRecord, b: EntityRecord, limit: int = 10) -> bool:
    return any(names_match(x, y) for x in a.names[:limit] for y in b.names[:limit])


# -- exact merging ------------------------------------------------------------------------------


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


# -- semantic merging ---------------------------------------------------------------------------


class MergeGroups(BaseModel):
    """The LLM's merge decision for one cluster."""

    reason: str = Field(default="", description="Why these records are or are not the same.")
    groups: list[list[int]] = Field(
        default_factory=list,
        description="Each group lists the numbers of records that name one referent.",
    )


@dataclass
class AlignmentCache:
    """What a previous alignment leaves for the next: vectors by text, base entity ids, and
    decided candidate pairs ``(base id a, base id b) -> (cosine, merged)`` with a < b."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    base_ids: set[str] = field(default_factory=set)
    pairs: dict[tuple[str, str], tuple[float, bool]] = field(default_factory=dict)


@dataclass
class AlignmentResult:
    entities: list[Entity]
    mention_entity: dict[str, str]
    base_ids: list[str]
    base_texts: list[str]
    base_vectors: np.ndarray
    base_entity: list[str]
    """The final entity id of each base entity."""
    pairs: dict[tuple[str, str], tuple[float, bool]]
    mention_base: dict[str, str]
    counts: dict[str, int]
    raw_nodes: list[int]
    """Each mention's node in the graph before alignment (see `raw_entity_count`)."""
    llm_usage: Any = None


def cached_encode(texts: Sequence[str], embed: Embed, cache: dict[str, np.ndarray]) -> np.ndarray:
    """Vectors for `texts`, encoding only those not in `cache` (which is updated)."""
    missing = sorted({t for t in texts if t not in cache})
    if missing:
        vectors = embed(missing)
        for text, vector in zip(missing, vectors, strict=True):
            cache[text] = np.asarray(vector, dtype=np.float32)
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([cache[t] for t in texts]).astype(np.float32, copy=False)


EXACT_PAIRS_MAX = 100_000
"""Up to this many base entities, semantic-merge candidates come from an exact search, which
compares every pair: n^2 work, 40-50 CPU s at the 63K base entities of the 2Wiki corpus, about
750 at 254K and hours at the ~1M of a 100K-passage corpus. Above it they come from an HNSW graph
(`hnsw_neighbours`: 142 CPU s at 254K and 601 at 1M, finding 99.3% and 97.9% of the exact
pairs). `benchmarks/alignment_scaling.py` prints both."""
HNSW_LINKS = 32
"""Links per vector of the approximate search's HNSW graph (FAISS `IndexHNSWFlat`)."""
HNSW_BUILD_DEPTH = 40
"""Candidates kept while the HNSW graph is built (``efConstruction``)."""
HNSW_SEARCH_DEPTH = 64
"""Candidates kept per query while it searches (``efSearch``; at least the neighbours asked)."""


def radius_pairs(
    vectors: np.ndarray,
    queries: Sequence[int],
    tau: float,
    max_neighbors: int,
    *,
    exact_max: int | None = None,
) -> dict[tuple[int, int], float]:
    """Index pairs (i < j) with cosine >= 1 - tau, i or j in `queries`; at most `max_neighbors`
    (the nearest) per query. Exact while it compares at most `exact_max`² pairs (default
    `EXACT_PAIRS_MAX`): every pair of up to `exact_max` vectors, or a few queries against many
    more vectors (an update of a large store, where building an HNSW graph over all of them
    would cost more than the exact search); above, the nearest come from `hnsw_neighbours`
    (approximate: a few pairs are missed)."""
    out: dict[tuple[int, int], float] = {}
    if len(vectors) < 2 or not queries:
        return out
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    q = np.asarray(queries, dtype=np.int64)
    threshold = 1.0 - tau - 1e-6
    limit = EXACT_PAIRS_MAX if exact_max is None else exact_max
    if len(q) * len(data) <= limit * limit:
        rows = _exact_radius(data, q, threshold)
    else:
        rows = hnsw_neighbours(data, q, max_neighbors + 1, threshold)
    for i, (cand, sim) in zip(q.tolist(), rows, strict=True):
        order = np.lexsort((cand, -sim))
        kept = 0
        for k in order.tolist():
            j = int(cand[k])
            if j == i:
                continue
            pair = (i, j) if i < j else (j, i)
            out.setdefault(pair, float(sim[k]))
            kept += 1
            if kept >= max_neighbors:
                break
    return out


def _exact_radius(
    data: np.ndarray, queries: np.ndarray, threshold: float
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per query, in order: every row with inner product >= `threshold` (ids, similarities).
    Searched 4,096 queries at a time, so only one block's results are held (every row as a
    query: `_exact_radius_all`)."""
    import faiss

    if len(queries) == len(data) and bool((queries == np.arange(len(data))).all()):
        yield from _exact_radius_all(data, threshold)
        return
    index = faiss.IndexFlatIP(data.shape[1])
    index.add(data)
    for start in range(0, len(queries), 4096):
        ids = queries[start : start + 4096]
        lims, sims, found = index.range_search(data[ids], threshold)
        for r in range(len(ids)):
            yield found[lims[r] : lims[r + 1]], sims[lims[r] : lims[r + 1]]


def _exact_radius_all(
    data: np.ndarray, threshold: float, block: int = 4096
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """`_exact_radius` with every row as a query, each pair's inner product computed once (half
    the work of searching every row against every row): rows ``[s, e)`` are searched against
    rows ``s..`` only, and a hit beyond the block is also a hit of that row's list."""
    import faiss

    n = len(data)
    rows: list[np.ndarray] = []
    cands: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for start in range(0, n, block):
        stop = min(n, start + block)
        index = faiss.IndexFlatIP(data.shape[1])
        index.add(data[start:])
        lims, found_sims, found = index.range_search(data[start:stop], threshold)
        query = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(lims).astype(np.int64))
        found = found.astype(np.int64) + start
        beyond = found >= stop
        rows += [query, found[beyond]]
        cands += [found, query[beyond]]
        sims += [found_sims, found_sims[beyond]]
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")
    row, cand, sim = row[order], np.concatenate(cands)[order], np.concatenate(sims)[order]
    bounds = np.searchsorted(row, np.arange(n + 1))
    for i in range(n):
        yield cand[bounds[i] : bounds[i + 1]], sim[bounds[i] : bounds[i + 1]]


def hnsw_neighbours(
    data: np.ndarray, queries: np.ndarray, k: int, threshold: float
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Per query: its `k` nearest rows with inner product >= `threshold` (ids, similarities),
    from a FAISS HNSW graph over `data` (approximate: a near pair can be missed; the
    similarities of what it finds are exact). Building and searching grow as n log n."""
    import faiss

    index = faiss.IndexHNSWFlat(data.shape[1], HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_BUILD_DEPTH
    index.add(data)
    index.hnsw.efSearch = max(HNSW_SEARCH_DEPTH, k)
    for start in range(0, len(queries), 4096):
        ids = queries[start : start + 4096]
        sims, found = index.search(data[ids], k)
        for row in range(len(ids)):
            keep = (found[row] >= 0) & (sims[row] >= threshold)
            yield found[row][keep], sims[row][keep]


def _blocked_pairs(
    keys: Sequence[set[Any]],
    queries: Sequence[int],
    max_group: int,
    accept: Callable[[int, int], bool] | None = None,
) -> set[tuple[int, int]]:
    """Index pairs (i < j) of items sharing a blocking key (`keys[k]`: item k's keys), i or j
    in `queries`, that `accept` (when given) accepts. Keys of more than `max_group` items are
    skipped."""
    by_key: dict[Any, list[int]] = defaultdict(list)
    for k, found in enumerate(keys):
        for key in found:
            by_key[key].append(k)
    out: set[tuple[int, int]] = set()
    for i in queries:
        for key in keys[i]:
            group = by_key[key]
            if len(group) > max_group:
                continue
            for j in group:
                pair = (i, j) if i < j else (j, i)
                if j != i and pair not in out and (accept is None or accept(i, j)):
                    out.add(pair)
    return out


def name_pairs(
    base: Sequence[EntityRecord], queries: Sequence[int], max_group: int
) -> set[tuple[int, int]]:
    """Index pairs (i < j) of base entities sharing a normalised name or alias (their types
    differ, or exact merging would have joined them), i or j in `queries`. Keys shared by more
    than `max_group` entities are skipped."""
    keys = [{normalize_name(n) for n in record.names} - {""} for record in base]
    return _blocked_pairs(keys, queries, max_group)


def variant_pairs(
    base: Sequence[EntityRecord], queries: Sequence[int], max_group: int
) -> set[tuple[int, int]]:
    """Index pairs (i < j) of multi-word base entities whose names are variants of each other
    (`any_name_match`: ``"Steph Curry"``/``"Stephen Curry"``), i or j in `queries`. Candidates
    come from blocks of names with the same word count and the same word at one position;
    blocks of more than `max_group` entities are skipped. Contextual vectors place a name's
    variants apart when their passages differ; this finds the variants record vectors did."""
    keys: list[set[tuple[int, int, str]]] = []
    for record in base:
        found: set[tuple[int, int, str]] = set()
        for name in record.names[:10]:
            words = normalize_name(name).split()
            if len(words) > 1:
                found.update((len(words), p, w) for p, w in enumerate(words) if len(w) >= 3)
        keys.append(found)
    return _blocked_pairs(keys, queries, max_group, lambda i, j: any_name_match(base[i], base[j]))


def ambiguous_generics(
    base: Sequence[EntityRecord],
    position: dict[str, int],
    pairs: dict[tuple[str, str], tuple[float, bool]],
) -> set[str]:
    """Generic-only (``CONCEPT``/``ENTITY``) base entities whose accepted partners have
    incompatible types ("Paris" the concept matching both the city and the person): merging
    them would chain unrelated entities, so none of their merges is applied."""
    partners: dict[str, list[str]] = defaultdict(list)
    for (a, b), (_, merged) in pairs.items():
        if merged:
            partners[a].append(b)
            partners[b].append(a)
    blocked: set[str] = set()
    for bid, others in partners.items():
        if not set(base[position[bid]].types) <= GENERIC_TYPES:
            continue
        typed = [
            base[position[o]].types
            for o in others
            if not set(base[position[o]].types) <= GENERIC_TYPES
        ]
        if any(not types_compatible(x, y) for n, x in enumerate(typed) for y in typed[n + 1 :]):
            blocked.add(bid)
    return blocked


def clusters_of(pairs: Iterable[tuple[int, int]], max_size: int) -> list[list[int]]:
    """Connected components of the candidate graph, split into chunks of at most `max_size`."""
    pairs = list(pairs)
    nodes = sorted({i for p in pairs for i in p})
    position = {n: k for k, n in enumerate(nodes)}
    uf = UnionFind(len(nodes))
    for a, b in pairs:
        uf.union(position[a], position[b])
    out: list[list[int]] = []
    for group in uf.groups():
        members = [nodes[k] for k in group]
        for start in range(0, len(members), max(2, max_size)):
            chunk = members[start : start + max(2, max_size)]
            if len(chunk) > 1:
                out.append(chunk)
    return out


def describe(records: Sequence[EntityRecord]) -> str:
    """The entity listing the merge and link prompts show."""
    lines = []
    for n, r in enumerate(records, 1):
        aliases = ", ".join(r.aliases[:8]) or "-"
        lines.append(
            f"{n}. name={r.name}; aliases={aliases}; types={', '.join(r.types)}; "
            f"description={r.description or '-'}"
        )
    return "\n".join(lines)


class Aligner:
    """Runs exact and semantic merging (see the module docstring)."""

    def __init__(
        self,
        *,
        embed: Embed,
        tau: float = 0.25,
        max_neighbors: int = 30,
        description_min: float = 0.2,
        model: Any = None,
        max_cluster_size: int = 12,
        max_concurrency: int = 8,
        max_retries: int = 2,
        show_progress: bool = False,
        embed_outside: bool = False,
    ) -> None:
        """`embed_outside`: with contextual vectors, a base entity with none (all its
        mentions past the encoder's window) gets its record string's vector from `embed`;
        otherwise it has no vector (a zero row), and its merge candidates come by name."""
        if not 0.0 <= tau <= 2.0:
            raise ValueError(f"tau is a cosine distance in [0, 2], got {tau}")
        self.embed = embed
        self.tau = tau
        self.max_neighbors = max_neighbors
        self.description_min = description_min
        self.model = model
        self.max_cluster_size = max_cluster_size
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.show_progress = show_progress
        self.embed_outside = embed_outside

    def align(
        self,
        mentions: Sequence[Mention],
        cache: AlignmentCache | None = None,
        mention_vectors: dict[str, np.ndarray] | None = None,
    ) -> AlignmentResult:
        """Exact, then semantic merging of `mentions`. Base entities are compared by the
        vectors of their record strings, or, given `mention_vectors` (contextual vectors by
        mention id, `graphseek.knowledge.graph.contextual`), by the normalised sum of their
        mentions' vectors (those with none: see `embed_outside`)."""
        cache = cache or AlignmentCache()
        mentions = sorted(mentions, key=lambda m: m.id)
        raw_count, raw_nodes = raw_entity_count(mentions)
        groups = exact_groups(mentions)
        base = [aggregate([mentions[i] for i in g]) for g in groups]
        base_ids = [stable_id("b", *r.mention_ids, length=16) for r in base]
        order = sorted(range(len(base)), key=lambda k: base_ids[k])
        base = [base[k] for k in order]
        base_ids = [base_ids[k] for k in order]
        texts = [r.embedding_text() for r in base]
        changed = [k for k, bid in enumerate(base_ids) if bid not in cache.base_ids]

        def by_name() -> set[tuple[int, int]]:
            named = name_pairs(base, changed, self.max_neighbors)
            if mention_vectors is not None:
                named |= variant_pairs(base, changed, self.max_neighbors)
            return named

        # candidates by name (Python) while the base vectors are made and searched (the
        # encoder's and FAISS's threads release the GIL), so the two share the cores
        named_pairs = Background(by_name)
        vectors = self._base_vectors(base, texts, cache, mention_vectors)
        if not len(vectors):
            vectors = np.zeros((0, 1), dtype=np.float32)
        position = {bid: k for k, bid in enumerate(base_ids)}

        # decisions kept from the previous run: both ends unchanged
        pairs: dict[tuple[str, str], tuple[float, bool]] = {
            key: value
            for key, value in cache.pairs.items()
            if key[0] in position and key[1] in position
        }
        candidates = radius_pairs(vectors, changed, self.tau, self.max_neighbors)
        for i, j in named_pairs.result():
            if (i, j) not in candidates:
                candidates[(i, j)] = float(vectors[i] @ vectors[j])
        fresh = {
            (base_ids[i], base_ids[j]): sim
            for (i, j), sim in candidates.items()
            if (base_ids[i], base_ids[j]) not in pairs
        }
        usage = None
        if fresh:
            if self.model is None:
                decided = self._decide_offline(fresh, base, position, cache)
            else:
                decided, usage = self._decide_llm(fresh, base, position)
            pairs.update(decided)

        blocked = ambiguous_generics(base, position, pairs) if self.model is None else set()
        uf = UnionFind(len(base))
        for (a, b), (_, merged) in pairs.items():
            if merged and a not in blocked and b not in blocked:
                uf.union(position[a], position[b])
        entities: list[Entity] = []
        base_entity = [""] * len(base)
        used: set[str] = set()
        mention_index = {m.id: m for m in mentions}
        for group in uf.groups():
            if len(group) == 1:  # `aggregate` of one base entity's mentions is its record
                record = base[group[0]]
            else:
                record = aggregate(
                    [mention_index[mid] for k in group for mid in base[k].mention_ids]
                )
            eid = stable_id("e", normalize_name(record.name) or record.name, record.types[0])
            if eid in used:
                eid = stable_id("e", record.name, record.types[0], record.mention_ids[0])
            used.add(eid)
            for k in group:
                base_entity[k] = eid
            entities.append(
                Entity(
                    id=eid,
                    name=record.name,
                    aliases=record.aliases,
                    description=record.description,
                    types=record.types,
                    passage_ids=record.passage_ids,
                    mention_ids=record.mention_ids,
                )
            )
        entities.sort(key=lambda e: e.id)
        mention_entity = {mid: e.id for e in entities for mid in e.mention_ids}
        counts = {
            "mentions": len(mentions),
            "before_alignment": raw_count,
            "after_exact": len(base),
            "after_semantic": len(entities),
            "candidate_pairs": len(pairs),
            "merged_pairs": sum(1 for _, merged in pairs.values() if merged),
        }
        return AlignmentResult(
            entities=entities,
            mention_entity=mention_entity,
            base_ids=base_ids,
            base_texts=texts,
            base_vectors=vectors,
            base_entity=base_entity,
            pairs=pairs,
            mention_base={mid: base_ids[k] for k, r in enumerate(base) for mid in r.mention_ids},
            counts=counts,
            raw_nodes=raw_nodes,
            llm_usage=usage,
        )

    def _base_vectors(
        self,
        base: Sequence[EntityRecord],
        texts: list[str],
        cache: AlignmentCache,
        mention_vectors: dict[str, np.ndarray] | None,
    ) -> np.ndarray:
        if not mention_vectors or not base:
            return cached_encode(texts, self.embed, cache.vectors)
        dim = len(next(iter(mention_vectors.values())))
        vectors, missing = base_vectors([r.mention_ids for r in base], mention_vectors, dim)
        if missing and self.embed_outside:
            vectors[missing] = cached_encode([texts[k] for k in missing], self.embed, cache.vectors)
        return vectors

    # -- decisions ------------------------------------------------------------------------------

    def _decide_offline(
        self,
        fresh: dict[tuple[str, str], float],
        base: Sequence[EntityRecord],
        position: dict[str, int],
        cache: AlignmentCache,
    ) -> dict[tuple[str, str], tuple[float, bool]]:
        out: dict[tuple[str, str], tuple[float, bool]] = {}
        need_description: list[tuple[str, str]] = []
        for (a, b), sim in fresh.items():
            ra, rb = base[position[a]], base[position[b]]
            ok = (
                types_compatible(ra.types, rb.types)
                and _generic_may_join(ra, rb)
                and any_name_match(ra, rb)
            )
            out[(a, b)] = (sim, ok)
            if ok and ra.description and rb.description and ra.description != rb.description:
                need_description.append((a, b))
        if need_description and self.description_min > -1.0:
            texts = sorted(
                {base[position[x]].description for pair in need_description for x in pair}
            )
            vecs = cached_encode(texts, self.embed, cache.vectors)
            row = {t: k for k, t in enumerate(texts)}
            for a, b in need_description:
                va = vecs[row[base[position[a]].description]]
                vb = vecs[row[base[position[b]].description]]
                if float(va @ vb) < self.description_min:
                    out[(a, b)] = (out[(a, b)][0], False)
        return out

    def _decide_llm(
        self,
        fresh: dict[tuple[str, str], float],
        base: Sequence[EntityRecord],
        position: dict[str, int],
    ) -> tuple[dict[tuple[str, str], tuple[float, bool]], Any]:
        from graphseek.knowledge.graph.llm import UsageMeter, parallel_map
        from graphseek.knowledge.graph.prompts import MERGE_PROMPT, MERGE_SYSTEM

        index_pairs = [(position[a], position[b]) for a, b in fresh]
        clusters = clusters_of(index_pairs, self.max_cluster_size)
        meter = UsageMeter()

        def ask(cluster: list[int]) -> list[tuple[int, int]]:
            from graphseek.errors import LLMOutputError
            from graphseek.llm import invoke_structured

            records = [base[k] for k in cluster]
            messages = [
                ("system", MERGE_SYSTEM),
                ("human", MERGE_PROMPT.format(entities=describe(records))),
            ]
            try:
                result, usage = invoke_structured(
                    self.model, MergeGroups, messages, max_retries=self.max_retries
                )
            except LLMOutputError as exc:
                meter.fail(getattr(exc, "usage", None))
                log.warning("merge decision failed for a cluster of %d: %s", len(cluster), exc)
                return []
            meter.add(usage)
            merged: list[tuple[int, int]] = []
            for group in result.groups:
                members = [cluster[n - 1] for n in group if 1 <= n <= len(cluster)]
                members = sorted(set(members))
                merged.extend((members[0], other) for other in members[1:])
            return merged

        answers = parallel_map(
            ask,
            clusters,
            max_concurrency=self.max_concurrency,
            desc="align (LLM)",
            show_progress=self.show_progress,
        )
        uf = UnionFind(len(base))
        for merged in answers:
            for a, b in merged:
                uf.union(a, b)
        out: dict[tuple[str, str], tuple[float, bool]] = {}
        for (sa, sb), sim in fresh.items():
            out[(sa, sb)] = (sim, uf.find(position[sa]) == uf.find(position[sb]))
        # merges the LLM made between cluster members that were not candidate pairs
        ids = {k: bid for bid, k in position.items()}
        for merged in answers:
            for i, j in merged:
                key = (ids[i], ids[j]) if ids[i] < ids[j] else (ids[j], ids[i])
                out.setdefault(key, (0.0, True))
        return out, meter
