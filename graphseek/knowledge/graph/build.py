"""The graph build, stage by stage: `build_graph`, `add_passages`, `delete_passages`.

Passages are loaded and chunked before they reach a build (`graphseek.knowledge.loaders`,
`graphseek.knowledge.chunking`, `Index.build`). A build then runs the stages of
`graphseek.knowledge.graph.stages`, one module each, top to bottom in `build_graph`:

1. extract (coreference, then the extractor) -> an `Extraction` per passage;
2. the passage pass -> passage vectors for the index, mention vectors for alignment;
3. align (HiGra Phase 2: exact, then semantic merging) -> entities;
4. link (Phase 3, entity-entity; Phase 4, entity-passage) -> relations and passage links;
5. hyperedges and topics (G-RAGent), and the vectors of entities and relations;
6. write the store atomically (`graphseek.knowledge.graph.store`), then its sentence layer.

What is built is one `GraphSettings` (saved in the store's manifest); how a build runs (memory
budget, model calls at once, progress bars) is one `RunOptions`, which never changes the store.
A build's outputs are the store and the passage pass's vectors (`GraphBuild`, from
`build_graph_with_vectors`), which an index stores instead of encoding the passages again.
What the stages keep out of memory between them, and the memory budget, are
`graphseek.knowledge.graph.memory`'s: no stage holds more than it computes.

Incremental updates keep the raw extractions and the alignment cache in the store:
`add_passages` extracts only the new passages and aligns them against the existing base entities
(old decisions are reused, only new or changed entities are searched), `delete_passages` drops
passages with everything only they supported. Linking, hyperedges and topics are recomputed (they
depend on corpus-wide counts) with cached embeddings: stages 3-6 again (`assemble`). With the
offline decisions, the result is the graph a full rebuild of the same passages would give. A
delta add runs stages 1-2 here, then stages 3-6 onto the stored graph in the same order: each
stage module's variant for a stored graph (beside the build's, with why it differs), driven by
`graphseek.knowledge.graph.delta`, changing only what the new passages reach.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from graphseek.errors import CorpusError
from graphseek.knowledge.background import Background
from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.contextual import AheadPass, encode_passages
from graphseek.knowledge.graph.algorithms.hyper import import_topic_libraries
from graphseek.knowledge.graph.algorithms.vectors import (
    Embed,
    VectorCache,
    cache_from_store,
    string_embed,
)
from graphseek.knowledge.graph.extract.base import Coreferencer, Extractor
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.settings import (
    QUIET,
    GraphSettings,
    RunOptions,
    graph_arguments,
    settings_of,
)
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.stages.align import align
from graphseek.knowledge.graph.stages.embed import begin_entity_vectors, graph_vectors
from graphseek.knowledge.graph.stages.extract import extract, model_of, resolve_extractor
from graphseek.knowledge.graph.stages.link import link
from graphseek.knowledge.graph.stages.mapped import MappedJoin, MappedPassages, join_mapped
from graphseek.knowledge.graph.stages.passage_pass import (
    PassageVectors,
    new_passage_pass,
    passage_pass,
    pooled_sentences,
    with_new,
)
from graphseek.knowledge.graph.stages.topics import HyperedgeTopics
from graphseek.knowledge.graph.stages.write import (
    graph_data,
    stored_sentences,
    write,
    write_sentences,
)
from graphseek.knowledge.graph.store import GraphData, SQLiteGraphStore, check_target
from graphseek.knowledge.passages import Passage

__all__ = [
    "GraphBuild",
    "MappedJoin",
    "MappedPassages",
    "RunOptions",
    "add_passages",
    "add_passages_with_vectors",
    "assemble",
    "build_graph",
    "build_graph_with_vectors",
    "delete_passages",
    "graph_arguments",
    "join_mapped",
    "map_passages",
]


@dataclass
class GraphBuild:
    """What a build or an add gives: the store written, and the passage pass's vectors of the
    passages it encoded (rows in their order, in a temporary file: ``np.asarray`` reads them;
    None where the pass did not run), which an index stores instead of encoding the passages
    a second time."""

    store: SQLiteGraphStore
    passage_vectors: memory.SpilledArray | None


# -- the build ----------------------------------------------------------------------------------


def build_graph(
    passages: Iterable[Passage],
    out_dir: str | os.PathLike[str],
    *,
    settings: GraphSettings | None = None,
    run: RunOptions | None = None,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    embed: Embed | None = None,
    mapped: MappedPassages | None = None,
) -> SQLiteGraphStore:
    """Build the HiGra graph of `passages` into the directory `out_dir` (atomically); returns
    the opened store (`build_graph_with_vectors` also gives the passage pass's vectors).

    What is built is `settings` (`GraphSettings`, saved in the store's manifest); how the
    build runs is `run` (`RunOptions`: the memory budget, model calls at once, progress bars;
    the same store whatever they are). The models: `extractor`, an `Extractor`, ``"offline"``
    or ``"llm"`` (None: ``"llm"`` when `llm` resolves to a chat model, else ``"offline"``);
    `llm` (a spec, a role mapping or a chat model; roles ``"extractor"`` and ``"aligner"``)
    also decides semantic merges and predicts Phase 3 relations, offline without it; `embed`,
    the encoder (MiniLM by default; a custom one gives no contextual vectors, so alignment
    falls back to record strings). `graph_arguments` turns a flat ``graph_options`` mapping
    into these arguments.

    `mapped`: the map stages' results computed elsewhere (`map_passages` with the same
    settings, e.g. on Dask workers): extraction and the passage pass do not run here."""
    return build_graph_with_vectors(
        passages,
        out_dir,
        settings=settings,
        run=run,
        extractor=extractor,
        llm=llm,
        coreferencer=coreferencer,
        embed=embed,
        mapped=mapped,
    ).store


@memory.bounded
def build_graph_with_vectors(
    passages: Iterable[Passage],
    out_dir: str | os.PathLike[str],
    *,
    settings: GraphSettings | None = None,
    run: RunOptions | None = None,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    embed: Embed | None = None,
    mapped: MappedPassages | None = None,
) -> GraphBuild:
    """`build_graph`, giving the store and, with contextual alignment, the passage pass's
    vectors (rows in the order of `passages`: `GraphBuild`)."""
    run = run or RunOptions()
    started, peak_before = time.perf_counter(), memory.peak_mb()
    corpus = _checked(passages)
    if not corpus:
        raise CorpusError("cannot build a graph from an empty corpus (no passages given)")
    check_target(out_dir)
    memory.bound_process_heap()  # before workers fork and encoder threads start
    chosen = resolve_extractor(extractor, llm, run.show_progress, run.max_concurrency)
    plan = memory.plan_budget(
        len(corpus),
        chosen,
        run.memory_budget,
        own=not isinstance(extractor, Extractor),
        map_stages=mapped is None,
    )
    settings = _outside_window(settings or GraphSettings(), chosen)
    timings: dict[str, Any] = {}

    # 1. extraction (the passage pass's first batches run ahead while the extractor loads)
    first: AheadPass | None = None
    if mapped is not None:
        extractions = mapped.extracted(corpus, type(chosen).__name__, timings)
    else:
        extractions, embed, first = _extract(
            corpus, chosen, coreferencer, settings, embed, run.show_progress, timings
        )
    stage_run = Run.of(run, embed, model_of(llm, "aligner"), timings)

    # 2. the passage pass: vectors for the index, mention vectors for alignment
    prefetch = Background(import_topic_libraries)  # meanwhile
    pooled = pooled_sentences(settings)
    passes = mapped.passage_vectors_for(settings, pooled) if mapped is not None else None
    if passes is None:
        passes = passage_pass(
            corpus,
            extractions,
            settings,
            stage_run,
            sentences=pooled,
            ahead=first,
            threads=plan.threads,
        )
    prefetch.result()
    passage_vectors = passes.spilled_passages()
    settings = passes.settings

    # 3-5. align, link, hyperedges and topics
    data = assemble(
        corpus, extractions, settings, stage_run, VectorCache.fresh(settings, passes.mentions)
    )
    data.manifest["memory"] = plan.as_manifest()

    # 6. write
    store = write(data, out_dir, type(chosen).__name__, stage_run, started, plan.cache_kib)
    store = write_sentences(store, settings, passes.sentences, None)
    memory.check_peak(plan, peak_before)
    return GraphBuild(store, passage_vectors)


def assemble(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    run: Run,
    cache: VectorCache,
) -> GraphData:
    """Stages 3-5 over extracted passages: what the store write takes. `extractions` may be an
    `ExtractionSpool` (each stage reads what it needs). `cache`: the vectors known already (the
    passage pass's mention vectors; an update's stored vectors), given up as the stages they
    serve are done."""
    n = len(passages)
    strings = string_embed(settings, run.embed)  # the encoder of the graph's stored vectors

    # 3. alignment: mentions -> entities
    aligned = align(n, extractions, settings, run, cache)

    # what needs only the alignment begins now (on a thread, with static vectors)
    entity_vectors = begin_entity_vectors(aligned, strings, cache)
    topics = HyperedgeTopics.begin(extractions, aligned, settings, run, strings, cache)

    # 4. linking: entity-entity relations, entity-passage links
    links = link(passages, extractions, aligned, settings, run)

    # 5. hyperedges and topics, the vectors of entities and relations
    topics.cluster()
    graph = graph_vectors(
        entity_vectors, links.relations, aligned, settings, run, strings, cache, n
    )
    hyperedges = topics.finish(n)
    memory.after_graph_vectors(cache)
    return graph_data(passages, extractions, settings, aligned, links, graph, hyperedges, run)


def _checked(passages: Iterable[Passage]) -> Sequence[Passage]:
    """The passages of a build: a `PassageSpool` as it is (checked when made: ids unique),
    else a list of them, a passage given twice (the same id, title and text) kept once;
    `CorpusError` for two different passages with one id."""
    if isinstance(passages, memory.PassageSpool):
        return passages
    out: list[Passage] = []
    seen: dict[str, Passage] = {}
    for p in passages:
        if not isinstance(p, Passage):
            raise CorpusError(f"expected Passage objects, got {type(p).__name__}")
        previous = seen.get(p.id)
        if previous is not None:
            if previous.text != p.text or previous.title != p.title:
                raise CorpusError(f"two different passages share the id {p.id!r}")
            continue
        seen[p.id] = p
        out.append(p)
    return out


def _outside_window(settings: GraphSettings, extractor: Extractor) -> GraphSettings:
    """`settings` with `outside_window` chosen for `extractor` when it is not set: ``"names"``
    for the offline extractor (its mentions point at their words), ``"records"`` for others."""
    if settings.outside_window is not None:
        return settings
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    offline = isinstance(extractor, OfflineExtractor)
    return replace(settings, outside_window="names" if offline else "records")


def _extract(
    corpus: Sequence[Passage],
    extractor: Extractor,
    coreferencer: Coreferencer | None,
    settings: GraphSettings,
    embed: Embed | None,
    show_progress: bool,
    timings: dict[str, Any],
) -> tuple[memory.ExtractionSpool, Embed | None, AheadPass | None]:
    """Stage 1, with the passage pass's first batches run ahead while the extractor loads its
    model (`RunAhead`, for the default embedder): the extractions, the embedder and the batches
    run ahead."""
    ahead = memory.RunAhead.start(extractor, settings, embed, corpus, show_progress)
    try:
        extractions = extract(corpus, extractor, coreferencer, timings, ahead)
        if ahead is None:
            return extractions, embed, None
        started, first = ahead.job.result()
        return extractions, started, first
    except BaseException:  # Ctrl-C during extraction included: no ONNX run left at exit
        if ahead is not None:
            ahead.close()
        raise


def map_passages(
    passages: Sequence[Passage],
    *,
    settings: GraphSettings | None = None,
    run: RunOptions | None = None,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    embed: Embed | None = None,
    in_process: bool = False,
) -> MappedPassages:
    """Stages 1-2 of `build_graph` over `passages` (one shard): extraction, then, with
    contextual alignment and the default embedder, the passage pass. Takes `build_graph`'s
    arguments (`run`'s memory budget and progress bars are the driver's). `in_process`: the
    offline extractor parses in this process (a Dask worker is a daemon process, which may not
    start its own workers; the result is the same)."""
    memory.bound_process_heap()
    items = list(passages)
    settings = settings or GraphSettings()
    chosen = resolve_extractor(extractor, llm, False, (run or RunOptions()).max_concurrency)
    if in_process:
        from graphseek.knowledge.graph.extract.offline import OfflineExtractor

        if isinstance(chosen, OfflineExtractor):
            chosen.n_process = 1
    timings: dict[str, Any] = {}
    extractions = extract(items, chosen, coreferencer, timings)
    contextual = settings.alignment == "contextual"
    # plain lists and dicts go back to the driver (the spool files are this process's)
    if not contextual or embed is not None:
        return MappedPassages(list(extractions), timings=timings)
    from graphseek.knowledge.embedder import get_embedder

    with timed(timings, "embed_passages", len(items)) as recorded:
        pooled = pooled_sentences(settings)
        vectors, spooled = encode_passages(get_embedder(), items, extractions, sentences=pooled)
        recorded["mentions"] = len(spooled)
    return MappedPassages(list(extractions), vectors.load(), dict(spooled), timings, pooled)


# -- updates ------------------------------------------------------------------------------------


def add_passages(
    store_dir: str | os.PathLike[str],
    passages: Iterable[Passage],
    *,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    embed: Embed | None = None,
    run: RunOptions | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    delta: bool = False,
) -> SQLiteGraphStore:
    """Add passages to a store: only passages whose id is new are extracted, then aligned
    against the existing entities; the settings are the store's (`run`: how the update runs,
    as a build's). The result is written to `out_dir` (a new directory; the store is left as
    it was) or, by default, in place. Returns the store written (`add_passages_with_vectors`
    also gives the new passages' vectors from the passage pass).

    By default the graph is re-assembled from every stored extraction: the store a rebuild of
    all the passages gives. With `delta`, only what the new passages reach changes
    (`graphseek.knowledge.graph.delta`): much faster on a large store, equal in retrieval but
    not byte for byte a rebuild (merges are decided offline; no `llm` aligner)."""
    return add_passages_with_vectors(
        store_dir,
        passages,
        extractor=extractor,
        llm=llm,
        coreferencer=coreferencer,
        embed=embed,
        run=run,
        out_dir=out_dir,
        delta=delta,
    ).store


def add_passages_with_vectors(
    store_dir: str | os.PathLike[str],
    passages: Iterable[Passage],
    *,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    embed: Embed | None = None,
    run: RunOptions | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    delta: bool = False,
) -> GraphBuild:
    """`add_passages`, giving the store written and, with contextual alignment, the new
    passages' vectors from their passage pass (rows in their order: `GraphBuild`)."""
    started = time.perf_counter()
    with SQLiteGraphStore.open(store_dir) as store:
        known = set(store.passage_ids())
        recorded = str(store.manifest.get("extractor", ""))
        settings = settings_of(store)
    new = [p for p in _checked(passages) if p.id not in known]
    if not new:
        return GraphBuild(_unchanged(store_dir, out_dir), None)
    if extractor is None and llm is None and recorded not in ("", "OfflineExtractor"):
        raise ValueError(
            f"the store was built with {recorded}; pass that extractor (or llm=...) to add passages"
        )
    if delta and model_of(llm, "aligner") is not None:
        raise ValueError(
            "a delta add decides merges offline; add with delta=False to align with an LLM"
        )
    run = run or RunOptions()
    chosen = resolve_extractor(extractor, llm, run.show_progress, run.max_concurrency)
    name = recorded or type(chosen).__name__
    stage_run = Run.of(run, embed)

    # 1. extraction of the new passages
    extracted = extract(new, chosen, coreferencer, stage_run.timings)
    # 2. their passage pass, with the store's settings
    reuse = stored_sentences(store_dir)  # a store without sentences stays so
    pooled = pooled_sentences(settings) if reuse is not None else None
    vectors = PassageVectors(settings, None, {}, pooled)
    if settings.alignment == "contextual":
        vectors = new_passage_pass(new, extracted, settings, stage_run, sentences=pooled)
    passage_vectors = vectors.spilled_passages()
    if delta:  # 3-6 where the new passages reach the stored graph
        from graphseek.knowledge.graph.delta import delta_add

        written = delta_add(
            store_dir,
            new,
            extracted,
            vectors.mentions,
            settings,
            embed=stage_run.embed,
            extractor_name=name,
            timings=stage_run.timings,
            started=started,
            out_dir=out_dir,
        )
        if reuse is not None:
            written = write_sentences(written, settings, pooled, reuse)
        return GraphBuild(written, passage_vectors)

    def change(
        old: list[Passage], old_x: Iterable[Extraction]
    ) -> tuple[list[Passage], Iterable[Extraction]]:
        return old + new, itertools.chain(old_x, extracted)

    # 3-6 over every passage, the stored vectors reused
    stage_run.model = model_of(llm, "aligner")
    written = _update(
        store_dir, change, stage_run, started, name=name, new=vectors, out_dir=out_dir
    )
    return GraphBuild(written, passage_vectors)


def delete_passages(
    store_dir: str | os.PathLike[str],
    passage_ids: Iterable[str],
    *,
    llm: Any = None,
    embed: Embed | None = None,
    run: RunOptions = QUIET,
    out_dir: str | os.PathLike[str] | None = None,
) -> SQLiteGraphStore:
    """Remove passages, and every entity, relation and hyperedge only they supported.
    Unknown ids are ignored. Written to `out_dir` (a new directory) or, by default, in place.
    Returns the store written. `run`: how it runs (no progress bars by default)."""
    started = time.perf_counter()
    drop = set(passage_ids)

    def change(
        old: list[Passage], old_x: Iterable[Extraction]
    ) -> tuple[list[Passage], Iterable[Extraction]]:
        return [p for p in old if p.id not in drop], (x for x in old_x if x.passage_id not in drop)

    return _update(
        store_dir, change, Run.of(run, embed, model_of(llm, "aligner")), started, out_dir=out_dir
    )


@memory.bounded
def _update(
    store_dir: str | os.PathLike[str],
    change: Callable[
        [list[Passage], Iterable[Extraction]], tuple[list[Passage], Iterable[Extraction]]
    ],
    run: Run,
    started: float,
    *,
    name: str | None = None,
    new: PassageVectors | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> SQLiteGraphStore:
    """Stages 3-6 again over a store's passages and extractions after `change`, into `out_dir`
    (default: in place), with the stored vectors and the `new` passages' mention vectors."""
    passages, extractions, settings, cache, name = _changed(store_dir, change, name)
    if new is not None and new.mentions:
        cache.mentions = with_new(cache.mentions, new.mentions)
    reuse = stored_sentences(store_dir)
    pooled = new.sentences if new is not None else None
    if reuse is not None and pooled is None:
        pooled = pooled_sentences(settings)
    data = assemble(passages, extractions, settings, run, cache)
    target = Path(store_dir if out_dir is None else out_dir)
    written = write(data, target, name, run, started)
    if reuse is None:  # a store without sentences stays so (see `stored_sentences`)
        return written
    return write_sentences(written, settings, pooled, reuse)


def _changed(
    store_dir: str | os.PathLike[str],
    change: Callable[
        [list[Passage], Iterable[Extraction]], tuple[list[Passage], Iterable[Extraction]]
    ],
    name: str | None,
) -> tuple[list[Passage], memory.ExtractionSpool, GraphSettings, VectorCache, str]:
    """A store's passages and extractions after `change` (the extractions go from the
    database to a spool as they are read), its settings, its vectors, and the extractor's
    name (`name`, else the store's). The store and what it read are closed on return."""
    with SQLiteGraphStore.open(store_dir) as store:
        settings = settings_of(store)
        cache = cache_from_store(store, settings)
        passages, changed = change(store.passages(), store.extractions())
        extractions = memory.ExtractionSpool.of(changed)  # on disk until a stage reads them
        return passages, extractions, settings, cache, name or store.manifest.get("extractor", "")


def _unchanged(
    store_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None
) -> SQLiteGraphStore:
    """The store, opened where an update with nothing to do leaves it (`out_dir` gets a copy)."""
    if out_dir is None:
        return SQLiteGraphStore.open(store_dir)
    shutil.copytree(store_dir, check_target(out_dir))
    return SQLiteGraphStore.open(out_dir)
