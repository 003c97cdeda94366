"""The vectors the store keeps of the graph's entities and relations, in the graph's space
(`GraphSettings.vectors`). The entities' begin once alignment is done (`begin_entity_vectors`;
on a thread with static vectors, while linking runs here), the relations' once linking is done
(`graph_vectors`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.models import Relation
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.stages.align import Alignment
from graphseek.knowledge.graph.vectors import (
    Embed,
    VectorCache,
    entity_text,
    relation_text,
    set_stage,
)


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
