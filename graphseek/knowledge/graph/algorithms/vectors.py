"""The vectors a graph build stores: the texts it embeds, its embedder, and their cache.

The embedder shows a progress bar per stage; the cache holds the vectors already computed
(empty for a build, read back from the store for an update)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from graphseek.knowledge.graph.algorithms.align import AlignmentCache
from graphseek.knowledge.graph.algorithms.contextual import SpanEncoder
from graphseek.knowledge.graph.memory.spool import NpyRows
from graphseek.knowledge.graph.models import Entity, HyperEdge, Relation
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.store import SQLiteGraphStore

Embed = Callable[[Sequence[str]], np.ndarray]


# -- embedding texts (stored vectors are looked up by these, so they must stay stable) ----------


def entity_text(entity: Entity) -> str:
    return record_text(entity.name, entity.aliases, entity.types)


def record_text(name: str, aliases: Sequence[str], types: Sequence[str]) -> str:
    """An entity's vector text: ``"name; aliases (8 at most); types"``."""
    parts = [name]
    if aliases:
        parts.append(", ".join(aliases[:8]))
    parts.append(", ".join(types))
    return "; ".join(parts)


def relation_text(relation: Relation, names: dict[str, str]) -> str:
    return triple_text(
        names.get(relation.source, relation.source),
        relation.label,
        names.get(relation.target, relation.target),
    )


def triple_text(source: str, label: str, target: str) -> str:
    """A relation's vector text: ``"source label target"`` (entity names)."""
    return f"{source} {label} {target}"


def hyperedge_text(edge: HyperEdge) -> str:
    return edge.relation


STAGE_BAR_MIN = 256
"""An embedding call over at least this many texts shows its stage's bar (smaller ones finish
before a bar would be read)."""


class StageEmbed:
    """The process embedder; a call over many texts shows a bar named after the current
    stage (`label`, set by each stage: "aligning entities", "topics", ...)."""

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
    return StageEmbed(show_progress)


def span_encoder(embed: Embed) -> SpanEncoder | None:
    """The embedder behind the default string embedding (it gives token states), or None for
    a custom `embed` function."""
    return embed.embedder if isinstance(embed, StageEmbed) else None


def set_stage(embed: Embed, label: str) -> None:
    """Name the progress bar of `embed`'s next calls (only for the default embedder)."""
    if isinstance(embed, StageEmbed):
        embed.label = label


@dataclass
class VectorCache:
    """Vectors already computed, by text: `vectors` in the graph's space (`GraphSettings.
    vectors`), `alignment.vectors` in MiniLM's (base entities, descriptions); one dict when
    both are MiniLM. `mentions`: contextual mention vectors by mention id."""

    vectors: dict[str, np.ndarray]
    alignment: AlignmentCache
    mentions: Mapping[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def fresh(
        cls, settings: GraphSettings, mentions: Mapping[str, np.ndarray] | None = None
    ) -> VectorCache:
        """An empty cache for a build (with the mention vectors of its passage pass)."""
        cache = cls(
            vectors={}, alignment=AlignmentCache(), mentions={} if mentions is None else mentions
        )
        if settings.vectors == "minilm":
            cache.alignment.vectors = cache.vectors
        return cache


def cache_from_store(store: SQLiteGraphStore, settings: GraphSettings) -> VectorCache:
    aligned: dict[str, np.ndarray] = {}
    records = settings.alignment == "records"
    base_ids, base_texts, base_vectors, pairs = store.alignment_state(vectors=records)
    if records:  # contextual base vectors are not a text's vector
        for text, vector in zip(base_texts, base_vectors, strict=False):
            aligned[text] = vector
    vectors = aligned if settings.vectors == "minilm" else {}
    # texts from rows: the store's entity and relation objects would be most of an update's
    # memory on a large store, and only their texts are needed here
    entity_texts, relation_triples, hyperedge_texts = store.embedded_texts()
    entity_vectors, _ = store.entity_embeddings()
    for (name, aliases, types), vector in zip(entity_texts, entity_vectors, strict=False):
        vectors.setdefault(record_text(name, aliases, types), vector)
    relation_vectors, _ = store.relation_embeddings()
    for triple, vector in zip(relation_triples, relation_vectors, strict=False):
        if triple is not None:
            vectors.setdefault(triple_text(*triple), vector)
    hyper_vectors, _ = store.hyperedge_embeddings()
    for text, vector in zip(hyperedge_texts, hyper_vectors, strict=False):
        vectors.setdefault(text, vector)
    del entity_texts, relation_triples, hyperedge_texts
    mentions: Mapping[str, np.ndarray] = {}
    stored_base: Mapping[str, np.ndarray] = {}
    if settings.alignment == "contextual":
        mentions = store.mention_vector_file()
        try:  # read from the file, a block at a time
            stored_base = NpyRows(store.dir / "base_vectors.npy", base_ids)
        except ValueError:  # its rows are not the base entities': none reused
            stored_base = {}
    return VectorCache(
        vectors=vectors,
        alignment=AlignmentCache(
            vectors=aligned, base_ids=set(base_ids), pairs=pairs, base_vectors=stored_base
        ),
        mentions=mentions,
    )
