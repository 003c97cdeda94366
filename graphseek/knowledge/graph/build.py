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

import functools
import gc
import logging
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from scipy.sparse import csgraph
from scipy.sparse import csr_matrix as _csr

from graphseek.errors import CorpusError, IndexFormatError
from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.align import (
    GENERIC_TYPES,
    Aligner,
    AlignmentCache,
    cached_encode,
)
from graphseek.knowledge.graph.base import Coreferencer, Extractor
from graphseek.knowledge.graph.contextual import (
    AHEAD_MIN,
    ALIGNMENT_VECTORS,
    AheadPass,
    SpanEncoder,
    begin_passages,
    encode_passages,
)
from graphseek.knowledge.graph.hyper import (
    assign_topics,
    build_hyperedges,
    cluster_topics,
    import_topic_libraries,
)
from graphseek.knowledge.graph.link import (
    cooccurrence_edges,
    cooccurring_pairs,
    match_passages,
    predicted_edges,
    relation_id,
    similarity_edges,
)
from graphseek.knowledge.graph.models import Entity, Extraction, HyperEdge, Relation
from graphseek.knowledge.graph.store import (
    GraphData,
    SQLiteGraphStore,
    build_matrices,
    check_target,
    write_store,
)
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], np.ndarray]


VECTOR_SPACES = ("minilm", "static")
"""How a graph embeds the strings it stores vectors of (entities, relations, hyperedge
sentences): ``"minilm"`` runs the packaged MiniLM on each; ``"static"`` averages token vectors
distilled from it (`graphseek.knowledge.static_embedder`), at a negligible cost per string.
Semantic merging embeds base entities with MiniLM in both (its neighbourhoods shape the graph:
static vectors there cost 1-2 points of HiGra Recall@5 on the 2Wiki dev questions)."""


DEFAULT_TAU = {"contextual": 0.30, "records": 0.25}
"""Semantic merging's radius per kind of alignment vector. Contextual vectors of one name spread
more than its record strings' (the same 12K 2Wiki base entities have 2,679 pairs within cosine
distance 0.25 contextually against 18,802 as records); 0.30 was the best of 0.25 / 0.30 / 0.35
on the dev slices (2Wiki 0-199, MuSiQue train 0-199, docqa): HiGra and progressive Recall@5 and
@10 no lower than with record strings at 0.25 on any of them (README, "Knowledge graph")."""


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
    a third less build time at 1,000 passages, with the same recall and answers on the dev
    slices (README, "Command line"); stores written before the setting existed are MiniLM."""
    alignment: str = "contextual"
    """How semantic merging embeds base entities, one of `ALIGNMENT_VECTORS`: contextual
    mention vectors from the passage pass (`graphseek.knowledge.graph.contextual`; no second
    MiniLM pass), or each record string. Stores written before the setting existed (and builds
    given a custom `embed`, which has no token states) use record strings."""

    outside_window: str | None = None
    """With contextual alignment, a base entity none of whose mentions has a contextual vector:
    one of `OUTSIDE_WINDOW`. "names": it takes part in semantic merging through name
    candidates only (`name_pairs`, `variant_pairs`); "records": it gets its record string's
    MiniLM vector (a second encoder pass over those strings). None (the default) picks "names"
    for the offline extractor, whose mentions point at their words, so such an entity is one
    whose every mention lies past the encoder's 256-token window (10% of the base entities of
    1,500 2Wiki passages; embedding their records cost about 10% of the passages' tokens, for
    55 of 1,571 merges, and the dev slices' recall moved by 0.3 point at most without them); and
    "records" for other extractors, whose names (an LLM's) may not occur in the passage at all.
    The manifest records the value used; stores written before the setting existed use
    "records"."""

    def __post_init__(self) -> None:
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


# -- embedding texts (stored vectors are looked up by these, so they must stay stable) ----------


def entity_text(entity: Entity) -> str:
    parts = [entity.name]
    if entity.aliases:
        parts.append(", ".join(entity.aliases[:8]))
    parts.append(", ".join(entity.types))
    return "; ".join(parts)


def relation_text(relation: Relation, names: dict[str, str]) -> str:
    return f"{names.get(relation.source, relation.source)} {relation.label} " + names.get(
        relation.target, relation.target
    )


def hyperedge_text(edge: HyperEdge) -> str:
    return edge.relation


STAGE_BAR_MIN = 256
"""An embedding call over at least this many texts shows its stage's bar (smaller ones finish
before a bar would be read)."""


class _StageEmbed:
    """The process embedder; a call over many texts shows a bar named after the current
    stage (`label`, set by `assemble`: "aligning entities", "topics", ...)."""

    def __init__(self, show_progress: bool) -> None:
        from graphseek.knowledge.embedder import get_embedder

        self.embedder = get_embedder()
        self.show_progress = show_progress
        self.label = "embedding"

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        from graphseek.knowledge.dense import encode_texts

        return encode_texts(
            self.embedder,
            list(texts),
            batch_size=64,
            show_progress=self.show_progress and len(texts) >= STAGE_BAR_MIN,
            desc=self.label,
            unit="text",
        )


def string_embed(settings: GraphSettings, embed: Embed) -> Embed:
    """The encoder of the strings whose vectors the graph stores: `embed` (MiniLM, or what a
    caller passed) for ``vectors="minilm"``, the static encoder for ``"static"``."""
    if settings.vectors == "static":
        from graphseek.knowledge.static_embedder import get_static_encoder

        return get_static_encoder()
    return embed


def default_embed(show_progress: bool = False) -> Embed:
    return _StageEmbed(show_progress)


def _span_encoder(embed: Embed) -> SpanEncoder | None:
    """The embedder behind the default string embedding (it gives token states), or None for
    a custom `embed` function."""
    return embed.embedder if isinstance(embed, _StageEmbed) else None


def _stage(embed: Embed, label: str) -> None:
    """Name the progress bar of `embed`'s next calls (only for the default embedder)."""
    if isinstance(embed, _StageEmbed):
        embed.label = label


# -- helpers ------------------------------------------------------------------------------------


def _check_passages(passages: Iterable[Passage]) -> list[Passage]:
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


def _model(llm: Any, role: str) -> Any:
    from graphseek.knowledge.graph.llm import resolve_model

    return resolve_model(llm, role)


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else float("inf")


def cpu_time() -> float:
    """CPU seconds of this process and of its reaped children (the extraction workers)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no worker processes are forked there
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class _Clock:
    """Wall and CPU time of one phase (CPU time shows the cost on a busy host; it is the
    process's, so it includes background threads). `pause` / `resume` leave out a stretch."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = cpu_time()
        self.paused_wall = self.paused_cpu = 0.0
        self.paused_at: tuple[float, float] | None = None

    def pause(self) -> None:
        self.paused_at = (time.perf_counter(), cpu_time())

    def resume(self) -> None:
        if self.paused_at is not None:
            self.paused_wall += time.perf_counter() - self.paused_at[0]
            self.paused_cpu += cpu_time() - self.paused_at[1]
            self.paused_at = None

    def record(self, timings: dict[str, Any], name: str, n: int, **extra: Any) -> None:
        self.resume()
        wall = time.perf_counter() - self.wall - self.paused_wall
        cpu = cpu_time() - self.cpu - self.paused_cpu
        timings[name] = {
            "seconds": round(wall, 3),
            "cpu_seconds": round(cpu, 3),
            "passages_per_s": _rate(n, wall),
            **extra,
        }


def _components(n: int, edges: Iterable[tuple[int, int]]) -> int:
    if n == 0:
        return 0
    rows, cols = [], []
    for a, b in edges:
        rows.append(a)
        cols.append(b)
    matrix = _csr((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n, n))
    count, _ = csgraph.connected_components(matrix, directed=False)
    return int(count)


@dataclass
class _Cache:
    """Vectors already computed, by text: `vectors` in the graph's space (`GraphSettings.
    vectors`), `alignment.vectors` in MiniLM's (base entities, descriptions); one dict when
    both are MiniLM. `mentions`: contextual mention vectors by mention id."""

    vectors: dict[str, np.ndarray]
    alignment: AlignmentCache
    mentions: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def fresh(
        cls, settings: GraphSettings, mentions: dict[str, np.ndarray] | None = None
    ) -> _Cache:
        """An empty cache for a build (with the mention vectors of its passage pass)."""
        cache = cls(vectors={}, alignment=AlignmentCache(), mentions=mentions or {})
        if settings.vectors == "minilm":
            cache.alignment.vectors = cache.vectors
        return cache


def _cache_from_store(store: SQLiteGraphStore, settings: GraphSettings) -> _Cache:
    aligned: dict[str, np.ndarray] = {}
    base_ids, base_texts, base_vectors, pairs = store.alignment_state()
    if settings.alignment == "records":  # contextual base vectors are not a text's vector
        for text, vector in zip(base_texts, base_vectors, strict=False):
            aligned[text] = vector
    vectors = aligned if settings.vectors == "minilm" else {}
    entity_vectors, _ = store.entity_embeddings()
    for entity, vector in zip(store.entities(), entity_vectors, strict=False):
        vectors.setdefault(entity_text(entity), vector)
    names = {e.id: e.name for e in store.entities()}
    relation_vectors, relation_ids = store.relation_embeddings()
    by_id = {r.id: r for r in store.relations()}
    for rid, vector in zip(relation_ids, relation_vectors, strict=False):
        if rid in by_id:
            vectors.setdefault(relation_text(by_id[rid], names), vector)
    hyper_vectors, _ = store.hyperedge_embeddings()
    for edge, vector in zip(store.hyperedges(), hyper_vectors, strict=False):
        vectors.setdefault(hyperedge_text(edge), vector)
    mentions: dict[str, np.ndarray] = {}
    if settings.alignment == "contextual":
        mention_vectors, mention_ids = store.mention_embeddings()
        mentions = dict(zip(mention_ids, mention_vectors, strict=True))
    return _Cache(
        vectors=vectors,
        alignment=AlignmentCache(vectors=aligned, base_ids=set(base_ids), pairs=pairs),
        mentions=mentions,
    )


# -- assembling ---------------------------------------------------------------------------------


def assemble(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    *,
    embed: Embed,
    model: Any = None,
    cache: _Cache | None = None,
    max_concurrency: int = 8,
    show_progress: bool = False,
    timings: dict[str, Any] | None = None,
) -> GraphData:
    """Phases 2-5 over extracted passages (see the module docstring)."""
    timings = timings if timings is not None else {}
    if cache is None:
        cache = _Cache.fresh(settings)
    strings = string_embed(settings, embed)
    n_passages = len(passages)

    # Phase 2: alignment
    clock = _Clock()
    _stage(embed, "aligning entities")
    mentions = [m for x in extractions for m in x.mentions]
    aligner = Aligner(
        embed=embed,
        tau=settings.radius,
        max_neighbors=settings.max_neighbors,
        description_min=settings.description_min,
        model=model,
        max_cluster_size=settings.max_cluster_size,
        max_concurrency=max_concurrency,
        show_progress=show_progress,
        embed_outside=settings.outside_window != "names",
    )
    contextual = settings.alignment == "contextual"
    # record strings show MiniLM's "aligning entities" bar; contextual vectors need their own
    with progress_bar("aligning entities", 1, show_progress and contextual, unit="step") as step:
        aligned = aligner.align(mentions, cache.alignment, cache.mentions if contextual else None)
        step.update(1)
    entities = aligned.entities
    by_id = {e.id: e for e in entities}
    mention_entity = aligned.mention_entity
    clock.record(timings, "align", n_passages)

    # The static encoder (tokenizer, sums) and k-means mostly run with the GIL released, so
    # they go to a background thread while linking's Python runs here (static vectors only: a
    # caller's `embed` need not be thread-safe). Stage seconds are this thread's wall time.
    threaded = bool(getattr(strings, "thread_safe", False))
    entity_job = Background(
        lambda: cached_encode([entity_text(e) for e in entities], strings, cache.vectors),
        thread=threaded,
    )
    # hyperedges need only the alignment: their vectors and k-means start now, so k-means
    # overlaps linking too (the topics stage below waits for them and adds the keywords)
    topic_clock = _Clock()
    hyperedges = build_hyperedges(
        extractions, mention_entity, min_entities=settings.min_hyperedge_entities
    )

    def hyperedge_topics() -> tuple[np.ndarray, np.ndarray]:
        vectors = cached_encode([hyperedge_text(h) for h in hyperedges], strings, cache.vectors)
        return vectors, cluster_topics(vectors, settings.seed)

    topic_job = Background(hyperedge_topics) if threaded else None
    topic_clock.pause()

    # Phase 3: entity-entity linking
    clock = _Clock()
    _stage(embed, "linking")
    linking = progress_bar("linking", 2, show_progress, unit="step")
    support: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for x in extractions:
        for r in x.relations:
            s, t = mention_entity.get(r.source), mention_entity.get(r.target)
            label = " ".join(r.label.lower().split())
            if s is None or t is None or s == t or not label:
                continue
            support[(s, label, t)][r.passage_id] += 1
    relations = [
        Relation(
            id=relation_id(s, label, t),
            source=s,
            label=label,
            target=t,
            passage_ids=sorted(pids),
            weight=float(sum(pids.values())),
            kind="extracted",
        )
        for (s, label, t), pids in sorted(support.items())
    ]
    named = {e.id for e in entities if not set(e.types) <= GENERIC_TYPES}
    relations += cooccurrence_edges(
        extractions,
        {mid: eid for mid, eid in mention_entity.items() if eid in named},
        scope=settings.cooccurrence,
    )
    base_entity = dict(zip(aligned.base_ids, aligned.base_entity, strict=True))
    llm_usage: dict[str, Any] = {}
    if aligned.llm_usage is not None:
        llm_usage["align"] = aligned.llm_usage.usage.model_dump()
    if model is None:
        relations += similarity_edges(
            aligned.pairs, base_entity, by_id, max_per_entity=settings.max_similar
        )
    else:
        predicted, meter = predicted_edges(
            aligned.pairs,
            base_entity,
            by_id,
            model,
            max_cluster_size=settings.max_cluster_size,
            max_concurrency=max_concurrency,
            show_progress=show_progress,
        )
        known = {r.id for r in relations}
        relations += [r for r in predicted if r.id not in known]
        llm_usage["link"] = meter.usage.model_dump()
    relations.sort(key=lambda r: r.id)
    clock.record(timings, "link_entities", n_passages)
    linking.update(1)

    # Phase 4: entity-passage linking
    clock = _Clock()
    links: dict[str, dict[str, str]] = defaultdict(dict)
    for e in entities:
        for pid in e.passage_ids:
            links[e.id][pid] = "mention"
    matched, report = match_passages(
        entities, passages, theta=settings.theta, top_k_common=settings.top_k_common
    )
    for eid, pids in matched.items():
        for pid in pids:
            links[eid].setdefault(pid, "match")
    clock.record(timings, "link_passages", n_passages)
    linking.update(1)
    linking.close()

    # hyperedges and topics (vectors and clusters begun above with static vectors, here with
    # MiniLM's; keywords below)
    topic_clock.resume()
    _stage(embed, "topics")
    # MiniLM shows its own "topics" bar over the hyperedges it embeds; static vectors do not
    steps = progress_bar(
        "topics", 2, show_progress and not isinstance(strings, _StageEmbed), unit="step"
    )
    if topic_job is None:
        topic_job = Background(hyperedge_topics, thread=False)
    topic_clock.pause()

    # embeddings of entities (begun above) and relations
    clock = _Clock()
    _stage(embed, "embedding graph")
    names = {e.id: e.name for e in entities}
    embedded = (
        [r for r in relations if r.kind in ("extracted", "predicted")]
        if settings.embed_relations
        else []
    )
    relation_vectors = cached_encode(
        [relation_text(r, names) for r in embedded], strings, cache.vectors
    )
    entity_vectors = entity_job.result()
    clock.record(timings, "embed", n_passages)

    topic_clock.resume()
    hyper_vectors, labels = topic_job.result()
    steps.update(1)
    hyperedges, topics = assign_topics(
        hyperedges,
        hyper_vectors,
        seed=settings.seed,
        keywords=settings.topic_keywords,
        labels=labels,
    )
    steps.update(1)
    steps.close()
    topic_clock.record(timings, "hyperedges_topics", n_passages)

    # statistics for the manifest: components before and after alignment
    raw_nodes = dict(zip(sorted(m.id for m in mentions), aligned.raw_nodes, strict=True))
    raw_edges: list[tuple[int, int]] = []
    for x in extractions:
        for raw in x.relations:
            if raw.source in raw_nodes and raw.target in raw_nodes:
                raw_edges.append((raw_nodes[raw.source], raw_nodes[raw.target]))
    typed = {m.id for m in mentions if not set(m.types) <= GENERIC_TYPES}
    raw_mention_entity = {mid: str(node) for mid, node in raw_nodes.items() if mid in typed}
    for a, b in cooccurring_pairs(extractions, raw_mention_entity, scope=settings.cooccurrence):
        raw_edges.append((int(a), int(b)))
    adjacency, _, _ = build_matrices([e.id for e in entities], [], relations, {})
    counts = {
        "passages": n_passages,
        "entities": len(entities),
        "relations": len(relations),
        "relations_by_kind": dict(Counter(r.kind for r in relations)),
        "hyperedges": len(hyperedges),
        "topics": len(topics),
        "entity_passage_links": sum(len(v) for v in links.values()),
        "match_links": sum(1 for v in links.values() for k in v.values() if k == "match"),
    }
    alignment: dict[str, float] = dict(aligned.counts)
    before, after = alignment["before_alignment"], alignment["after_semantic"]
    alignment["reduction_pct"] = round(100.0 * (before - after) / before, 2) if before else 0.0
    components = {
        "before_alignment": _components(int(alignment["before_alignment"]), raw_edges),
        "after_alignment": int(csgraph.connected_components(adjacency, directed=False)[0])
        if len(entities)
        else 0,
    }
    manifest = {
        "settings": asdict(settings),
        "counts": counts,
        "alignment": alignment,
        "components": components,
        "passage_matcher": report.model_dump(),
        "timings": timings,
        "llm_usage": llm_usage,
    }
    return GraphData(
        passages=list(passages),
        extractions=list(extractions),
        entities=entities,
        relations=relations,
        entity_passages=dict(links),
        hyperedges=hyperedges,
        topics=topics,
        entity_vectors=entity_vectors,
        relation_vector_ids=[r.id for r in embedded],
        relation_vectors=relation_vectors,
        hyperedge_vectors=hyper_vectors,
        base_ids=aligned.base_ids,
        base_texts=aligned.base_texts,
        base_entity=aligned.base_entity,
        base_vectors=aligned.base_vectors,
        pairs=aligned.pairs,
        mention_entity=mention_entity,
        mention_base=aligned.mention_base,
        mention_vectors={m.id: cache.mentions[m.id] for m in mentions if m.id in cache.mentions}
        if contextual
        else {},
        manifest=manifest,
    )


class _RunAhead:
    """The passage pass's first batches, run on a thread while the extractor loads its model
    (`prepare`: importing and loading spaCy, single-threaded, while the other core idles).
    The batches are the pass's own, so the vectors are the same whoever runs them."""

    def __init__(
        self, prepare: Callable[[], None], passages: Sequence[Passage], show_progress: bool
    ) -> None:
        self.prepare = prepare
        self.stop = threading.Event()

        def start() -> tuple[_StageEmbed, AheadPass | None]:
            embed = _StageEmbed(show_progress)
            first = begin_passages(embed.embedder, passages)
            if first is not None:
                first.run_ahead(self.stop)
            return embed, first

        self.job = Background(start)

    @classmethod
    def start(
        cls,
        extractor: Extractor,
        settings: GraphSettings,
        embed: Embed | None,
        passages: Sequence[Passage],
        show_progress: bool,
    ) -> _RunAhead | None:
        """Started for the default embedder with contextual alignment, an extractor that can
        load its model up front (`prepare`), and enough passages to fork extraction workers;
        else None."""
        prepare = getattr(extractor, "prepare", None)
        if (
            embed is not None
            or settings.alignment != "contextual"
            or not callable(prepare)
            or len(passages) < AHEAD_MIN
        ):
            return None
        return cls(prepare, passages, show_progress)

    def load_model(self) -> None:
        """The extractor's `prepare`, then stop (checked between batches: the one running
        ends beside the extraction workers)."""
        try:
            self.prepare()
        finally:
            self.stop.set()

    def close(self) -> None:
        """Stop and wait for the thread (a build that failed or was interrupted). It runs ONNX
        Runtime, whose C++ threads abort the process ("terminate called without an active
        exception", SIGABRT instead of exit 130) if it exits while a session is being made or
        run: the model load or the batch under way ends first."""
        self.stop.set()
        while True:
            try:
                self.job.wait()
                return
            except KeyboardInterrupt:  # a second Ctrl-C: still wait, the same abort awaits
                continue


def _extract(
    passages: Sequence[Passage],
    extractor: Extractor,
    coreferencer: Coreferencer | None,
    timings: dict[str, Any],
    ahead: _RunAhead | None = None,
) -> list[Extraction]:
    clock = _Clock()
    if ahead is not None:
        ahead.load_model()
    inputs = list(passages) if coreferencer is None else coreferencer.resolve(passages)
    if coreferencer is not None:
        clock.record(timings, "coreference", len(passages))
        clock = _Clock()
    extractions = extractor.extract(inputs) if inputs else []
    if len(extractions) != len(passages):
        raise RuntimeError(
            f"{type(extractor).__name__} returned {len(extractions)} extractions "
            f"for {len(passages)} passages"
        )
    for passage, extraction in zip(passages, extractions, strict=True):
        if extraction.passage_id != passage.id:
            raise RuntimeError(
                f"{type(extractor).__name__} returned the extraction of {extraction.passage_id} "
                f"for passage {passage.id}"
            )
    if coreferencer is not None:
        # spans point into the resolved text, not the passage: drop those that may have moved
        for passage, resolved, extraction in zip(passages, inputs, extractions, strict=True):
            if resolved.text != passage.text:
                for m in extraction.mentions:
                    m.start = m.end = -1
    clock.record(timings, "extract", len(passages), passages=len(passages))
    return extractions


def _contextual(
    settings: GraphSettings,
    embed: Embed,
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    timings: dict[str, Any],
    show_progress: bool,
    ahead: AheadPass | None = None,
) -> tuple[GraphSettings, np.ndarray | None, dict[str, np.ndarray]]:
    """With contextual alignment, one pass of the passage encoder: the passage vectors and the
    mention vectors. Without a span encoder (a custom `embed`) the settings fall back to
    record strings, so the manifest says what was done."""
    if settings.alignment != "contextual":
        return settings, None, {}
    encoder = _span_encoder(embed)
    if encoder is None:
        return replace(settings, alignment="records"), None, {}
    clock = _Clock()
    vectors, mentions = encode_passages(
        encoder, passages, extractions, show_progress=show_progress, ahead=ahead
    )
    clock.record(timings, "embed_passages", len(passages), mentions=len(mentions))
    return settings, vectors, mentions


def _finish(
    data: GraphData,
    out_dir: str | os.PathLike[str],
    extractor_name: str,
    timings: dict[str, Any],
    started: float,
    show_progress: bool = False,
) -> SQLiteGraphStore:
    data.manifest["extractor"] = extractor_name
    total = time.perf_counter() - started
    timings["total_before_write"] = {
        "seconds": round(total, 3),
        "passages_per_s": _rate(len(data.passages), total),
    }
    data.manifest["timings"] = timings
    with progress_bar("writing", 1, show_progress, unit="store") as bar:
        path = write_store(data, out_dir)
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
    on_passage_vectors: Callable[[np.ndarray], None] | None = None,
) -> SQLiteGraphStore:
    """Build the HiGra graph of `passages` into the directory `out_dir` (atomically).

    `extractor`: an `Extractor`, ``"offline"`` or ``"llm"``; None picks ``"llm"`` when `llm`
    resolves to a chat model, else ``"offline"``. `llm` (a spec, a role mapping or a chat model;
    roles ``"extractor"`` and ``"aligner"``) also drives semantic merging and Phase 3 linking;
    without it those run offline. `tau`, `theta`, `top_k_common`, `cooccurrence`, `vectors`,
    `alignment`, `outside_window`: see `GraphSettings` (a full `settings` object overrides
    them). With contextual alignment the build encodes the passages (after extraction) and
    hands their vectors, rows in the order of `passages`, to `on_passage_vectors`: an index
    stores them instead of encoding twice. Returns the opened store.
    """
    started = time.perf_counter()
    items = _check_passages(passages)
    if not items:
        raise CorpusError("cannot build a graph from an empty corpus (no passages given)")
    check_target(out_dir)
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
    if settings.outside_window is None:
        from graphseek.knowledge.graph.offline import OfflineExtractor

        offline = isinstance(chosen, OfflineExtractor)
        settings = replace(settings, outside_window="names" if offline else "records")
    ahead = _RunAhead.start(chosen, settings, embed, items, show_progress)
    first: AheadPass | None = None
    try:
        extractions = _extract(items, chosen, coreferencer, timings, ahead)
        if ahead is not None:
            embed, first = ahead.job.result()
    except BaseException:  # Ctrl-C during extraction included: no ONNX run left at exit
        if ahead is not None:
            ahead.close()
        raise
    embed = embed or default_embed(show_progress)
    prefetch = Background(import_topic_libraries)  # during the passage pass
    settings, passage_vectors, mentions = _contextual(
        settings, embed, items, extractions, timings, show_progress, first
    )
    prefetch.result()
    if passage_vectors is not None and on_passage_vectors is not None:
        on_passage_vectors(passage_vectors)
    cache = _Cache.fresh(settings, mentions)
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
    return _finish(data, out_dir, type(chosen).__name__, timings, started, show_progress)


def _settings_of(store: SQLiteGraphStore) -> GraphSettings:
    raw = store.manifest.get("settings") or {}
    known = {k: v for k, v in raw.items() if k in GraphSettings.__dataclass_fields__}
    known.setdefault("vectors", "minilm")  # stores written before the settings existed
    known.setdefault("alignment", "records")
    known.setdefault("outside_window", "records")
    try:
        return GraphSettings(**known)
    except (TypeError, ValueError) as exc:  # pragma: no cover - manifest edited by hand
        raise IndexFormatError(f"bad settings in {store.dir}/manifest.json: {exc}") from exc


@_without_gc
def _update(
    store_dir: str | os.PathLike[str],
    change: Callable[[list[Passage], list[Extraction]], tuple[list[Passage], list[Extraction]]],
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
    on_passage_vectors: Callable[[np.ndarray], None] | None = None,
) -> SQLiteGraphStore:
    """Re-assemble a store after `change`; `new` passages (extracted as `extracted`) get
    their contextual mention vectors from one encoder pass, whose passage vectors go to
    `on_passage_vectors`."""
    store = SQLiteGraphStore.open(store_dir)
    try:
        settings = _settings_of(store)
        cache = _cache_from_store(store, settings)
        passages, extractions = change(store.passages(), store.extractions())
        name = extractor_name or store.manifest.get("extractor", "")
    finally:
        store.close()
    embed = embed or default_embed(show_progress)
    if new and settings.alignment == "contextual":
        used, vectors, mentions = _contextual(
            settings, embed, new, extracted, timings, show_progress
        )
        if used.alignment != "contextual":
            raise ValueError(
                "the store aligns entities with contextual vectors, which a custom `embed` "
                "cannot give; update it without `embed`"
            )
        cache.mentions.update(mentions)
        if vectors is not None and on_passage_vectors is not None:
            on_passage_vectors(vectors)
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
    return _finish(data, Path(store_dir), name, timings, started, show_progress)


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
    on_passage_vectors: Callable[[np.ndarray], None] | None = None,
) -> SQLiteGraphStore:
    """Add passages to a store: only passages whose id is new are extracted, then aligned
    against the existing entities; the settings are the store's. With contextual alignment
    the new passages' vectors (rows in their order) go to `on_passage_vectors`. Returns the
    reopened store."""
    started = time.perf_counter()
    store = SQLiteGraphStore.open(store_dir)
    known = set(store.passage_ids())
    recorded = str(store.manifest.get("extractor", ""))
    store.close()
    new = [p for p in _check_passages(passages) if p.id not in known]
    if not new:
        return SQLiteGraphStore.open(store_dir)
    if extractor is None and llm is None and recorded not in ("", "OfflineExtractor"):
        raise ValueError(
            f"the store was built with {recorded}; pass that extractor (or llm=...) to add passages"
        )
    chosen = _resolve_extractor(extractor, llm, show_progress, max_concurrency)
    timings: dict[str, Any] = {}
    extracted = _extract(new, chosen, coreferencer, timings)

    def change(
        old: list[Passage], old_x: list[Extraction]
    ) -> tuple[list[Passage], list[Extraction]]:
        return old + new, old_x + extracted

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
    )


def delete_passages(
    store_dir: str | os.PathLike[str],
    passage_ids: Iterable[str],
    *,
    llm: Any = None,
    embed: Embed | None = None,
    max_concurrency: int = 8,
    show_progress: bool = False,
) -> SQLiteGraphStore:
    """Remove passages, and every entity, relation and hyperedge only they supported.
    Unknown ids are ignored. Returns the reopened store."""
    started = time.perf_counter()
    drop = set(passage_ids)

    def change(
        old: list[Passage], old_x: list[Extraction]
    ) -> tuple[list[Passage], list[Extraction]]:
        return [p for p in old if p.id not in drop], [x for x in old_x if x.passage_id not in drop]

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
    )
