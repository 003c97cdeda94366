"""How both index backends begin a write, as plain functions: the passages read and checked, the
embedder resolved, the knowledge graph built into a folder and the passage vectors made (from
the graph's passage pass when it ran, else encoded), a graph updated by an add or a deletion,
and the manifest record every backend writes.

The directory backend (`graphseek.knowledge.index.Index`) writes what these produce into files,
the PostgreSQL backend (`graphseek.knowledge.postgres.index.PostgresIndex`) into tables; neither
depends on the other's class.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.errors import CorpusError
from graphseek.knowledge import embedders
from graphseek.knowledge.dense import Rows, TextEncoder
from graphseek.knowledge.embedders import graph_pass_vectors, passage_vectors
from graphseek.knowledge.loaders import iter_corpus
from graphseek.knowledge.passages import EMPTY_CORPUS, Passage, check_passage, duplicate_id
from graphseek.knowledge.sharded import Sharding

FORMAT_NAME = "graphseek-index"
FORMAT_VERSION = 1
#: the `k` of reciprocal rank fusion in the graph retrievers' passage priors
#: (`graphseek.tools.passage_search`)
RRF_K = 60
#: the weights of BM25 and dense in every index's hybrid search, a convex combination of their
#: min-max normalised scores (`graphseek.knowledge.fusion.convex`; recorded in its manifest)
HYBRID_WEIGHTS = (0.5, 0.5)
#: the graph store's folder: inside an index directory, or a PostgreSQL writer's scratch folder
GRAPH_DIR = "graph"


def read_passages(
    passages: Iterable[Passage] | str | Path, show_progress: bool = True
) -> tuple[Sequence[Passage], str]:
    """The passages to index, checked, and the corpus path they came from ("" for passages given
    in memory). Every backend's build starts here. A list (or tuple) is kept as it is; a
    corpus file or folder (loaded behind a `reading` bar) or any other iterable goes to a
    `PassageSpool` (a temporary file, read back by each stage: the build holds 8 bytes a
    passage of it, not 1 KB), which a spool already is."""
    from graphseek.knowledge.graph.memory.spool import PassageSpool

    source = ""
    if isinstance(passages, PassageSpool):
        return passages, source
    if isinstance(passages, str | Path):
        from graphseek.knowledge.progress import bar as progress_bar

        source = str(passages)
        with progress_bar("reading", None, show_progress) as bar:
            spool = PassageSpool.of(iter_corpus(passages))  # read a file at a time
            bar.update(len(spool))
        return spool, source
    if not isinstance(passages, list | tuple):
        return PassageSpool.of(passages), source
    items = list(passages)
    check_passages(items)
    return items, source


def prepare_build(
    passages: Iterable[Passage] | str | Path,
    embedder: str | TextEncoder | None,
    *,
    graph: bool,
    graph_options: Mapping[str, Any] | None,
    show_progress: bool,
) -> tuple[TextEncoder, Sequence[Passage], str]:
    """What every backend's build starts with: the encoder (`resolve_embedder`), the graph
    options checked against it, and the passages (`read_passages`) with their source."""
    encoder = resolve_embedder(embedder)
    if graph:
        check_graph_options(encoder, graph_options)
    items, source = read_passages(passages, show_progress)
    return encoder, items, source


def corpus_vectors(
    encoder: TextEncoder,
    items: Sequence[Passage],
    graph_dir: Path | None,
    graph_options: Mapping[str, Any] | None,
    *,
    batch_size: int,
    show_progress: bool,
    sharding: Sharding | None = None,
) -> Rows:
    """The vectors of a corpus being built, after building its graph into `graph_dir` (None:
    no graph) first: the graph's passage pass (contextual alignment) gives the vectors, in a
    temporary file that `DenseIndex.build` reads a block at a time, when the encoder is the
    packaged MiniLM; else they are encoded here. With a `sharding` the map
    stages (extraction, the passage pass, the embeddings) run first as Dask tasks
    (`graphseek.knowledge.sharded.map_corpus`), and the graph is built on their results."""
    if sharding is not None:
        from graphseek.knowledge.sharded import map_corpus

        mapped = map_corpus(
            sharding,
            items,
            encoder,
            graph_options,
            graph=graph_dir is not None,
            batch_size=batch_size,
            show_progress=show_progress,
        )
        if graph_dir is not None:
            build_graph_into(items, graph_dir, show_progress, graph_options, mapped.graph)
        return mapped.vectors
    computed = None
    if graph_dir is not None:
        computed = graph_pass_vectors(
            encoder, build_graph_into(items, graph_dir, show_progress, graph_options)
        )
    return passage_vectors(encoder, items, computed, batch_size, show_progress)


class GraphAddition:
    """Adding `new` passages to a graph (`graphseek.knowledge.graph.add_passages`), then their
    vectors: the graph update's passage pass (contextual alignment) when it ran and the
    encoder is MiniLM, else encoded (`vectors`). Both backends' `add_documents` use it."""

    def __init__(
        self,
        new: list[Passage],
        graph_options: Mapping[str, Any] | None,
        show_progress: bool,
    ) -> None:
        self.new = new
        self.options = dict(graph_options or {})
        self.show_progress = show_progress
        self.from_graph: Rows | None = None  # the pass's vectors (in a temporary file)

    def __call__(self, graph_dir: Path, out_dir: Path | None = None) -> None:
        """Add the passages to the graph in `graph_dir`, written to `out_dir` (a new
        directory) or in place."""
        from graphseek.knowledge.graph.build import add_passages_with_vectors
        from graphseek.knowledge.graph.settings import graph_arguments

        added = add_passages_with_vectors(
            graph_dir,
            self.new,
            out_dir=out_dir,
            **graph_arguments(self.options, self.show_progress, update=True),
        )
        self.from_graph = added.passage_vectors

    def vectors(self, encoder: TextEncoder, batch_size: int) -> np.ndarray:
        computed = graph_pass_vectors(encoder, self.from_graph)
        rows = passage_vectors(encoder, self.new, computed, batch_size, self.show_progress)
        return np.asarray(rows, dtype=np.float32)  # the new passages' only: read whole


def delete_from_graph(
    graph_dir: Path, drop: set[str], show_progress: bool, out_dir: Path | None = None
) -> None:
    """Remove passages `drop` from the graph in `graph_dir`, with what only they supported;
    written to `out_dir` (a new directory) or in place."""
    from graphseek.knowledge.graph import delete_passages
    from graphseek.knowledge.graph.settings import RunOptions

    delete_passages(graph_dir, drop, run=RunOptions(show_progress=show_progress), out_dir=out_dir)


def check_passages(items: list[Any]) -> None:
    """What `PassageSpool.of` checks, for a list: passages, at least one, ids unique."""
    if not items:
        raise CorpusError(EMPTY_CORPUS)
    seen: set[str] = set()
    for i, item in enumerate(items):
        p = check_passage(item, i)
        if p.id in seen:
            raise duplicate_id(p.id, i)
        seen.add(p.id)


def resolve_embedder(embedder: str | TextEncoder | None, dim: int | None = None) -> TextEncoder:
    """An encoder from a spec (`embedders.embedder_for`; None: the default) or an encoder
    object (returned as it is)."""
    if embedder is None or isinstance(embedder, str):
        return embedders.embedder_for(embedder, dim=dim)
    if not all(hasattr(embedder, a) for a in ("encode", "name", "dim")):
        raise TypeError(
            f"embedder must be a spec string or an encoder with name, dim and encode(), "
            f"got {type(embedder).__name__}"
        )
    return embedder


def check_graph_options(encoder: TextEncoder, options: Mapping[str, Any] | None) -> None:
    """Check a build's graph options before the corpus is read: options the build does not
    know (`graph_arguments`), and graph vectors in the passage embedder's space
    (``vectors="minilm"``) with an embedder other than the packaged MiniLM: the graph is
    embedded with MiniLM and queried with the passage embedder's query vector, so the two must
    be one model."""
    from graphseek.knowledge.graph.settings import graph_arguments

    settings = graph_arguments(options, False)["settings"]
    if embedders.is_default(encoder) or settings.vectors != "minilm":
        return
    raise ValueError(
        f"graph vectors 'minilm' share the passage embedder's space, which is "
        f"{encoder.name} here: use the graph's static vectors (the default) with this embedder"
    )


def build_graph_into(
    items: Sequence[Passage],
    directory: Path,
    show_progress: bool,
    options: Mapping[str, Any] | None,
    mapped: Any = None,
) -> Rows | None:
    """Build the graph of `items` into `directory`; returns the passage vectors its build
    computed (rows in the order of `items`, in a temporary file), or None when it computed
    none. `options`: the flat ``graph_options`` (`graph_arguments`). `mapped`: the results of
    its map stages computed elsewhere (`build_graph(..., mapped=...)`)."""
    from graphseek.knowledge.graph.build import build_graph_with_vectors
    from graphseek.knowledge.graph.settings import graph_arguments

    built = build_graph_with_vectors(
        items, directory, mapped=mapped, **graph_arguments(options, show_progress)
    )
    return built.passage_vectors


def manifest_record(
    items: Sequence[Passage],
    encoder: TextEncoder,
    source: str,
    seconds: float,
    **backend: Any,
) -> dict[str, Any]:
    """An index manifest: what every backend records (format, counts, embedder, fusion, a new
    revision), with the backend's own fields (`backend`: its stores)."""
    from graphseek.version import __version__

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "graphseek_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "source": source,
        "counts": {
            "passages": len(items),
            "titles": len({p.title for p in items}),
            "sources": len({p.source for p in items}),
        },
        "embedder": embedders.embedder_record(encoder),
        **backend,
        "fusion": {
            "method": "convex",
            "normalisation": "min-max",
            "weights": list(HYBRID_WEIGHTS),
            "depth": "max(4k, 20)",
        },
        "build_seconds": round(seconds, 3),
        "revision": uuid.uuid4().hex,
    }
