"""A stored graph as the stages read it when they run onto it (a delta add: `graphseek.knowledge.
graph.delta`): its directory and its database, opened read-only, with the few typed reads the
stages share (the stored entities' records, the base entities and their vectors, the manifest
and the node ids). A stage's own queries go through `StoredGraph.rows`."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.graph.algorithms.records import EntityRecord
from graphseek.knowledge.graph.store.writer import DATABASE, MANIFEST
from graphseek.knowledge.text import normalize_name

SQL_BATCH = 900
"""Parameters per ``IN (...)`` query (SQLite allows 999 by default on older builds)."""

STORED_ROWS = 65_536
"""Stored vectors compared with the new ones at a time (one block in memory)."""


def name_key(surface: str) -> str:
    """The key a name is matched by (its normalised form, else its lower case)."""
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
        return {name_key(n) for n in (self.name, *self.aliases)}


@dataclass(frozen=True)
class StoredGraph:
    """The store in `dir`, its database open read-only on `con` (one thread's: a stage that
    works on a thread reads only the files in `dir`)."""

    dir: Path
    con: sqlite3.Connection

    @classmethod
    @contextlib.contextmanager
    def open(cls, store_dir: Path) -> Iterator[StoredGraph]:
        con = sqlite3.connect(f"file:{store_dir / DATABASE}?mode=ro", uri=True)
        try:
            yield cls(store_dir, con)
        finally:
            con.close()

    def rows(self, sql: str, values: Iterable[Any]) -> list[tuple[Any, ...]]:
        """``sql`` (with one ``{}`` for the placeholders) run over `values` in batches."""
        items = list(dict.fromkeys(values))
        out: list[tuple[Any, ...]] = []
        for start in range(0, len(items), SQL_BATCH):
            chunk = items[start : start + SQL_BATCH]
            out += self.con.execute(sql.format(",".join("?" * len(chunk))), chunk).fetchall()
        return out

    def count(self, table: str) -> int:
        return int(self.con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def has_entity(self, eid: str) -> bool:
        return (
            self.con.execute("SELECT 1 FROM entities WHERE id = ?", (eid,)).fetchone() is not None
        )

    def entities(self, ids: Iterable[str]) -> dict[str, StoredEntity]:
        """The stored entities of `ids` (those the store has), with their aliases and types."""
        out = {
            eid: StoredEntity(eid, name, description)
            for eid, name, description in self.rows(
                "SELECT id, name, description FROM entities WHERE id IN ({})", ids
            )
        }
        for eid, alias in self.rows(
            "SELECT entity_id, alias FROM entity_aliases WHERE entity_id IN ({}) "
            "ORDER BY entity_id, position",
            out,
        ):
            out[eid].aliases.append(alias)
        for eid, kind in self.rows(
            "SELECT entity_id, type FROM entity_types WHERE entity_id IN ({}) "
            "ORDER BY entity_id, position",
            out,
        ):
            out[eid].types.append(kind)
        return out

    def base_entities(self) -> tuple[list[str], list[str]]:
        """Every stored base entity's id and its entity's id, in row order of
        ``base_vectors.npy``."""
        rows = self.con.execute("SELECT id, entity_id FROM base_entities ORDER BY ord").fetchall()
        return [r[0] for r in rows], [r[1] for r in rows]

    def base_vectors(self, count: int, width: int) -> np.ndarray | None:
        """The store's base vectors, memory-mapped, when ``base_vectors.npy`` holds `count` rows
        (one per stored base entity, none is not enough) of `width`; else None."""
        path = self.dir / "base_vectors.npy"
        if not count or not path.exists():
            return None
        stored = np.load(path, mmap_mode="r")
        return stored if stored.ndim == 2 and stored.shape == (count, width) else None

    def manifest(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / MANIFEST).read_text(encoding="utf-8")))

    def nodes(self) -> dict[str, list[str]]:
        """The ids of the store's rows of vectors and matrices (``nodes.json``)."""
        return dict(json.loads((self.dir / "nodes.json").read_text(encoding="utf-8")))
