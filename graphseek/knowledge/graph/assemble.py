"""Phases 2-5 of a graph build: extracted passages to the `GraphData` a store writes.

Alignment, entity-entity and entity-passage linking, hyperedges and topics, the stored vectors
and the manifest's counts (the phases: `graphseek.knowledge.graph.build`)."""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from scipy.sparse import csgraph

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.align import Aligner, cached_encode, spill_per_text
from graphseek.knowledge.graph.clock import Clock
from graphseek.knowledge.graph.contextual import MentionVectors
from graphseek.knowledge.graph.exact import components
from graphseek.knowledge.graph.hyper import assign_topics, build_hyperedges, cluster_topics
from graphseek.knowledge.graph.link import (
    COOCCURRENCE_MAX_GROUP,
    cooccurrence_edges,
    match_numbers,
    predicted_edges,
    relation_id,
    similar_relations,
)
from graphseek.knowledge.graph.mention_columns import MentionColumns
from graphseek.knowledge.graph.model_columns import EntityColumns
from graphseek.knowledge.graph.models import Extraction, HyperEdge, Relation, graph_record
from graphseek.knowledge.graph.passage_links import PassageLinks
from graphseek.knowledge.graph.records import GENERIC_TYPES
from graphseek.knowledge.graph.relation_columns import RelationBuilder
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.spool import SpilledArray
from graphseek.knowledge.graph.store import GraphData, build_matrices
from graphseek.knowledge.graph.text import clear_name_caches
from graphseek.knowledge.graph.vectors import (
    Embed,
    StageEmbed,
    VectorCache,
    entity_text,
    hyperedge_text,
    relation_text,
    set_stage,
    string_embed,
)
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar


def _raw_components(
    extractions: Iterable[Extraction], node_of: Mapping[str, int], n: int, scope: str
) -> int:
    """Connected components of the graph before alignment (a manifest statistic): one node per
    raw entity (`node_of`: each mention's), an edge per raw relation, and the co-occurrence
    edges that `cooccurring_pairs` would give over typed mentions' nodes. A co-occurring group
    is joined by a path over its members, not by every pair: the same components, with k - 1
    edges for k members instead of k (k - 1) / 2. One pass over `extractions`; the edges are
    kept as integer arrays."""
    rows, cols = array("q"), array("q")
    by_sentence = scope == "sentence"
    for x in extractions:
        for raw in x.relations:
            a, b = node_of.get(raw.source), node_of.get(raw.target)
            if a is not None and b is not None:
                rows.append(a)
                cols.append(b)
        if scope not in ("sentence", "passage"):
            continue
        groups: dict[int, set[int]] = {}
        for m in x.mentions:
            if (by_sentence and m.sentence < 0) or set(m.types) <= GENERIC_TYPES:
                continue
            node = node_of.get(m.id)
            if node is not None:
                groups.setdefault(m.sentence if by_sentence else 0, set()).add(node)
        for members in groups.values():
            if 2 <= len(members) <= COOCCURRENCE_MAX_GROUP:
                ordered = sorted(members)
                rows.extend(ordered[:-1])
                cols.extend(ordered[1:])
    return components(n, rows, cols)[0]


def _alignment_mentions(extractions: Iterable[Extraction]) -> MentionColumns:
    """Every mention, for alignment (one pass), as columns: a code per mention for each field
    and each distinct value once (`MentionColumns`). Read from a spool, every mention is a new
    object with its own strings, and alignment holds every mention to its end, so they are
    coded as they are read. The objects read are freed passage by passage; the mention id
    strings are kept."""
    return MentionColumns.of(m for x in extractions for m in x.mentions)


def _passage_links(
    entities: EntityColumns,
    passages: Sequence[Passage],
    matched: tuple[np.ndarray, np.ndarray],
) -> PassageLinks:
    """Phase 4's links: each entity to the passages it was extracted from (its mentions') and
    to those `matched` (entity and passage numbers, `match_numbers`)."""
    number = {p.id: k for k, p in enumerate(passages)}
    entity, passage = array("i"), array("i")
    for k in range(len(entities)):
        for pid in entities.items_of("passage_ids", k):
            entity.append(k)
            passage.append(number[pid])
    del number
    mentioned = (np.frombuffer(entity, dtype=np.int32), np.frombuffer(passage, dtype=np.int32))
    return PassageLinks.of(entities.ids, [p.id for p in passages], mentioned, matched)


def _extracted_relations(
    extractions: Iterable[Extraction], mention_entity: Mapping[str, str]
) -> list[Relation]:
    """The aligned graph's extracted relations: one per (source entity, normalised label,
    target entity), supported by the passages whose raw relations give it (one pass over
    `extractions`; the support counters are freed on return)."""
    support: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for x in extractions:
        for r in x.relations:
            s, t = mention_entity.get(r.source), mention_entity.get(r.target)
            label = " ".join(r.label.lower().split())
            if s is None or t is None or s == t or not label:
                continue
            support[(s, label, t)][r.passage_id] += 1
    return [
        graph_record(
            Relation,
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


def _for_write(
    texts: list[str], strings: Embed, cache: dict[str, np.ndarray]
) -> np.ndarray | SpilledArray:
    """The vectors of `texts` (the graph's entities or relations), which only the store write
    reads. A per-text encoder's (the static one) go to a file a chunk at a time as they are
    made (`spill_per_text`): `cache` is read but not written (its views would keep the array),
    and a text met again is encoded again, to the same vector: neither the whole array nor
    its wait for topics is held in memory. Another encoder's are cached and kept (a batch can
    change a vector's last bits, and a repeated text must keep the first one's)."""
    if not getattr(strings, "per_text", False):
        return cached_encode(texts, strings, cache)
    return spill_per_text(texts, strings, cache)


def _current(vectors: Mapping[str, np.ndarray], ids: Sequence[str]) -> Mapping[str, np.ndarray]:
    """The mention vectors of the mentions `ids`: `vectors` itself when it holds no others (a
    build's; a `MentionVectors` stays in its file), else those of `ids` only (an update's
    cache also holds the vectors of removed passages). Mention ids are unique, so counting the
    mentions found is the subset test."""
    if sum(1 for m in ids if m in vectors) == len(vectors):
        return vectors
    if isinstance(vectors, MentionVectors):
        return vectors.restrict(ids)
    return {m: vectors[m] for m in ids if m in vectors}


def assemble(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    *,
    embed: Embed,
    model: Any = None,
    cache: VectorCache | None = None,
    max_concurrency: int = 8,
    show_progress: bool = False,
    timings: dict[str, Any] | None = None,
) -> GraphData:
    """Phases 2-5 over extracted passages (see the module docstring). `extractions` may be an
    `ExtractionSpool` (each stage reads what it needs). `cache` is used up: its vectors are
    dropped once the stages they serve are done, and the graph's vectors wait for the store
    write in temporary files (`SpilledArray`)."""
    timings = timings if timings is not None else {}
    if cache is None:
        cache = VectorCache.fresh(settings)
    strings = string_embed(settings, embed)
    n_passages = len(passages)

    # Phase 2: alignment
    clock = Clock()
    set_stage(embed, "aligning entities")
    mentions = _alignment_mentions(extractions)
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
    entities = aligned.entities  # columns: each `Entity` is made when read
    by_id = entities.by_id()
    mention_entity = aligned.mention_entity
    # what the later stages need of the mentions, taken before they are freed (the
    # extractions stay on disk: each stage below reads what it needs)
    mention_vectors = _current(cache.mentions, mentions.ids) if contextual else {}
    if isinstance(mention_vectors, MentionVectors):  # keyed by alignment's ids from now on
        mention_vectors.freeze(aligned.mention_entity.ids)
    node_of, aligned.raw_nodes = aligned.raw_nodes, None  # read once, below
    assert node_of is not None
    del mentions
    # only the store write reads the base vectors again (from alignment's temporary file),
    # and nothing the alignment cache
    base_vectors = aligned.base_vectors
    if cache.alignment.vectors is not cache.vectors:
        cache.alignment.vectors = {}
    cache.alignment.base_vectors = {}  # an update's stored rows
    components_before = _raw_components(
        extractions, node_of, aligned.counts["before_alignment"], settings.cooccurrence
    )
    del node_of
    clear_name_caches()  # names are compared no more: linking's objects take that memory
    clock.record(timings, "align", n_passages)

    # The static encoder (tokenizer, sums) and k-means mostly run with the GIL released, so
    # they go to a background thread while linking's Python runs here (static vectors only: a
    # caller's `embed` need not be thread-safe). Stage seconds are this thread's wall time.
    threaded = bool(getattr(strings, "thread_safe", False))
    entity_job = Background(
        lambda: _for_write([entity_text(e) for e in entities], strings, cache.vectors),
        thread=threaded,
    )
    # hyperedges need only the alignment: their vectors and k-means start now, so k-means
    # overlaps linking too (the topics stage below waits for them and adds the keywords)
    topic_clock = Clock()
    hyperedges: Sequence[HyperEdge] = build_hyperedges(
        extractions, mention_entity, min_entities=settings.min_hyperedge_entities
    )

    def hyperedge_topics() -> tuple[np.ndarray, np.ndarray]:
        vectors = cached_encode([hyperedge_text(h) for h in hyperedges], strings, cache.vectors)
        return vectors, cluster_topics(vectors, settings.seed)

    topic_job = Background(hyperedge_topics) if threaded else None
    topic_clock.pause()

    # Phase 3: entity-entity linking
    clock = Clock()
    set_stage(embed, "linking")
    linking = progress_bar("linking", 2, show_progress, unit="step")
    # relations as columns (`RelationColumns`), each part's objects freed once added
    building = RelationBuilder()
    building.add(_extracted_relations(extractions, mention_entity))
    named = {
        eid
        for k, eid in enumerate(entities.ids)
        if not set(entities.items_of("types", k)) <= GENERIC_TYPES
    }
    building.add(
        cooccurrence_edges(
            extractions, mention_entity.where(named.__contains__), scope=settings.cooccurrence
        )
    )
    del named
    base_entity = dict(zip(aligned.base_ids, aligned.base_entity, strict=True))
    llm_usage: dict[str, Any] = {}
    if aligned.llm_usage is not None:
        llm_usage["align"] = aligned.llm_usage.usage.model_dump()
    if model is None:
        building.add(
            similar_relations(
                aligned.pairs, base_entity, by_id, max_per_entity=settings.max_similar
            )
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
        known = set(building.ids)
        building.add(r for r in predicted if r.id not in known)
        del known
        llm_usage["link"] = meter.usage.model_dump()
    relations = building.finish()  # sorted by id
    del building
    clock.record(timings, "link_entities", n_passages)
    linking.update(1)

    # Phase 4: entity-passage linking
    clock = Clock()
    matched_entity, matched_passage, report = match_numbers(
        entities, passages, theta=settings.theta, top_k_common=settings.top_k_common
    )
    links = _passage_links(entities, passages, (matched_entity, matched_passage))
    del matched_entity, matched_passage
    clock.record(timings, "link_passages", n_passages)
    linking.update(1)
    linking.close()

    # hyperedges and topics (vectors and clusters begun above with static vectors, here with
    # MiniLM's; keywords below)
    topic_clock.resume()
    set_stage(embed, "topics")
    # MiniLM shows its own "topics" bar over the hyperedges it embeds; static vectors do not
    steps = progress_bar(
        "topics", 2, show_progress and not isinstance(strings, StageEmbed), unit="step"
    )
    if topic_job is None:
        topic_job = Background(hyperedge_topics, thread=False)
    topic_clock.pause()

    # embeddings of entities (begun above) and relations
    clock = Clock()
    set_stage(embed, "embedding graph")
    names = dict(zip(entities.ids, entities.column("name"), strict=True))
    embedded = (
        [r for r in relations if r.kind in ("extracted", "predicted")]
        if settings.embed_relations
        else []
    )
    relation_vectors = _for_write(
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
    # the graph's vectors wait for the write in files (the cache held views of them)
    cache.vectors = {}
    entity_file, relation_file, hyper_file = (
        a if isinstance(a, SpilledArray) else SpilledArray(a)
        for a in (entity_vectors, relation_vectors, hyper_vectors)
    )
    del entity_vectors, relation_vectors, hyper_vectors, entity_job, topic_job
    topic_clock.record(timings, "hyperedges_topics", n_passages)

    # statistics for the manifest: components after alignment (before: see `_raw_components`)
    adjacency, _, _ = build_matrices(entities.ids, [], relations, None)
    counts = {
        "passages": n_passages,
        "entities": len(entities),
        "relations": len(relations),
        "relations_by_kind": relations.kind_counts(),
        "hyperedges": len(hyperedges),
        "topics": len(topics),
        "entity_passage_links": len(links),
        "match_links": links.matches,
    }
    alignment: dict[str, float] = dict(aligned.counts)
    before, after = alignment["before_alignment"], alignment["after_semantic"]
    alignment["reduction_pct"] = round(100.0 * (before - after) / before, 2) if before else 0.0
    components = {
        "before_alignment": components_before,
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
        passages=passages,
        extractions=extractions,
        entities=entities,
        relations=relations,
        entity_passages=links,
        hyperedges=hyperedges,
        topics=topics,
        entity_vectors=entity_file,
        relation_vector_ids=[r.id for r in embedded],
        relation_vectors=relation_file,
        hyperedge_vectors=hyper_file,
        base_ids=aligned.base_ids,
        base_texts=aligned.base_texts,
        base_entity=aligned.base_entity,
        base_vectors=base_vectors,
        pairs=aligned.pairs,
        mention_entity=mention_entity,
        mention_base=aligned.mention_base,
        mention_vectors=mention_vectors,
        manifest=manifest,
        common_words=report.common_words,
    )
