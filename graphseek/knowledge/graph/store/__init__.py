"""The graph store: a `GraphStore` protocol and `SQLiteGraphStore`, a directory on disk.

Layout of a store directory (e.g. ``<index_dir>/graph/``)::

    manifest.json             format, version, settings, counts, alignment and build statistics
    graph.sqlite              passages, raw extractions (mentions, relations, facts), entities
                              (+ aliases, types, provenance), relations (+ passages), entity-
                              passage links, hyperedges (+ members, passages), topics, and the
                              alignment cache (base entities, decided merge pairs)
    entity_vectors.npy        float32, one row per entity (order of `entity_ids()`)
    relation_vectors.npy      one row per embedded relation (extracted / predicted), see nodes.json
    hyperedge_vectors.npy     one row per hyperedge (order of `hyperedges()`)
    base_vectors.npy          one row per base entity (alignment cache)
    mention_vectors.npy       float16, contextual mention vectors (nodes.json "mentions_embedded")
    adjacency_entity.npz      scipy CSR, entities x entities, symmetric, summed relation weights
    adjacency_full.npz        scipy CSR over entities then passages (entity-passage links = 1)
    entity_passage.npz        scipy CSR, entities x passages
    nodes.json                node id lists for the matrices and vector files

Writes are atomic, through `graphseek.knowledge.atomic.atomic_directory` (the index's writer): a
store is written into a ``.<name>.building-*`` sibling and renamed into place, under a lock. An
interrupted build leaves the previous store untouched; if a crash falls between the two renames,
`SQLiteGraphStore.open` puts the previous store back, and checks each file's size and format
and the vectors' rows against the manifest's counts (`graphseek.knowledge.integrity`: a damaged
file is one line naming it). A build refuses to replace a non-empty directory that is not a
graph store. Another graph database can implement `GraphStore` later.

This module reads a store (`SQLiteGraphStore`) and defines the `GraphStore` protocol and
`GraphTables`, the reads whose SQL every store over these tables shares (the PostgreSQL
backend's `PostgresGraphStore` runs them on its tables). The package's other modules:

- `writer`: writing (`GraphData`, `write_store`, the schema), re-exported here;
- `sentences`: the sentence layer (sentences as nodes: their spans, vectors and entity edges,
  and its files); `sentence_write`: writing it from the store;
- `stored`: a stored graph as the stages of a delta add read it (`StoredGraph`);
- `neighbourhood`: reading a store one neighbourhood at a time (`NeighbourhoodReads`);
- `stats`: its statistics (`graph_stats`, `format_stats`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

import numpy as np
from scipy import sparse

from graphseek.errors import IndexChangedError, IndexFormatError, IndexNotFoundError
from graphseek.knowledge.atomic import file_stamp, recover
from graphseek.knowledge.graph.algorithms.contextual import MentionVectors
from graphseek.knowledge.graph.memory.merge_pairs import MergePairs
from graphseek.knowledge.graph.models import (
    Entity,
    Extraction,
    HyperEdge,
    Mention,
    RawFact,
    RawRelation,
    Relation,
    Topic,
    TopicSubgraph,
    graph_record,
)
from graphseek.knowledge.graph.store.sentences import SentenceLayer
from graphseek.knowledge.graph.store.writer import (
    DATABASE,
    FORMAT,
    MANIFEST,
    VERSION,
    GraphData,
    build_matrices,
    check_target,
    write_store,
)
from graphseek.knowledge.integrity import check_graph_store, graph_hint
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import normalize_name

__all__ = [
    "DATABASE",
    "FORMAT",
    "MANIFEST",
    "VERSION",
    "GraphData",
    "GraphStore",
    "GraphTables",
    "SQLiteGraphStore",
    "build_matrices",
    "check_target",
    "write_store",
]


# -- the protocol -------------------------------------------------------------------------------


def vector_space(manifest: dict[str, Any] | None) -> str:
    """The space of a graph's stored vectors, from its manifest's settings (`GraphSettings.
    vectors`); stores written before the setting existed embedded with MiniLM."""
    settings = (manifest or {}).get("settings") or {}
    return str(settings.get("vectors") or "minilm")


def aliases_and_types(
    rows: Callable[[str], Iterable[Sequence[Any]]],
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each entity's aliases and types, in their stored order, read through `rows(sql)`: the
    SQLite store and the Postgres catalogue keep them in the same two tables."""
    aliases: dict[str, list[str]] = defaultdict(list)
    for eid, alias in rows(
        "SELECT entity_id, alias FROM entity_aliases ORDER BY entity_id, position"
    ):
        aliases[eid].append(alias)
    types: dict[str, list[str]] = defaultdict(list)
    for eid, t in rows("SELECT entity_id, type FROM entity_types ORDER BY entity_id, position"):
        types[eid].append(t)
    return aliases, types


@runtime_checkable
class GraphStore(Protocol):
    """Read access to a HiGra graph; what retrievers and tools use."""

    def passage_ids(self) -> list[str]: ...
    def passages(self) -> list[Passage]: ...
    def passage(self, passage_id: str) -> Passage | None: ...
    def entity_ids(self) -> list[str]: ...
    def entities(self) -> list[Entity]: ...
    def entity(self, entity_id: str) -> Entity | None: ...
    def find_entities(self, name: str, *, normalised: bool = True) -> list[Entity]: ...
    def relations(self, kind: str | Iterable[str] | None = None) -> list[Relation]: ...
    def relations_of(
        self, entity_id: str, kind: str | Iterable[str] | None = None
    ) -> list[Relation]: ...
    def passages_of(self, entity_id: str, kind: str | None = None) -> list[str]: ...
    def entities_of(self, passage_id: str, kind: str | None = None) -> list[str]: ...
    def hyperedges(self) -> list[HyperEdge]: ...
    def hyperedges_of(self, entity_id: str) -> list[HyperEdge]: ...
    def topics(self) -> list[Topic]: ...
    def topic_subgraph(self, topic_id: str) -> TopicSubgraph: ...
    def adjacency(self, include_passages: bool = False) -> tuple[sparse.csr_matrix, list[str]]: ...
    def entity_passage_matrix(self) -> tuple[sparse.csr_matrix, list[str], list[str]]: ...
    def entity_embeddings(self) -> tuple[np.ndarray, list[str]]: ...
    def relation_embeddings(self) -> tuple[np.ndarray, list[str]]: ...
    def hyperedge_embeddings(self) -> tuple[np.ndarray, list[str]]: ...
    def sentence_layer(self) -> SentenceLayer | None: ...
    def close(self) -> None: ...
    @property
    def manifest(self) -> dict[str, Any]: ...


# -- reading ------------------------------------------------------------------------------------


class GraphTables:
    """The reads both backends' graph stores share (`SQLiteGraphStore`, and PostgreSQL's
    `graphseek.knowledge.postgres.graph.PostgresGraphStore`): their graph tables have the same
    names and columns, so one SQL serves both, and both cache what they read in memory.

    A store supplies ``_manifest``, ``_lock`` (an `RLock`), ``_cache`` (a dict) and the reads it
    does its own way: ``_rows(sql, params)`` (``?`` placeholders), ``_nodes()`` (the node id
    lists of the matrices and vector files), ``_vectors(name)``, `adjacency`,
    `entity_passage_matrix`, `close`."""

    _manifest: dict[str, Any]
    _lock: threading.RLock
    _cache: dict[str, Any]

    if TYPE_CHECKING:  # the store's own reads

        def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
        def _nodes(self) -> dict[str, list[str]]: ...
        def _vectors(self, name: str) -> np.ndarray: ...
        def close(self) -> None: ...

    @property
    def manifest(self) -> dict[str, Any]:
        return self._manifest

    def _cached(self, key: str, fn: Any) -> Any:
        with self._lock:
            if key not in self._cache:
                self._cache[key] = fn()
            return self._cache[key]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- passages -------------------------------------------------------------------------------

    def _passage_map(self) -> dict[str, Passage]:
        def load() -> dict[str, Passage]:
            rows = self._rows("SELECT id, title, text, source FROM passages ORDER BY ord")
            return {r[0]: Passage(id=r[0], title=r[1], text=r[2], source=r[3]) for r in rows}

        return self._cached("passages", load)  # type: ignore[no-any-return]

    def passage_ids(self) -> list[str]:
        return list(self._passage_map())

    def passages(self) -> list[Passage]:
        return list(self._passage_map().values())

    def passage(self, passage_id: str) -> Passage | None:
        return self._passage_map().get(passage_id)

    # -- entities -------------------------------------------------------------------------------

    def _entity_map(self) -> dict[str, Entity]:
        def load() -> dict[str, Entity]:
            aliases, types = aliases_and_types(self._rows)
            mentions: dict[str, list[str]] = defaultdict(list)
            passages: dict[str, set[str]] = defaultdict(set)
            for eid, mid, pid in self._rows(
                "SELECT entity_id, mention_id, passage_id FROM provenance ORDER BY rowid"
            ):
                mentions[eid].append(mid)
                passages[eid].add(pid)
            rows = self._rows("SELECT id, name, description FROM entities ORDER BY ord")
            return {
                eid: graph_record(
                    Entity,
                    id=eid,
                    name=name,
                    aliases=aliases.get(eid, []),
                    description=description,
                    types=types.get(eid, []),
                    passage_ids=sorted(passages.get(eid, ())),
                    mention_ids=mentions.get(eid, []),
                )
                for eid, name, description in rows
            }

        return self._cached("entities", load)  # type: ignore[no-any-return]

    def entity_ids(self) -> list[str]:
        """Entity ids in store order (the rows of `entity_embeddings` and `adjacency`)."""
        return list(self._entity_map())

    def entities(self) -> list[Entity]:
        return list(self._entity_map().values())

    def entity(self, entity_id: str) -> Entity | None:
        return self._entity_map().get(entity_id)

    def find_entities(self, name: str, *, normalised: bool = True) -> list[Entity]:
        """Entities whose name or an alias equals `name` (exactly, or after `normalize_name`)."""
        if normalised:
            key = normalize_name(name)
            rows = self._rows(
                "SELECT id FROM entities WHERE norm = ? UNION "
                "SELECT entity_id FROM entity_aliases WHERE norm = ?",
                (key, key),
            )
        else:
            rows = self._rows(
                "SELECT id FROM entities WHERE name = ? UNION "
                "SELECT entity_id FROM entity_aliases WHERE alias = ?",
                (name, name),
            )
        entities = self._entity_map()
        return [entities[r[0]] for r in sorted(rows) if r[0] in entities]

    def mentions_of(self, entity_id: str) -> list[Mention]:
        """The source mentions an entity was merged from (provenance)."""
        rows = self._rows(
            "SELECT id, passage_id, name, aliases, description, types, sentence FROM mentions "
            "WHERE entity_id = ? ORDER BY id",
            (entity_id,),
        )
        return [raw_mention(r) for r in rows]

    # -- relations ------------------------------------------------------------------------------

    def _relation_list(self) -> list[Relation]:
        def load() -> list[Relation]:
            passages: dict[str, list[str]] = defaultdict(list)
            for rid, pid in self._rows(
                "SELECT relation_id, passage_id FROM relation_passages ORDER BY rowid"
            ):
                passages[rid].append(pid)
            rows = self._rows(
                "SELECT id, source, label, target, weight, kind FROM relations ORDER BY ord"
            )
            return [
                graph_record(
                    Relation,
                    id=rid,
                    source=s,
                    label=label,
                    target=t,
                    passage_ids=passages.get(rid, []),
                    weight=float(w),
                    kind=kind,
                )
                for rid, s, label, t, w, kind in rows
            ]

        return self._cached("relations", load)  # type: ignore[no-any-return]

    def _relations_by_entity(self) -> dict[str, list[Relation]]:
        def load() -> dict[str, list[Relation]]:
            out: dict[str, list[Relation]] = defaultdict(list)
            for r in self._relation_list():
                out[r.source].append(r)
                if r.target != r.source:
                    out[r.target].append(r)
            return dict(out)

        return self._cached("relations_by_entity", load)  # type: ignore[no-any-return]

    def relations(self, kind: str | Iterable[str] | None = None) -> list[Relation]:
        """All relations, or those of the given kind(s) ("extracted", "cooccurrence",
        "similar", "predicted")."""
        kinds = _kinds(kind)
        return [r for r in self._relation_list() if kinds is None or r.kind in kinds]

    def relations_of(
        self, entity_id: str, kind: str | Iterable[str] | None = None
    ) -> list[Relation]:
        """Relations with `entity_id` as source or target."""
        kinds = _kinds(kind)
        return [
            r
            for r in self._relations_by_entity().get(entity_id, [])
            if kinds is None or r.kind in kinds
        ]

    # -- entity-passage links -------------------------------------------------------------------

    def _links(self) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
        def load() -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
            by_entity: dict[str, dict[str, str]] = defaultdict(dict)
            by_passage: dict[str, dict[str, str]] = defaultdict(dict)
            for eid, pid, kind in self._rows(
                "SELECT entity_id, passage_id, kind FROM entity_passages ORDER BY rowid"
            ):
                by_entity[eid][pid] = kind
                by_passage[pid][eid] = kind
            return dict(by_entity), dict(by_passage)

        return self._cached("links", load)  # type: ignore[no-any-return]

    def passages_of(self, entity_id: str, kind: str | None = None) -> list[str]:
        """Ids of the passages linked to an entity (``kind``: "mention", "match" or both)."""
        links = self._links()[0].get(entity_id, {})
        return [pid for pid, k in links.items() if kind is None or k == kind]

    def entities_of(self, passage_id: str, kind: str | None = None) -> list[str]:
        """Ids of the entities linked to a passage."""
        links = self._links()[1].get(passage_id, {})
        return [eid for eid, k in links.items() if kind is None or k == kind]

    # -- hyperedges and topics ------------------------------------------------------------------

    def _hyperedge_list(self) -> list[HyperEdge]:
        def load() -> list[HyperEdge]:
            members: dict[str, list[str]] = defaultdict(list)
            for hid, eid in self._rows(
                "SELECT hyperedge_id, entity_id FROM hyperedge_members "
                "ORDER BY hyperedge_id, position"
            ):
                members[hid].append(eid)
            passages: dict[str, list[str]] = defaultdict(list)
            for hid, pid in self._rows(
                "SELECT hyperedge_id, passage_id FROM hyperedge_passages ORDER BY rowid"
            ):
                passages[hid].append(pid)
            rows = self._rows("SELECT id, relation, topic_id FROM hyperedges ORDER BY ord")
            return [
                graph_record(
                    HyperEdge,
                    id=hid,
                    relation=relation,
                    entity_ids=members.get(hid, []),
                    passage_ids=passages.get(hid, []),
                    topic_id=topic,
                )
                for hid, relation, topic in rows
            ]

        return self._cached("hyperedges", load)  # type: ignore[no-any-return]

    def hyperedges(self) -> list[HyperEdge]:
        return list(self._hyperedge_list())

    def hyperedge(self, hyperedge_id: str) -> HyperEdge | None:
        index = self._cached("hyperedge_index", lambda: {h.id: h for h in self._hyperedge_list()})
        return index.get(hyperedge_id)  # type: ignore[no-any-return]

    def hyperedges_of(self, entity_id: str) -> list[HyperEdge]:
        def load() -> dict[str, list[HyperEdge]]:
            out: dict[str, list[HyperEdge]] = defaultdict(list)
            for h in self._hyperedge_list():
                for eid in dict.fromkeys(h.entity_ids):
                    out[eid].append(h)
            return dict(out)

        return list(self._cached("hyperedges_by_entity", load).get(entity_id, []))

    def topics(self) -> list[Topic]:
        def load() -> list[Topic]:
            rows = self._rows("SELECT id, label, keywords, size FROM topics ORDER BY ord")
            return [
                Topic(id=tid, label=label, keywords=json.loads(kw), size=size)
                for tid, label, kw, size in rows
            ]

        return list(self._cached("topics", load))

    def topic(self, topic_id: str) -> Topic | None:
        return next((t for t in self.topics() if t.id == topic_id), None)

    def topic_subgraph(self, topic_id: str) -> TopicSubgraph:
        """The topic's hyperedges and the entities they involve (G-RAGent's H_T)."""
        topic = self.topic(topic_id)
        if topic is None:
            raise KeyError(f"unknown topic {topic_id!r}")
        edges = [h for h in self._hyperedge_list() if h.topic_id == topic_id]
        entities = self._entity_map()
        ids = dict.fromkeys(eid for h in edges for eid in h.entity_ids)
        return TopicSubgraph(
            topic=topic, hyperedges=edges, entities=[entities[e] for e in ids if e in entities]
        )

    # -- vectors --------------------------------------------------------------------------------

    def entity_embeddings(self) -> tuple[np.ndarray, list[str]]:
        """Normalised MiniLM vectors of ``"name; aliases; types"``, rows = `entity_ids()`."""
        return self._vectors("entity_vectors"), list(self._nodes()["entities"])

    def relation_embeddings(self) -> tuple[np.ndarray, list[str]]:
        """Vectors of ``"source label target"`` for extracted and predicted relations."""
        return self._vectors("relation_vectors"), list(self._nodes()["relations_embedded"])

    def hyperedge_embeddings(self) -> tuple[np.ndarray, list[str]]:
        """Vectors of the hyperedges' relation texts, rows = `hyperedges()`."""
        return self._vectors("hyperedge_vectors"), list(self._nodes()["hyperedges"])

    # -- raw layer (for incremental updates) ----------------------------------------------------

    def mention_embeddings(self) -> tuple[np.ndarray, list[str]]:
        """Contextual mention vectors (float16) and their mention ids; empty for a store that
        aligns record strings (or was written before contextual vectors existed)."""
        ids = list(self._nodes().get("mentions_embedded", []))
        if not ids:
            return np.zeros((0, 0), dtype=np.float16), []
        return self._vectors("mention_vectors"), ids

    def embedded_texts(
        self,
    ) -> tuple[
        list[tuple[str, list[str], list[str]]], list[tuple[str, str, str] | None], list[str]
    ]:
        """What the graph's vectors were made of, read as rows (no entity or relation objects:
        an update's vector cache): each entity's ``(name, aliases, types)`` (rows of
        `entity_embeddings`), each embedded relation's ``(source name, label, target name)``
        (rows of `relation_embeddings`; None for an id no relation has), each hyperedge's relation (rows of
        `hyperedge_embeddings`)."""
        aliases, types = aliases_and_types(self._rows)
        names: dict[str, str] = {}
        entities: list[tuple[str, list[str], list[str]]] = []
        for eid, name in self._rows("SELECT id, name FROM entities ORDER BY ord"):
            names[eid] = name
            entities.append((name, aliases.get(eid, []), types.get(eid, [])))
        del aliases, types
        triples = {
            rid: (names.get(s, s), label, names.get(t, t))
            for rid, s, label, t in self._rows("SELECT id, source, label, target FROM relations")
        }
        embedded = [triples.get(rid) for rid in self._nodes().get("relations_embedded", [])]
        del triples
        hyperedges = [r[0] for r in self._rows("SELECT relation FROM hyperedges ORDER BY ord")]
        return entities, embedded, hyperedges


class SQLiteGraphStore(GraphTables):
    """A store directory opened for reading (thread-safe; results are cached in memory): the
    `GraphTables` reads on ``graph.sqlite``, the matrices and vectors from their files.

    ``graph.sqlite`` is opened with the store, so its reads stay on the opened version; the
    other files are read when first needed, each checked to be of the opened version (its
    manifest's inode and time, `stamp`, as `Index` checks its own files): a store swapped in by
    a writer since (graphseek add, remove, index) raises `IndexChangedError` instead of
    reading the new version's arrays against the old one's tables."""

    def __init__(
        self,
        directory: Path,
        manifest: dict[str, Any],
        stamp: tuple[int, int] | None = None,
    ) -> None:
        self.dir = directory
        self._manifest = manifest
        self._stamp = stamp
        self._lock = threading.RLock()
        uri = f"file:{(directory / DATABASE).as_posix()}?mode=ro"
        self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._cache: dict[str, Any] = {}

    # -- opening --------------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> SQLiteGraphStore:
        """Open a store; `IndexNotFoundError` if there is none, `IndexFormatError` if it is not
        a graph store of a supported version."""
        path = Path(directory).expanduser().resolve()
        recover(path)
        manifest_path = path / MANIFEST
        stamp = file_stamp(manifest_path)  # before anything is read: a swap since is seen
        if not manifest_path.exists() or not (path / DATABASE).exists():
            raise IndexNotFoundError(
                f"no graph store at {path} (missing {MANIFEST} or {DATABASE}); "
                "build one with build_graph(passages, out_dir)"
            )
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"unreadable graph manifest {manifest_path}: {exc}") from exc
        if manifest.get("format") != FORMAT:
            raise IndexFormatError(f"{path} is not a graphseek graph store ({MANIFEST} format)")
        if manifest.get("version") != VERSION:
            raise IndexFormatError(
                f"graph store {path} has version {manifest.get('version')}, this graphseek "
                f"reads version {VERSION}; rebuild it"
            )
        # its files' sizes, headers and counts (milliseconds; `graphseek.knowledge.integrity`)
        check_graph_store(path, manifest, graph_hint(path))
        store = cls(path, manifest, stamp)
        try:
            store.check_version()  # the database opened is of the manifest read
        except IndexChangedError:
            store.close()
            raise
        return store

    def check_version(self) -> None:
        """`IndexChangedError` when the store at this directory is no longer the version this
        object opened (a writer swapped another in)."""
        if self._stamp is not None and file_stamp(self.dir / MANIFEST) != self._stamp:
            raise IndexChangedError(
                f"The knowledge graph at {self.dir} was rewritten (graphseek add, remove or "
                "index) after it was opened; open the index again to read the new version."
            )

    def _file(self, key: str, read: Callable[[], Any]) -> Any:
        """`read()` of one of this store's files, on first use (then cached), checked to be of
        the opened version before and after it is read."""

        def checked() -> Any:
            self.check_version()
            try:
                value = read()
            except Exception:
                self.check_version()  # a file of a swapped-out version: say so
                raise
            self.check_version()
            return value

        return self._cached(key, checked)

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def __repr__(self) -> str:
        counts = self._manifest.get("counts", {})
        return f"SQLiteGraphStore({str(self.dir)!r}, {counts})"

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._con.execute(sql, params).fetchall()

    # -- matrices and vectors: files ------------------------------------------------------------

    def _nodes(self) -> dict[str, list[str]]:
        def load() -> dict[str, list[str]]:
            return json.loads((self.dir / "nodes.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]

        return self._file("nodes", load)  # type: ignore[no-any-return]

    def adjacency(self, include_passages: bool = False) -> tuple[sparse.csr_matrix, list[str]]:
        """The cached CSR adjacency and its node ids: entities only, or entities followed by
        passages (entity-passage links weigh 1)."""
        nodes = self._nodes()
        if include_passages:
            matrix = self._file(
                "adjacency_full", lambda: sparse.load_npz(self.dir / "adjacency_full.npz").tocsr()
            )
            return matrix, nodes["entities"] + nodes["passages"]
        matrix = self._file(
            "adjacency_entity", lambda: sparse.load_npz(self.dir / "adjacency_entity.npz").tocsr()
        )
        return matrix, list(nodes["entities"])

    def entity_passage_matrix(self) -> tuple[sparse.csr_matrix, list[str], list[str]]:
        """CSR incidence (entities x passages) with its row and column ids."""
        nodes = self._nodes()
        matrix = self._file(
            "entity_passage", lambda: sparse.load_npz(self.dir / "entity_passage.npz").tocsr()
        )
        return matrix, list(nodes["entities"]), list(nodes["passages"])

    def _vectors(self, name: str) -> np.ndarray:
        return self._file(name, lambda: np.load(self.dir / f"{name}.npy"))  # type: ignore[no-any-return]

    def sentence_layer(self) -> SentenceLayer | None:
        """The store's sentence nodes and their edges (`sentences.SentenceLayer`), None for a
        store without them (written before sentences were nodes, or built with
        ``sentences="none"``)."""
        return self._file("sentence_layer", lambda: SentenceLayer.load(self.dir))  # type: ignore[no-any-return]

    def extractions(self) -> Iterator[Extraction]:
        """The stored raw extractions, one per passage in store order, read as they are taken:
        the three raw tables are walked together (each is written passage by passage in store
        order) on a connection of the iterator's own, so the store's lock is not held between
        them and no table is held whole."""
        con = sqlite3.connect(f"file:{(self.dir / DATABASE).as_posix()}?mode=ro", uri=True)
        try:
            mentions = _grouped(con.execute(MENTION_ROWS), 1, raw_mention)
            relations = _grouped(con.execute(RAW_RELATION_ROWS), 0, raw_relation)
            facts = _grouped(con.execute(RAW_FACT_ROWS), 1, raw_fact)
            for (pid,) in con.execute("SELECT id FROM passages ORDER BY ord"):
                yield Extraction(
                    passage_id=pid,
                    mentions=mentions.take(pid),
                    relations=relations.take(pid),
                    facts=facts.take(pid),
                )
            for rest in (mentions, relations, facts):
                rest.check_done()
        finally:
            con.close()

    def mention_vector_file(self) -> MentionVectors:
        """The contextual mention vectors copied into a `MentionVectors` file (an update's
        cache: read in blocks, never all in memory); empty like `mention_embeddings`."""
        ids = list(self._nodes().get("mentions_embedded", []))
        if not ids:
            return MentionVectors(0)
        self.check_version()
        vectors = MentionVectors.from_npy(self.dir / "mention_vectors.npy", ids)
        self.check_version()
        return vectors

    def alignment_state(
        self, *, vectors: bool = True
    ) -> tuple[list[str], list[str], np.ndarray, MergePairs]:
        """Base entity ids, their embedding texts, their vectors (an empty array unless
        `vectors`: an update that reads them a block at a time does not load them whole), and
        the decided merge pairs (read a block of rows at a time into columns)."""
        rows = self._rows("SELECT id, text FROM base_entities ORDER BY ord")
        base_vectors = (
            self._vectors("base_vectors") if vectors else np.zeros((0, 0), dtype=np.float32)
        )
        ids = [r[0] for r in rows]
        # the pairs are positions in the sorted ids (`MergePairs`); the rows are in `ord` order,
        # which a delta add leaves unsorted (it appends its base entities)
        ordered = sorted(ids)
        position = {x: k for k, x in enumerate(ordered)}
        first, second, sims, merged = array("q"), array("q"), array("d"), array("b")
        with self._lock:
            cursor = self._con.execute("SELECT a, b, sim, merged FROM merge_pairs")
            while block := cursor.fetchmany(65_536):
                for a, b, sim, flag in block:
                    i, j = position.get(a), position.get(b)
                    if i is not None and j is not None:
                        first.append(i)
                        second.append(j)
                        sims.append(sim)
                        merged.append(1 if flag else 0)
        del position
        pairs = MergePairs.of(
            ordered,
            np.frombuffer(first, dtype=np.int64),
            np.frombuffer(second, dtype=np.int64),
            np.frombuffer(sims, dtype=np.float64),
            np.frombuffer(merged, dtype=np.int8).astype(bool),
        )
        return ids, [r[1] for r in rows], base_vectors, pairs


MENTION_ROWS = (
    "SELECT id, passage_id, name, aliases, description, types, sentence FROM mentions "
    "ORDER BY rowid"
)
RAW_RELATION_ROWS = (
    "SELECT passage_id, source, label, target, sentence FROM raw_relations ORDER BY rowid"
)
RAW_FACT_ROWS = "SELECT id, passage_id, relation, mentions, sentence FROM raw_facts ORDER BY rowid"
"""The raw layer's rows, in the order written (passage by passage, in the store's order); a
row of each becomes its object with `raw_mention`, `raw_relation`, `raw_fact`."""


def raw_relation(row: Sequence[Any]) -> RawRelation:
    pid, source, label, target, sentence = row
    return RawRelation(passage_id=pid, source=source, label=label, target=target, sentence=sentence)


def raw_fact(row: Sequence[Any]) -> RawFact:
    fid, pid, relation, members, sentence = row
    return RawFact(
        id=fid, passage_id=pid, relation=relation, mentions=json.loads(members), sentence=sentence
    )


def raw_mention(row: Sequence[Any]) -> Mention:
    mid, pid, name, aliases, description, types, sentence = row
    return Mention(
        id=mid,
        passage_id=pid,
        name=name,
        aliases=json.loads(aliases),
        description=description,
        types=json.loads(types),
        sentence=-1 if sentence is None else int(sentence),
    )


class _grouped:
    """Rows of one raw table (`rows`, ordered passage by passage, the passage id in column
    `column`) taken a passage at a time as objects (`make`), for `SQLiteGraphStore.extractions`."""

    def __init__(self, rows: Iterator[Sequence[Any]], column: int, make: Callable[[Any], Any]):
        self._rows, self._column, self._make = rows, column, make
        self._next: Sequence[Any] | None = next(self._rows, None)

    def take(self, passage_id: str) -> list[Any]:
        """The objects of `passage_id`'s rows (the rows at the head that carry its id)."""
        out: list[Any] = []
        while self._next is not None and self._next[self._column] == passage_id:
            out.append(self._make(self._next))
            self._next = next(self._rows, None)
        return out

    def check_done(self) -> None:
        if self._next is not None:
            raise IndexFormatError(
                f"the graph store's raw rows are out of passage order (a row of passage "
                f"{self._next[self._column]!r} was left over); rebuild it"
            )


def _kinds(kind: str | Iterable[str] | None) -> set[str] | None:
    if kind is None:
        return None
    if isinstance(kind, str):
        return {kind}
    return set(kind)
