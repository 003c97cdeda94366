"""Stage 4, linking: entity-entity relations (HiGra Phase 3: the extracted relations, then
co-occurrence and similarity edges offline, or the aligner model's predicted relations inside
clusters) and entity-passage links (Phase 4: each entity's mentions, plus the Aho-Corasick
matcher under the theta / top-K-common-words rule) (`graphseek.knowledge.graph.link`)."""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.align import AlignmentResult
from graphseek.knowledge.graph.link import (
    MatchReport,
    cooccurrence_edges,
    match_numbers,
    predicted_edges,
    relation_id,
    similar_relations,
)
from graphseek.knowledge.graph.models import Extraction, Relation, graph_record
from graphseek.knowledge.graph.records import GENERIC_TYPES
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.stages.align import Alignment
from graphseek.knowledge.graph.vectors import set_stage
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar


@dataclass
class Links:
    """What linking gives: the relations between entities (sorted by id), each entity's links
    to passages, what the passage matcher did (for the manifest), and the model's usage by
    stage (``"align"``, ``"link"``) when a model aligned."""

    relations: memory.RelationColumns
    passages: memory.PassageLinks
    matcher: MatchReport
    llm_usage: dict[str, Any] = field(default_factory=dict)


def link(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    aligned: Alignment,
    settings: GraphSettings,
    run: Run,
) -> Links:
    """Phase 3, then Phase 4, over the aligned entities."""
    set_stage(run.embed, "linking")
    with progress_bar("linking", 2, run.show_progress, unit="step") as bar:
        with timed(run.timings, "link_entities", len(passages)):
            relations, llm_usage = link_entities(extractions, aligned, settings, run)
        bar.update(1)
        with timed(run.timings, "link_passages", len(passages)):
            links, report = link_passages(passages, aligned.merged.entities, settings)
        bar.update(1)
    return Links(relations, links, report, llm_usage)


def link_entities(
    extractions: Iterable[Extraction], aligned: Alignment, settings: GraphSettings, run: Run
) -> tuple[memory.RelationColumns, dict[str, Any]]:
    """Phase 3: the extracted relations, the co-occurrence edges of named entities, and the
    similarity edges of the merge pairs kept apart (offline) or the model's predicted
    relations; with the model's usage."""
    merged = aligned.merged
    entities = merged.entities
    by_id = entities.by_id()
    building = memory.relation_columns()
    building.add(extracted_relations(extractions, merged.mention_entity))
    building.add(
        cooccurrence_edges(extractions, _named_mentions(merged), scope=settings.cooccurrence)
    )
    base_entity = dict(zip(merged.base_ids, merged.base_entity, strict=True))
    llm_usage: dict[str, Any] = {}
    if merged.llm_usage is not None:
        llm_usage["align"] = merged.llm_usage.usage.model_dump()
    if run.model is None:
        building.add(
            similar_relations(merged.pairs, base_entity, by_id, max_per_entity=settings.max_similar)
        )
    else:
        predicted, meter = predicted_edges(
            merged.pairs,
            base_entity,
            by_id,
            run.model,
            max_cluster_size=settings.max_cluster_size,
            max_concurrency=run.max_concurrency,
            show_progress=run.show_progress,
        )
        known = set(building.ids)
        building.add(r for r in predicted if r.id not in known)
        llm_usage["link"] = meter.usage.model_dump()
    return building.finish(), llm_usage


def extracted_relations(
    extractions: Iterable[Extraction], mention_entity: Mapping[str, str]
) -> list[Relation]:
    """The aligned graph's extracted relations: one per (source entity, normalised label,
    target entity), supported by the passages whose raw relations give it (one pass over
    `extractions`)."""
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


def link_passages(
    passages: Sequence[Passage], entities: memory.EntityColumns, settings: GraphSettings
) -> tuple[memory.PassageLinks, MatchReport]:
    """Phase 4: each entity to the passages it was extracted from (its mentions') and to those
    the matcher finds its names in (`match_numbers`)."""
    matched_entity, matched_passage, report = match_numbers(
        entities, passages, theta=settings.theta, top_k_common=settings.top_k_common
    )
    mentioned = _mentioned(entities, passages)
    links = memory.PassageLinks.of(
        entities.ids, [p.id for p in passages], mentioned, (matched_entity, matched_passage)
    )
    return links, report


def _named_mentions(merged: AlignmentResult) -> memory.MentionTable[str]:
    """The mentions of entities with a type other than the generic ones, and their entities."""
    entities = merged.entities
    named = {
        eid
        for k, eid in enumerate(entities.ids)
        if not set(entities.items_of("types", k)) <= GENERIC_TYPES
    }
    return merged.mention_entity.where(named.__contains__)


def _mentioned(
    entities: memory.EntityColumns, passages: Sequence[Passage]
) -> tuple[np.ndarray, np.ndarray]:
    """Each entity's links to the passages of its mentions: entity and passage numbers."""
    number = {p.id: k for k, p in enumerate(passages)}
    entity, passage = array("i"), array("i")
    for k in range(len(entities)):
        for pid in entities.items_of("passage_ids", k):
            entity.append(k)
            passage.append(number[pid])
    return np.frombuffer(entity, dtype=np.int32), np.frombuffer(passage, dtype=np.int32)
