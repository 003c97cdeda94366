"""Writing a graph store: its format (`FORMAT`, `VERSION`, file names, the SQLite schema), the
in-memory `GraphData` a build produces, and `write_store`, which writes it atomically through
`graphseek.knowledge.atomic.atomic_directory`. The directory layout is described in
`graphseek.knowledge.graph.store`, which reads it."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from graphseek.errors import IndexFormatError
from graphseek.knowledge.atomic import atomic_directory, recover
from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.memory.merge_pairs import MergePairs
from graphseek.knowledge.graph.memory.model_columns import ModelColumns
from graphseek.knowledge.graph.memory.passage_links import PassageLinks
from graphseek.knowledge.graph.memory.relation_columns import RelationColumns
from graphseek.knowledge.graph.memory.spool import SpilledArray, sorted_keys, stack_rows
from graphseek.knowledge.graph.models import (
    Entity,
    Extraction,
    HyperEdge,
    Relation,
    Topic,
)
from graphseek.knowledge.npy import save_blocks
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import normalize_name

FORMAT = "graphseek-graph"
VERSION = 1
MANIFEST = "manifest.json"
DATABASE = "graph.sqlite"
MATCHER = "matcher.json"
"""The corpus's most common words (the matcher's `top_k_common` rule), which a build keeps
(and a delta add, for a store built before builds did), so an add need not count them again."""

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE passages (ord INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, title TEXT NOT NULL,
    text TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE mentions (id TEXT PRIMARY KEY, passage_id TEXT NOT NULL, name TEXT NOT NULL,
    aliases TEXT NOT NULL, description TEXT NOT NULL, types TEXT NOT NULL, sentence INTEGER,
    entity_id TEXT, base_id TEXT);
CREATE TABLE raw_relations (passage_id TEXT NOT NULL, source TEXT NOT NULL, label TEXT NOT NULL,
    target TEXT NOT NULL, sentence INTEGER);
CREATE TABLE raw_facts (id TEXT PRIMARY KEY, passage_id TEXT NOT NULL, relation TEXT NOT NULL,
    mentions TEXT NOT NULL, sentence INTEGER);
CREATE TABLE entities (ord INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, name TEXT NOT NULL,
    norm TEXT NOT NULL, description TEXT NOT NULL);
CREATE TABLE entity_aliases (entity_id TEXT NOT NULL, position INTEGER, alias TEXT NOT NULL,
    norm TEXT NOT NULL);
CREATE TABLE entity_types (entity_id TEXT NOT NULL, position INTEGER, type TEXT NOT NULL);
CREATE TABLE provenance (entity_id TEXT NOT NULL, mention_id TEXT NOT NULL,
    passage_id TEXT NOT NULL);
CREATE TABLE entity_passages (entity_id TEXT NOT NULL, passage_id TEXT NOT NULL,
    kind TEXT NOT NULL, PRIMARY KEY (entity_id, passage_id));
CREATE TABLE relations (ord INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, source TEXT NOT NULL,
    label TEXT NOT NULL, target TEXT NOT NULL, weight REAL NOT NULL, kind TEXT NOT NULL);
CREATE TABLE relation_passages (relation_id TEXT NOT NULL, passage_id TEXT NOT NULL);
CREATE TABLE hyperedges (ord INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL,
    relation TEXT NOT NULL, topic_id TEXT);
CREATE TABLE hyperedge_members (hyperedge_id TEXT NOT NULL, position INTEGER,
    entity_id TEXT NOT NULL);
CREATE TABLE hyperedge_passages (hyperedge_id TEXT NOT NULL, passage_id TEXT NOT NULL);
CREATE TABLE topics (ord INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, label TEXT NOT NULL,
    keywords TEXT NOT NULL, size INTEGER NOT NULL);
CREATE TABLE base_entities (ord INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, text TEXT NOT NULL,
    entity_id TEXT NOT NULL);
CREATE TABLE merge_pairs (a TEXT NOT NULL, b TEXT NOT NULL, sim REAL NOT NULL,
    merged INTEGER NOT NULL, PRIMARY KEY (a, b));
"""

CACHE_KIB = 262_144
"""SQLite's page cache while a store is written (KiB; an upper bound, used as the file grows)."""
INDEX_CACHE_KIB = 16_384
"""SQLite's page cache, and so its sorter's memory, while the indexes are built after the rows
(KiB): the inserts need the large cache (`CACHE_KIB`), the index builds do not."""

_INDEXES = """
CREATE INDEX ix_mentions_passage ON mentions (passage_id);
CREATE INDEX ix_raw_relations_passage ON raw_relations (passage_id);
CREATE INDEX ix_raw_facts_passage ON raw_facts (passage_id);
CREATE INDEX ix_entities_norm ON entities (norm);
CREATE INDEX ix_entities_name ON entities (name);
CREATE INDEX ix_aliases_entity ON entity_aliases (entity_id);
CREATE INDEX ix_aliases_norm ON entity_aliases (norm);
CREATE INDEX ix_aliases_alias ON entity_aliases (alias);
CREATE INDEX ix_types_entity ON entity_types (entity_id);
CREATE INDEX ix_provenance_entity ON provenance (entity_id);
CREATE INDEX ix_entity_passages_passage ON entity_passages (passage_id);
CREATE INDEX ix_relations_source ON relations (source);
CREATE INDEX ix_relations_target ON relations (target);
CREATE INDEX ix_relation_passages ON relation_passages (relation_id);
CREATE INDEX ix_members_hyperedge ON hyperedge_members (hyperedge_id);
CREATE INDEX ix_members_entity ON hyperedge_members (entity_id);
CREATE INDEX ix_hyperedge_passages ON hyperedge_passages (hyperedge_id);
CREATE INDEX ix_hyperedges_topic ON hyperedges (topic_id);
"""


@dataclass
class GraphData:
    """Everything a store holds (what a build produces and `write_store` writes): in memory,
    but for the extractions and vectors a build keeps in temporary files until the write
    (`graphseek.knowledge.graph.memory.spool`)."""

    passages: Sequence[Passage]
    """In corpus order (a build's may be a `PassageSpool`: read when written)."""
    extractions: Sequence[Extraction]
    entities: Sequence[Entity]
    """Sorted by id (a build's: `model_columns.EntityColumns`)."""
    relations: Sequence[Relation]
    """Sorted by id (a build's: `RelationColumns`)."""
    entity_passages: PassageLinks
    """Each entity's passages, and the link's kind ("mention" or "match")."""
    hyperedges: Sequence[HyperEdge]
    """Sorted by id (a build's: `model_columns.HyperEdgeColumns`)."""
    topics: list[Topic]
    entity_vectors: np.ndarray | SpilledArray
    relation_vector_ids: list[str]
    relation_vectors: np.ndarray | SpilledArray
    hyperedge_vectors: np.ndarray | SpilledArray
    base_ids: list[str]
    base_texts: list[str]
    base_entity: list[str]
    base_vectors: np.ndarray | SpilledArray
    pairs: MergePairs
    """The decided merge pairs, in (a, b) order."""
    mention_entity: Mapping[str, str]
    mention_base: Mapping[str, str]
    mention_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Contextual mention vectors by mention id (float16; empty unless the graph aligns with
    them), kept for incremental updates."""
    manifest: dict[str, Any] = field(default_factory=dict)
    common_words: list[str] = field(default_factory=list)
    """The passage matcher's most common words of the corpus (``matcher.json``: a delta add
    reads them instead of counting every passage's words again)."""


# -- writing ------------------------------------------------------------------------------------


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _dumps(value: Any) -> str:
    """Compact JSON (one encoder for every row: `json.dumps` with options makes one per call;
    most mentions have no aliases, hence the shortcut)."""
    if isinstance(value, list) and not value:
        return "[]"
    return _ENCODE(value)


def write_id_lists(path: Path, lists: Mapping[str, Sequence[str]]) -> None:
    """``_dumps(dict(lists))`` written to `path` `WRITE_ROWS` items at a time: the same bytes
    (compact JSON is ``[`` + the items joined by commas + ``]``) without the whole text and
    its UTF-8 copy in memory at once (``nodes.json`` names every row of the graph, and is
    written at the write's peak)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{")
        for n, (key, items) in enumerate(lists.items()):
            handle.write(("," if n else "") + _ENCODE(key) + ":[")
            for start in range(0, len(items), WRITE_ROWS):
                block = _ENCODE(list(items[start : start + WRITE_ROWS]))
                handle.write(("," if start else "") + block[1:-1])
            handle.write("]")
        handle.write("}")


def insert_passages(con: sqlite3.Connection, passages: Iterable[Passage], start: int = 0) -> None:
    """The `passages` rows, numbered (``ord``) from `start`."""
    con.executemany(
        "INSERT INTO passages VALUES (?, ?, ?, ?, ?)",
        ((start + n, p.id, p.title, p.text, p.source) for n, p in enumerate(passages)),
    )


def insert_extractions(
    con: sqlite3.Connection,
    extractions: Iterable[Extraction],
    mention_entity: Mapping[str, str],
    mention_base: Mapping[str, str],
) -> None:
    """The raw layer of `extractions` (mentions with their entity and base entity, raw
    relations, raw facts). `extractions` is read once per table (a spool or a list)."""
    con.executemany(
        "INSERT INTO mentions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (
                m.id,
                m.passage_id,
                m.name,
                _dumps(m.aliases),
                m.description,
                _dumps(m.types),
                m.sentence,
                mention_entity.get(m.id),
                mention_base.get(m.id),
            )
            for x in extractions
            for m in x.mentions
        ),
    )
    con.executemany(
        "INSERT INTO raw_relations VALUES (?, ?, ?, ?, ?)",
        (
            (r.passage_id, r.source, r.label, r.target, r.sentence)
            for x in extractions
            for r in x.relations
        ),
    )
    con.executemany(
        "INSERT INTO raw_facts VALUES (?, ?, ?, ?, ?)",
        (
            (f.id, f.passage_id, f.relation, _dumps(f.mentions), f.sentence)
            for x in extractions
            for f in x.facts
        ),
    )


def insert_entities(con: sqlite3.Connection, entities: Sequence[Entity], start: int = 0) -> None:
    """The `entities` rows (``ord`` from `start`), with their aliases and types."""
    con.executemany(
        "INSERT INTO entities VALUES (?, ?, ?, ?, ?)",
        (
            (start + n, e.id, e.name, normalize_name(e.name), e.description)
            for n, e in enumerate(entities)
        ),
    )
    con.executemany(
        "INSERT INTO entity_aliases VALUES (?, ?, ?, ?)",
        ((e.id, k, a, normalize_name(a)) for e in entities for k, a in enumerate(e.aliases)),
    )
    con.executemany(
        "INSERT INTO entity_types VALUES (?, ?, ?)",
        ((e.id, k, t) for e in entities for k, t in enumerate(e.types)),
    )


def insert_relations(
    con: sqlite3.Connection, relations: Iterable[Relation], start: int = 0
) -> None:
    """The `relations` rows (``ord`` from `start``; their passages are the caller's)."""
    if isinstance(relations, RelationColumns):
        con.executemany("INSERT INTO relations VALUES (?, ?, ?, ?, ?, ?, ?)", relations.rows(start))
        return
    con.executemany(
        "INSERT INTO relations VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            (start + n, r.id, r.source, r.label, r.target, r.weight, r.kind)
            for n, r in enumerate(relations)
        ),
    )


def insert_hyperedges(
    con: sqlite3.Connection, hyperedges: Sequence[HyperEdge], start: int = 0
) -> None:
    """The `hyperedges` rows (``ord`` from `start`) and their members (their passages are the
    caller's)."""
    con.executemany(
        "INSERT INTO hyperedges VALUES (?, ?, ?, ?)",
        ((start + n, h.id, h.relation, h.topic_id) for n, h in enumerate(hyperedges)),
    )
    con.executemany(
        "INSERT INTO hyperedge_members VALUES (?, ?, ?)",
        ((h.id, k, eid) for h in hyperedges for k, eid in enumerate(h.entity_ids)),
    )


def insert_base_entities(
    con: sqlite3.Connection,
    ids: Sequence[str],
    texts: Sequence[str],
    entity_ids: Sequence[str],
    start: int = 0,
) -> None:
    """The alignment cache's base entities (``ord`` from `start`: the rows of their vectors)."""
    con.executemany(
        "INSERT INTO base_entities VALUES (?, ?, ?, ?)",
        (
            (start + n, bid, text, eid)
            for n, (bid, text, eid) in enumerate(zip(ids, texts, entity_ids, strict=True))
        ),
    )


def _write_database(path: Path, data: GraphData, cache_kib: int = CACHE_KIB) -> None:
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        # a larger page cache than the 2 MB default: the id indexes take keys in random order
        con.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
        con.executescript(_SCHEMA)
        with con:
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("format", FORMAT), ("version", str(VERSION))],
            )
            insert_passages(con, data.passages)
            insert_extractions(con, data.extractions, data.mention_entity, data.mention_base)
            insert_entities(con, data.entities)
            con.executemany(
                "INSERT INTO provenance VALUES (?, ?, ?)",
                (
                    (e.id, mid, mid.rsplit("#", 1)[0])
                    for e in data.entities
                    for mid in e.mention_ids
                ),
            )
            con.executemany(
                "INSERT INTO entity_passages VALUES (?, ?, ?)",
                data.entity_passages.rows(),
            )
            insert_relations(con, data.relations)
            con.executemany(
                "INSERT INTO relation_passages VALUES (?, ?)",
                data.relations.passage_rows()
                if isinstance(data.relations, RelationColumns)
                else ((r.id, pid) for r in data.relations for pid in r.passage_ids),
            )
            insert_hyperedges(con, data.hyperedges)
            con.executemany(
                "INSERT INTO hyperedge_passages VALUES (?, ?)",
                ((h.id, pid) for h in data.hyperedges for pid in h.passage_ids),
            )
            con.executemany(
                "INSERT INTO topics VALUES (?, ?, ?, ?, ?)",
                ((n, t.id, t.label, _dumps(t.keywords), t.size) for n, t in enumerate(data.topics)),
            )
            insert_base_entities(con, data.base_ids, data.base_texts, data.base_entity)
            con.executemany(
                "INSERT INTO merge_pairs VALUES (?, ?, ?, ?)",
                ((a, b, sim, int(merged)) for (a, b), (sim, merged) in data.pairs.items()),
            )
        # the indexes are built from sorted keys, which a small cache serves as well; and
        # SQLite's sorter holds up to the cache's size of keys before it spills to TMPDIR, so
        # with the whole cache it held both at the write's top (the same file either way)
        con.execute(f"PRAGMA cache_size=-{min(int(cache_kib), INDEX_CACHE_KIB)}")
        con.executescript(_INDEXES)
        con.commit()
    finally:
        con.close()


def build_matrices(
    entity_ids: Sequence[str],
    passage_ids: Sequence[str],
    relations: Iterable[Relation],
    entity_passages: PassageLinks | None,
) -> tuple[sparse.csr_matrix, sparse.csr_matrix, sparse.csr_matrix]:
    """(entity adjacency, entity+passage adjacency, entity x passage incidence), all CSR.
    `entity_passages` numbers its entities and passages as `entity_ids` and `passage_ids` do
    (None: no links). The coordinates are typed arrays (4 bytes a value), not lists of Python
    ints and floats (an object each)."""
    ne, np_ = len(entity_ids), len(passage_ids)
    epos = {e: k for k, e in enumerate(entity_ids)}
    if isinstance(relations, RelationColumns):
        rows, cols, vals = _adjacency_coordinates(relations, epos)
    else:
        rows, cols, vals = _object_coordinates(relations, epos)
    del epos
    adjacency = sparse.csr_matrix((vals, (rows, cols)), shape=(ne, ne), dtype=np.float32)
    del rows, cols, vals
    adjacency.sum_duplicates()
    if entity_passages is not None and len(entity_passages):
        if (len(entity_passages.entity_ids), len(entity_passages.passage_ids)) != (ne, np_):
            raise ValueError("the entity-passage links number other entities or passages")
        inc_rows, inc_cols = entity_passages.entity, entity_passages.passage
    else:
        inc_rows = inc_cols = np.zeros(0, dtype=np.int32)
    incidence = sparse.csr_matrix(
        (np.ones(len(inc_rows), dtype=np.float32), (inc_rows, inc_cols)),
        shape=(ne, np_),
        dtype=np.float32,
    )
    incidence.sum_duplicates()
    incidence.data[:] = 1.0
    full = _stacked(adjacency.tocsr(), incidence)
    return adjacency.tocsr(), full.tocsr(), incidence.tocsr()


def _stacked(adjacency: sparse.csr_matrix, incidence: sparse.csr_matrix) -> sparse.csr_matrix:
    """``[[adjacency, incidence], [incidence.T, None]]`` as CSR: the entities' rows (their
    edges, then their passages after the entities' columns) over the passages' rows (their
    entities). Stacked by scipy's CSR paths (`hstack`, `vstack`), which join the blocks' arrays
    row by row: the same arrays as `sparse.bmat`, which goes through coordinates and holds
    more while it does."""
    ne, np_ = incidence.shape
    if not ne or not np_:  # no passages: the entities' block; no entities: an empty one
        return sparse.csr_matrix((ne + np_, ne + np_), dtype=np.float32) if not ne else adjacency
    top = sparse.hstack([adjacency, incidence], format="csr", dtype=np.float32)
    by_passage = incidence.T.tocsr()
    bottom = sparse.csr_matrix(
        (by_passage.data, by_passage.indices, by_passage.indptr), shape=(np_, ne + np_)
    )
    del by_passage
    return sparse.vstack([top, bottom], format="csr", dtype=np.float32)


def _object_coordinates(
    relations: Iterable[Relation], positions: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`build_matrices`' coordinates from `Relation` objects: each relation whose two ends are
    distinct entities of `positions` gives (a, b) then (b, a), its weight as float32 twice."""
    rows, cols, vals = array("i"), array("i"), array("f")
    for r in relations:
        a, b = positions.get(r.source), positions.get(r.target)
        if a is None or b is None or a == b:
            continue
        rows.extend((a, b))
        cols.extend((b, a))
        vals.extend((r.weight, r.weight))
    return (
        np.frombuffer(rows, dtype=np.int32),
        np.frombuffer(cols, dtype=np.int32),
        np.frombuffer(vals, dtype=np.float32),
    )


def _adjacency_coordinates(
    relations: RelationColumns, positions: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`build_matrices`' coordinates from columns: each relation whose two ends are distinct
    entities of `positions` gives (a, b) then (b, a), in relation order, its weight as float32
    twice (the order and values the loop over `Relation` objects gives)."""
    a, b = relations.endpoints(positions)
    keep = (a >= 0) & (b >= 0) & (a != b)
    a, b = a[keep].astype(np.int32), b[keep].astype(np.int32)
    weight = relations.weight[keep].astype(np.float32)
    rows = np.stack([a, b], axis=1).ravel()
    cols = np.stack([b, a], axis=1).ravel()
    return rows, cols, np.repeat(weight, 2)


def _save_npy(path: Path, array: np.ndarray | SpilledArray, dim: int) -> None:
    """``np.save`` of `array` as float32 (an empty one as (0, `dim`)). A `SpilledArray` is
    copied from its file `WRITE_ROWS` rows at a time, behind the header ``np.save`` writes:
    the same bytes."""
    if array.size == 0:
        array = np.zeros((0, dim), dtype=np.float32)
    if not isinstance(array, SpilledArray):
        np.save(path, np.ascontiguousarray(array, dtype=np.float32))
        return
    save_blocks(path, array.blocks(WRITE_ROWS), array.shape, np.float32)


WRITE_ROWS = 65_536
"""Rows copied at a time when a store's vectors are written from a mapping (one batch in memory
beside the vectors themselves)."""


def _save_rows(path: Path, rows: Mapping[str, np.ndarray], ids: Sequence[str], dim: int) -> None:
    """``np.save`` of the float16 rows of `ids` (the same bytes: its version 1.0 header, then the
    rows), written `WRITE_ROWS` at a time instead of stacking every row into one more array
    first. Plain writes, not a memory map: a map's dirty pages count in the process's RSS."""
    if not ids:
        np.save(path, np.zeros((0, dim), dtype=np.float16))
        return
    width = len(rows[ids[0]])
    blocks = (  # in runs from a file
        stack_rows(rows, ids[start : start + WRITE_ROWS])
        for start in range(0, len(ids), WRITE_ROWS)
    )
    save_blocks(path, blocks, (len(ids), width), np.float16)


def check_target(out_dir: str | os.PathLike[str]) -> Path:
    """The resolved store path; `IndexFormatError` if it names a non-empty directory (or a
    file) that is not a graph store, which a build would otherwise replace."""
    dest = Path(out_dir).expanduser().resolve()
    recover(dest)
    if dest.exists():
        if not dest.is_dir():
            raise IndexFormatError(f"{dest} is a file, not a graph store directory")
        manifest = dest / MANIFEST
        if any(dest.iterdir()) and not manifest.exists():
            raise IndexFormatError(
                f"refusing to replace {dest}: it is a non-empty directory without a graph "
                f"{MANIFEST}; choose an empty or new directory (e.g. <index_dir>/graph)"
            )
        if manifest.exists():
            try:
                fmt = json.loads(manifest.read_text(encoding="utf-8")).get("format")
            except (OSError, ValueError):
                fmt = None
            if fmt != FORMAT:
                raise IndexFormatError(f"refusing to replace {dest}: it is not a graph store")
    return dest


def write_store(
    data: GraphData, out_dir: str | os.PathLike[str], *, cache_kib: int = CACHE_KIB
) -> Path:
    """Write `data` to `out_dir` atomically (`graphseek.knowledge.atomic`); returns its path.
    The database is written on a thread while this one writes the arrays (SQLite runs without
    the GIL, so the two overlap on a second core), with a page cache of `cache_kib` KiB (the
    same file whatever it is; a smaller one costs time: `graphseek.knowledge.graph.memory.budget`)."""
    dest = check_target(out_dir)
    with atomic_directory(dest) as tmp:
        database = Background(lambda: _write_database(tmp / DATABASE, data, cache_kib))
        try:
            _write_arrays(tmp, data)
        except BaseException:
            with contextlib.suppress(BaseException):  # the directory goes once it is done
                database.result()
            raise
        database.result()
    return dest


def _ids(models: Sequence[Entity] | Sequence[HyperEdge]) -> list[str]:
    """The models' ids: a `ModelColumns`' own column (not made into models), else read."""
    return models.ids if isinstance(models, ModelColumns) else [m.id for m in models]


def _write_arrays(tmp: Path, data: GraphData) -> None:
    """The vectors, the sparse matrices, ``nodes.json`` and the manifest."""
    dim = (
        max(
            (a.shape[1] for a in (data.entity_vectors, data.base_vectors) if a.ndim == 2),
            default=384,
        )
        or 384
    )
    _save_npy(tmp / "entity_vectors.npy", data.entity_vectors, dim)
    _save_npy(tmp / "relation_vectors.npy", data.relation_vectors, dim)
    _save_npy(tmp / "hyperedge_vectors.npy", data.hyperedge_vectors, dim)
    _save_npy(tmp / "base_vectors.npy", data.base_vectors, dim)
    mention_ids = sorted_keys(data.mention_vectors)
    _save_rows(tmp / "mention_vectors.npy", data.mention_vectors, mention_ids, dim)
    entity_ids = _ids(data.entities)
    passage_ids = [p.id for p in data.passages]
    adjacency, full, incidence = build_matrices(
        entity_ids, passage_ids, data.relations, data.entity_passages
    )
    sparse.save_npz(tmp / "adjacency_entity.npz", adjacency)
    sparse.save_npz(tmp / "adjacency_full.npz", full)
    sparse.save_npz(tmp / "entity_passage.npz", incidence)
    nodes = {
        "entities": entity_ids,
        "passages": passage_ids,
        "relations_embedded": data.relation_vector_ids,
        "hyperedges": _ids(data.hyperedges),
        "mentions_embedded": mention_ids,
    }
    write_id_lists(tmp / "nodes.json", nodes)
    if data.common_words:
        settings = data.manifest.get("settings") or {}
        matcher = {"top_k_common": settings.get("top_k_common"), "common_words": data.common_words}
        (tmp / MATCHER).write_text(_dumps(matcher), encoding="utf-8")
    manifest = {"format": FORMAT, "version": VERSION, "written": time.time()}
    manifest.update(data.manifest)
    (tmp / MANIFEST).write_text(
        json.dumps(manifest, indent=2, ensure_ascii=False, default=str), encoding="utf-8"
    )
