"""Building and updating a HiGra graph store: `build_graph`, `add_passages`, `delete_passages`.

A build runs the four HiGra phases (§3) plus G-RAGent's hyperedge layer:

1. coreference (optional) and extraction -> mentions, raw relations, n-ary facts;
2. alignment (exact + semantic merging) -> entities with provenance;
3. entity-entity linking (extracted relations; co-occurrence and similarity edges offline, or
   LLM-predicted relations inside clusters);
4. entity-passage linking (mentions, plus the Aho-Corasick matcher with the theta / top-K rule);
5. hyperedges from facts, topics by k-means over their embeddings;

then writes the store atomically (see `graphseek.knowledge.graph.store`).

Incremental updates keep the raw extractions and the alignment cache in the store:
`add_passages` extracts only the new passages and aligns them against the existing base entities
(old decisions are reused, only new or changed entities are searched), `delete_passages` drops
passages with everything only they supported. Linking, hyperedges and topics are recomputed (they
depend on corpus-wide counts) with cached embeddings. With the offline decisions, the result is
the graph a full rebuild of the same passages would give.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from graphseek.errors import CorpusError
from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.assemble import assemble
from graphseek.knowledge.graph.base import Coreferencer, Extractor
from graphseek.knowledge.graph.budget import MemoryPlan, plan_memory
from graphseek.knowledge.graph.clock import Clock, peak_rss_mb, rate
from graphseek.knowledge.graph.contextual import AheadPass, MentionVectors, encode_passages
from graphseek.knowledge.graph.hyper import import_topic_libraries
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.run_ahead import RunAhead
from graphseek.knowledge.graph.sentence_write import write_sentence_layer
from graphseek.knowledge.graph.sentences import SENTENCES_JSON, PooledSentences, SentenceLayer
from graphseek.knowledge.graph.settings import GraphSettings, settings_of
from graphseek.knowledge.graph.spool import ExtractionSpool, PassageSpool, SpilledArray, id_digest
from graphseek.knowledge.graph.store import GraphData, SQLiteGraphStore, check_target, write_store
from graphseek.knowledge.graph.store_writer import CACHE_KIB
from graphseek.knowledge.graph.vectors import (
    Embed,
    VectorCache,
    cache_from_store,
    default_embed,
    span_encoder,
)
from graphseek.knowledge.heap import bound_heap
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar

log = logging.getLogger(__name__)

PassageRows = np.ndarray | SpilledArray
"""The passage pass's vectors as handed to ``on_passage_vectors``: the pass writes them to a
temporary file (`SpilledArray`; ``np.asarray`` reads them); a shard's come back as an array."""


def _check_passages(passages: Iterable[Passage]) -> Sequence[Passage]:
    """The passages of a build: a `PassageSpool` as it is (checked when made: ids unique),
    else a list of them, a passage given twice (the same id, title and text) kept once;
    `CorpusError` for two different passages with one id."""
    if isinstance(passages, PassageSpool):
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


def _resolve_extractor(
    extractor: Extractor | str | None, llm: Any, show_progress: bool, max_concurrency: int
) -> Extractor:
    if extractor is not None and not isinstance(extractor, str):
        if not isinstance(extractor, Extractor):
            raise TypeError(f"{type(extractor).__name__} has no extract(passages) method")
        return extractor
    kind = extractor or ("llm" if _model(llm, "extractor") is not None else "offline")
    if kind == "offline":
        from graphseek.knowledge.graph.offline import OfflineExtractor

        return OfflineExtractor(show_progress=show_progress)
    if kind == "llm":
        from graphseek.knowledge.graph.llm import LLMExtractor

        return LLMExtractor(llm, max_concurrency=max_concurrency, show_progress=show_progress)
    raise ValueError(f"unknown extractor {kind!r}: use 'offline', 'llm' or an Extractor")


def _memory_plan(
    passages: Sequence[Passage],
    extractor: Extractor,
    budget: int | str | None,
    *,
    own: bool,
    mapped: MappedPassages | None,
) -> MemoryPlan:
    """The settings of a build under `budget` (`plan_memory`), applied to the offline
    extractor when the build made it (`own`; a caller's keeps its processes); with `mapped`
    (the sharded build's driver) only the reduce stages run here. One warning when even the
    least memory is estimated over the budget."""
    from graphseek.knowledge.graph.offline import OfflineExtractor

    offline = extractor if isinstance(extractor, OfflineExtractor) else None
    forked = offline.processes_for(len(passages)) if offline is not None else 1
    plan = plan_memory(
        len(passages), budget, processes=forked, lower_processes=own, map_stages=mapped is None
    )
    if offline is not None and own and plan.processes < forked:
        offline.n_process = plan.processes
    if not plan.fits:
        log.warning(
            "a graph build of %d passages is estimated to need about %d MB, over the memory "
            "budget of %d MB; it runs with the least (%s) and may swap: see docs/scale.md",
            len(passages),
            plan.estimate_mb,
            plan.budget_mb,
            plan.describe(),
        )
    return plan


def _model(llm: Any, role: str) -> Any:
    from graphseek.knowledge.graph.llm import resolve_model

    return resolve_model(llm, role)


def _extract(
    passages: Sequence[Passage],
    extractor: Extractor,
    coreferencer: Coreferencer | None,
    timings: dict[str, Any],
    ahead: RunAhead | None = None,
) -> ExtractionSpool:
    """The extractions of `passages`, spooled to disk as the extractor makes them (one that
    streams, ``extract_to``) or once it returns them."""
    clock = Clock()
    if ahead is not None:
        ahead.load_model()
    inputs = passages if coreferencer is None else coreferencer.resolve(passages)
    if coreferencer is not None:
        clock.record(timings, "coreference", len(passages))
        clock = Clock()
    who = type(extractor).__name__
    spool = ExtractionSpool()
    stream = getattr(extractor, "extract_to", None)
    if inputs and coreferencer is None and callable(stream):
        stream(inputs, spool)
        _check_extractions(passages, spool, who)
    elif inputs:
        extractions = extractor.extract(inputs)
        _check_extractions(passages, extractions, who)
        if coreferencer is not None:
            # spans point into the resolved text, not the passage: drop those that may have moved
            for passage, resolved, extraction in zip(passages, inputs, extractions, strict=True):
                if resolved.text != passage.text:
                    for m in extraction.mentions:
                        m.start = m.end = -1
        spool.extend(extractions)
        del extractions
    clock.record(timings, "extract", len(passages), passages=len(passages))
    return spool


def _check_extractions(
    passages: Sequence[Passage], extractions: Sequence[Extraction], who: str
) -> None:
    """One extraction per passage, in the passages' order (`who` made them)."""
    if len(extractions) != len(passages):
        raise RuntimeError(
            f"{who} returned {len(extractions)} extractions for {len(passages)} passages"
        )
    if isinstance(extractions, ExtractionSpool):  # digests: no read of the spool
        digests = extractions.passage_digests
        for k, passage in enumerate(passages):
            if digests[k] != id_digest(passage.id):
                pid = extractions[k].passage_id
                raise RuntimeError(
                    f"{who} returned the extraction of {pid} for passage {passage.id}"
                )
        return
    for passage, x in zip(passages, extractions, strict=True):
        if x.passage_id != passage.id:
            raise RuntimeError(
                f"{who} returned the extraction of {x.passage_id} for passage {passage.id}"
            )


def _contextual(
    settings: GraphSettings,
    embed: Embed,
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    timings: dict[str, Any],
    show_progress: bool,
    ahead: AheadPass | None = None,
    threads: int | None = None,
    sentences: PooledSentences | None = None,
) -> tuple[GraphSettings, SpilledArray | None, Mapping[str, np.ndarray]]:
    """With contextual alignment, one pass of the passage encoder: the passage vectors and the
    mention vectors (at most `threads` encoder threads at once: `Embedder.bulk_threads`).
    Without a span encoder (a custom `embed`) the settings fall back to record strings, so
    the manifest says what was done."""
    if settings.alignment != "contextual":
        return settings, None, {}
    encoder = span_encoder(embed)
    if encoder is None:
        return replace(settings, alignment="records"), None, {}
    clock = Clock()
    limit = getattr(encoder, "bulk_threads", None)
    with limit(threads) if callable(limit) else contextlib.nullcontext():
        vectors, mentions = encode_passages(
            encoder,
            passages,
            extractions,
            show_progress=show_progress,
            ahead=ahead,
            sentences=sentences,
        )
    release = getattr(encoder, "release_memory", None)
    if callable(release):  # the pass's batch buffers, which no later stage needs
        release()
    clock.record(timings, "embed_passages", len(passages), mentions=len(mentions))
    return settings, vectors, mentions


def _new_passage_pass(
    settings: GraphSettings,
    embed: Embed,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    timings: dict[str, Any],
    show_progress: bool,
    on_passage_vectors: Callable[[PassageRows], None] | None,
    sentences: PooledSentences | None = None,
) -> Mapping[str, np.ndarray]:
    """An update's passage pass over the `new` passages of a store that aligns with contextual
    vectors: their mention vectors (their passage vectors go to `on_passage_vectors`; their
    sentences' to `sentences`). `ValueError` when `embed` cannot give contextual vectors."""
    used, vectors, mentions = _contextual(
        settings, embed, new, extracted, timings, show_progress, sentences=sentences
    )
    if used.alignment != "contextual":
        raise ValueError(
            "the store aligns entities with contextual vectors, which a custom `embed` "
            "cannot give; update it without `embed`"
        )
    if vectors is not None and on_passage_vectors is not None:
        on_passage_vectors(vectors)
    return mentions


def _with_new(
    stored: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray]
) -> Mapping[str, np.ndarray]:
    """An update's mention vectors: the store's, then the new passages' (a new row for an id
    replaces the stored one, as a dict's update would)."""
    if not stored:
        return new
    if isinstance(stored, MentionVectors):
        stored.update(new)
        return stored
    return {**stored, **new}


def _pooled(settings: GraphSettings) -> PooledSentences | None:
    """Where the passage pass pools sentence vectors, when the graph has pooled sentences."""
    return PooledSentences() if settings.sentences == "pooled" else None


def _with_sentences(
    store: SQLiteGraphStore,
    settings: GraphSettings,
    pooled: PooledSentences | None,
    reuse: Mapping[tuple[str, int, int], np.ndarray] | None,
) -> SQLiteGraphStore:
    """The store with its sentence layer written (`graphseek.knowledge.graph.sentences`), opened
    again (its manifest records the layer)."""
    if settings.sentences == "none" and not (store.dir / SENTENCES_JSON).exists():
        return store
    directory = store.dir
    store.close()
    write_sentence_layer(directory, source=settings.sentences, pooled=pooled, reuse=reuse)
    return SQLiteGraphStore.open(directory)


def _stored_sentences(
    store_dir: str | os.PathLike[str],
) -> dict[tuple[str, int, int], Any] | None:
    """The vectors of a store's sentences by passage and span (an update reuses them), or None
    for a store without a sentence layer: one written before sentences were nodes, or with
    ``sentences="none"``, or a PostgreSQL graph exported for an update (whose tables hold no
    sentences). An update keeps such a store without one: it never encodes every sentence of
    a store it only adds to."""
    layer = SentenceLayer.load(store_dir)
    return None if layer is None else layer.vectors_by_span()


def _finish(
    data: GraphData,
    out_dir: str | os.PathLike[str],
    extractor_name: str,
    timings: dict[str, Any],
    started: float,
    show_progress: bool = False,
    cache_kib: int = CACHE_KIB,
) -> SQLiteGraphStore:
    data.manifest["extractor"] = extractor_name
    total = time.perf_counter() - started
    timings["total_before_write"] = {
        "seconds": round(total, 3),
        "passages_per_s": rate(len(data.passages), total),
    }
    data.manifest["timings"] = timings
    with progress_bar("writing", 1, show_progress, unit="store") as bar:
        path = write_store(data, out_dir, cache_kib=cache_kib)
        bar.update(1)
    return SQLiteGraphStore.open(path)


_F = TypeVar("_F", bound=Callable[..., Any])


def _without_gc(fn: _F) -> _F:
    """Run `fn` with Python's automatic garbage collection off (as it was, after).

    A build makes millions of long-lived objects (extractions, records, models, ids); each full
    collection walks all of them, and one runs every time their number grows by a quarter:
    1.8 s of a 10 s `assemble` on 1,500 passages. They hold no reference cycles, so reference
    counting frees whatever the build drops; cyclic garbage, if any, waits for the next
    collection after it. (Forked extraction workers collect as usual: `offline._worker_start`.)
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper  # type: ignore[return-value]


@dataclass
class MappedPassages:
    """What a build computes passage by passage (its map stages), computed elsewhere: the
    extraction of each passage and, with contextual alignment, the passage pass's vectors
    (rows in the passages' order) and mention vectors (by mention id); None where the pass did
    not run. `map_passages` makes it for one shard of a corpus; shards in corpus order are
    joined by `join_mapped`, and `build_graph(..., mapped=...)` runs the rest of the build on
    it (`graphseek.knowledge.sharded` runs the shards on Dask workers)."""

    extractions: Sequence[Extraction]
    passage_vectors: np.ndarray | SpilledArray | None = None
    mentions: Mapping[str, np.ndarray] | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    sentences: PooledSentences | None = None
    """The sentence vectors the passage pass pooled (``GraphSettings.sentences="pooled"``)."""


def map_passages(
    passages: Sequence[Passage],
    *,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    alignment: str = GraphSettings.alignment,
    settings: GraphSettings | None = None,
    embed: Embed | None = None,
    max_concurrency: int = 8,
    in_process: bool = False,
    **_reduce_options: Any,
) -> MappedPassages:
    """The map stages of `build_graph` over `passages` (one shard): extraction, then, with
    contextual alignment and the default embedder, the passage pass. Takes `build_graph`'s
    options (those of the later stages are not used here). `in_process`: the offline
    extractor parses in this process (a Dask worker is a daemon process, which may not start
    its own workers; the result is the same)."""
    bound_heap()
    items = list(passages)
    chosen = _resolve_extractor(extractor, llm, False, max_concurrency)
    if in_process:
        from graphseek.knowledge.graph.offline import OfflineExtractor

        if isinstance(chosen, OfflineExtractor):
            chosen.n_process = 1
    timings: dict[str, Any] = {}
    extractions = _extract(items, chosen, coreferencer, timings)
    contextual = (settings.alignment if settings is not None else alignment) == "contextual"
    # plain lists and dicts go back to the driver (the spool files are this process's)
    if not contextual or embed is not None:
        return MappedPassages(list(extractions), timings=timings)
    from graphseek.knowledge.embedder import get_embedder

    clock = Clock()
    pooled = _pooled(settings or GraphSettings())
    vectors, spooled = encode_passages(get_embedder(), items, extractions, sentences=pooled)
    clock.record(timings, "embed_passages", len(items), mentions=len(spooled))
    return MappedPassages(list(extractions), vectors.load(), dict(spooled), timings, pooled)


class MappedJoin:
    """Shards' map results joined as they come, in corpus order (`add` them in that order):
    the extractions, passage vectors and mention vectors go to temporary files as each shard
    is added, as a single build's do, so the driver holds none of them. `result` is what
    `join_mapped` gives for the same shards."""

    def __init__(self) -> None:
        self.extractions = ExtractionSpool()
        self._vectors: SpilledArray | None = None
        self._mentions: MentionVectors | None = None
        self._without_pass = False
        self._sentences: PooledSentences | None = None

    def add(self, part: MappedPassages) -> None:
        self.extractions.extend(part.extractions)
        if part.sentences is not None:
            if self._sentences is None:
                self._sentences = PooledSentences()
            self._sentences.update(part.sentences)
        if part.passage_vectors is None or self._without_pass:
            self._without_pass = True  # a shard without the pass: none kept
            self._vectors = self._mentions = None
            return
        rows = np.asarray(part.passage_vectors, dtype=np.float32)
        if self._vectors is None or self._mentions is None:
            self._vectors = SpilledArray.zeros(0, rows.shape[1])
            self._mentions = MentionVectors(rows.shape[1])
        self._vectors.append(rows)
        self._mentions.update(part.mentions or {})

    def result(self) -> MappedPassages:
        if self._vectors is None or self._mentions is None:
            return MappedPassages(self.extractions, sentences=self._sentences)
        return MappedPassages(
            self.extractions, self._vectors, self._mentions, sentences=self._sentences
        )


def join_mapped(parts: Sequence[MappedPassages]) -> MappedPassages:
    """The shards' results as one, in the order given (the corpus order of the shards)
    (`MappedJoin`)."""
    joined = MappedJoin()
    for part in parts:
        joined.add(part)
    return joined.result()


def _take_mapped(
    items: Sequence[Passage], mapped: MappedPassages, chosen: Extractor, timings: dict[str, Any]
) -> Sequence[Extraction]:
    """The extractions of a build whose map stages ran elsewhere, checked against `items`
    (spooled to disk unless they are)."""
    _check_extractions(items, mapped.extractions, f"the map stages ({type(chosen).__name__})")
    timings.update(mapped.timings)
    if isinstance(mapped.extractions, ExtractionSpool):
        return mapped.extractions
    return ExtractionSpool.of(mapped.extractions)


# -- public API ---------------------------------------------------------------------------------


@_without_gc
def build_graph(
    passages: Iterable[Passage],
    out_dir: str | os.PathLike[str],
    *,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    tau: float | None = None,
    theta: int = GraphSettings.theta,
    top_k_common: int = GraphSettings.top_k_common,
    cooccurrence: str = GraphSettings.cooccurrence,
    vectors: str = GraphSettings.vectors,
    alignment: str = GraphSettings.alignment,
    outside_window: str | None = GraphSettings.outside_window,
    settings: GraphSettings | None = None,
    embed: Embed | None = None,
    max_concurrency: int = 8,
    show_progress: bool = True,
    on_passage_vectors: Callable[[PassageRows], None] | None = None,
    mapped: MappedPassages | None = None,
    memory_budget: int | str | None = None,
) -> SQLiteGraphStore:
    """Build the HiGra graph of `passages` into the directory `out_dir` (atomically).

    `extractor`: an `Extractor`, ``"offline"`` or ``"llm"``; None picks ``"llm"`` when `llm`
    resolves to a chat model, else ``"offline"``. `llm` (a spec, a role mapping or a chat model;
    roles ``"extractor"`` and ``"aligner"``) also drives semantic merging and Phase 3 linking;
    without it those run offline. `tau`, `theta`, `top_k_common`, `cooccurrence`, `vectors`,
    `alignment`, `outside_window`: see `GraphSettings` (a full `settings` object overrides
    them). With contextual alignment the build encodes the passages (after extraction) and
    hands their vectors, rows in the order of `passages`, to `on_passage_vectors` (a
    `PassageRows`: in a temporary file, `SpilledArray`; ``np.asarray(rows)`` reads them into
    an array): an index stores them instead of encoding twice. `mapped`: the map stages'
    results computed elsewhere (`map_passages` with the same options, e.g. on Dask workers):
    extraction and the passage pass are not run here. `memory_budget` (MB, or a size such as
    ``"4G"``; None: half the machine's memory) chooses how many extraction processes and
    encoder threads run at once and the write's page cache (`graphseek.knowledge.graph.budget`; the same store
    whatever it is), and is recorded with the estimated peak in the manifest. The C library's
    `malloc` is set to keep one heap and map large blocks on their own for the rest of the
    process (`graphseek.knowledge.heap.bound_heap`; ``GRAPHSEEK_KEEP_MALLOC=1`` leaves it
    alone). Returns the opened store.
    """
    started = time.perf_counter()
    peak_before = peak_rss_mb()
    items = _check_passages(passages)
    if not items:
        raise CorpusError("cannot build a graph from an empty corpus (no passages given)")
    check_target(out_dir)
    bound_heap()  # before the workers fork and the pass's threads start: they inherit it
    if settings is None:
        settings = GraphSettings(
            tau=tau,
            theta=theta,
            top_k_common=top_k_common,
            cooccurrence=cooccurrence,
            vectors=vectors,
            alignment=alignment,
            outside_window=outside_window,
        )
    timings: dict[str, Any] = {}
    chosen = _resolve_extractor(extractor, llm, show_progress, max_concurrency)
    plan = _memory_plan(
        items, chosen, memory_budget, own=not isinstance(extractor, Extractor), mapped=mapped
    )
    if settings.outside_window is None:
        from graphseek.knowledge.graph.offline import OfflineExtractor

        offline = isinstance(chosen, OfflineExtractor)
        settings = replace(settings, outside_window="names" if offline else "records")
    first: AheadPass | None = None
    if mapped is not None:
        extractions = _take_mapped(items, mapped, chosen, timings)
    else:
        ahead = RunAhead.start(chosen, settings, embed, items, show_progress)
        try:
            extractions = _extract(items, chosen, coreferencer, timings, ahead)
            if ahead is not None:
                embed, first = ahead.job.result()
        except BaseException:  # Ctrl-C during extraction included: no ONNX run left at exit
            if ahead is not None:
                ahead.close()
            raise
    embed = embed or default_embed(show_progress)
    pooled = _pooled(settings)
    prefetch = Background(import_topic_libraries)  # during the passage pass
    if mapped is not None and mapped.mentions is not None and settings.alignment == "contextual":
        passage_vectors, mentions = mapped.passage_vectors, mapped.mentions
        if pooled is not None and mapped.sentences is not None:
            pooled = mapped.sentences  # pooled by the shards' passes
    else:
        settings, passage_vectors, mentions = _contextual(
            settings,
            embed,
            items,
            extractions,
            timings,
            show_progress,
            first,
            plan.threads,
            sentences=pooled,
        )
    prefetch.result()
    if passage_vectors is not None and on_passage_vectors is not None:
        on_passage_vectors(passage_vectors)
    del passage_vectors  # handed on: not held through the stages below
    cache = VectorCache.fresh(settings, mentions)
    data = assemble(
        items,
        extractions,
        settings,
        embed=embed,
        model=_model(llm, "aligner"),
        cache=cache,
        max_concurrency=max_concurrency,
        show_progress=show_progress,
        timings=timings,
    )
    data.manifest["memory"] = plan.as_manifest()
    store = _finish(
        data, out_dir, type(chosen).__name__, timings, started, show_progress, plan.cache_kib
    )
    store = _with_sentences(store, settings, pooled, None)
    peak = peak_rss_mb()  # the process's: said only when the build raised it
    if peak is not None and peak > plan.budget_mb and peak > (peak_before or 0):
        log.warning(
            "the graph build peaked at %d MB, over its memory budget of %d MB (estimated: %d "
            "MB); docs/scale.md says what grows with the corpus",
            peak,
            plan.budget_mb,
            plan.estimate_mb,
        )
    return store


@_without_gc
def _update(
    store_dir: str | os.PathLike[str],
    change: Callable[
        [list[Passage], Iterable[Extraction]], tuple[list[Passage], Iterable[Extraction]]
    ],
    *,
    extractor_name: str | None,
    llm: Any,
    embed: Embed | None,
    max_concurrency: int,
    show_progress: bool,
    timings: dict[str, Any],
    started: float,
    new: Sequence[Passage] = (),
    extracted: Sequence[Extraction] = (),
    on_passage_vectors: Callable[[PassageRows], None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
) -> SQLiteGraphStore:
    """Re-assemble a store after `change`, into `out_dir` (default: in place); `new`
    passages (extracted as `extracted`) get their contextual mention vectors from one
    encoder pass, whose passage vectors go to `on_passage_vectors`."""
    store = SQLiteGraphStore.open(store_dir)
    try:
        settings = settings_of(store)
        cache = cache_from_store(store, settings)
        # the stored extractions go from the database to a spool as they are read
        passages, changed = change(store.passages(), store.extractions())
        extractions = ExtractionSpool.of(changed)  # on disk until a stage reads them
        del changed
        name = extractor_name or store.manifest.get("extractor", "")
    finally:
        store.close()
    del store  # and what it read (its caches): the update holds none of it
    reuse = _stored_sentences(store_dir)
    embed = embed or default_embed(show_progress)
    pooled = _pooled(settings) if reuse is not None else None
    if new and settings.alignment == "contextual":
        mentions = _new_passage_pass(
            settings, embed, new, extracted, timings, show_progress, on_passage_vectors, pooled
        )
        cache.mentions = _with_new(cache.mentions, mentions)
    data = assemble(
        passages,
        extractions,
        settings,
        embed=embed,
        model=_model(llm, "aligner"),
        cache=cache,
        max_concurrency=max_concurrency,
        show_progress=show_progress,
        timings=timings,
    )
    target = Path(store_dir if out_dir is None else out_dir)
    written = _finish(data, target, name, timings, started, show_progress)
    if reuse is None:  # a store without sentences stays so (see `_stored_sentences`)
        return written
    return _with_sentences(written, settings, pooled, reuse)


def _unchanged(
    store_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None
) -> SQLiteGraphStore:
    """The store, opened where an update with nothing to do leaves it (`out_dir` gets a copy)."""
    if out_dir is None:
        return SQLiteGraphStore.open(store_dir)
    shutil.copytree(store_dir, check_target(out_dir))
    return SQLiteGraphStore.open(out_dir)


def add_passages(
    store_dir: str | os.PathLike[str],
    passages: Iterable[Passage],
    *,
    extractor: Extractor | str | None = None,
    llm: Any = None,
    coreferencer: Coreferencer | None = None,
    embed: Embed | None = None,
    max_concurrency: int = 8,
    show_progress: bool = True,
    on_passage_vectors: Callable[[PassageRows], None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    delta: bool = False,
) -> SQLiteGraphStore:
    """Add passages to a store: only passages whose id is new are extracted, then aligned
    against the existing entities; the settings are the store's. With contextual alignment
    the new passages' vectors (rows in their order) go to `on_passage_vectors`. The result is
    written to `out_dir` (a new directory; the store is left as it was) or, by default, in
    place. Returns the store written.

    By default the graph is re-assembled from every stored extraction: the store a rebuild of
    all the passages gives. With `delta`, only what the new passages reach changes
    (`graphseek.knowledge.graph.delta`): much faster on a large store, equal in retrieval but
    not byte for byte a rebuild (merges are decided offline; no `llm` aligner)."""
    started = time.perf_counter()
    store = SQLiteGraphStore.open(store_dir)
    known = set(store.passage_ids())
    recorded = str(store.manifest.get("extractor", ""))
    store.close()
    del store  # its cache holds every passage
    new = [p for p in _check_passages(passages) if p.id not in known]
    if not new:
        return _unchanged(store_dir, out_dir)
    if extractor is None and llm is None and recorded not in ("", "OfflineExtractor"):
        raise ValueError(
            f"the store was built with {recorded}; pass that extractor (or llm=...) to add passages"
        )
    if delta and _model(llm, "aligner") is not None:
        raise ValueError(
            "a delta add decides merges offline; add with delta=False to align with an LLM"
        )
    chosen = _resolve_extractor(extractor, llm, show_progress, max_concurrency)
    timings: dict[str, Any] = {}
    extracted = _extract(new, chosen, coreferencer, timings)
    if delta:
        return _delta(
            store_dir,
            new,
            extracted,
            embed=embed,
            extractor_name=recorded or type(chosen).__name__,
            show_progress=show_progress,
            timings=timings,
            started=started,
            on_passage_vectors=on_passage_vectors,
            out_dir=out_dir,
        )

    def change(
        old: list[Passage], old_x: Iterable[Extraction]
    ) -> tuple[list[Passage], Iterable[Extraction]]:
        return old + new, itertools.chain(old_x, extracted)

    return _update(
        store_dir,
        change,
        extractor_name=recorded or type(chosen).__name__,
        llm=llm,
        embed=embed,
        max_concurrency=max_concurrency,
        show_progress=show_progress,
        timings=timings,
        started=started,
        new=new,
        extracted=extracted,
        on_passage_vectors=on_passage_vectors,
        out_dir=out_dir,
    )


def _delta(
    store_dir: str | os.PathLike[str],
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    *,
    embed: Embed | None,
    extractor_name: str,
    show_progress: bool,
    timings: dict[str, Any],
    started: float,
    on_passage_vectors: Callable[[PassageRows], None] | None,
    out_dir: str | os.PathLike[str] | None,
) -> SQLiteGraphStore:
    """`add_passages` with `delta`: the new passages' contextual pass, then
    `graphseek.knowledge.graph.delta.delta_add`."""
    from graphseek.knowledge.graph.delta import delta_add

    with SQLiteGraphStore.open(store_dir) as store:
        settings = settings_of(store)
    embed = embed or default_embed(show_progress)
    mentions: Mapping[str, np.ndarray] = {}
    reuse = _stored_sentences(store_dir)
    pooled = _pooled(settings) if reuse is not None else None
    if settings.alignment == "contextual":
        mentions = _new_passage_pass(
            settings, embed, new, extracted, timings, show_progress, on_passage_vectors, pooled
        )
    written = delta_add(
        store_dir,
        new,
        extracted,
        mentions,
        settings,
        embed=embed,
        extractor_name=extractor_name,
        timings=timings,
        started=started,
        out_dir=out_dir,
    )
    if reuse is None:  # a store without sentences stays so (see `_stored_sentences`)
        return written
    return _with_sentences(written, settings, pooled, reuse)


def delete_passages(
    store_dir: str | os.PathLike[str],
    passage_ids: Iterable[str],
    *,
    llm: Any = None,
    embed: Embed | None = None,
    max_concurrency: int = 8,
    show_progress: bool = False,
    out_dir: str | os.PathLike[str] | None = None,
) -> SQLiteGraphStore:
    """Remove passages, and every entity, relation and hyperedge only they supported.
    Unknown ids are ignored. Written to `out_dir` (a new directory) or, by default, in place.
    Returns the store written."""
    started = time.perf_counter()
    drop = set(passage_ids)

    def change(
        old: list[Passage], old_x: Iterable[Extraction]
    ) -> tuple[list[Passage], Iterable[Extraction]]:
        return [p for p in old if p.id not in drop], (x for x in old_x if x.passage_id not in drop)

    return _update(
        store_dir,
        change,
        extractor_name=None,
        llm=llm,
        embed=embed,
        max_concurrency=max_concurrency,
        show_progress=show_progress,
        timings={},
        started=started,
        out_dir=out_dir,
    )
