"""Reading a directory store's knowledge graph one neighbourhood at a time (`NeighbourhoodReads`).

`Index.open(path, graph_reads="neighbourhood").graph_neighbourhood()` returns a
`DirectoryNeighbourhood`: the graph retrievers (`graphseek.tools.neighbourhood`) then read each
query's neighbourhood from the store instead of loading the whole graph into a `GraphView`, as
they do over PostgreSQL (`graphseek.knowledge.postgres.neighbourhood.PostgresNeighbourhood`).
Both return the same rows in the same order (`Catalogue`, `RelationRow`, `HyperEdge`, numpy
arrays), so the algorithms above them are written once.

Where each read comes from:

- SQL on ``graph.sqlite`` (read-only), one statement per frontier, each on an index of the
  store's schema (`graphseek.knowledge.graph.store.writer`): relations by source and by target
  (``ix_relations_source``, ``ix_relations_target``) or by id (unique), their passages
  (``ix_relation_passages``), entity-passage links by entity (the primary key) or passage
  (``ix_entity_passages_passage``), hyperedges by id (unique) or member
  (``ix_members_entity``), their members and passages. Id sets travel as one JSON parameter
  (``IN (SELECT value FROM json_each(?))``), so a frontier of any size is one statement.
- the stored vector files, memory-mapped (``np.load(mmap_mode="r")``): rows of entities, of
  relations (their rows named by ``nodes.json``) and of hyperedges (for the topic centroids);
  the nearest entities are an exact scan of the mapped entity vectors.
- the undirected entity graph's rows (`entity_rows`, push PPR's reads) come from the stored
  ``adjacency_entity.npz``: a compressed file cannot be read by row, and no table holds the
  summed weights, so its three CSR arrays are read once per revision, with the catalogue (which
  needs every entity's number of neighbours anyway).

Every file is opened when the object is made, so a long-lived reader keeps reading the revision
it was made for even if a writer swaps a new index into place (the directory's writes replace
whole directories); a reader of a newer revision is a new object (`graph_neighbourhood()`).
Reads are counted in `reads` (statements and rows) and `vector_reads`, as over PostgreSQL.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from scipy import sparse

from graphseek.errors import IndexFormatError
from graphseek.knowledge.adjacency import undirected_adjacency
from graphseek.knowledge.graph.models import HyperEdge, Topic
from graphseek.knowledge.graph.store import SQLiteGraphStore, aliases_and_types, vector_space

# -- the rows both backends return ----------------------------------------------------------------


@dataclass
class ReadCounter:
    """Queries run and rows fetched (thread-safe)."""

    queries: int = 0
    rows: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, rows: int) -> None:
        with self._lock:
            self.queries += 1
            self.rows += rows

    def reset(self) -> tuple[int, int]:
        """Zero the counts; returns (queries, rows) before."""
        with self._lock:
            before = (self.queries, self.rows)
            self.queries = self.rows = 0
            return before


@dataclass(frozen=True)
class Catalogue:
    """The entity-level data every query's seed finding needs, read once per index revision:
    entity ids, names, aliases, types and descriptions, the number of passages each entity is
    linked to, each entity's number of neighbours, the distinct relation labels."""

    entity_ids: list[str]
    names: list[str]
    aliases: list[list[str]]
    types: list[list[str]]
    descriptions: list[str]
    passage_degree: np.ndarray  # int64, passages linked to each entity
    degree: np.ndarray  # int64, neighbours of each entity on the undirected entity graph
    has_rows: bool  # the store serves the undirected graph's rows (`entity_rows`)
    has_entity_vectors: bool  # every entity has its vector (read per query, not here)
    relation_labels: list[str]  # distinct, sorted
    vector_space: str = "minilm"  # of the graph's vectors (`GraphSettings.vectors`)


@dataclass(frozen=True)
class RelationRow:
    """One relation as the neighbourhood reads return it (`ord` is its global order)."""

    ord: int
    id: str
    source: str
    label: str
    target: str
    weight: float
    kind: str
    passage_ids: tuple[str, ...]


class SharedTableReads:
    """The reads whose SQL is the same on both backends' graph tables (no parameters, the same
    columns and order): every topic, every hyperedge's label, every relation without its
    passages. A backend supplies `_rows(sql)`."""

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def topics(self) -> list[Topic]:
        """Every topic, in order (as `SQLiteGraphStore.topics()`)."""
        rows = self._rows("SELECT id, label, keywords, size FROM topics ORDER BY ord")
        return [
            Topic(id=tid, label=label, keywords=json.loads(kw), size=size)
            for tid, label, kw, size in rows
        ]

    def hyperedge_labels(self) -> list[HyperEdge]:
        """Every hyperedge's id, relation text and topic, in order, without members or
        passages (what ranking hyperedges and grouping them by topic need)."""
        rows = self._rows("SELECT id, relation, topic_id FROM hyperedges ORDER BY ord")
        return [HyperEdge(id=h, relation=r, entity_ids=[], topic_id=t) for h, r, t in rows]

    def relation_list(self) -> list[tuple[str, str, str, str, float, str]]:
        """Every relation's (id, source, label, target, weight, kind), in order, without its
        passages: what ranking all relations by their verbalisation needs (a triple pattern
        with no anchored end)."""
        rows = self._rows(
            "SELECT id, source, label, target, weight, kind FROM relations ORDER BY ord"
        )
        return [(i, s, lab, t, float(w), k) for i, s, lab, t, w, k in rows]


def read_catalogue(
    rows: Callable[[str], list[tuple[Any, ...]]],
    *,
    neighbours: Callable[[list[str]], tuple[np.ndarray, bool]],
    has_entity_vectors: Callable[[list[str]], bool],
    space: Callable[[], str],
) -> Catalogue:
    """The `Catalogue` of a graph in the tables both backends share, read through `rows(sql)`.
    What the backends keep apart is asked of them: `neighbours(ids)`, each entity's number of
    neighbours on the undirected entity graph and whether the backend serves that graph's rows;
    `has_entity_vectors(ids)`, whether every entity has its vector, in order; `space()`, the
    space of the graph's vectors."""
    entities = rows("SELECT id, name, description FROM entities ORDER BY ord")
    aliases, types = aliases_and_types(rows)
    degree = dict(rows("SELECT entity_id, count(*) FROM entity_passages GROUP BY entity_id"))
    ids = [r[0] for r in entities]
    has_vectors = has_entity_vectors(ids)
    counts, has_rows = neighbours(ids)
    labels = [r[0] for r in rows("SELECT DISTINCT label FROM relations ORDER BY 1")]
    return Catalogue(
        entity_ids=ids,
        names=[r[1] for r in entities],
        aliases=[aliases.get(e, []) for e in ids],
        types=[types.get(e, []) for e in ids],
        descriptions=[r[2] for r in entities],
        passage_degree=np.array([int(degree.get(e, 0)) for e in ids], dtype=np.int64),
        degree=counts,
        has_rows=has_rows,
        has_entity_vectors=has_vectors,
        relation_labels=sorted(set(labels)),
        vector_space=space(),
    )


# -- the directory backend ------------------------------------------------------------------------

_IDS = "(SELECT value FROM json_each(?))"


def _ids(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


class DirectoryNeighbourhood(SharedTableReads):
    """Indexed, batched reads of one revision of a directory index's graph store."""

    def __init__(self, directory: Path, *, revision: str, source: str, dim: int) -> None:
        # (opens graph.sqlite read-only, checks the store's format and version)
        self._store = SQLiteGraphStore.open(directory)
        self.dir = self._store.dir
        self.revision = revision
        self.source = source
        self.dim = int(dim)
        self.reads = ReadCounter()
        #: reads of entity vectors (nearest entities, rows), apart from the graph reads
        self.vector_reads = ReadCounter()
        self._lock = threading.Lock()
        self._vectors = {
            kind: self._map(kind)
            for kind in ("entity_vectors", "relation_vectors", "hyperedge_vectors")
        }
        self._files: dict[str, IO[bytes]] = {
            name: (self.dir / name).open("rb") for name in ("nodes.json", "adjacency_entity.npz")
        }
        self._nodes: dict[str, list[str]] | None = None
        self._vector_row_of: dict[str, int] | None = None
        self._adjacency: sparse.csr_matrix | None = None

    def _map(self, kind: str) -> np.ndarray:
        path = self.dir / f"{kind}.npy"
        if not path.is_file():
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.load(path, mmap_mode="r")  # type: ignore[no-any-return]

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._store.close()

    def __repr__(self) -> str:
        return f"DirectoryNeighbourhood({str(self.dir)!r}, revision={self.revision!r})"

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        rows = self._store._rows(sql, params)
        self.reads.add(len(rows))
        return rows

    def _read_once(self, name: str) -> bytes:
        with self._lock:
            handle = self._files[name]
            handle.seek(0)
            return handle.read()

    def _node_ids(self) -> dict[str, list[str]]:
        """nodes.json: the rows of the vector files and matrices (read on first use)."""
        if self._nodes is None:
            try:
                self._nodes = json.loads(self._read_once("nodes.json"))
            except ValueError as exc:
                raise IndexFormatError(f"unreadable {self.dir / 'nodes.json'}: {exc}") from exc
        return self._nodes

    def _rows_of_relations(self) -> dict[str, int]:
        if self._vector_row_of is None:
            ids = self._node_ids().get("relations_embedded", [])
            if len(ids) != len(self._vectors["relation_vectors"]):
                ids = []  # (as a whole view: vectors that do not match their ids are unused)
            self._vector_row_of = {rid: i for i, rid in enumerate(ids)}
        return self._vector_row_of

    def _undirected(self) -> sparse.csr_matrix:
        """The undirected entity graph (`undirected_adjacency` of the stored matrix), as
        PostgreSQL's ``entity_rows`` hold it."""
        if self._adjacency is None:
            import io

            stored = sparse.load_npz(io.BytesIO(self._read_once("adjacency_entity.npz")))
            self._adjacency = undirected_adjacency(stored)
        return self._adjacency

    def _vectors_complete(self, kind: str, ids: list[str]) -> bool:
        """Whether there are `ids` and the stored vectors of `kind` are exactly their rows, in
        order (as a whole view needs them)."""
        nodes = self._node_ids()
        key = {"entity_vectors": "entities", "hyperedge_vectors": "hyperedges"}[kind]
        return (
            bool(ids) and list(nodes.get(key, [])) == ids and len(self._vectors[kind]) == len(ids)
        )

    # -- catalogue (once per revision) ------------------------------------------------------

    def catalogue(self) -> Catalogue:
        return read_catalogue(
            self._rows,
            neighbours=self._neighbour_counts,
            has_entity_vectors=lambda ids: self._vectors_complete("entity_vectors", ids),
            space=lambda: vector_space(self._store.manifest),
        )

    def _neighbour_counts(self, ids: list[str]) -> tuple[np.ndarray, bool]:
        """Each entity's number of neighbours, the lengths of its rows in the undirected entity
        graph, and whether those rows are served (not for a store whose matrix does not match
        its entities: zeros then)."""
        undirected = self._undirected()
        if undirected.shape[0] != len(ids):
            return np.zeros(len(ids), dtype=np.int64), False
        return np.diff(undirected.indptr).astype(np.int64), True

    # -- neighbourhood reads (per query, one statement per frontier) -------------------------

    def _relation_rows(self, where: str, params: Sequence[Any]) -> list[RelationRow]:
        rows = self._rows(
            "SELECT ord, id, source, label, target, weight, kind FROM relations "
            f"WHERE {where} ORDER BY ord",
            params,
        )
        passages: dict[str, list[str]] = {}
        if rows:
            for rid, pid in self._rows(
                f"SELECT relation_id, passage_id FROM relation_passages WHERE relation_id IN {_IDS} "
                "ORDER BY rowid",
                (json.dumps([r[1] for r in rows]),),
            ):
                passages.setdefault(rid, []).append(pid)
        return [
            RelationRow(int(o), rid, s, label, t, float(w), k, tuple(passages.get(rid, ())))
            for o, rid, s, label, t, w, k in rows
        ]

    def incident_relations(self, entity_ids: Iterable[str]) -> list[RelationRow]:
        """Relations with a source or target among `entity_ids`, in global order."""
        ids = _ids(entity_ids)
        if not ids:
            return []
        text = json.dumps(ids)
        return self._relation_rows(f"source IN {_IDS} OR target IN {_IDS}", (text, text))

    def relations(self, relation_ids: Iterable[str]) -> list[RelationRow]:
        """These relations (by id), in global order."""
        ids = _ids(relation_ids)
        if not ids:
            return []
        return self._relation_rows(f"id IN {_IDS}", (json.dumps(ids),))

    def _links(self, column: str, values: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, passage id) links whose `column` is one of `values` (stored order)."""
        ids = _ids(values)
        if not ids:
            return []
        return [
            (e, p)
            for e, p in self._rows(
                f"SELECT entity_id, passage_id FROM entity_passages WHERE {column} IN {_IDS} "
                "ORDER BY rowid",
                (json.dumps(ids),),
            )
        ]

    def links_of(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, passage id) links of these entities (in stored order)."""
        return self._links("entity_id", entity_ids)

    def links_of_passages(self, passage_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, passage id) links of these passages (in stored order)."""
        return self._links("passage_id", passage_ids)

    def entity_rows(
        self, positions: Iterable[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows of these entity positions in the undirected entity graph: ``(positions,
        counts, neighbours, weights)``, the positions found (ascending) with their numbers of
        neighbours, then all their neighbours' positions and edge weights, row after row."""
        a = self._undirected()
        ords = np.array(sorted({int(p) for p in positions}), dtype=np.int64)
        ords = ords[(ords >= 0) & (ords < a.shape[0])]
        starts = a.indptr[ords].astype(np.int64)
        counts = a.indptr[ords + 1].astype(np.int64) - starts
        # every stored position of those rows, row after row
        at = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
        if len(ords):
            self.reads.add(len(ords))
        return (
            ords,
            counts,
            a.indices[at].astype(np.int64),
            a.data[at].astype(np.float64),
        )

    def relation_vectors(self, relation_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these relations (relations without one are absent)."""
        ids = _ids(relation_ids)
        if not ids:
            return {}
        row_of = self._rows_of_relations()
        found = [(rid, row_of[rid]) for rid in ids if rid in row_of]
        vectors = self._vectors["relation_vectors"]
        self.reads.add(len(found))
        return {rid: np.array(vectors[row], dtype=np.float32) for rid, row in found}

    # -- hyperedges and topics (G-RAGent's primitives) ---------------------------------------

    def topic_centroids(self) -> dict[str, np.ndarray] | None:
        """Topic id -> mean of its hyperedges' vectors as PostgreSQL's ``avg`` computes it
        (float64 sums of the float32 rows in hyperedge order, divided, rounded to float32);
        None unless every hyperedge has its vector, in order."""
        rows = self._rows("SELECT id, topic_id FROM hyperedges ORDER BY ord")
        if not self._vectors_complete("hyperedge_vectors", [r[0] for r in rows]):
            return None
        members: dict[str, list[int]] = {}
        for position, (_, topic) in enumerate(rows):
            if topic is not None:
                members.setdefault(topic, []).append(position)
        vectors = self._vectors["hyperedge_vectors"]
        out = {}
        for topic, positions in members.items():
            total = np.asarray(vectors[positions], dtype=np.float32).astype(np.float64).sum(axis=0)
            out[topic] = (total / len(positions)).astype(np.float32)
        return out

    def _hyperedges(self, where: str, params: Sequence[Any]) -> list[HyperEdge]:
        rows = self._rows(
            f"SELECT id, relation, topic_id FROM hyperedges WHERE {where} ORDER BY ord", params
        )
        if not rows:
            return []
        ids = json.dumps([r[0] for r in rows])
        members: dict[str, list[str]] = {}
        for hid, eid in self._rows(
            f"SELECT hyperedge_id, entity_id FROM hyperedge_members WHERE hyperedge_id IN {_IDS} "
            "ORDER BY position, rowid",
            (ids,),
        ):
            members.setdefault(hid, []).append(eid)
        passages: dict[str, list[str]] = {}
        for hid, pid in self._rows(
            "SELECT hyperedge_id, passage_id FROM hyperedge_passages "
            f"WHERE hyperedge_id IN {_IDS} ORDER BY rowid",
            (ids,),
        ):
            passages.setdefault(hid, []).append(pid)
        return [
            HyperEdge(
                id=h,
                relation=r,
                entity_ids=members.get(h, []),
                passage_ids=passages.get(h, []),
                topic_id=t,
            )
            for h, r, t in rows
        ]

    def hyperedges(self, hyperedge_ids: Iterable[str]) -> list[HyperEdge]:
        """These hyperedges (by id), whole, in order."""
        ids = _ids(hyperedge_ids)
        if not ids:
            return []
        return self._hyperedges(f"id IN {_IDS}", (json.dumps(ids),))

    def hyperedges_of(self, entity_ids: Iterable[str]) -> list[HyperEdge]:
        """The hyperedges with a member among `entity_ids`, whole, in order."""
        ids = _ids(entity_ids)
        if not ids:
            return []
        return self._hyperedges(
            f"id IN (SELECT hyperedge_id FROM hyperedge_members WHERE entity_id IN {_IDS})",
            (json.dumps(ids),),
        )

    # -- entity vectors (per query) ------------------------------------------------------------

    def nearest_entities(self, query_vector: np.ndarray, n: int) -> tuple[list[int], np.ndarray]:
        """The positions of the `n` entities whose vectors are nearest the query by cosine
        distance (an exact scan of the mapped vectors), ties by position, and their vectors
        (float32, one row each)."""
        vectors = self._vectors["entity_vectors"]
        q = np.asarray(query_vector, dtype=np.float32).ravel()
        if not len(vectors) or n <= 0:
            return [], np.zeros((0, self.dim), dtype=np.float32)
        distance = np.empty(len(vectors), dtype=np.float32)
        q_norm = float(np.linalg.norm(q)) or 1.0
        block = 65_536  # rows of the mapped file in memory at a time
        for start in range(0, len(vectors), block):
            rows = np.asarray(vectors[start : start + block], dtype=np.float32)
            norms = np.linalg.norm(rows, axis=1) * np.float32(q_norm)
            norms[norms == 0] = 1.0
            distance[start : start + block] = 1.0 - (rows @ q) / norms
        order = np.lexsort((np.arange(len(distance)), distance))[: int(n)]
        found = [int(p) for p in order]
        self.vector_reads.add(len(found))
        return found, self._stack(found)

    def _stack(self, positions: list[int]) -> np.ndarray:
        if not positions:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.array(self._vectors["entity_vectors"][positions], dtype=np.float32)

    def entity_vectors(self, positions: Sequence[int]) -> np.ndarray:
        """The vectors of these entity positions, in that order (float32, one row each)."""
        wanted = [int(p) for p in positions]
        if wanted:
            self.vector_reads.add(len(set(wanted)))
        return self._stack(wanted)


__all__ = ["Catalogue", "DirectoryNeighbourhood", "ReadCounter", "RelationRow"]
