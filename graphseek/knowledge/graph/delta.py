"""A delta add: new passages into a graph store, touching only what they reach.

`add_passages(..., delta=True)` (`graphseek.knowledge.graph.build`) runs the build's first two
stages (`graphseek.knowledge.graph.stages`: extraction, the passage pass) on the new passages as
the exact add does; then, instead of re-assembling the whole graph from every stored extraction,
it runs the later stages on the delta (`_apply`: align, link, hyperedges and topics, write), each
changing the stored graph where the new passages reach it, with the stages' own functions where
they compute the same thing (`extracted_relations`, `build_hyperedges`, `embedded_relations`,
`hyperedge_vectors`):

- **alignment**: the new mentions' exact groups (`exact_groups`) become new base entities. A new
  base entity *joins a stored entity* that has one of its name keys as its name or an alias
  and shares a type (the exact rule), or else one whose stored base vector lies within the
  radius and passes the offline merge decision (`Aligner._decide_offline`: types, names,
  descriptions, the guard against generic-only records joining partners of incompatible
  types); the new base entities merge among themselves by the same search and rule. A stored
  entity keeps its id, name and types (it gains mentions, passages and the new names' aliases;
  its vector is made again when its text changes); the others become new entities. Two stored
  entities are never merged by an add (a new group that reaches two joins the one most of its
  mentions reach: a *deferred bridge*). Where the build decides base entity against base
  entity, the delta decides a new base entity against a stored *entity's* record (its
  decisions against stored ones are therefore not kept in ``merge_pairs``, which an exact add
  reuses); the `max_neighbors` nearest are taken among the stored and among the new base
  entities separately. A stored entity that shares a name key but no type is a candidate for
  the decision, as the build's name candidates are.
- **linking**: the new passages' extracted relations and co-occurrences are added to the stored
  relations (a relation already there gains their weight and passages); similarity edges come
  from the new pairs the decision kept apart.
- **entity-passage links**: mentions, and the Phase 4 matcher over the new passages with every
  stored and new name, its occurrence counts (`theta`) taken over the whole corpus for the names
  it hits; the names new to the store (new entities, new aliases) are searched in the stored
  passages too. The most common words (`top_k_common`) are those of the store's passages,
  counted once and kept in the store (``matcher.json``).
- **hyperedges**: new facts become new hyperedges (or add their passages to the same stored
  hyperedge), each put in the topic of the nearest stored topic centroid.
- **the store**: its files are copied into the new directory and changed there (rows inserted
  or updated in one SQLite transaction, vectors appended to their ``.npy`` files, the sparse
  matrices extended), then swapped in atomically, as a build's are.

What the delta shares with a build, stage by stage (`tests/test_build_pipeline.py` checks that
it calls the shared functions), and why the rest is its own:

- **1-2, extraction and the passage pass**: the build's `extract` and `new_passage_pass` (run
  by `add_passages`); nothing of its own.
- **3, alignment**: shares `exact_groups`, the candidate rules (`name_pairs`, `variant_pairs`,
  `radius_pair_rows`) and the offline decision (`Aligner._decide_offline`). Its own is
  `align_new`: `stages.align.align` merges base entities with base entities over the whole
  corpus (union-find over every candidate pair), while the delta decides a new base entity
  against a stored *entity's* record and never merges two stored entities, so it reads the
  store's rows, not the corpus's pairs.
- **4, linking**: shares `extracted_relations`, `cooccurrence_edges` and `similarity_edges`.
  Its own is `new_relations` (only the new passages' relations; similarity edges capped
  against the stored ones) and `match_links`: Phase 4's `theta` counts and `top_k_common`
  words are corpus-wide, which `stages.link.link_passages` gets by matching every passage; the
  delta counts only the names it hits, in the new and then the stored passages.
- **5, hyperedges, topics, vectors**: shares `build_hyperedges`, `hyperedge_vectors`,
  `embedded_relations`, `entity_text` and `relation_text`. Its own is `nearest_topics`: topics
  are a k-means over every hyperedge vector (`stages.topics.HyperedgeTopics`), which rerun
  would renumber every topic, so a new hyperedge joins the nearest stored centroid.
- **6, the write**: shares the table writers (`insert_passages`, `insert_entities`,
  `insert_relations`, `insert_hyperedges`, ...). Its own is `_write`: `stages.write.write`
  writes a whole new store; the delta copies the store, then changes rows, appends vectors and
  extends the matrices.

The result is not byte for byte the store a rebuild gives: the k-means topics, matcher links
whose counts cross `theta`, entity names and vectors that more mentions would change, and
bridges between stored entities are a rebuild's to redo (`graphseek index`, or an exact add).
The contract is equal retrieval, measured on the dev slices (`benchmarks/delta_add.py`); the
manifest's ``delta`` section counts what the adds since the last rebuild did.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from graphseek.knowledge.atomic import atomic_directory
from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.align import (
    Aligner,
    AlignmentCache,
    ambiguous_generics,
    cached_encode,
    entity_id_choices,
    record_entity,
)
from graphseek.knowledge.graph.candidates import name_pairs, radius_pair_rows, variant_pairs
from graphseek.knowledge.graph.contextual import base_vectors
from graphseek.knowledge.graph.exact import Groups, UnionFind, exact_groups
from graphseek.knowledge.graph.hyper import build_hyperedges
from graphseek.knowledge.graph.link import (
    COOCCURRENCE_MAX_GROUP,
    cooccurrence_edges,
    linkable_name,
    similarity_edges,
    word_hits,
)
from graphseek.knowledge.graph.merge_pairs import MergePairs
from graphseek.knowledge.graph.models import (
    Entity,
    Extraction,
    HyperEdge,
    Mention,
    Relation,
)
from graphseek.knowledge.graph.records import (
    GENERIC_TYPES,
    EntityRecord,
    aggregate,
)
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.spool import stack_rows
from graphseek.knowledge.graph.stages import timed
from graphseek.knowledge.graph.stages.embed import embedded_relations
from graphseek.knowledge.graph.stages.link import extracted_relations
from graphseek.knowledge.graph.stages.topics import hyperedge_vectors
from graphseek.knowledge.graph.store import SQLiteGraphStore, aliases_and_types
from graphseek.knowledge.graph.store_writer import (
    DATABASE,
    MANIFEST,
    MATCHER,
    _dumps,
    check_target,
    insert_base_entities,
    insert_entities,
    insert_extractions,
    insert_hyperedges,
    insert_passages,
    insert_relations,
    write_id_lists,
)
from graphseek.knowledge.graph.text import (
    normalize_name,
    normalize_text,
    stable_id,
    top_common_words,
)
from graphseek.knowledge.graph.vectors import (
    Embed,
    entity_text,
    record_text,
    relation_text,
    string_embed,
)
from graphseek.knowledge.passages import Passage, content_of

SQL_BATCH = 900
"""Parameters per ``IN (...)`` query (SQLite allows 999 by default on older builds)."""

STORED_ROWS = 65_536
"""Stored base vectors compared with the new ones at a time (one block in memory)."""


# -- reading the store --------------------------------------------------------------------------


def _in_batches(con: sqlite3.Connection, sql: str, values: Iterable[Any]) -> list[tuple[Any, ...]]:
    """``sql`` (with one ``{}`` for the placeholders) run over `values` in batches."""
    items = list(dict.fromkeys(values))
    out: list[tuple[Any, ...]] = []
    for start in range(0, len(items), SQL_BATCH):
        chunk = items[start : start + SQL_BATCH]
        out += con.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
    return out


def _name_key(surface: str) -> str:
    return normalize_name(surface) or surface.lower()


@dataclass
class StoredEntity:
    """What a delta add reads of a stored entity."""

    id: str
    name: str
    description: str
    aliases: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)

    def record(self) -> EntityRecord:
        return EntityRecord(self.name, self.aliases, self.description, self.types, [], [])

    def keys(self) -> set[str]:
        return {_name_key(n) for n in (self.name, *self.aliases)}


def _stored_entities(con: sqlite3.Connection, ids: Iterable[str]) -> dict[str, StoredEntity]:
    out = {
        eid: StoredEntity(eid, name, description)
        for eid, name, description in _in_batches(
            con, "SELECT id, name, description FROM entities WHERE id IN ({})", ids
        )
    }
    for eid, alias in _in_batches(
        con,
        "SELECT entity_id, alias FROM entity_aliases WHERE entity_id IN ({}) "
        "ORDER BY entity_id, position",
        out,
    ):
        out[eid].aliases.append(alias)
    for eid, kind in _in_batches(
        con,
        "SELECT entity_id, type FROM entity_types WHERE entity_id IN ({}) "
        "ORDER BY entity_id, position",
        out,
    ):
        out[eid].types.append(kind)
    return out


# -- alignment ----------------------------------------------------------------------------------


@dataclass
class DeltaAlignment:
    """The new mentions aligned against a store (see the module docstring)."""

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
    surfaces: StoredSurfaces | None = None
    """The matcher's surfaces of the stored entities, read while alignment searched."""


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
    con: sqlite3.Connection,
    store_dir: Path,
    bases: NewBases,
    near: list[list[tuple[int, float]]],
    settings: GraphSettings,
    embed: Embed,
) -> DeltaAlignment:
    """Align the new base entities against the store open on `con`; `near`: each one's stored
    base entities within the radius (`near_stored`)."""
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
    keys = [{_name_key(s) for s in r.names} for r in base]
    found = _in_batches(
        con, "SELECT id, norm FROM entities WHERE norm IN ({})", {k for ks in keys for k in ks}
    ) + _in_batches(
        con,
        "SELECT entity_id, norm FROM entity_aliases WHERE norm IN ({})",
        {k for ks in keys for k in ks},
    )
    by_key: dict[str, set[str]] = defaultdict(set)
    for eid, norm in found:
        by_key[norm].add(eid)
    # 2. by vector: stored base vectors within the radius
    stored_base, stored_owner = _stored_base(con)
    candidates = {eid for ids_ in by_key.values() for eid in ids_}
    candidates |= {stored_owner[j] for row in near for j, _ in row}
    stored = _stored_entities(con, candidates)
    key_join: dict[int, str] = {}
    for k, record in enumerate(base):
        named = sorted(
            (eid for key in keys[k] for eid in by_key.get(key, ())),
            key=lambda e: (_name_key(stored[e].name) != _name_key(record.name), e),
        )
        for eid in named:
            if eid in stored and set(stored[eid].types) & set(record.types):
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
            records.append(stored[eid].record())
        paired.add((k, eid))
        first.append(k)
        second.append(position[eid])
        sims.append(sim)
        pair_ids.append((ids[k], stored_base[row]))

    for k, row in enumerate(near):
        for j, sim in row:
            eid = stored_owner[j]
            if k not in key_join and eid in stored and (k, eid) not in paired:
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
        if eid in stored and (k, eid) not in paired
    ]
    for (k, eid), (sim, at) in zip(
        by_name, _best_rows(store_dir, stored_owner, vecs, by_name), strict=True
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
    blocked: set[int] = set()
    if len(merged):
        decided = MergePairs.of(
            [f"{k:012d}" for k in range(len(records))],  # sorted, as `MergePairs` needs
            np.asarray(first),
            np.asarray(second),
            np.asarray(sims),
            merged,
        )
        blocked = ambiguous_generics(records, decided)
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
            eid = _free_id(con, taken, record)
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
        stored=stored,
        pairs=pairs,
        counts=counts,
    )


def _free_id(con: sqlite3.Connection, taken: set[str], record: EntityRecord) -> str:
    """A new entity's id by the build's rule (name key and first type; then name, type and
    first mention), not one a stored or another new entity has."""
    choices = list(entity_id_choices(record))
    choices += [stable_id("e", record.name, *record.mention_ids[: k + 1]) for k in range(1, 4)]
    for eid in choices:
        if (
            eid not in taken
            and con.execute("SELECT 1 FROM entities WHERE id = ?", (eid,)).fetchone() is None
        ):
            taken.add(eid)
            return eid
    raise ValueError(f"no free entity id for {record.name!r}")  # pragma: no cover


def _best_rows(
    store_dir: Path,
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
    stored = _stored_base_vectors(store_dir, len(owners), vectors.shape[1])
    if stored is None:
        return [(0.0, rows[eid][0] if rows[eid] else -1) for _, eid in pairs]
    out: list[tuple[float, int]] = []
    for k, eid in pairs:
        js = rows[eid]
        sims = np.asarray(stored[js], dtype=np.float32) @ vectors[k]
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


def _stored_base(con: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """Every stored base entity's id and its entity's id, in row order of ``base_vectors.npy``."""
    rows = con.execute("SELECT id, entity_id FROM base_entities ORDER BY ord").fetchall()
    return [r[0] for r in rows], [r[1] for r in rows]


def _stored_base_vectors(store_dir: Path, count: int, width: int) -> np.ndarray | None:
    """The store's base vectors, memory-mapped, when ``base_vectors.npy`` holds `count` rows
    (one per stored base entity, none is not enough) of `width`; else None."""
    path = store_dir / "base_vectors.npy"
    if not count or not path.exists():
        return None
    stored = np.load(path, mmap_mode="r")
    return stored if stored.ndim == 2 and stored.shape == (count, width) else None


def near_stored(
    store_dir: Path, vectors: np.ndarray, settings: GraphSettings, count: int
) -> list[list[tuple[int, float]]]:
    """For each row of `vectors`, the stored base entities (row numbers of
    ``base_vectors.npy``) within the alignment radius, best `max_neighbors` first: one product
    per block of `STORED_ROWS` stored rows, read from the memory-mapped file (BLAS, with the
    GIL released: a delta runs it on a thread). None are found when the file does not hold
    `count` rows (the store's base entities) of the vectors' width."""
    threshold = 1.0 - settings.radius - 1e-6
    limit = settings.max_neighbors
    out: list[list[tuple[int, float]]] = [[] for _ in range(len(vectors))]
    stored = _stored_base_vectors(store_dir, count, vectors.shape[1]) if len(vectors) else None
    if stored is None:
        return out
    query = np.ascontiguousarray(vectors, dtype=np.float32)
    for start in range(0, len(stored), STORED_ROWS):
        block = np.asarray(stored[start : start + STORED_ROWS], dtype=np.float32)
        sims = query @ block.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            out[r].append((start + c, float(sims[r, c])))
    del stored
    return [sorted(row, key=lambda x: (-x[1], x[0]))[:limit] for row in out]


# -- linking ------------------------------------------------------------------------------------


def _types_of(
    con: sqlite3.Connection, aligned: DeltaAlignment, ids: Iterable[str]
) -> dict[str, list[str]]:
    """Entity id -> types, for the new entities and the stored ones among `ids`."""
    out = {e.id: list(e.types) for e in aligned.new_entities}
    out.update({eid: s.types for eid, s in aligned.stored.items()})
    missing = [eid for eid in ids if eid not in out]
    for eid, kind in _in_batches(
        con,
        "SELECT entity_id, type FROM entity_types WHERE entity_id IN ({}) "
        "ORDER BY entity_id, position",
        missing,
    ):
        out.setdefault(eid, []).append(kind)
    return out


@dataclass
class _Types:
    """An entity's types, all `similarity_edges` reads of it."""

    types: list[str]


def new_relations(
    con: sqlite3.Connection,
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    settings: GraphSettings,
) -> tuple[list[Relation], set[str]]:
    """The relations the new passages give: extracted, co-occurrence and similarity edges
    (the first two with the new passages' weights and provenance only), and the ids of those
    the store has already (a similarity edge it has is not given again)."""
    me = aligned.mention_entity
    types = _types_of(con, aligned, set(me.values()))
    relations = extracted_relations(extracted, me)
    named = {m: e for m, e in me.items() if not set(types.get(e, [])) <= GENERIC_TYPES}
    relations += cooccurrence_edges(
        extracted, named, scope=settings.cooccurrence, max_group=COOCCURRENCE_MAX_GROUP
    )
    stored_base_entity = dict(
        _in_batches(
            con,
            "SELECT id, entity_id FROM base_entities WHERE id IN ({})",
            {x for pair in aligned.pairs for x in pair},
        )
    )
    base_entity = {
        **stored_base_entity,
        **dict(zip(aligned.base_ids, aligned.base_entity, strict=True)),
    }
    entities = {eid: _Types(t) for eid, t in types.items()}
    for eid in base_entity.values():
        entities.setdefault(eid, _Types([]))
    similar = similarity_edges(
        aligned.pairs, base_entity, entities, max_per_entity=settings.max_similar
    )
    # the build's cap counts every similarity edge of an entity: the stored ones too (best
    # first, as `similarity_edges` takes them)
    ends = {x for r in similar for x in (r.source, r.target)}
    held: Counter[str] = Counter()
    for column in ("source", "target"):
        held.update(
            dict(
                _in_batches(
                    con,
                    f"SELECT {column}, COUNT(*) FROM relations WHERE kind = 'similar' "
                    f"AND {column} IN ({{}}) GROUP BY {column}",
                    ends,
                )
            )
        )
    stored_ids = {
        r[0]
        for r in _in_batches(
            con,
            "SELECT id FROM relations WHERE id IN ({})",
            [r.id for r in (*relations, *similar)],
        )
    }
    for r in sorted(similar, key=lambda r: (-r.weight, r.id)):
        if r.id in stored_ids:
            continue
        if held[r.source] >= settings.max_similar or held[r.target] >= settings.max_similar:
            continue
        held[r.source] += 1
        held[r.target] += 1
        relations.append(r)
    return relations, stored_ids


# -- entity-passage links -----------------------------------------------------------------------


def _common_words(
    store_dir: Path, con: sqlite3.Connection, settings: GraphSettings
) -> frozenset[str]:
    """The store's `top_k_common` words (kept in ``matcher.json`` once counted)."""
    path = store_dir / MATCHER
    if path.exists():
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("top_k_common") == settings.top_k_common:
            return frozenset(kept["common_words"])
    texts = (
        normalize_text(content_of(t, x))
        for t, x in con.execute("SELECT title, text FROM passages ORDER BY ord")
    )
    return top_common_words(texts, settings.top_k_common)


@dataclass
class StoredSurfaces:
    """The matcher's surfaces of the stored entities: key -> ids of the linkable entities named
    so, and each entity's names (name first) and types."""

    entities: dict[str, set[str]]
    names: dict[str, list[str]]
    types: dict[str, list[str]]


def stored_surfaces(con: sqlite3.Connection) -> StoredSurfaces:
    """Every stored entity's names as the matcher searches them (`StoredSurfaces`)."""
    aliases, types = aliases_and_types(con.execute)
    names = {
        eid: [name, *aliases.get(eid, ())]
        for eid, name in con.execute("SELECT id, name FROM entities")
    }
    del aliases
    out: dict[str, set[str]] = defaultdict(set)
    for eid, surfaces in names.items():
        _add_surfaces(out, eid, surfaces, types.get(eid, []), surfaces[0])
    return StoredSurfaces(out, names, types)


def _add_surfaces(
    out: dict[str, set[str]],
    eid: str,
    surfaces: Iterable[str],
    entity_types: Sequence[str],
    name: str,
) -> set[str]:
    """Add a linkable entity's surfaces to `out` (key -> entity ids); the keys added."""
    added: set[str] = set()
    if not linkable_name(name, entity_types):
        return added
    for surface in surfaces:
        key = normalize_text(surface).strip()
        if len(key) >= 2 and any(c.isalnum() for c in key):
            out[key].add(eid)
            added.add(key)
    return added


def _surfaces(
    stored: StoredSurfaces, new_entities: Sequence[Entity], new_aliases: Mapping[str, list[str]]
) -> tuple[dict[str, set[str]], set[str]]:
    """Key -> ids of the linkable entities named so (stored and new), and the keys new to the
    store (the new entities' names, the stored entities' new aliases)."""
    out = stored.entities
    fresh: set[str] = set()
    for e in new_entities:
        fresh |= _add_surfaces(out, e.id, e.names, e.types, e.name)
    for eid, aliases in new_aliases.items():
        if eid in stored.names:
            name = stored.names[eid][0]
            fresh |= _add_surfaces(out, eid, aliases, stored.types.get(eid, []), name)
    return out, fresh


def _automaton(keys: Iterable[str]) -> Any:
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for key in keys:
        automaton.add_word(key, key)
    if len(automaton):
        automaton.make_automaton()
    return automaton


def match_links(
    con: sqlite3.Connection,
    store_dir: Path,
    new: Sequence[Passage],
    new_entities: Sequence[Entity],
    new_aliases: Mapping[str, list[str]],
    settings: GraphSettings,
    stored: StoredSurfaces | None = None,
) -> tuple[dict[str, set[str]], frozenset[str]]:
    """Entity id -> passage ids, the matcher's new links (see the module docstring), and the
    corpus's common words (to keep). `stored`: `stored_surfaces(con)`, if read already (it is
    extended here)."""
    common = _common_words(store_dir, con, settings)
    surfaces = stored if stored is not None else stored_surfaces(con)
    surface_entities, fresh = _surfaces(surfaces, new_entities, new_aliases)
    automaton = _automaton(k for k in surface_entities if k not in common)
    links: dict[str, set[str]] = defaultdict(set)
    if not len(automaton):
        return links, common
    counts: Counter[str] = Counter()
    hits: dict[str, set[str]] = defaultdict(set)
    for p in new:
        for key in word_hits(automaton, normalize_text(p.content)):
            counts[key] += 1
            hits[key].add(p.id)
    fresh -= common
    wanted = set(hits) | fresh
    if wanted:
        scan = _automaton(wanted)
        for title, text, pid in con.execute("SELECT title, text, id FROM passages ORDER BY ord"):
            for key in word_hits(scan, normalize_text(content_of(title, text))):
                counts[key] += 1
                if key in fresh:
                    hits[key].add(pid)
    for key, pids in hits.items():
        if counts[key] >= settings.theta:
            continue
        for eid in surface_entities[key]:
            links[eid] |= pids
    return links, common


# -- topics -------------------------------------------------------------------------------------


def nearest_topics(
    con: sqlite3.Connection, store_dir: Path, vectors: np.ndarray
) -> list[str | None]:
    """The topic of each row of `vectors`: the stored topic whose centroid (the normalised mean
    of its hyperedges' vectors) is nearest by cosine; None when the store has no topics."""
    topic_of = [r[0] for r in con.execute("SELECT topic_id FROM hyperedges ORDER BY ord")]
    path = store_dir / "hyperedge_vectors.npy"
    if not len(vectors) or not topic_of or not path.exists():
        return [None] * len(vectors)
    stored = np.load(path, mmap_mode="r")
    if stored.shape[0] != len(topic_of) or stored.shape[1] != vectors.shape[1]:
        return [None] * len(vectors)
    names = sorted({t for t in topic_of if t})
    if not names:
        return [None] * len(vectors)
    number = {t: k for k, t in enumerate(names)}
    labels = np.array([number.get(t, -1) for t in topic_of])
    sums = np.zeros((len(names), stored.shape[1]), dtype=np.float64)
    for start in range(0, len(stored), STORED_ROWS):
        block = np.asarray(stored[start : start + STORED_ROWS], dtype=np.float64)
        part = labels[start : start + STORED_ROWS]
        keep = part >= 0
        np.add.at(sums, part[keep], block[keep])
    centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    best = np.argmax(np.asarray(vectors, dtype=np.float64) @ centroids.T, axis=1)
    return [names[k] for k in best.tolist()]


# -- writing ------------------------------------------------------------------------------------


def append_rows(src: Path, dst: Path, rows: np.ndarray) -> None:
    """``dst``: the ``.npy`` at `src` with `rows` appended (its dtype kept; an empty stored
    array takes the rows' width). The stored rows are copied by the kernel
    (``copy_file_range``), behind a new header."""
    with open(src, "rb") as handle:
        np.lib.format.read_magic(handle)
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        offset = handle.tell()
    if fortran or len(shape) != 2:
        raise ValueError(f"{src}: not a C-ordered 2-d array")
    width = shape[1] if shape[0] else (rows.shape[1] if rows.ndim == 2 else shape[1])
    if len(rows) and rows.shape[1] != width:
        raise ValueError(f"{src}: rows of width {rows.shape[1]} for an array of width {width}")
    header = {
        "descr": np.lib.format.dtype_to_descr(dtype),
        "fortran_order": False,
        "shape": (shape[0] + len(rows), width),
    }
    size = shape[0] * shape[1] * dtype.itemsize
    with open(src, "rb") as source, open(dst, "wb") as target:
        np.lib.format.write_array_header_1_0(target, header)
        target.flush()
        _copy_range(source.fileno(), target.fileno(), offset, size)
        target.seek(0, os.SEEK_END)
        if len(rows):
            target.write(np.ascontiguousarray(rows, dtype=dtype).tobytes())


def _copy_range(src: int, dst: int, offset: int, size: int) -> None:
    """`size` bytes of `src` from `offset` to the end of `dst`, in the kernel where it can."""
    at = os.lseek(dst, 0, os.SEEK_END)
    done = 0
    while done < size:
        try:
            moved = os.copy_file_range(src, dst, size - done, offset + done, at + done)
        except (AttributeError, OSError):
            os.lseek(src, offset + done, os.SEEK_SET)
            os.lseek(dst, at + done, os.SEEK_SET)
            while done < size:
                chunk = os.read(src, min(1 << 24, size - done))
                if not chunk:
                    break
                os.write(dst, chunk)
                done += len(chunk)
            return
        if moved == 0:
            break
        done += moved
    if done != size:
        raise OSError(f"copied {done} of {size} bytes")


def _overwrite_rows(
    path: Path, row_ids: Sequence[str], ids: Sequence[str], rows: np.ndarray
) -> None:
    """Write `rows` over the rows of `ids` (row k of the file: `row_ids[k]`) of the ``.npy`` at
    `path`, a file of this delta's own (copied or appended, never the source store's)."""
    wanted = set(ids)
    position = {eid: k for k, eid in enumerate(row_ids) if eid in wanted}
    stored = np.load(path, mmap_mode="r+")
    for eid, row in zip(ids, rows, strict=True):
        stored[position[eid]] = row
    stored.flush()
    del stored


def _grow(matrix: sparse.csr_matrix, shape: tuple[int, int]) -> sparse.csr_matrix:
    out = matrix.tocsr().copy()
    out.resize(shape)
    return out


def _extend_matrices(
    store_dir: Path,
    tmp: Path,
    entity_ids: Sequence[str],
    passage_ids: Sequence[str],
    weights: Mapping[tuple[str, str], float],
    links: Iterable[tuple[str, str]],
) -> None:
    """The three matrices with the new entities and passages appended and the new weights
    (entity pairs, either order, summed into both cells) and links added."""
    ne, np_ = len(entity_ids), len(passage_ids)
    epos = {e: k for k, e in enumerate(entity_ids)}
    ppos = {p: k for k, p in enumerate(passage_ids)}
    adjacency = _grow(sparse.load_npz(store_dir / "adjacency_entity.npz"), (ne, ne))
    rows, cols, vals = [], [], []
    for (a, b), w in weights.items():
        i, j = epos.get(a), epos.get(b)
        if i is None or j is None or i == j:
            continue
        rows += [i, j]
        cols += [j, i]
        vals += [w, w]
    delta = sparse.csr_matrix(
        (np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(ne, ne), dtype=np.float32
    )
    adjacency = (adjacency + delta).tocsr()
    adjacency.sum_duplicates()
    incidence = _grow(sparse.load_npz(store_dir / "entity_passage.npz"), (ne, np_))
    pairs = [(epos[e], ppos[p]) for e, p in links if e in epos and p in ppos]
    if pairs:
        add = sparse.csr_matrix(
            (np.ones(len(pairs), dtype=np.float32), tuple(np.array(pairs).T)),
            shape=(ne, np_),
            dtype=np.float32,
        )
        incidence = (incidence + add).tocsr()
    incidence.sum_duplicates()
    incidence.data[:] = 1.0
    full = sparse.bmat(
        [[adjacency, incidence], [incidence.T, None]], format="csr", dtype=np.float32
    )
    if full.shape != (ne + np_, ne + np_):
        full = sparse.csr_matrix((ne + np_, ne + np_), dtype=np.float32)
    # not compressed: zlib would take seconds of an add on a large store (a build compresses)
    sparse.save_npz(tmp / "adjacency_entity.npz", adjacency.astype(np.float32).tocsr(), False)
    sparse.save_npz(tmp / "adjacency_full.npz", full.tocsr(), False)
    sparse.save_npz(tmp / "entity_passage.npz", incidence.astype(np.float32).tocsr(), False)


# -- the add ------------------------------------------------------------------------------------


def delta_add(
    store_dir: str | os.PathLike[str],
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    mention_vectors: Mapping[str, np.ndarray],
    settings: GraphSettings,
    *,
    embed: Embed,
    extractor_name: str,
    timings: dict[str, Any],
    started: float,
    out_dir: str | os.PathLike[str] | None = None,
) -> SQLiteGraphStore:
    """Add `new` passages (extracted as `extracted`, their contextual mention vectors in
    `mention_vectors`) to the store in `store_dir` as a delta (the module docstring), written
    to `out_dir` (a new directory) or in place, atomically. Returns the store written."""
    source = Path(store_dir).expanduser().resolve()
    dest = check_target(source if out_dir is None else out_dir)
    contextual = settings.alignment == "contextual"
    new_mentions = sorted(mention_vectors) if contextual else []
    with atomic_directory(dest) as tmp:
        # the database and the mention vectors (most of the store's bytes) are copied by the
        # kernel on a thread while the delta is computed from the store itself, read-only
        copying = Background(lambda: _copy_store(source, tmp, mention_vectors, new_mentions))
        try:
            ro = sqlite3.connect(f"file:{source / DATABASE}?mode=ro", uri=True)
            try:
                manifest = _apply(ro, source, tmp, new, extracted, mention_vectors,
                                  new_mentions, settings, embed, timings, copying)  # fmt: skip
            finally:
                ro.close()
        except BaseException:
            copying.wait()  # the directory goes once the thread is done with it
            raise
        manifest["extractor"] = extractor_name or manifest.get("extractor", "")
        timings["total_before_write"] = {"seconds": round(time.perf_counter() - started, 3)}
        manifest.setdefault("delta", {})["timings"] = timings
        manifest["written"] = time.time()
        (tmp / MANIFEST).write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False, default=str), encoding="utf-8"
        )
    return SQLiteGraphStore.open(dest)


REWRITTEN = frozenset(
    {
        "entity_vectors.npy",
        "relation_vectors.npy",
        "hyperedge_vectors.npy",
        "base_vectors.npy",
        "mention_vectors.npy",
        "adjacency_entity.npz",
        "adjacency_full.npz",
        "entity_passage.npz",
        "nodes.json",
        MANIFEST,
        MATCHER,
    }
)
"""The store's files a delta writes anew (the others are copied as they are)."""


def _copy_store(
    source: Path, tmp: Path, mention_vectors: Mapping[str, np.ndarray], new_mentions: list[str]
) -> None:
    """The files of `source` the delta does not write anew, copied into `tmp`, and the mention
    vectors with the new mentions' rows appended (`new_mentions`, in that order)."""
    for item in source.iterdir():
        if item.is_file() and item.name not in REWRITTEN:
            shutil.copyfile(item, tmp / item.name)
    stored = source / "mention_vectors.npy"
    if new_mentions and stored.exists():
        append_rows(stored, tmp / stored.name, stack_rows(mention_vectors, new_mentions))
    elif stored.exists():
        shutil.copyfile(stored, tmp / stored.name)


def _apply(
    con: sqlite3.Connection,
    source: Path,
    tmp: Path,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    mention_vectors: Mapping[str, np.ndarray],
    new_mentions: list[str],
    settings: GraphSettings,
    embed: Embed,
    timings: dict[str, Any],
    copying: Background[None],
) -> dict[str, Any]:
    """Every change of the delta, stage by stage as a build runs them (`graphseek.knowledge.
    graph.build`), each on the new passages against the store (`con`: its database,
    read-only); written into `tmp` once `copying` has copied the files it changes in place.
    Returns the store's manifest with the new counts, for the caller to finish and write."""
    n = len(new)
    strings = string_embed(settings, embed)
    # 3. alignment: the new mentions -> new entities, or stored ones they join
    with timed(timings, "align", n):
        aligned = _align(con, source, extracted, mention_vectors, settings, embed)
    # 4. linking: relations, stored entities' new aliases, entity-passage links
    with timed(timings, "link_entities", n):
        relations = _link_entities(con, extracted, aligned, settings)
    with timed(timings, "link_passages", n):
        links = _link_passages(con, source, new, extracted, aligned, relations, settings)
    # 5. hyperedges and topics; the vectors of entities and relations
    with timed(timings, "hyperedges_topics", n):
        topics = _topics(con, source, extracted, aligned, settings, strings)
    with timed(timings, "embed", n):
        vectors = _graph_vectors(con, aligned, relations, settings, strings)
    # 6. write
    with timed(timings, "copy_wait", n):
        copying.result()
    with timed(timings, "write", n):
        manifest = _write(
            con,
            source,
            tmp,
            new,
            extracted,
            new_mentions,
            aligned,
            relations,
            links,
            topics,
            vectors,
            settings,
        )
    return manifest


def _align(
    con: sqlite3.Connection,
    source: Path,
    extracted: Sequence[Extraction],
    mention_vectors: Mapping[str, np.ndarray],
    settings: GraphSettings,
    embed: Embed,
) -> DeltaAlignment:
    """The new mentions' exact groups as base entities (`new_bases`), the stored base
    entities near each (`near_stored`, on a thread), then each decided against the store
    (`align_new`)."""
    mentions = [m for x in extracted for m in x.mentions]
    contextual = settings.alignment == "contextual"
    bases = new_bases(mentions, mention_vectors if contextual else {}, settings, embed)
    stored_rows = int(con.execute("SELECT COUNT(*) FROM base_entities").fetchone()[0])
    search = Background(lambda: near_stored(source, bases.vectors, settings, stored_rows))
    stored = stored_surfaces(con)  # Python, while the search runs with the GIL released
    aligned = align_new(con, source, bases, search.result(), settings, embed)
    aligned.surfaces = stored
    return aligned


@dataclass
class DeltaRelations:
    """The relations the new passages give (`new_relations`), the ids of those the store has
    already, and the aliases stored entities gain (each new name key by its most frequent
    surface)."""

    relations: list[Relation]
    stored: set[str]
    new_aliases: dict[str, list[str]]


def _link_entities(
    con: sqlite3.Connection,
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    settings: GraphSettings,
) -> DeltaRelations:
    """Phase 3 on the delta: `new_relations`, and the stored entities' new aliases."""
    relations, stored_relations = new_relations(con, extracted, aligned, settings)
    new_aliases: dict[str, list[str]] = {}
    for eid, gained in aligned.joined.items():
        known = aligned.stored[eid].keys() if eid in aligned.stored else set()
        surfaces: dict[str, Counter[str]] = defaultdict(Counter)
        for m in gained:
            for surface in (m.name, *m.aliases):
                key = _name_key(surface)
                if key and key not in known:
                    surfaces[key][surface] += 1
        if surfaces:
            new_aliases[eid] = [
                min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0]
                for _, c in sorted(surfaces.items())
            ]
    return DeltaRelations(relations, stored_relations, new_aliases)


@dataclass
class DeltaLinks:
    """The new entity-passage links by (entity, passage), ``"mention"`` or ``"match"``, and the
    store's common words (kept in ``matcher.json``)."""

    links: dict[tuple[str, str], str]
    common: frozenset[str]


def _link_passages(
    con: sqlite3.Connection,
    source: Path,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    relations: DeltaRelations,
    settings: GraphSettings,
) -> DeltaLinks:
    """Phase 4 on the delta: each new mention's entity to its passage, and the matcher's links
    (`match_links`)."""
    matched, common = match_links(
        con, source, new, aligned.new_entities, relations.new_aliases, settings, aligned.surfaces
    )
    links: dict[tuple[str, str], str] = {}
    for x in extracted:
        for m in x.mentions:
            owner = aligned.mention_entity.get(m.id)
            if owner is not None:
                links[(owner, m.passage_id)] = "mention"
    for eid, pids in matched.items():
        for pid in pids:
            links.setdefault((eid, pid), "match")
    return DeltaLinks(links, common)


@dataclass
class DeltaTopics:
    """Every hyperedge the new passages give (their passages are added), those new to the store
    with their topics (`fresh`), and the fresh ones' vectors."""

    hyperedges: Sequence[HyperEdge]
    fresh: list[HyperEdge]
    vectors: np.ndarray


def _topics(
    con: sqlite3.Connection,
    source: Path,
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    settings: GraphSettings,
    strings: Embed,
) -> DeltaTopics:
    """The new passages' hyperedges (`build_hyperedges`, as a build makes them); each new one
    goes to the nearest stored topic (`nearest_topics`) instead of a new k-means."""
    hyperedges = build_hyperedges(
        extracted, aligned.mention_entity, min_entities=settings.min_hyperedge_entities
    )
    stored_hyper = {
        r[0]
        for r in _in_batches(
            con, "SELECT id FROM hyperedges WHERE id IN ({})", [h.id for h in hyperedges]
        )
    }
    fresh = [h for h in hyperedges if h.id not in stored_hyper]
    vectors = hyperedge_vectors(fresh, strings, {})
    topics = nearest_topics(con, source, vectors) if fresh else []
    fresh = [
        h.model_copy(update={"topic_id": topic}) for h, topic in zip(fresh, topics, strict=True)
    ]
    return DeltaTopics(hyperedges, fresh, vectors)


@dataclass
class DeltaVectors:
    """The vectors the delta adds: of the new entities, of the new relations that get one
    (`embedded`), and of the stored entities whose vector text grew (`grown`: ids, rows)."""

    entities: np.ndarray
    embedded: list[Relation]
    relations: np.ndarray
    grown: list[str]
    grown_vectors: np.ndarray


def _graph_vectors(
    con: sqlite3.Connection,
    aligned: DeltaAlignment,
    relations: DeltaRelations,
    settings: GraphSettings,
    strings: Embed,
) -> DeltaVectors:
    """The vectors of the new entities and relations (the relations a build embeds:
    `embedded_relations`), and those of stored entities that gain aliases."""
    names = {e.id: e.name for e in aligned.new_entities}
    names.update({eid: s.name for eid, s in aligned.stored.items()})
    wanted = {x for r in relations.relations for x in (r.source, r.target)} - set(names)
    names.update(dict(_in_batches(con, "SELECT id, name FROM entities WHERE id IN ({})", wanted)))
    fresh = [r for r in relations.relations if r.id not in relations.stored]
    embedded = embedded_relations(fresh, settings)
    relation_vectors = cached_encode([relation_text(r, names) for r in embedded], strings, {})
    entity_vectors = cached_encode([entity_text(e) for e in aligned.new_entities], strings, {})
    # a stored entity that gains aliases gets its vector text's vector again (its first eight
    # aliases are in the text): an exact add later finds its vector by that text
    gained = relations.new_aliases
    grown = [
        eid for eid in gained if eid in aligned.stored and len(aligned.stored[eid].aliases) < 8
    ]
    grown_vectors = cached_encode(
        [
            record_text(
                aligned.stored[eid].name,
                aligned.stored[eid].aliases + gained[eid],
                aligned.stored[eid].types,
            )
            for eid in grown
        ],
        strings,
        {},
    )
    return DeltaVectors(entity_vectors, embedded, relation_vectors, grown, grown_vectors)


def _write(
    con: sqlite3.Connection,
    source: Path,
    tmp: Path,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    new_mentions: list[str],
    aligned: DeltaAlignment,
    relations: DeltaRelations,
    links: DeltaLinks,
    topics: DeltaTopics,
    vectors: DeltaVectors,
    settings: GraphSettings,
) -> dict[str, Any]:
    """The delta written into `tmp` (the files it changes, copied there already): the rows,
    the ids, the vectors appended, the matrices extended, the matcher's words. Returns the
    store's manifest with the new counts."""
    written = sqlite3.connect(tmp / DATABASE)
    try:
        written.execute("PRAGMA journal_mode=OFF")
        written.execute("PRAGMA synchronous=OFF")
        _write_rows(
            written, new, extracted, aligned, relations.relations, relations.stored,
            relations.new_aliases, links.links, topics.hyperedges, topics.fresh,
        )  # fmt: skip
        manifest = json.loads((source / MANIFEST).read_text(encoding="utf-8"))
        _count(manifest, written, aligned, len(new))
    finally:
        written.close()
    nodes = json.loads((source / "nodes.json").read_text(encoding="utf-8"))
    nodes["entities"] += [e.id for e in aligned.new_entities]
    nodes["passages"] += [p.id for p in new]
    nodes["relations_embedded"] += [r.id for r in vectors.embedded]
    nodes["hyperedges"] += [h.id for h in topics.fresh]
    if new_mentions and (source / "mention_vectors.npy").exists():
        nodes.setdefault("mentions_embedded", []).extend(new_mentions)
    for name, rows in (
        ("entity_vectors", vectors.entities),
        ("relation_vectors", vectors.relations),
        ("hyperedge_vectors", topics.vectors),
        ("base_vectors", aligned.base_vectors),
    ):
        if len(rows) and rows.ndim == 2 and rows.shape[1] > 1:
            append_rows(source / f"{name}.npy", tmp / f"{name}.npy", rows)
        elif (source / f"{name}.npy").exists():
            shutil.copyfile(source / f"{name}.npy", tmp / f"{name}.npy")
    weights: dict[tuple[str, str], float] = defaultdict(float)
    for r in relations.relations:
        weights[(r.source, r.target)] += r.weight
    _extend_matrices(source, tmp, nodes["entities"], nodes["passages"], weights, links.links)
    if vectors.grown:
        _overwrite_rows(
            tmp / "entity_vectors.npy", nodes["entities"], vectors.grown, vectors.grown_vectors
        )
    write_id_lists(tmp / "nodes.json", nodes)
    (tmp / MATCHER).write_text(
        _dumps({"top_k_common": settings.top_k_common, "common_words": sorted(links.common)}),
        encoding="utf-8",
    )
    return manifest


def _write_rows(
    con: sqlite3.Connection,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    relations: Sequence[Relation],
    stored_relations: set[str],
    new_aliases: Mapping[str, list[str]],
    links: Mapping[tuple[str, str], str],
    hyperedges: Sequence[HyperEdge],
    fresh_hyper: Sequence[HyperEdge],
) -> None:
    """The delta's rows, in one transaction (the table writers of a build's store where the
    rows are the same: passages, the raw layer, entities, relations, hyperedges). `hyperedges`:
    every one the new passages give (their passages are added); `fresh_hyper`: those new to
    the store, with their topics."""

    def next_ord(table: str) -> int:
        return int(con.execute(f"SELECT COALESCE(MAX(ord), -1) + 1 FROM {table}").fetchone()[0])

    me = aligned.mention_entity
    with con:
        insert_passages(con, new, next_ord("passages"))
        insert_extractions(con, extracted, me, aligned.mention_base)
        insert_base_entities(
            con,
            aligned.base_ids,
            aligned.base_texts,
            aligned.base_entity,
            next_ord("base_entities"),
        )
        # only pairs of two new base entities: a pair with a stored one was decided against
        # the stored *entity's* record, which an exact add must not take for its base's
        fresh_bases = set(aligned.base_ids)
        con.executemany(
            "INSERT OR REPLACE INTO merge_pairs VALUES (?, ?, ?, ?)",
            (
                (a, b, sim, int(ok))
                for (a, b), (sim, ok) in aligned.pairs.items()
                if a in fresh_bases and b in fresh_bases
            ),
        )
        insert_entities(con, aligned.new_entities, next_ord("entities"))
        for eid, aliases in new_aliases.items():
            first = len(aligned.stored[eid].aliases) if eid in aligned.stored else 0
            con.executemany(
                "INSERT INTO entity_aliases VALUES (?, ?, ?, ?)",
                ((eid, first + k, a, normalize_name(a)) for k, a in enumerate(aliases)),
            )
        con.executemany(
            "INSERT INTO provenance VALUES (?, ?, ?)",
            ((me[m.id], m.id, m.passage_id) for x in extracted for m in x.mentions if m.id in me),
        )
        con.executemany(
            "INSERT OR IGNORE INTO entity_passages VALUES (?, ?, ?)",
            ((eid, pid, kind) for (eid, pid), kind in sorted(links.items())),
        )
        insert_relations(
            con, [r for r in relations if r.id not in stored_relations], next_ord("relations")
        )
        con.executemany(
            "UPDATE relations SET weight = weight + ? WHERE id = ?",
            ((r.weight, r.id) for r in relations if r.id in stored_relations),
        )
        con.executemany(
            "INSERT INTO relation_passages VALUES (?, ?)",
            ((r.id, pid) for r in relations for pid in r.passage_ids),
        )
        insert_hyperedges(con, fresh_hyper, next_ord("hyperedges"))
        con.executemany(
            "INSERT INTO hyperedge_passages VALUES (?, ?)",
            ((h.id, pid) for h in hyperedges for pid in h.passage_ids),
        )
        for topic, size in Counter(h.topic_id for h in fresh_hyper if h.topic_id).items():
            con.execute("UPDATE topics SET size = size + ? WHERE id = ?", (size, topic))


def _count(
    manifest: dict[str, Any], con: sqlite3.Connection, aligned: DeltaAlignment, n: int
) -> None:
    """The manifest's counts, read back from the changed database, and the ``delta`` section."""

    def one(sql: str) -> int:
        return int(con.execute(sql).fetchone()[0])

    counts = manifest.setdefault("counts", {})
    counts.update(
        passages=one("SELECT COUNT(*) FROM passages"),
        entities=one("SELECT COUNT(*) FROM entities"),
        relations=one("SELECT COUNT(*) FROM relations"),
        relations_by_kind=dict(con.execute("SELECT kind, COUNT(*) FROM relations GROUP BY kind")),
        hyperedges=one("SELECT COUNT(*) FROM hyperedges"),
        topics=one("SELECT COUNT(*) FROM topics"),
        entity_passage_links=one("SELECT COUNT(*) FROM entity_passages"),
        match_links=one("SELECT COUNT(*) FROM entity_passages WHERE kind = 'match'"),
    )
    delta = manifest.setdefault("delta", {})
    delta["adds"] = int(delta.get("adds", 0)) + 1
    delta["passages_added"] = int(delta.get("passages_added", 0)) + n
    totals = delta.setdefault("alignment", {})
    for key, value in aligned.counts.items():
        totals[key] = int(totals.get(key, 0)) + int(value)
    delta["last"] = dict(aligned.counts, passages=n)
