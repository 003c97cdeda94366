"""Reading a Postgres index's knowledge graph one neighbourhood at a time.

`PostgresIndex.graph_neighbourhood()` returns a `PostgresNeighbourhood`: the graph retrievers
(`graphseek.tools.neighbourhood`) use it instead of loading the whole graph. It serves two kinds
of reads:

- the **catalogue** (`catalogue()`), read once per index revision: entity ids, names, aliases,
  types and descriptions, the number of passages each entity is linked to, the distinct
  relation labels, each entity's number of neighbours. This is what seed finding (names in the
  query, lexical entity similarity) and push PPR's thresholds need, the graph's counterpart of
  the passage list and the bm25s index a worker holds. The entity vectors are not in it: a
  query asks the database for the entities nearest its vector (`nearest_entities`, pgvector,
  exact) and reads the vectors of the entities it scores (`entity_vectors`), counted apart in
  `vector_reads`.
- **neighbourhood reads**, per query, each one indexed query for a whole frontier: the relations
  incident to a set of entities (with their provenance passages), the passages linked to a set
  of entities, the entities linked to a set of passages, the vectors of a set of relations, the
  rows of a set of entities in the undirected entity graph (``entity_rows``, push PPR's reads),
  the hyperedges (members, passages) of a set of entities or ids.
- the **hyperedge catalogue**, read once per revision and only by G-RAGent's primitives:
  the topics, each hyperedge's relation text and topic (what free-text topic matching ranks),
  and each topic's centroid, averaged by the server (`topic_centroids`).
  Relations, links, mentions, hyperedge members and passages, and the relation and hyperedge
  vectors (the bulk of a graph) are never loaded whole.

Every read runs on a pooled connection in a REPEATABLE READ snapshot that first checks the
index revision (`IndexBusyError` when a writer has committed since the retriever was built), and
is counted in `reads` (queries and rows), which the tests use to check that a query reads its
neighbourhood, not the graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from graphseek.errors import IndexBusyError
from graphseek.knowledge.graph.models import HyperEdge
from graphseek.knowledge.graph.store import vector_space
from graphseek.knowledge.graph.store.neighbourhood import (
    Catalogue,
    ReadCounter,
    RelationRow,
    SharedTableReads,
    read_catalogue,
)
from graphseek.knowledge.postgres.connection import reconnecting
from graphseek.knowledge.postgres.graph import as_array

if TYPE_CHECKING:
    from graphseek.knowledge.postgres.index import PostgresIndex


class PostgresNeighbourhood(SharedTableReads):
    """Indexed, batched reads of one revision of a Postgres index's graph."""

    def __init__(self, index: PostgresIndex) -> None:
        self._index = index
        self._location = index.location
        self.revision: str = index.revision
        self.source: str = index.uri
        self.dim = int(index.manifest["embedder"]["dim"])
        self.reads = ReadCounter()
        #: reads of entity vectors (nearest entities, rows), apart from the graph reads
        self.vector_reads = ReadCounter()

    def _rows(
        self, sql: str, params: Sequence[Any] = (), *, vectors: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of `sql` in a read-only snapshot of this revision, counted in `reads`, or
        with `vectors` in `vector_reads` and transferred in binary (pgvector's loader then reads
        each vector as bytes, not as text to parse)."""

        def read() -> list[tuple[Any, ...]]:
            with self._index._pool.connection() as conn, conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                stored = conn.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
                self._check_revision(stored[0] if stored else None)
                return conn.execute(sql, tuple(params), binary=vectors).fetchall()  # type: ignore[no-any-return]

        rows = reconnecting(self._location, read)
        (self.vector_reads if vectors else self.reads).add(len(rows))
        return rows

    def _vectors_complete(self, kind: str, table: str) -> bool:
        """Whether `table` has rows and the stored vectors of `kind` are exactly its rows' ids,
        in order (as a directory view's vector matrix is). `kind` and `table` are this module's
        constants, never user input."""
        found = self._rows(
            "SELECT (SELECT coalesce(array_agg(item_id ORDER BY row), '{}') FROM graph_vectors "
            f"WHERE kind = %s) = (SELECT coalesce(array_agg(id ORDER BY ord), '{{}}') FROM {table}) "
            f"AND EXISTS (SELECT 1 FROM {table})",
            (kind,),
        )
        return bool(found and found[0][0])

    def _check_revision(self, stored: Any) -> None:
        if stored != self.revision:
            raise IndexBusyError(
                f"The index at {self.source} was rewritten while its graph was being read; retry."
            )

    # -- catalogue (once per revision) ------------------------------------------------------

    def catalogue(self) -> Catalogue:
        # the entity vectors stay in the database (`nearest_entities`, `entity_vectors`): here
        # only whether every entity has its vector, in order (as the directory view needs)
        return read_catalogue(
            self._rows,
            neighbours=self._neighbour_counts,
            has_entity_vectors=lambda _: self._vectors_complete("entity_vectors", "entities"),
            space=self._vector_space,
        )

    def _neighbour_counts(self, ids: list[str]) -> tuple[np.ndarray, bool]:
        """Each entity's number of neighbours on the undirected entity graph, and whether its
        rows are stored: stored with them (v4), or counted from the relations as the directory
        store's adjacency has them (no loops, an entity pair joined by relations of positive
        weight counted once)."""
        stored = self._rows("SELECT ord, degree FROM entity_rows ORDER BY ord")
        has_rows = [r[0] for r in stored] == list(range(len(ids)))
        if has_rows:
            neighbours = {e: d for e, (_, d) in zip(ids, stored, strict=True)}
        else:
            neighbours = dict(
                self._rows(
                    "SELECT e, count(*) FROM (SELECT source AS e, target AS o FROM relations "
                    "WHERE source <> target AND weight > 0 UNION SELECT target, source FROM "
                    "relations WHERE source <> target AND weight > 0) pairs GROUP BY e"
                )
            )
        return np.array([int(neighbours.get(e, 0)) for e in ids], dtype=np.int64), has_rows

    def _vector_space(self) -> str:
        manifest = self._rows("SELECT value FROM meta WHERE key = 'graph_manifest'")
        return vector_space(manifest[0][0] if manifest else None)

    # -- neighbourhood reads (per query, one query per frontier) -----------------------------

    def _relation_rows(self, where: str, params: Sequence[Any]) -> list[RelationRow]:
        rows = self._rows(
            "SELECT r.ord, r.id, r.source, r.label, r.target, r.weight, r.kind, "
            "coalesce((SELECT array_agg(rp.passage_id ORDER BY rp.rowid) FROM relation_passages "
            f"rp WHERE rp.relation_id = r.id), '{{}}') FROM relations r WHERE {where} "
            "ORDER BY r.ord",
            params,
        )
        return [
            RelationRow(int(o), rid, s, label, t, float(w), k, tuple(pids))
            for o, rid, s, label, t, w, k, pids in rows
        ]

    def incident_relations(self, entity_ids: Iterable[str]) -> list[RelationRow]:
        """Relations with a source or target among `entity_ids`, in global order."""
        ids = sorted(set(entity_ids))
        if not ids:
            return []
        return self._relation_rows("r.source = ANY(%s) OR r.target = ANY(%s)", (ids, ids))

    def relations(self, relation_ids: Iterable[str]) -> list[RelationRow]:
        """These relations (by id), in global order."""
        ids = sorted(set(relation_ids))
        if not ids:
            return []
        return self._relation_rows("r.id = ANY(%s)", (ids,))

    def _links(self, column: str, values: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, passage id) links whose `column` (one of the two, never user input) is
        one of `values`."""
        ids = sorted(set(values))
        if not ids:
            return []
        return [
            (e, p)
            for e, p in self._rows(
                f"SELECT entity_id, passage_id FROM entity_passages WHERE {column} = ANY(%s)",
                (ids,),
            )
        ]

    def links_of(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, passage id) links of these entities."""
        return self._links("entity_id", entity_ids)

    def links_of_passages(self, passage_ids: Iterable[str]) -> list[tuple[str, str]]:
        """(entity id, passage id) links of these passages."""
        return self._links("passage_id", passage_ids)

    def entity_rows(
        self, positions: Iterable[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The rows of these entity positions in the undirected entity graph (``entity_rows``;
        an index written before schema v4 has none): ``(positions, counts, neighbours,
        weights)``, the positions found (ascending) with their numbers of neighbours, then all
        their neighbours' positions and edge weights, row after row."""
        ords = sorted({int(p) for p in positions})
        rows: list[tuple[Any, ...]] = []
        if ords:
            # one statement, so one round trip and one snapshot for the revision and the rows
            # (push PPR reads once per round)

            def read() -> list[tuple[Any, ...]]:
                with self._index._pool.connection() as conn:
                    return conn.execute(  # type: ignore[no-any-return]
                        "SELECT value #>> '{}', NULL, NULL, NULL, NULL FROM meta "
                        "WHERE key = 'revision' UNION ALL SELECT NULL, ord, degree, neighbours, "
                        "weights FROM entity_rows WHERE ord = ANY(%s) ORDER BY 2 NULLS FIRST",
                        (ords,),
                    ).fetchall()

            got = reconnecting(self._location, read)
            self._check_revision(got[0][0] if got and got[0][1] is None else None)
            rows = [r[1:] for r in got[1:]]
            self.reads.add(len(rows))
        return (
            np.array([r[0] for r in rows], dtype=np.int64),
            np.array([r[1] for r in rows], dtype=np.int64),
            np.frombuffer(b"".join(r[2] for r in rows), dtype="<i8").astype(np.int64),
            np.frombuffer(b"".join(r[3] for r in rows), dtype="<f8").astype(np.float64),
        )

    def relation_vectors(self, relation_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these relations (relations without one are absent)."""
        ids = sorted(set(relation_ids))
        if not ids:
            return {}
        rows = self._rows(
            "SELECT item_id, embedding FROM graph_vectors "
            "WHERE kind = 'relation_vectors' AND item_id = ANY(%s)",
            (ids,),
        )
        return {rid: as_array(v) for rid, v in rows}

    # -- hyperedges and topics (G-RAGent's primitives) ---------------------------------------

    def topic_centroids(self) -> dict[str, np.ndarray] | None:
        """Topic id -> mean of its hyperedges' vectors (pgvector's ``avg``: float8 sums of the
        float4 vectors in hyperedge order, divided, rounded to float4), computed by the server;
        None unless every hyperedge has its vector, in order (as the directory view needs)."""
        if not self._vectors_complete("hyperedge_vectors", "hyperedges"):
            return None
        rows = self._rows(
            "SELECT h.topic_id, avg(v.embedding ORDER BY h.ord) FROM hyperedges h JOIN "
            "graph_vectors v ON v.kind = 'hyperedge_vectors' AND v.item_id = h.id "
            "WHERE h.topic_id IS NOT NULL GROUP BY h.topic_id"
        )
        return {t: as_array(v) for t, v in rows}

    def _hyperedges(self, where: str, params: Sequence[Any]) -> list[HyperEdge]:
        rows = self._rows(
            "SELECT h.id, h.relation, h.topic_id, coalesce((SELECT array_agg(m.entity_id "
            "ORDER BY m.position, m.rowid) FROM hyperedge_members m WHERE m.hyperedge_id = h.id), "
            "'{}'), coalesce((SELECT array_agg(p.passage_id ORDER BY p.rowid) FROM "
            f"hyperedge_passages p WHERE p.hyperedge_id = h.id), '{{}}') FROM hyperedges h "
            f"WHERE {where} ORDER BY h.ord",
            params,
        )
        return [
            HyperEdge(id=h, relation=r, entity_ids=list(m), passage_ids=list(p), topic_id=t)
            for h, r, t, m, p in rows
        ]

    def hyperedges(self, hyperedge_ids: Iterable[str]) -> list[HyperEdge]:
        """These hyperedges (by id), whole, in order."""
        ids = sorted(set(hyperedge_ids))
        if not ids:
            return []
        return self._hyperedges("h.id = ANY(%s)", (ids,))

    def hyperedges_of(self, entity_ids: Iterable[str]) -> list[HyperEdge]:
        """The hyperedges with a member among `entity_ids`, whole, in order."""
        ids = sorted(set(entity_ids))
        if not ids:
            return []
        return self._hyperedges(
            "h.id IN (SELECT hyperedge_id FROM hyperedge_members WHERE entity_id = ANY(%s))",
            (ids,),
        )

    # -- entity vectors (per query) ------------------------------------------------------------

    def nearest_entities(self, query_vector: np.ndarray, n: int) -> tuple[list[int], np.ndarray]:
        """The positions of the `n` entities whose vectors are nearest the query by cosine
        distance (pgvector ``<=>``, an exact scan: the entity vectors have no ANN index), ties
        by position (in no particular order), and their vectors (float32, one row each)."""
        rows = self._rows(  # (sorting the positions only, then reading the vectors)
            "SELECT g.row, g.embedding FROM (SELECT row FROM graph_vectors "
            "WHERE kind = 'entity_vectors' ORDER BY embedding <=> %s, row LIMIT %s) near "
            "JOIN graph_vectors g ON g.kind = 'entity_vectors' AND g.row = near.row",
            (np.asarray(query_vector, dtype=np.float32), int(n)),
            vectors=True,
        )
        return [int(r[0]) for r in rows], self._stack([r[1] for r in rows])

    def _stack(self, vectors: list[Any]) -> np.ndarray:
        if not vectors:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([as_array(v) for v in vectors]).astype(np.float32)

    def entity_vectors(self, positions: Sequence[int]) -> np.ndarray:
        """The vectors of these entity positions, in that order (float32, one row each)."""
        wanted = [int(p) for p in positions]
        if not wanted:
            return self._stack([])
        rows = dict(
            self._rows(
                "SELECT row, embedding FROM graph_vectors "
                "WHERE kind = 'entity_vectors' AND row = ANY(%s)",
                (sorted(set(wanted)),),
                vectors=True,
            )
        )
        return self._stack([rows[p] for p in wanted])
