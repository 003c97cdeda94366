"""The knowledge graph of a Postgres index: `PostgresGraphStore` reads it (the `GraphStore`
protocol, same results as `SQLiteGraphStore`), `import_graph` / `export_graph` move it between
the tables and a directory store.

The graph tables have the names and columns of the directory store's ``graph.sqlite`` plus a
``rowid`` (the insertion order its readers sort by), so `PostgresGraphStore` runs the queries
both stores share (`graphseek.knowledge.graph.store.GraphTables`) against them: one reading
code path, identical graphs. The CSR matrices are not stored: they are built from the relation
and link tables with the same `build_matrices` the directory writer uses. The graph's passages
are the index's ``passages`` table. The sentence layer (sentence nodes, entity–sentence edges,
sentence vectors) lives in ``sentences`` and ``entity_sentences`` (schema v5) and is read back as
the `SentenceLayer` a directory store's files give (`PostgresGraphStore.sentence_layer`).

Graph builds and updates (`build_graph`, `add_passages`, `delete_passages`) run on a directory
store in a temporary folder and the result is imported in the writer's transaction, together with
the passages and their vectors.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from graphseek.errors import IndexBusyError, IndexFormatError
from graphseek.knowledge.adjacency import undirected_adjacency
from graphseek.knowledge.graph.memory.passage_links import PassageLinks
from graphseek.knowledge.graph.models import Relation
from graphseek.knowledge.graph.store import (
    DATABASE,
    FORMAT,
    MANIFEST,
    VERSION,
    GraphTables,
    build_matrices,
)
from graphseek.knowledge.graph.store.sentences import LAYER_VERSION, SENTENCE_DTYPE, SentenceLayer
from graphseek.knowledge.postgres.connection import is_disconnect
from graphseek.knowledge.postgres.schema import GRAPH_TABLES, SENTENCE_TABLES, VECTOR_KINDS

SENTENCE_META = "sentence_layer"
"""The ``meta`` key of the sentence layer's record (its counts and vector source)."""


def as_half(value: Any) -> np.ndarray:
    """A pgvector ``halfvec`` value (`pgvector.HalfVector` or text) as a float16 array."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    elif isinstance(value, str):
        value = json.loads(value)
    return np.asarray(value, dtype=SENTENCE_DTYPE)


def as_array(value: Any) -> np.ndarray:
    """A pgvector value (numpy array, `pgvector.Vector` or text) as a float32 array."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    elif isinstance(value, str):
        value = json.loads(value)
    return np.asarray(value, dtype=np.float32)


class PostgresGraphStore(GraphTables):
    """A graph read from the tables of a Postgres index through one connection.

    Opened by `PostgresIndex.open_graph_store` on an autocommit connection of its own with the
    index revision it must read (`revision`): every query runs in a short transaction that first
    checks that revision is still the stored one (`IndexBusyError` if a writer has committed
    since), so reads never mix two revisions and no transaction stays open (one would hold back
    vacuum and ``CREATE INDEX CONCURRENTLY``). On a writer's connection (`revision` None) the
    queries run inside the writer's transaction. Results are cached in memory, as the directory
    store's are (the `GraphTables` reads both share).

    `reconnect` (a reader's store): makes a new connection when the server dropped this one (a
    restart); a read that fails so is run again on it, for as long as `connection.reconnecting`
    allows."""

    def __init__(
        self,
        conn: Any,
        manifest: dict[str, Any],
        *,
        dim: int,
        source: str = "",
        owns_connection: bool = False,
        revision: str | None = None,
        reconnect: Callable[[], Any] | None = None,
    ) -> None:
        self._manifest = manifest
        self._lock = threading.RLock()
        self._con = conn
        self._cache: dict[str, Any] = {}
        self._dim = int(dim)
        self._owns = owns_connection
        self._source = source
        self._revision = revision
        self._reconnect = reconnect

    def close(self) -> None:
        with self._lock:
            if self._owns and not getattr(self._con, "closed", True):
                self._con.close()

    def __repr__(self) -> str:
        return f"PostgresGraphStore({self._source!r}, {self._manifest.get('counts', {})})"

    def _rows(
        self, sql: str, params: Sequence[Any] = (), *, binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """The rows of `sql` (``?`` placeholders); `binary`: in PostgreSQL's binary format (a
        vector then arrives as its bytes, not as text to parse: the sentence vectors)."""
        sql = sql.replace("?", "%s")
        with self._lock:
            if self._revision is None:
                return self._con.cursor(binary=binary).execute(sql, tuple(params)).fetchall()  # type: ignore[no-any-return]
            try:
                return self._checked_rows(sql, params, binary)
            except Exception as exc:
                if self._reconnect is None or not is_disconnect(exc):
                    raise
            # the server dropped the connection (a restart): read again on a new one
            if self._owns:
                self._con.close()
            self._con = self._reconnect()
            self._owns = True
            return self._checked_rows(sql, params, binary)

    def _checked_rows(self, sql: str, params: Sequence[Any], binary: bool) -> list[tuple[Any, ...]]:
        with self._con.transaction():
            row = self._con.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
            if row is None or row[0] != self._revision:
                raise IndexBusyError(
                    f"The index at {self._source} was rewritten while its graph was being "
                    "read; open it again (or call sync()) and retry."
                )
            return self._con.cursor(binary=binary).execute(sql, tuple(params)).fetchall()  # type: ignore[no-any-return]

    def _nodes(self) -> dict[str, list[str]]:
        def load() -> dict[str, list[str]]:
            return {
                "entities": [r[0] for r in self._rows("SELECT id FROM entities ORDER BY ord")],
                "passages": [r[0] for r in self._rows("SELECT id FROM passages ORDER BY ord")],
                "relations_embedded": [
                    r[0]
                    for r in self._rows(
                        "SELECT item_id FROM graph_vectors WHERE kind = ? ORDER BY row",
                        ("relation_vectors",),
                    )
                ],
                "hyperedges": [r[0] for r in self._rows("SELECT id FROM hyperedges ORDER BY ord")],
                "mentions_embedded": [
                    r[0]
                    for r in self._rows(
                        "SELECT item_id FROM graph_vectors WHERE kind = ? ORDER BY row",
                        ("mention_vectors",),
                    )
                ],
            }

        return self._cached("nodes", load)  # type: ignore[no-any-return]

    def _matrices(self) -> tuple[sparse.csr_matrix, sparse.csr_matrix, sparse.csr_matrix]:
        def load() -> tuple[sparse.csr_matrix, sparse.csr_matrix, sparse.csr_matrix]:
            nodes = self._nodes()
            entities, passages = nodes["entities"], nodes["passages"]
            links = PassageLinks.from_mapping(entities, passages, self._links()[0])
            return build_matrices(entities, passages, self._relation_list(), links)

        return self._cached("matrices", load)  # type: ignore[no-any-return]

    def adjacency(self, include_passages: bool = False) -> tuple[sparse.csr_matrix, list[str]]:
        nodes = self._nodes()
        entity, full, _ = self._matrices()
        if include_passages:
            return full, nodes["entities"] + nodes["passages"]
        return entity, list(nodes["entities"])

    def entity_passage_matrix(self) -> tuple[sparse.csr_matrix, list[str], list[str]]:
        nodes = self._nodes()
        return self._matrices()[2], list(nodes["entities"]), list(nodes["passages"])

    def _vectors(self, name: str) -> np.ndarray:
        def load() -> np.ndarray:
            rows = self._rows(
                "SELECT embedding FROM graph_vectors WHERE kind = ? ORDER BY row", (name,)
            )
            if not rows:
                return np.zeros((0, self._dim), dtype=np.float32)
            return np.vstack([as_array(r[0]) for r in rows])

        return self._cached(name, load)  # type: ignore[no-any-return]

    # indexed lookups: one entity's neighbourhood without loading the graph

    def sentence_layer(self) -> SentenceLayer | None:
        """The graph's sentence nodes and their edges, read from ``sentences`` and
        ``entity_sentences`` (passages and entities in the store's order, the vectors float16
        as stored), the same `SentenceLayer` as the directory store's files; None for a graph
        without them (built with ``sentences="none"``, or migrated from schema v4)."""
        return self._cached("sentence_layer", self._read_sentences)  # type: ignore[no-any-return]

    def _read_sentences(self) -> SentenceLayer | None:
        found = self._rows("SELECT value FROM meta WHERE key = ?", (SENTENCE_META,))
        if not found:
            return None
        meta = dict(found[0][0])
        hint = "rebuild the index with `graphseek index CORPUS --out URI`"
        if meta.get("version") != LAYER_VERSION:
            raise IndexFormatError(
                f"{self._source}: sentence layer version {meta.get('version')}, this graphseek "
                f"reads version {LAYER_VERSION}; {hint}"
            )
        nodes = self._nodes()
        passage_ids, entity_ids = list(nodes["passages"]), list(nodes["entities"])
        passage_pos = {pid: j for j, pid in enumerate(passage_ids)}
        entity_pos = {eid: i for i, eid in enumerate(entity_ids)}
        rows = self._rows(
            "SELECT passage_id, start_char, end_char, embedding FROM sentences ORDER BY ord",
            binary=True,
        )
        n = len(rows)
        if n != int(meta.get("sentences", -1)) or any(r[0] not in passage_pos for r in rows):
            raise IndexFormatError(
                f"the sentence layer of {self._source} does not hold together ({n} sentence "
                f"rows, {meta.get('sentences')} recorded, or a sentence of an unknown passage); "
                f"{hint}"
            )
        dim = len(as_half(rows[0][3])) if rows else int(meta.get("dim", 0))
        vectors = np.zeros((n, dim), dtype=SENTENCE_DTYPE)
        for k, row in enumerate(rows):
            vectors[k] = as_half(row[3])
        edge_rows = [
            (entity_pos[eid], int(sentence), int(kind))
            for eid, sentence, kind in self._rows(
                "SELECT entity_id, sentence, kind FROM entity_sentences"
            )
            if eid in entity_pos
        ]
        edges = sparse.csr_matrix(
            (
                np.array([r[2] for r in edge_rows], dtype=np.int8),
                (
                    np.array([r[0] for r in edge_rows], dtype=np.int64),
                    np.array([r[1] for r in edge_rows], dtype=np.int64),
                ),
            ),
            shape=(len(entity_ids), n),
        )
        return SentenceLayer(
            passage_ids=passage_ids,
            passage=np.array([passage_pos[r[0]] for r in rows], dtype=np.int32),
            start=np.array([r[1] for r in rows], dtype=np.int32),
            end=np.array([r[2] for r in rows], dtype=np.int32),
            vectors=vectors,
            entity_ids=entity_ids,
            edges=edges,
            meta=meta,
        )

    def relations_of(
        self, entity_id: str, kind: str | Iterable[str] | None = None
    ) -> list[Relation]:
        if "relations" in self._cache:
            return super().relations_of(entity_id, kind)
        rows = self._rows(
            "SELECT r.id, r.source, r.label, r.target, r.weight, r.kind, "
            "coalesce((SELECT array_agg(rp.passage_id ORDER BY rp.rowid) FROM relation_passages rp "
            "WHERE rp.relation_id = r.id), '{}') FROM relations r "
            "WHERE r.source = ? OR r.target = ? ORDER BY r.ord",
            (entity_id, entity_id),
        )
        kinds = {kind} if isinstance(kind, str) else (set(kind) if kind is not None else None)
        return [
            Relation(
                id=rid, source=s, label=label, target=t, passage_ids=list(pids), weight=w, kind=k
            )
            for rid, s, label, t, w, k, pids in rows
            if kinds is None or k in kinds
        ]

    def passages_of(self, entity_id: str, kind: str | None = None) -> list[str]:
        if "links" in self._cache:
            return super().passages_of(entity_id, kind)
        rows = self._rows(
            "SELECT passage_id, kind FROM entity_passages WHERE entity_id = ? ORDER BY rowid",
            (entity_id,),
        )
        return [pid for pid, k in rows if kind is None or k == kind]


# -- moving a graph between a directory store and the tables ----------------------------------


def _copy_rows(
    cur: Any, table: str, columns: tuple[str, ...], rows: Any, types: Sequence[str] = ()
) -> int:
    """COPY `rows` into `table`; with their PostgreSQL `types`, in the binary format (a
    ``halfvec`` sent as bytes: 25 times faster than as text)."""
    n = 0
    binary = " (FORMAT BINARY)" if types else ""
    with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN{binary}") as copy:
        if types:
            copy.set_types(list(types))
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


def delete_graph(cur: Any) -> None:
    """Remove every graph row (inside the writer's transaction)."""
    for table in (*GRAPH_TABLES, "graph_vectors", "entity_rows", *SENTENCE_TABLES):
        cur.execute(f"DELETE FROM {table}")
    cur.execute("DELETE FROM meta WHERE key = ANY(%s)", (["graph_manifest", SENTENCE_META],))


def import_graph(cur: Any, directory: Path, passage_ids: list[str]) -> dict[str, Any]:
    """Copy the directory store at `directory` into the (emptied) graph tables; its passages
    must be `passage_ids`, in order. Returns the store's manifest."""
    from psycopg.types.json import Jsonb

    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    nodes = json.loads((directory / "nodes.json").read_text(encoding="utf-8"))
    con = sqlite3.connect(f"file:{(directory / DATABASE).as_posix()}?mode=ro", uri=True)
    try:
        stored = [r[0] for r in con.execute("SELECT id FROM passages ORDER BY ord")]
        if stored != list(passage_ids):
            raise IndexFormatError(
                "the knowledge graph's passages are not the index's passages; rebuild the index"
            )
        for table, columns in GRAPH_TABLES.items():
            have = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
            if tuple(have) != columns:
                raise IndexFormatError(
                    f"graph table {table} has columns {have}, the Postgres schema expects "
                    f"{list(columns)}; this graphseek's graph store and Postgres schema disagree"
                )
            rows = con.execute(f"SELECT rowid, {', '.join(columns)} FROM {table} ORDER BY rowid")
            _copy_rows(cur, table, ("rowid", *columns), rows)
        base_ids = [r[0] for r in con.execute("SELECT id FROM base_entities ORDER BY ord")]
    finally:
        con.close()
    item_ids = {
        "entity_vectors": nodes["entities"],
        "relation_vectors": nodes["relations_embedded"],
        "hyperedge_vectors": nodes["hyperedges"],
        "base_vectors": base_ids,
        "mention_vectors": nodes.get("mentions_embedded", []),
    }
    for kind in VECTOR_KINDS:
        path = directory / f"{kind}.npy"
        # stores written before contextual alignment have no mention vectors
        vectors = np.load(path) if path.is_file() else np.zeros((0, 1), dtype=np.float32)
        ids = item_ids[kind]
        if len(vectors) != len(ids):
            raise IndexFormatError(f"graph store {directory}: {kind} rows do not match its ids")
        _copy_rows(
            cur,
            "graph_vectors",
            ("kind", "row", "item_id", "embedding"),
            ((kind, i, ids[i], vectors[i]) for i in range(len(vectors))),
        )
    _copy_entity_rows(cur, sparse.load_npz(directory / "adjacency_entity.npz"))
    import_sentences(cur, directory, list(passage_ids), list(nodes["entities"]))
    cur.execute(
        "INSERT INTO meta (key, value) VALUES ('graph_manifest', %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (Jsonb(manifest),),
    )
    return manifest  # type: ignore[no-any-return]


def import_sentences(
    cur: Any, directory: Path, passage_ids: list[str], entity_ids: list[str]
) -> SentenceLayer | None:
    """Copy the sentence layer of the directory store at `directory` (none: nothing) into the
    (emptied) ``sentences`` and ``entity_sentences`` and its record into ``meta``. Its passages
    and entities must be the store's (`passage_ids`, `entity_ids`): the layer is written from
    the store it sits in."""
    from pgvector import HalfVector
    from psycopg.types.json import Jsonb

    layer = SentenceLayer.load(directory)
    if layer is None:
        return None
    if layer.passage_ids != passage_ids or layer.entity_ids != entity_ids:
        raise IndexFormatError(
            f"graph store {directory}: its sentence layer was written for other passages or "
            "entities than the store's; rebuild the index"
        )
    vectors = np.asarray(layer.vectors, dtype=SENTENCE_DTYPE)
    _copy_rows(
        cur,
        "sentences",
        ("ord", "passage_id", "start_char", "end_char", "embedding"),
        (
            (k, passage_ids[p], s, e, HalfVector(vectors[k]))
            for k, (p, s, e) in enumerate(
                zip(layer.passage.tolist(), layer.start.tolist(), layer.end.tolist(), strict=True)
            )
        ),
        ("int8", "text", "int4", "int4", "halfvec"),
    )
    edges = layer.edges.tocoo()
    _copy_rows(
        cur,
        "entity_sentences",
        ("entity_id", "sentence", "kind"),
        (
            (entity_ids[i], k, kind)
            for i, k, kind in zip(
                edges.row.tolist(), edges.col.tolist(), edges.data.tolist(), strict=True
            )
        ),
        ("text", "int8", "int2"),
    )
    record = {
        **layer.meta,
        "sentences": len(layer),
        "edges": int(edges.nnz),
        "dim": int(vectors.shape[1]),
    }
    cur.execute(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (SENTENCE_META, Jsonb(record)),
    )
    return layer


def _copy_entity_rows(cur: Any, adjacency: Any) -> int:
    """The rows of the undirected entity graph, as the directory backend's `GraphView` has it,
    into ``entity_rows`` (see `graphseek.knowledge.postgres.schema`, v4)."""
    a = undirected_adjacency(adjacency)
    indptr = a.indptr
    indices = a.indices.astype("<i8")
    weights = a.data.astype("<f8")
    return _copy_rows(
        cur,
        "entity_rows",
        ("ord", "degree", "neighbours", "weights"),
        (
            (
                i,
                int(indptr[i + 1] - indptr[i]),
                indices[indptr[i] : indptr[i + 1]].tobytes(),
                weights[indptr[i] : indptr[i + 1]].tobytes(),
            )
            for i in range(a.shape[0])
        ),
    )


def export_graph(store: PostgresGraphStore, directory: Path) -> Path:
    """Write the graph of `store` as a directory store at `directory` (a new folder), the layout
    `SQLiteGraphStore` reads and `add_passages` / `delete_passages` update."""
    from graphseek.knowledge.graph.store.writer import _INDEXES, _SCHEMA

    directory.mkdir(parents=True)
    con = sqlite3.connect(directory / DATABASE)
    try:
        con.executescript(_SCHEMA)
        with con:
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)", [("format", FORMAT), ("version", str(VERSION))]
            )
            con.executemany(
                "INSERT INTO passages VALUES (?, ?, ?, ?, ?)",
                ((n, p.id, p.title, p.text, p.source) for n, p in enumerate(store.passages())),
            )
            for table, columns in GRAPH_TABLES.items():
                # `ord INTEGER PRIMARY KEY` is SQLite's rowid itself
                names = columns if "ord" in columns else ("rowid", *columns)
                listed = ", ".join(names)
                rows = store._rows(f"SELECT {listed} FROM {table} ORDER BY rowid")
                marks = ", ".join("?" * len(names))
                con.executemany(f"INSERT INTO {table} ({listed}) VALUES ({marks})", rows)
        con.executescript(_INDEXES)
        con.commit()
    finally:
        con.close()
    for kind in VECTOR_KINDS:
        np.save(directory / f"{kind}.npy", np.ascontiguousarray(store._vectors(kind)))
    adjacency, full, incidence = store._matrices()
    sparse.save_npz(directory / "adjacency_entity.npz", adjacency)
    sparse.save_npz(directory / "adjacency_full.npz", full)
    sparse.save_npz(directory / "entity_passage.npz", incidence)
    (directory / "nodes.json").write_text(json.dumps(store._nodes()), encoding="utf-8")
    (directory / MANIFEST).write_text(json.dumps(store.manifest, default=str), encoding="utf-8")
    layer = store.sentence_layer()
    if layer is not None:  # an update reuses its vectors (`SentenceLayer.vectors_by_span`)
        layer.save(directory)
    return directory
