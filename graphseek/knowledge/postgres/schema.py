"""The versioned schema of a Postgres index: `MIGRATIONS`, applied in order by `migrate`.

Every index lives in its own PostgreSQL schema (the URI's ``schema=``). Tables:

- ``schema_version``: one row per applied migration (version, description, time).
- ``meta``: key -> jsonb; ``manifest`` (the index manifest, as the directory backend's
  ``manifest.json``), ``revision`` (changes on every committed write), ``graph_manifest``.
- ``passages``: ord (corpus order), id, title, text, source, embedding ``vector(dim)`` with an
  HNSW index (``vector_cosine_ops``).
- ``bm25_files`` (v3): the bm25s index of the passages, as its saved files.
- the knowledge graph, one table per table of the directory backend's ``graph.sqlite`` (same
  names and columns, plus ``rowid``, the insertion order the readers sort by), with indexes for the
  neighbours of an entity (``relations`` by source and by target), the passages of an entity
  (``entity_passages`` primary key), the hyperedges of an entity (``hyperedge_members`` by
  entity); the graph's passages are the ``passages`` table above.
- ``graph_vectors``: the graph's entity / relation / hyperedge / base-entity / contextual
  mention vectors, by kind and row.
- the sentence layer (v5; `graphseek.knowledge.graph.store.sentences`): ``sentences`` (one row per
  sentence node, passage by passage: its passage, its span of the passage's content, its vector
  as pgvector ``halfvec``, the layer's float16 exactly), ``entity_sentences`` (the entity–
  sentence edges and their kind, by entity and by sentence), and the layer's counts and vector
  source in ``meta`` under ``sentence_layer`` (absent: the graph has no sentence nodes).

Versions. ``schema_version`` records every migration applied. `migrate` applies, in order and
inside the caller's transaction (which holds the index's advisory lock), the steps a schema
lacks: a build creates a new schema at the latest version, `PostgresIndex.open` upgrades an older
one in one transaction (readers of the old version keep reading until it commits), and a schema
newer than this code is refused with one line (`IndexFormatError`). A migration is (version,
description, SQL); `{dim}` in the SQL is the embedding dimension. Never edit a released
migration: append a new one.

- v1: passages with pgvector HNSW, the graph tables with the directory store's indexes, graph
  vectors, meta.
- v2: the indexes the per-query neighbourhood reads use (`graphseek.knowledge.postgres.
  neighbourhood`): graph vectors by (kind, item id) (relation vectors of a subgraph), relation
  labels (the catalogue's distinct labels, an index-only scan).
- v3: ``bm25_files``, the saved bm25s index (file name -> bytes), written by every write with
  the passages it ranks, so a worker loads the lexical index instead of building it. An index
  migrated from v2 has none until its next write; its workers build bm25s from the passages.
- v4: ``entity_rows``, one row per entity of the undirected entity graph (`GraphView.undirected`):
  its number of neighbours, its neighbours' positions (int64) and edge weights (float64) as
  bytes, written with the graph. Push PPR (progressive's Stage 3) reads the rows of the nodes it
  pushes from it, one indexed read per round, instead of their relations. An index migrated from
  v3 has none until its next write; its readers read the relations instead (same rows).
- v5: the sentence layer's tables, ``sentences`` and ``entity_sentences``, written with the graph
  (a build, ``from_directory``, every add and delete). The bridge retriever scores only the
  sentences linked to its active entities, in memory, so the vectors get no HNSW index. An
  index migrated from v4 has no sentence nodes until it is rebuilt (an add keeps a graph without
  them so, as a directory store's does).
"""

from __future__ import annotations

from typing import Any

from graphseek.knowledge.graph.store.writer import _INDEXES as _GRAPH_INDEXES

SCHEMA_VERSION_TABLE = "schema_version"

# table -> columns, in the order of the directory backend's graph.sqlite (without rowid)
GRAPH_TABLES: dict[str, tuple[str, ...]] = {
    "mentions": (
        "id",
        "passage_id",
        "name",
        "aliases",
        "description",
        "types",
        "sentence",
        "entity_id",
        "base_id",
    ),
    "raw_relations": ("passage_id", "source", "label", "target", "sentence"),
    "raw_facts": ("id", "passage_id", "relation", "mentions", "sentence"),
    "entities": ("ord", "id", "name", "norm", "description"),
    "entity_aliases": ("entity_id", "position", "alias", "norm"),
    "entity_types": ("entity_id", "position", "type"),
    "provenance": ("entity_id", "mention_id", "passage_id"),
    "entity_passages": ("entity_id", "passage_id", "kind"),
    "relations": ("ord", "id", "source", "label", "target", "weight", "kind"),
    "relation_passages": ("relation_id", "passage_id"),
    "hyperedges": ("ord", "id", "relation", "topic_id"),
    "hyperedge_members": ("hyperedge_id", "position", "entity_id"),
    "hyperedge_passages": ("hyperedge_id", "passage_id"),
    "topics": ("ord", "id", "label", "keywords", "size"),
    "base_entities": ("ord", "id", "text", "entity_id"),
    "merge_pairs": ("a", "b", "sim", "merged"),
}

VECTOR_KINDS = (
    "entity_vectors",
    "relation_vectors",
    "hyperedge_vectors",
    "base_vectors",
    "mention_vectors",
)
"""The kinds of ``graph_vectors`` rows (the directory store's ``<kind>.npy`` files);
``mention_vectors`` are the contextual mention vectors incremental updates reuse."""

_V1 = (
    """
CREATE TABLE meta (key text PRIMARY KEY, value jsonb NOT NULL);
CREATE TABLE passages (ord bigint PRIMARY KEY, id text UNIQUE NOT NULL, title text NOT NULL,
    text text NOT NULL, source text NOT NULL, embedding vector({dim}) NOT NULL);
CREATE INDEX passages_embedding_hnsw ON passages
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);

CREATE TABLE mentions (rowid bigint NOT NULL, id text PRIMARY KEY, passage_id text NOT NULL,
    name text NOT NULL, aliases text NOT NULL, description text NOT NULL, types text NOT NULL,
    sentence bigint, entity_id text, base_id text);
CREATE TABLE raw_relations (rowid bigint NOT NULL, passage_id text NOT NULL,
    source text NOT NULL, label text NOT NULL, target text NOT NULL, sentence bigint);
CREATE TABLE raw_facts (rowid bigint NOT NULL, id text PRIMARY KEY, passage_id text NOT NULL,
    relation text NOT NULL, mentions text NOT NULL, sentence bigint);
CREATE TABLE entities (rowid bigint NOT NULL, ord bigint PRIMARY KEY, id text UNIQUE NOT NULL,
    name text NOT NULL, norm text NOT NULL, description text NOT NULL);
CREATE TABLE entity_aliases (rowid bigint NOT NULL, entity_id text NOT NULL, position bigint,
    alias text NOT NULL, norm text NOT NULL);
CREATE TABLE entity_types (rowid bigint NOT NULL, entity_id text NOT NULL, position bigint,
    type text NOT NULL);
CREATE TABLE provenance (rowid bigint NOT NULL, entity_id text NOT NULL,
    mention_id text NOT NULL, passage_id text NOT NULL);
CREATE TABLE entity_passages (rowid bigint NOT NULL, entity_id text NOT NULL,
    passage_id text NOT NULL, kind text NOT NULL, PRIMARY KEY (entity_id, passage_id));
CREATE TABLE relations (rowid bigint NOT NULL, ord bigint PRIMARY KEY, id text UNIQUE NOT NULL,
    source text NOT NULL, label text NOT NULL, target text NOT NULL,
    weight double precision NOT NULL, kind text NOT NULL);
CREATE TABLE relation_passages (rowid bigint NOT NULL, relation_id text NOT NULL,
    passage_id text NOT NULL);
CREATE TABLE hyperedges (rowid bigint NOT NULL, ord bigint PRIMARY KEY,
    id text UNIQUE NOT NULL, relation text NOT NULL, topic_id text);
CREATE TABLE hyperedge_members (rowid bigint NOT NULL, hyperedge_id text NOT NULL,
    position bigint, entity_id text NOT NULL);
CREATE TABLE hyperedge_passages (rowid bigint NOT NULL, hyperedge_id text NOT NULL,
    passage_id text NOT NULL);
CREATE TABLE topics (rowid bigint NOT NULL, ord bigint PRIMARY KEY, id text UNIQUE NOT NULL,
    label text NOT NULL, keywords text NOT NULL, size bigint NOT NULL);
CREATE TABLE base_entities (rowid bigint NOT NULL, ord bigint PRIMARY KEY,
    id text UNIQUE NOT NULL, text text NOT NULL, entity_id text NOT NULL);
CREATE TABLE merge_pairs (rowid bigint NOT NULL, a text NOT NULL, b text NOT NULL,
    sim double precision NOT NULL, merged bigint NOT NULL, PRIMARY KEY (a, b));
CREATE TABLE graph_vectors (kind text NOT NULL, row bigint NOT NULL, item_id text,
    embedding vector NOT NULL, PRIMARY KEY (kind, row));

"""
    + _GRAPH_INDEXES
    + """CREATE INDEX ix_mentions_entity ON mentions (entity_id);
"""
)  # the graph's tables, with the indexes of the directory store's graph.sqlite and one more

_V2 = """
CREATE INDEX ix_graph_vectors_item ON graph_vectors (kind, item_id);
CREATE INDEX ix_relations_label ON relations (label);
"""

_V3 = """
CREATE TABLE bm25_files (name text PRIMARY KEY, data bytea NOT NULL);
"""

_V4 = """
CREATE TABLE entity_rows (ord bigint PRIMARY KEY, degree integer NOT NULL,
    neighbours bytea NOT NULL, weights bytea NOT NULL);
"""

_V5 = """
CREATE TABLE sentences (ord bigint PRIMARY KEY, passage_id text NOT NULL,
    start_char integer NOT NULL, end_char integer NOT NULL, embedding halfvec NOT NULL);
CREATE INDEX ix_sentences_passage ON sentences (passage_id);
CREATE TABLE entity_sentences (entity_id text NOT NULL, sentence bigint NOT NULL,
    kind smallint NOT NULL, PRIMARY KEY (entity_id, sentence));
CREATE INDEX ix_entity_sentences_sentence ON entity_sentences (sentence);
"""

#: the sentence layer's tables (removed and written with the graph)
SENTENCE_TABLES = ("sentences", "entity_sentences")

#: (version, description, SQL); applied in order, each in the writer's transaction
MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "passages with pgvector HNSW, graph tables, graph vectors, meta", _V1),
    (2, "indexes for the per-query neighbourhood reads", _V2),
    (3, "bm25s postings stored with the index", _V3),
    (4, "the undirected entity graph's rows, for push PPR", _V4),
    (5, "sentence nodes: sentences (halfvec) and entity-sentence edges", _V5),
]
SCHEMA_VERSION = MIGRATIONS[-1][0]


def newer_than_code(schema: str, version: int) -> str:
    """The one-line refusal for a schema written by a newer graphseek."""
    return (
        f"The index in schema {schema!r} has schema version {version}; this graphseek knows up "
        f"to version {SCHEMA_VERSION}. Upgrade graphseek to read it."
    )


def current_version(cur: Any, schema: str) -> int | None:
    """The highest applied migration of `schema`, None when it holds no graphseek index."""
    cur.execute(
        "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s",
        (schema, SCHEMA_VERSION_TABLE),
    )
    if cur.fetchone() is None:
        return None
    cur.execute(f"SELECT max(version) FROM {SCHEMA_VERSION_TABLE}")
    row = cur.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(cur: Any, schema: str, dim: int) -> list[int]:
    """Create `schema` if needed and apply the migrations it lacks (inside the caller's
    transaction, with `search_path` set to it); returns the versions applied."""
    version = current_version(cur, schema)
    if version is None:
        cur.execute(
            f"CREATE TABLE {SCHEMA_VERSION_TABLE} (version integer PRIMARY KEY, "
            "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        version = 0
    if version > SCHEMA_VERSION:
        from graphseek.errors import IndexFormatError

        raise IndexFormatError(newer_than_code(schema, version))
    applied = []
    for number, description, sql in MIGRATIONS:
        if number <= version:
            continue
        cur.execute(sql.replace("{dim}", str(int(dim))))
        cur.execute(
            f"INSERT INTO {SCHEMA_VERSION_TABLE} (version, description) VALUES (%s, %s)",
            (number, description),
        )
        applied.append(number)
    return applied
