"""The vectors the store keeps of the graph's entities and relations, in the graph's space
(`GraphSettings.vectors`). The entities' begin once alignment is done (`begin_entity_vectors`;
on a thread with static vectors, while linking runs here), the relations' once linking is done
(`graph_vectors`). Onto a stored graph (a delta add), the vectors of what the new passages add
(`graph_vectors_onto`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.align import cached_encode
from graphseek.knowledge.graph.algorithms.vectors import (
    Embed,
    VectorCache,
    entity_text,
    record_text,
    relation_text,
    set_stage,
)
from graphseek.knowledge.graph.models import Relation
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.stages.align import Alignment, DeltaAlignment
from graphseek.knowledge.graph.stages.link import DeltaLinks
from graphseek.knowledge.graph.store.stored import StoredGraph


@dataclass
class GraphVectors:
    """The entities' vectors (rows in the entities' order), the ids of the relations that have
    one (extracted and predicted relations, unless `GraphSettings.embed_relations` is off) and
    their vectors, each in a temporary file until the write."""

    entities: memory.SpilledArray
    relation_ids: list[str]
    relations: memory.SpilledArray


class EntityVectors:
    """The entities' vectors under way; `take` waits for them (once: nothing is kept here)."""

    def __init__(self, job: Background[memory.Rows]) -> None:
        self._job: Background[memory.Rows] | None = job

    def take(self) -> memory.SpilledArray:
        job, self._job = self._job, None
        assert job is not None, "taken twice"
        return memory.spill(job.result())


def begin_entity_vectors(aligned: Alignment, strings: Embed, cache: VectorCache) -> EntityVectors:
    """The entities' vectors, begun on a thread with static vectors (`strings`), else made now."""
    entities = aligned.merged.entities
    return EntityVectors(
        Background(
            lambda: memory.vectors_for_write(
                [entity_text(e) for e in entities], strings, cache.vectors
            ),
            thread=bool(getattr(strings, "thread_safe", False)),
        )
    )


def graph_vectors(
    entity_vectors: EntityVectors,
    relations: Iterable[Relation],
    aligned: Alignment,
    settings: GraphSettings,
    run: Run,
    strings: Embed,
    cache: VectorCache,
    n_passages: int,
) -> GraphVectors:
    """The relations' vectors, and the entities' once done."""
    with timed(run.timings, "embed", n_passages):
        set_stage(run.embed, "embedding graph")
        entities = aligned.merged.entities
        names = dict(zip(entities.ids, entities.column("name"), strict=True))
        embedded = embedded_relations(relations, settings)
        relation_vectors = memory.vectors_for_write(
            [relation_text(r, names) for r in embedded], strings, cache.vectors
        )
        return GraphVectors(
            entity_vectors.take(),
            [r.id for r in embedded],
            memory.spill(relation_vectors),
        )


def embedded_relations(relations: Iterable[Relation], settings: GraphSettings) -> list[Relation]:
    """The relations that get a vector: extracted and predicted ones (similarity and
    co-occurrence edges have none), unless `GraphSettings.embed_relations` is off."""
    if not settings.embed_relations:
        return []
    return [r for r in relations if r.kind in ("extracted", "predicted")]


# -- onto a stored graph (a delta add) ----------------------------------------------------------


@dataclass
class DeltaVectors:
    """The vectors a delta add adds: of the new entities, of the new relations that get one
    (`embedded`), and of the stored entities whose vector text grew (`grown`: ids, rows)."""

    entities: np.ndarray
    embedded: list[Relation]
    relations: np.ndarray
    grown: list[str]
    grown_vectors: np.ndarray


def graph_vectors_onto(
    stored: StoredGraph,
    aligned: DeltaAlignment,
    links: DeltaLinks,
    settings: GraphSettings,
    strings: Embed,
) -> DeltaVectors:
    """The vectors of the new entities and relations (the relations a build embeds:
    `embedded_relations`), and those of stored entities that gain aliases: a stored entity's
    first eight aliases are in its vector text, and an exact add later finds its vector by
    that text."""
    names = {e.id: e.name for e in aligned.new_entities}
    names.update({eid: s.name for eid, s in aligned.stored.items()})
    wanted = {x for r in links.relations for x in (r.source, r.target)} - set(names)
    names.update(dict(stored.rows("SELECT id, name FROM entities WHERE id IN ({})", wanted)))
    fresh = [r for r in links.relations if r.id not in links.stored_relations]
    embedded = embedded_relations(fresh, settings)
    relation_vectors = cached_encode([relation_text(r, names) for r in embedded], strings, {})
    entity_vectors = cached_encode([entity_text(e) for e in aligned.new_entities], strings, {})
    gained = links.new_aliases
    grown = [
        eid for eid in gained if eid in aligned.stored and len(aligned.stored[eid].aliases) < 8
    ]
    grown_vectors = cached_encode(
        [
            record_text(
                aligned.stored[eid].name,
                aligned.stored[eid].aliases + gained[eid],
                aligned.stored[eid].types,
            )
            for eid in grown
        ],
        strings,
        {},
    )
    return DeltaVectors(entity_vectors, embedded, relation_vectors, grown, grown_vectors)
