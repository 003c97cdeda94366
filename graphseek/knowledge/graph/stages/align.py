"""Stage 3, alignment (HiGra Phase 2): the mentions of every extraction become entities, by
exact merging (a name key and a type in common), then semantic merging (base entities within
the radius `GraphSettings.tau`, decided offline or by the aligner model)
(`graphseek.knowledge.graph.algorithms.align.Aligner`): `align`. Onto a stored graph (a delta add),
the new mentions' base entities are decided against the stored entities instead: `align_new` (below,
with why it is its own function)."""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.align import (
    Aligner,
    AlignmentCache,
    AlignmentResult,
    ambiguous_among,
    cached_encode,
    entity_id_choices,
    record_entity,
)
from graphseek.knowledge.graph.algorithms.candidates import (
    name_pairs,
    radius_pair_rows,
    variant_pairs,
)
from graphseek.knowledge.graph.algorithms.contextual import base_vectors
from graphseek.knowledge.graph.algorithms.exact import Groups, UnionFind, components, exact_groups
from graphseek.knowledge.graph.algorithms.link import COOCCURRENCE_MAX_GROUP
from graphseek.knowledge.graph.algorithms.records import GENERIC_TYPES, EntityRecord, aggregate
from graphseek.knowledge.graph.algorithms.vectors import Embed, VectorCache, set_stage
from graphseek.knowledge.graph.models import Entity, Extraction, Mention
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.store.stored import STORED_ROWS, StoredEntity, StoredGraph, name_key
from graphseek.knowledge.progress import bar as progress_bar
from graphseek.knowledge.text import stable_id


@dataclass
class Alignment:
    """What alignment gives the later stages: the entities and every mention's entity and base
    entity (`merged`, `graphseek.knowledge.graph.algorithms.align.AlignmentResult`), the mention
    vectors the store keeps (empty without contextual alignment), and the number of connected
    components of the graph before alignment (a manifest statistic)."""

    merged: AlignmentResult
    mention_vectors: Mapping[str, np.ndarray]
    components_before: int


def align(
    n_passages: int,
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    run: Run,
    cache: VectorCache,
) -> Alignment:
    """Align the mentions of `extractions` (of `n_passages` passages) into entities. `cache`:
    the vectors already known (an update's stored ones; the passage pass's mention vectors)."""
    with timed(run.timings, "align", n_passages):
        set_stage(run.embed, "aligning entities")
        merged, mention_vectors = _merge(extractions, settings, run, cache)
        raw_nodes, merged.raw_nodes = merged.raw_nodes, None  # read once, below
        assert raw_nodes is not None
        memory.after_alignment(cache)
        before = _raw_components(
            extractions, raw_nodes, merged.counts["before_alignment"], settings.cooccurrence
        )
    return Alignment(merged, mention_vectors, before)


def _merge(
    extractions: Iterable[Extraction], settings: GraphSettings, run: Run, cache: VectorCache
) -> tuple[AlignmentResult, Mapping[str, np.ndarray]]:
    """Exact, then semantic merging of every mention (read in one pass), and the mention
    vectors the store keeps."""
    mentions = memory.mention_columns(extractions)
    aligner = Aligner(
        embed=run.embed,
        tau=settings.radius,
        max_neighbors=settings.max_neighbors,
        description_min=settings.description_min,
        model=run.model,
        max_cluster_size=settings.max_cluster_size,
        max_concurrency=run.max_concurrency,
        show_progress=run.show_progress,
        embed_outside=settings.outside_window != "names",
    )
    contextual = settings.alignment == "contextual"
    # record strings show MiniLM's "aligning entities" bar; contextual vectors need their own
    with progress_bar(
        "aligning entities", 1, run.show_progress and contextual, unit="step"
    ) as step:
        merged = aligner.align(mentions, cache.alignment, cache.mentions if contextual else None)
        step.update(1)
    if not contextual:
        return merged, {}
    return merged, memory.keep_rows(cache.mentions, mentions.ids, merged.mention_entity.ids)


def _raw_components(
    extractions: Iterable[Extraction], node_of: memory.MentionTable[int], n: int, scope: str
) -> int:
    """Connected components of the graph before alignment (a manifest statistic): one node per
    raw entity (`node_of`: each mention's), an edge per raw relation, and the co-occurrence
    edges that `cooccurring_pairs` would give over typed mentions' nodes. A co-occurring group
    is joined by a path over its members, not by every pair: the same components, with k - 1
    edges for k members instead of k (k - 1) / 2. One pass over `extractions`."""
    rows, cols = array("q"), array("q")
    by_sentence = scope == "sentence"
    for x in extractions:
        for raw in x.relations:
            a, b = node_of.get(raw.source), node_of.get(raw.target)
            if a is not None and b is not None:
                rows.append(a)
                cols.append(b)
        if scope not in ("sentence", "passage"):
            continue
        groups: dict[int, set[int]] = {}
        for m in x.mentions:
            if (by_sentence and m.sentence < 0) or set(m.types) <= GENERIC_TYPES:
                continue
            node = node_of.get(m.id)
            if node is not None:
                groups.setdefault(m.sentence if by_sentence else 0, set()).add(node)
        for members in groups.values():
            if 2 <= len(members) <= COOCCURRENCE_MAX_GROUP:
                ordered = sorted(members)
                rows.extend(ordered[:-1])
                cols.extend(ordered[1:])
    return components(n, rows, cols)[0]


# -- onto a stored graph (a delta add) ----------------------------------------------------------
#
# `align` merges base entities with base entities over the whole corpus (union-find over every
# candidate pair). A delta add aligns only the new mentions, onto a stored graph whose entities
# it never merges with each other: a new base entity is decided against a stored *entity's*
# record (its name, aliases, description and types), each stored entity a fixed group. So the
# delta reads the store's rows, not the corpus's pairs, and its own function is `align_new`;
# it shares the exact rule (`exact_groups`), the candidate rules (`name_pairs`,
# `variant_pairs`, `radius_pair_rows`) and the offline decision (`Aligner._decide_offline`).


@dataclass
class DeltaAlignment:
    """The new mentions aligned onto a store (`align_new`)."""

    mention_entity: dict[str, str]
    mention_base: dict[str, str]
    base_ids: list[str]
    base_texts: list[str]
    base_entity: list[str]
    base_vectors: np.ndarray
    new_entities: list[Entity]
    joined: dict[str, list[Mention]]
    """Stored entity id -> the new mentions it gains."""
    stored: dict[str, StoredEntity]
    """The stored entities the new mentions reached (joined, or candidates kept apart)."""
    pairs: dict[tuple[str, str], tuple[float, bool]]
    """Decided pairs of base ids (a < b): new with new, and new with stored."""
    counts: dict[str, int]


@dataclass
class NewBases:
    """The new mentions' base entities (exact groups), before they meet the store."""

    mentions: list[Mention]
    """The new mentions, by id."""
    groups: Groups
    """Each base entity's mentions (positions in `mentions`)."""
    records: list[EntityRecord]
    ids: list[str]
    texts: list[str]
    vectors: np.ndarray


def new_bases(
    mentions: Sequence[Mention],
    vectors: Mapping[str, np.ndarray],
    settings: GraphSettings,
    embed: Embed,
) -> NewBases:
    """The exact groups of the new `mentions` as base entities, with their vectors (from the
    contextual `vectors` by mention id, or record strings' without them)."""
    ordered = sorted(mentions, key=lambda m: m.id)
    groups = exact_groups(ordered)
    records = [aggregate([ordered[i] for i in g]) for g in groups]
    texts = [r.embedding_text() for r in records]
    return NewBases(
        mentions=ordered,
        groups=groups,
        records=records,
        ids=[stable_id("b", *r.mention_ids, length=16) for r in records],
        texts=texts,
        vectors=_new_base_vectors(records, texts, vectors, settings, embed),
    )


def align_new(
    stored: StoredGraph,
    bases: NewBases,
    near: list[list[tuple[int, float]]],
    settings: GraphSettings,
    embed: Embed,
) -> DeltaAlignment:
    """Align the new base entities onto the `stored` graph; `near`: each one's stored base
    entities within the radius (`near_stored`).

    A new base entity *joins a stored entity* that has one of its name keys as its name or an
    alias and shares a type (the exact rule), or else one whose stored base vector lies within
    the radius and passes the offline merge decision (with the build's guard against
    generic-only records joining partners of incompatible types); the new base entities merge
    among themselves by the same search and rule. A stored entity keeps its id, name and
    types; the others become new entities. Two stored entities are never merged (a new group
    that reaches two joins the one most of its mentions reach: a *deferred bridge*). The
    `max_neighbors` nearest are taken among the stored and among the new base entities
    separately; a stored entity that shares a name key but no type is a candidate for the
    decision, as the build's name candidates are."""
    mentions, groups, base, ids, texts = (
        bases.mentions,
        bases.groups,
        bases.records,
        bases.ids,
        bases.texts,
    )
    vecs = bases.vectors
    n = len(base)
    aligner = Aligner(
        embed=embed,
        tau=settings.radius,
        max_neighbors=settings.max_neighbors,
        description_min=settings.description_min,
    )
    # 1. by name key: a stored entity named so, of a shared type (the exact rule)
    keys = [{name_key(s) for s in r.names} for r in base]
    found = stored.rows(
        "SELECT id, norm FROM entities WHERE norm IN ({})", {k for ks in keys for k in ks}
    ) + stored.rows(
        "SELECT entity_id, norm FROM entity_aliases WHERE norm IN ({})",
        {k for ks in keys for k in ks},
    )
    by_key: dict[str, set[str]] = defaultdict(set)
    for eid, norm in found:
        by_key[norm].add(eid)
    # 2. by vector: stored base vectors within the radius
    stored_base, stored_owner = stored.base_entities()
    candidates = {eid for ids_ in by_key.values() for eid in ids_}
    candidates |= {stored_owner[j] for row in near for j, _ in row}
    reached = stored.entities(candidates)
    key_join: dict[int, str] = {}
    for k, record in enumerate(base):
        named = sorted(
            (eid for key in keys[k] for eid in by_key.get(key, ())),
            key=lambda e: (name_key(reached[e].name) != name_key(record.name), e),
        )
        for eid in named:
            if eid in reached and set(reached[eid].types) & set(record.types):
                key_join[k] = eid
                break
    # decisions: new with stored (by vector), new with new (by vector and name)
    records: list[EntityRecord] = list(base)
    position: dict[str, int] = {}
    first: list[int] = []
    second: list[int] = []
    sims: list[float] = []
    pair_ids: list[tuple[str, str]] = []
    paired: set[tuple[int, str]] = set()

    def candidate(k: int, eid: str, sim: float, row: int) -> None:
        if eid not in position:
            position[eid] = len(records)
            records.append(reached[eid].record())
        paired.add((k, eid))
        first.append(k)
        second.append(position[eid])
        sims.append(sim)
        pair_ids.append((ids[k], stored_base[row]))

    for k, row in enumerate(near):
        for j, sim in row:
            eid = stored_owner[j]
            if k not in key_join and eid in reached and (k, eid) not in paired:
                candidate(k, eid, sim, j)
    # by name without a shared type: the decision judges them, as the build's name candidates
    # (a key shared by more than `max_neighbors` stored entities gives none)
    by_name = [
        (k, eid)
        for k in range(n)
        if k not in key_join
        for key in keys[k]
        if len(by_key.get(key, ())) <= settings.max_neighbors
        for eid in sorted(by_key.get(key, ()))
        if eid in reached and (k, eid) not in paired
    ]
    for (k, eid), (sim, at) in zip(
        by_name, _best_rows(stored, stored_owner, vecs, by_name), strict=True
    ):
        if at >= 0 and (k, eid) not in paired:
            candidate(k, eid, sim, at)
    new_first, new_second, new_sims = radius_pair_rows(
        vecs, list(range(n)), settings.radius, settings.max_neighbors
    )
    named_pairs = name_pairs(base, range(n), settings.max_neighbors)
    if settings.alignment == "contextual":
        named_pairs |= variant_pairs(base, range(n), settings.max_neighbors)
    seen = set(zip(new_first.tolist(), new_second.tolist(), strict=True))
    extra = sorted(named_pairs - seen)
    within = list(zip(new_first.tolist(), new_second.tolist(), strict=True)) + extra
    within_sims = new_sims.tolist() + [float(vecs[i] @ vecs[j]) for i, j in extra]
    first += [a for a, _ in within]
    second += [b for _, b in within]
    sims += within_sims
    pair_ids += [(ids[a], ids[b]) for a, b in within]
    merged = (
        aligner._decide_offline(
            np.asarray(first, dtype=np.int64),
            np.asarray(second, dtype=np.int64),
            np.asarray(sims, dtype=np.float64),
            records,
            AlignmentCache(),
        )
        if first
        else np.zeros(0, dtype=bool)
    )
    # the build's guard: a generic-only record ("Paris" the concept) whose accepted partners
    # have incompatible types (the city, the person) merges with none of them
    blocked = ambiguous_among(records, first, second, sims, merged) if len(merged) else set()
    # the new base entities' groups, then the stored entity each group joins
    stored_at = {p: eid for eid, p in position.items()}
    uf = UnionFind(n)
    decided_join: dict[int, tuple[float, str]] = {}
    for a, b, sim, ok in zip(first, second, sims, merged.tolist(), strict=True):
        if not ok or a in blocked or b in blocked:
            continue
        if b < n:
            uf.union(a, b)
        else:
            eid = stored_at[b]
            if sim > decided_join.get(a, (-2.0, ""))[0]:
                decided_join[a] = (sim, eid)
    pairs: dict[tuple[str, str], tuple[float, bool]] = {}
    for (x, y), sim, ok in zip(pair_ids, sims, merged.tolist(), strict=True):
        pairs[(x, y) if x < y else (y, x)] = (round(float(sim), 6), bool(ok))
    mention_entity: dict[str, str] = {}
    mention_base: dict[str, str] = {}
    joined: dict[str, list[Mention]] = defaultdict(list)
    new_entities: list[Entity] = []
    base_entity = [""] * n
    taken: set[str] = set()
    bridges = 0
    for group in uf.groups():
        members = [mentions[i] for k in group for i in groups[k]]
        votes: Counter[str] = Counter()
        for k in group:
            target = key_join.get(k) or decided_join.get(k, (0.0, ""))[1]
            if target:
                # an exact-name join counts before a vector one
                votes[target] += len(groups[k]) * (2 if k in key_join else 1)
        if len(votes) > 1:
            bridges += 1
        if votes:
            eid = min(votes.items(), key=lambda kv: (-kv[1], kv[0]))[0]
            joined[eid] += members
        else:
            record = aggregate(members)
            eid = _free_id(stored, taken, record)
            new_entities.append(record_entity(record, eid))
        for k in group:
            base_entity[k] = eid
            for i in groups[k]:
                mention_entity[mentions[i].id] = eid
                mention_base[mentions[i].id] = ids[k]
    new_entities.sort(key=lambda e: e.id)
    counts = {
        "mentions": len(mentions),
        "base_entities": n,
        "joined_by_name": len(key_join),
        "joined_by_decision": sum(1 for k in decided_join if k not in key_join),
        "stored_entities_joined": len(joined),
        "new_entities": len(new_entities),
        "deferred_bridges": bridges,
        "candidate_pairs": len(pairs),
        "merged_pairs": int(np.count_nonzero(merged)),
    }
    return DeltaAlignment(
        mention_entity=mention_entity,
        mention_base=mention_base,
        base_ids=ids,
        base_texts=texts,
        base_entity=base_entity,
        base_vectors=vecs,
        new_entities=new_entities,
        joined=dict(joined),
        stored=reached,
        pairs=pairs,
        counts=counts,
    )


def near_stored(
    stored: StoredGraph, vectors: np.ndarray, settings: GraphSettings, count: int
) -> list[list[tuple[int, float]]]:
    """For each row of `vectors`, the stored base entities (row numbers of
    ``base_vectors.npy``) within the alignment radius, best `max_neighbors` first: one product
    per block of `STORED_ROWS` stored rows, read from the memory-mapped file (BLAS, with the
    GIL released: a delta runs it on a thread; it reads no database). None are found when the
    file does not hold `count` rows (the store's base entities) of the vectors' width."""
    limit = settings.max_neighbors
    out = _within_radius(stored, vectors, settings, count)
    return [sorted(row, key=lambda x: (-x[1], x[0]))[:limit] for row in out]


def _within_radius(
    stored: StoredGraph, vectors: np.ndarray, settings: GraphSettings, count: int
) -> list[list[tuple[int, float]]]:
    """`near_stored`'s rows, unsorted (the memory map is closed on return)."""
    threshold = 1.0 - settings.radius - 1e-6
    out: list[list[tuple[int, float]]] = [[] for _ in range(len(vectors))]
    rows = stored.base_vectors(count, vectors.shape[1]) if len(vectors) else None
    if rows is None:
        return out
    query = np.ascontiguousarray(vectors, dtype=np.float32)
    for start in range(0, len(rows), STORED_ROWS):
        block = np.asarray(rows[start : start + STORED_ROWS], dtype=np.float32)
        sims = query @ block.T
        hit_rows, hit_cols = np.nonzero(sims >= threshold)
        for r, c in zip(hit_rows.tolist(), hit_cols.tolist(), strict=True):
            out[r].append((start + c, float(sims[r, c])))
    return out


def _free_id(stored: StoredGraph, taken: set[str], record: EntityRecord) -> str:
    """A new entity's id by the build's rule (name key and first type; then name, type and
    first mention), not one a stored or another new entity has."""
    choices = list(entity_id_choices(record))
    choices += [stable_id("e", record.name, *record.mention_ids[: k + 1]) for k in range(1, 4)]
    for eid in choices:
        if eid not in taken and not stored.has_entity(eid):
            taken.add(eid)
            return eid
    raise ValueError(f"no free entity id for {record.name!r}")  # pragma: no cover


def _best_rows(
    stored: StoredGraph,
    owners: Sequence[str],
    vectors: np.ndarray,
    pairs: Sequence[tuple[int, str]],
) -> list[tuple[float, int]]:
    """For each (new base position, stored entity id) of `pairs`, the cosine of the new base
    vector with the nearest of the entity's stored base vectors, and that base's row (row
    ``-1``, cosine 0, when the store's vectors are not there to compare)."""
    if not pairs:
        return []
    wanted = {eid for _, eid in pairs}
    rows: dict[str, list[int]] = defaultdict(list)
    for j, eid in enumerate(owners):
        if eid in wanted:
            rows[eid].append(j)
    base = stored.base_vectors(len(owners), vectors.shape[1])
    if base is None:
        return [(0.0, rows[eid][0] if rows[eid] else -1) for _, eid in pairs]
    out: list[tuple[float, int]] = []
    for k, eid in pairs:
        js = rows[eid]
        sims = np.asarray(base[js], dtype=np.float32) @ vectors[k]
        best = int(np.argmax(sims))
        out.append((float(sims[best]), js[best]))
    return out


def _new_base_vectors(
    base: Sequence[EntityRecord],
    texts: list[str],
    vectors: Mapping[str, np.ndarray],
    settings: GraphSettings,
    embed: Embed,
) -> np.ndarray:
    """The new base entities' vectors as the aligner makes them: the normalised sum of their
    mentions' contextual vectors (record strings' vectors for those with none, outside the
    encoder's window), or their record strings' vectors with record alignment."""
    if not base:
        return np.zeros((0, 1), dtype=np.float32)
    if settings.alignment != "contextual":
        return cached_encode(texts, embed, {})
    if vectors:
        dim = len(next(iter(vectors.values())))
        out, missing = base_vectors([r.mention_ids for r in base], vectors, dim)
    else:  # every new mention past the encoder's window: none has a contextual vector
        dim = int(np.asarray(embed(["x"])).shape[1])
        out, missing = np.zeros((len(base), dim), dtype=np.float32), list(range(len(base)))
    if missing and settings.outside_window != "names":
        out[missing] = cached_encode([texts[k] for k in missing], embed, {})
    return out
