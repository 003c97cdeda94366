"""The storage interface: what retrieval needs from an index, and the registry picking a backend.

Two backends store an index: a directory (`graphseek.knowledge.index.Index`: SQLite and files,
the default) and PostgreSQL (`graphseek.knowledge.postgres.index.PostgresIndex`: pgvector,
tables). Each implements `IndexStore` on its own, neither subclasses the other: what they share
is written once as plain functions and mixins over the protocol's parts
(`graphseek.knowledge.index_common.IndexCommon`: lookups, search, the embedder, `ensure_graph`;
`graphseek.knowledge.index_build`: a write's passages, graph and vectors;
`graphseek.knowledge.graph.store.GraphTables`: the graph store's SQL;
`graphseek.knowledge.graph.store.neighbourhood.SharedTableReads`). Everything above them (passage
search, the graph retrievers and tools, the workflows) takes an `IndexStore`, and mypy checks
both backends against these protocols (the assignments at the end of this module). A new
backend is one class implementing `IndexStore` (its graph a `GraphStore`, and, to be read per
query, a `NeighbourhoodReads`) plus a `Backend` entry in `BACKENDS`:

- `IndexStore`: passages in corpus order, lookups by id, dense / sparse / hybrid search (and
  `dense_search` by a query vector: exact in memory, or pgvector; `lexical_ranker`, the BM25
  index itself, for scores a search does not give: a term's document frequency, the scores of
  a few passages), the embeddings and the embedder, a manifest with a revision, the knowledge
  graph as a `GraphStore` (`open_graph_store`, loaded whole into a `GraphView` by
  `graphseek.tools.graph_access`; its sentence nodes by `GraphStore.sentence_layer`, files in a
  directory, tables in PostgreSQL), `sync` (take what another writer committed), and
  `add_documents` / `delete_documents` / `ensure_graph`. Its class (`IndexClass`) opens and
  builds it.
- `NeighbourhoodReads`: an index that can also serve its graph one neighbourhood at a time
  (`index.graph_neighbourhood()`) is read per query by `graphseek.tools.neighbourhood` instead
  of being loaded whole: PostgreSQL always (`PostgresNeighbourhood`), a directory index when
  opened with ``graph_reads="neighbourhood"`` (`DirectoryNeighbourhood`; by default it loads its
  graph whole). `reads_neighbourhoods(index)` says which an index does.

The registry (`BACKENDS`) maps a URI scheme to its backend: a plain path or ``file://`` is a
directory, ``postgresql://`` / ``postgres://`` is PostgreSQL; any other scheme is refused with
one line naming the accepted ones (`backend_for`). `build_index` and `open_index` dispatch
through it; `Index.build` / `Index.open`, the CLI and the retrievers call them. Backends are
imported on first use by module name, so this module imports neither.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from graphseek.errors import InvalidRequestError
from graphseek.knowledge.passages import Hit, Passage

if TYPE_CHECKING:
    from graphseek.knowledge.dense import TextEncoder
    from graphseek.knowledge.graph.models import HyperEdge, Topic
    from graphseek.knowledge.graph.store import GraphStore
    from graphseek.knowledge.graph.store.neighbourhood import Catalogue, RelationRow
    from graphseek.knowledge.index_common import SearchMethod
    from graphseek.knowledge.sparse import BM25Index

# -- the protocols --------------------------------------------------------------------------------


@runtime_checkable
class IndexStore(Protocol):
    """A passage index with its graph, as every algorithm above storage uses it."""

    @property
    def manifest(self) -> dict[str, Any]: ...
    @property
    def passages(self) -> list[Passage]: ...
    @property
    def revision(self) -> str: ...
    @property
    def location_text(self) -> str: ...
    @property
    def embeddings(self) -> np.ndarray: ...
    @property
    def embedder(self) -> TextEncoder: ...
    @property
    def has_graph(self) -> bool: ...
    @property
    def graph_reads(self) -> str: ...
    @property
    def graph(self) -> GraphStore: ...
    def __len__(self) -> int: ...
    def __contains__(self, passage_id: object) -> bool: ...
    def get(self, passage_id: str) -> Passage: ...
    def position(self, passage_id: str) -> int: ...
    def embed(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray: ...
    def search(self, query: str, k: int = 5, method: SearchMethod = "hybrid") -> list[Hit]: ...
    def dense_search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]: ...
    def lexical_ranker(self) -> BM25Index | None: ...
    def search_many(
        self, queries: Sequence[str], k: int = 5, method: SearchMethod = "hybrid"
    ) -> list[list[Hit]]: ...
    def open_graph_store(self) -> GraphStore: ...
    def graph_neighbourhood(self) -> NeighbourhoodReads: ...
    def sync(self) -> IndexStore: ...
    def add_documents(
        self,
        passages: Iterable[Passage],
        *,
        show_progress: bool = False,
        batch_size: int = 64,
        graph_options: Mapping[str, Any] | None = None,
    ) -> IndexStore: ...
    def delete_documents(
        self, passage_ids: Iterable[str], *, show_progress: bool = False
    ) -> IndexStore: ...
    def ensure_graph(
        self, *, show_progress: bool = False, graph_options: Mapping[str, Any] | None = None
    ) -> IndexStore: ...


@runtime_checkable
class NeighbourhoodReads(Protocol):
    """Indexed, batched reads of one revision of an index's graph (what
    `graphseek.tools.neighbourhood` runs the graph algorithms on, query by query)."""

    revision: str
    source: str
    dim: int

    def catalogue(self) -> Catalogue: ...
    def incident_relations(self, entity_ids: Iterable[str]) -> list[RelationRow]: ...
    def relations(self, relation_ids: Iterable[str]) -> list[RelationRow]: ...
    def links_of(self, entity_ids: Iterable[str]) -> list[tuple[str, str]]: ...
    def links_of_passages(self, passage_ids: Iterable[str]) -> list[tuple[str, str]]: ...
    def entity_rows(
        self, positions: Iterable[int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
    def relation_vectors(self, relation_ids: Iterable[str]) -> dict[str, np.ndarray]: ...
    def topics(self) -> list[Topic]: ...
    def hyperedge_labels(self) -> list[HyperEdge]: ...
    def topic_centroids(self) -> dict[str, np.ndarray] | None: ...
    def hyperedges(self, hyperedge_ids: Iterable[str]) -> list[HyperEdge]: ...
    def hyperedges_of(self, entity_ids: Iterable[str]) -> list[HyperEdge]: ...
    def relation_list(self) -> list[tuple[str, str, str, str, float, str]]: ...
    def nearest_entities(
        self, query_vector: np.ndarray, n: int
    ) -> tuple[list[int], np.ndarray]: ...
    def entity_vectors(self, positions: Sequence[int]) -> np.ndarray: ...


class IndexClass(Protocol):
    """A backend's index class, as the registry uses it: `open` and `build` an `IndexStore`."""

    def open(
        self, path: str | Path, *, embedder: Any = None, graph_reads: str | None = None
    ) -> IndexStore: ...
    def build(
        self,
        passages: Any,
        path: str | Path,
        *,
        show_progress: bool = True,
        batch_size: int = 64,
        graph: bool = False,
        graph_options: Mapping[str, Any] | None = None,
        embedder: Any = None,
        workers: int | None = None,
        scheduler: str | None = None,
    ) -> IndexStore: ...


#: how an index's graph is read by the graph retrievers: loaded whole into a `GraphView`
#: (a directory index's default), or one neighbourhood at a time (`NeighbourhoodReads`)
GRAPH_READS: tuple[str, ...] = ("whole", "neighbourhood")


def check_graph_reads(value: object) -> str:
    """`value` if it is one of `GRAPH_READS`, else `InvalidRequestError` naming them."""
    if value not in GRAPH_READS:
        accepted = " or ".join(repr(v) for v in GRAPH_READS)
        raise InvalidRequestError(f"graph_reads must be {accepted}, not {value!r}.")
    return str(value)


def reads_neighbourhoods(index: object) -> bool:
    """Whether `index` serves its graph one neighbourhood at a time: it has
    `graph_neighbourhood()` and was not opened to read its graph whole (``graph_reads``)."""
    if not callable(getattr(index, "graph_neighbourhood", None)):
        return False
    return getattr(index, "graph_reads", "neighbourhood") == "neighbourhood"


# -- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backend:
    """A storage backend: its name, the URI schemes that choose it, and its index class (the
    module and class name, imported on first use)."""

    name: str
    schemes: tuple[str, ...]
    module: str
    cls: str
    #: whether its targets are local directories (else a URI naming a server)
    local: bool

    def index_class(self) -> IndexClass:
        return getattr(importlib.import_module(self.module), self.cls)  # type: ignore[no-any-return]


DIRECTORY = Backend("directory", ("file",), "graphseek.knowledge.index", "Index", local=True)
POSTGRES = Backend(
    "postgres",
    ("postgresql", "postgres"),
    "graphseek.knowledge.postgres.index",
    "PostgresIndex",
    local=False,
)
BACKENDS: tuple[Backend, ...] = (DIRECTORY, POSTGRES)

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


def scheme_of(target: object) -> str:
    """The URI scheme of `target`, lowercase ("" for a plain path or a `Path`)."""
    if not isinstance(target, str):
        return ""
    found = _SCHEME.match(target)
    return found.group(1).lower() if found else ""


def backend_for(target: object) -> Backend:
    """The backend of an index location (a path, or a URI by its scheme); an unknown scheme
    raises `InvalidRequestError` naming the accepted ones."""
    scheme = scheme_of(target)
    if not scheme:
        return DIRECTORY
    for backend in BACKENDS:
        if scheme in backend.schemes:
            return backend
    from graphseek.state.validation import unknown_name

    known = [s for b in BACKENDS for s in b.schemes]
    message = unknown_name("index URI scheme", scheme, known, plural="index URI schemes")
    raise InvalidRequestError(
        f"{message} An index is a directory path, file://PATH or postgresql://…?schema=NAME."
    )


def path_text(target: str | Path) -> str:
    """A directory backend's target as written, without its ``file://`` prefix."""
    text = str(target)
    return text[len("file://") :] if scheme_of(text) == "file" else text


def local_path(target: str | Path) -> Path:
    """A directory backend's target as a path (``file://`` removed, ``~`` expanded, absolute)."""
    return Path(path_text(target)).expanduser().absolute()


def open_index(target: str | Path, **kwargs: Any) -> IndexStore:
    """Open the index at `target` with its backend's class (`backend_for`)."""
    return backend_for(target).index_class().open(target, **kwargs)


def build_index(passages: Any, target: str | Path, **kwargs: Any) -> IndexStore:
    """Build an index at `target` with its backend's class (`backend_for`)."""
    return backend_for(target).index_class().build(passages, target, **kwargs)


__all__ = [
    "BACKENDS",
    "DIRECTORY",
    "GRAPH_READS",
    "POSTGRES",
    "Backend",
    "IndexClass",
    "IndexStore",
    "NeighbourhoodReads",
    "backend_for",
    "build_index",
    "check_graph_reads",
    "local_path",
    "open_index",
    "path_text",
    "reads_neighbourhoods",
    "scheme_of",
]


if TYPE_CHECKING:  # mypy checks each backend against the protocols (no runtime cost)
    from graphseek.knowledge.graph.store import SQLiteGraphStore
    from graphseek.knowledge.graph.store.neighbourhood import DirectoryNeighbourhood
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.postgres.graph import PostgresGraphStore
    from graphseek.knowledge.postgres.index import PostgresIndex
    from graphseek.knowledge.postgres.neighbourhood import PostgresNeighbourhood

    _directory_class: IndexClass = Index
    _postgres_class: IndexClass = PostgresIndex
    _directory: type[IndexStore] = Index
    _postgres: type[IndexStore] = PostgresIndex
    _directory_graph: type[GraphStore] = SQLiteGraphStore
    _postgres_graph: type[GraphStore] = PostgresGraphStore
    _directory_reads: type[NeighbourhoodReads] = DirectoryNeighbourhood
    _postgres_reads: type[NeighbourhoodReads] = PostgresNeighbourhood
