"""What a graph build takes: `GraphSettings`, what is built (saved in and read back from a
store's manifest), and `RunOptions`, how the build runs (never saved: the store is the same
whatever they are). `graph_arguments` turns the flat ``graph_options`` mapping of `Index.build`
and the command line into the two."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from graphseek.errors import IndexFormatError, InvalidRequestError
from graphseek.knowledge.graph.algorithms.contextual import ALIGNMENT_VECTORS
from graphseek.knowledge.graph.store import SQLiteGraphStore
from graphseek.knowledge.graph.store.sentences import SENTENCE_VECTOR_SOURCES

VECTOR_SPACES = ("minilm", "static")
"""How a graph embeds the strings it stores vectors of (entities, relations, hyperedge
sentences): ``"minilm"`` runs the packaged MiniLM on each; ``"static"`` averages token vectors
distilled from it (`graphseek.knowledge.static_embedder`), at a negligible cost per string.
Semantic merging embeds base entities with MiniLM in both: its neighbourhoods shape the graph,
and static vectors there lose recall."""


DEFAULT_TAU = {"contextual": 0.30, "records": 0.25}
"""Semantic merging's radius per kind of alignment vector. Contextual vectors of one name spread
more than its record strings' (the same base entities have far fewer pairs within a radius
contextually), so contextual alignment takes a wider one, chosen on the dev slices
(docs/performance.md gives the recall of both with the command that measures it)."""


OUTSIDE_WINDOW = ("names", "records")
"""What semantic merging does with a base entity that has no contextual vector
(`GraphSettings.outside_window`)."""


@dataclass(frozen=True)
class GraphSettings:
    """Construction parameters, saved in the manifest and reused by incremental updates."""

    tau: float | None = None
    """Cluster radius of semantic merging, as cosine distance (candidates: cosine >= 1 - tau);
    None takes the alignment's default, `DEFAULT_TAU` (the manifest records the value used)."""
    theta: int = 100
    """Phase 4: a name links to passages only if it occurs fewer than theta times in the corpus."""
    top_k_common: int = 1000
    """Phase 4: names that are one of the K most frequent corpus words never link."""
    cooccurrence: str = "sentence"
    """Offline Phase 3 co-occurrence scope: "sentence", "passage" or "none"."""
    max_neighbors: int = 30
    description_min: float = 0.2
    max_similar: int = 5
    max_cluster_size: int = 12
    min_hyperedge_entities: int = 1
    topic_keywords: int = 5
    embed_relations: bool = True
    seed: int = 0
    vectors: str = "static"
    """The space of the stored entity, relation and hyperedge vectors, one of `VECTOR_SPACES`
    (a query is encoded in the same space when it is compared with them). Static by default:
    a faster build with the same recall and answers on the dev slices (docs/performance.md);
    stores written before the setting existed are MiniLM."""
    alignment: str = "contextual"
    """How semantic merging embeds base entities, one of `ALIGNMENT_VECTORS`: contextual
    mention vectors from the passage pass (`graphseek.knowledge.graph.algorithms.contextual`; no
    second MiniLM pass), or each record string. Stores written before the setting existed (and
    builds given a custom `embed`, which has no token states) use record strings."""

    outside_window: str | None = None
    """With contextual alignment, a base entity none of whose mentions has a contextual vector:
    one of `OUTSIDE_WINDOW`. "names": it takes part in semantic merging through name
    candidates only (`name_pairs`, `variant_pairs`); "records": it gets its record string's
    MiniLM vector (a second encoder pass over those strings). None (the default) picks "names"
    for the offline extractor, whose mentions point at their words, so such an entity is one
    whose every mention lies past the encoder's 256-token window (embedding their records costs
    a second encoder pass for few merges, with no measurable change in the dev slices' recall);
    and "records" for other extractors, whose names (an LLM's) may not occur in the passage at all.
    The manifest records the value used; stores written before the setting existed use
    "records"."""

    sentences: str = "pooled"
    """Sentence nodes (`graphseek.knowledge.graph.store.sentences`), one of
    `SENTENCE_VECTOR_SOURCES`: vectors "pooled" from the passage pass (no second encoder pass;
    a sentence past the encoder's window is encoded), each sentence "encoded" by MiniLM, or
    "none" (no sentence layer; the `bridge` retriever then refuses the index). Stores written
    before the setting existed have none until rebuilt."""

    def __post_init__(self) -> None:
        if self.sentences not in SENTENCE_VECTOR_SOURCES:
            raise ValueError(
                f"unknown sentence vectors {self.sentences!r}; "
                f"choose {', '.join(SENTENCE_VECTOR_SOURCES)}"
            )
        if self.outside_window is not None and self.outside_window not in OUTSIDE_WINDOW:
            raise ValueError(
                f"unknown outside_window {self.outside_window!r}; "
                f"choose {' or '.join(OUTSIDE_WINDOW)}"
            )
        if self.vectors not in VECTOR_SPACES:
            raise ValueError(
                f"unknown graph vectors {self.vectors!r}; choose {' or '.join(VECTOR_SPACES)}"
            )
        if self.alignment not in ALIGNMENT_VECTORS:
            raise ValueError(
                f"unknown alignment vectors {self.alignment!r}; "
                f"choose {' or '.join(ALIGNMENT_VECTORS)}"
            )
        if self.tau is None:
            object.__setattr__(self, "tau", DEFAULT_TAU[self.alignment])

    @property
    def radius(self) -> float:
        """`tau`, resolved (never None after construction)."""
        assert self.tau is not None
        return self.tau


@dataclass(frozen=True)
class RunOptions:
    """How a build or an update runs: the resources it takes, not what it builds."""

    memory_budget: int | str | None = None
    """MB, or a size such as ``"4G"``; None: half the machine's memory. Chooses how much runs at
    once (extraction processes, encoder threads, the write's cache:
    `graphseek.knowledge.graph.memory`)."""
    max_concurrency: int = 8
    """Model calls at once (an LLM extractor, aligner or relation predictor)."""
    show_progress: bool = True
    """Progress bars on stderr."""


QUIET = RunOptions(show_progress=False)
"""The default run, without progress bars."""

MODELS = ("extractor", "llm", "coreferencer", "embed")
"""The ``graph_options`` keys that name a build's models, passed on as they are: `extractor`
(an `Extractor`, ``"offline"`` or ``"llm"``), `llm` (a chat model spec, a role mapping or a
model), `coreferencer`, `embed` (the encoder)."""

_SETTINGS = frozenset(f.name for f in fields(GraphSettings))
_RUN = frozenset(f.name for f in fields(RunOptions))


def graph_arguments(
    options: Mapping[str, Any] | None,
    show_progress: bool,
    *,
    update: bool = False,
) -> dict[str, Any]:
    """The flat ``graph_options`` of `Index.build` and `add_documents` as the keyword arguments
    of `build_graph` (`update` False) or `add_passages` (`update` True): `GraphSettings`'
    fields (or a whole ``settings``) into `settings`, `RunOptions`' fields into `run` (with
    `show_progress` unless they name it), the `MODELS` and an update's ``delta`` as they are.
    An update takes the store's settings, so its options name none. `InvalidRequestError`
    names the options it does not take."""
    given = dict(options or {})
    known = set(MODELS) | _RUN | ({"delta"} if update else _SETTINGS | {"settings"})
    unknown = sorted(set(given) - known)
    if unknown:
        plural = "s" if len(unknown) > 1 else ""
        raise InvalidRequestError(f"unknown graph option{plural}: {', '.join(unknown)}")
    run = RunOptions(**{"show_progress": show_progress, **_take(given, _RUN)})
    if update:
        return {**given, "run": run}
    chosen = _take(given, _SETTINGS)
    settings = given.pop("settings", None)
    if settings is not None and chosen:
        raise InvalidRequestError(
            f"graph options give both settings and its fields ({', '.join(sorted(chosen))})"
        )
    return {**given, "settings": settings or GraphSettings(**chosen), "run": run}


def _take(given: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """The entries of `given` named in `names`, removed from it."""
    return {k: given.pop(k) for k in sorted(given.keys() & names)}


def settings_of(store: SQLiteGraphStore) -> GraphSettings:
    raw = store.manifest.get("settings") or {}
    known = {k: v for k, v in raw.items() if k in GraphSettings.__dataclass_fields__}
    known.setdefault("vectors", "minilm")  # stores written before the settings existed
    known.setdefault("alignment", "records")
    known.setdefault("outside_window", "records")
    known.setdefault("sentences", "none")  # stores written before sentences were nodes
    try:
        return GraphSettings(**known)
    except (TypeError, ValueError) as exc:  # pragma: no cover - manifest edited by hand
        raise IndexFormatError(f"bad settings in {store.dir}/manifest.json: {exc}") from exc
