"""Stage 3, alignment (HiGra Phase 2): the mentions of every extraction become entities, by
exact merging (a name key and a type in common), then semantic merging (base entities within
the radius `GraphSettings.tau`, decided offline or by the aligner model)
(`graphseek.knowledge.graph.align.Aligner`)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.align import Aligner, AlignmentResult
from graphseek.knowledge.graph.exact import components
from graphseek.knowledge.graph.link import COOCCURRENCE_MAX_GROUP
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.records import GENERIC_TYPES
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.vectors import VectorCache, set_stage
from graphseek.knowledge.progress import bar as progress_bar


@dataclass
class Alignment:
    """What alignment gives the later stages: the entities and every mention's entity and base
    entity (`merged`, `graphseek.knowledge.graph.align.AlignmentResult`), the mention vectors the
    store keeps (empty without contextual alignment), and the number of connected components of
    the graph before alignment (a manifest statistic)."""

    merged: AlignmentResult
    mention_vectors: Mapping[str, np.ndarray]
    components_before: int


def align(
    n_passages: int,
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    run: Run,
    cache: VectorCache,
) -> Alignment:
    """Align the mentions of `extractions` (of `n_passages` passages) into entities. `cache`:
    the vectors already known (an update's stored ones; the passage pass's mention vectors)."""
    with timed(run.timings, "align", n_passages):
        set_stage(run.embed, "aligning entities")
        merged, mention_vectors = _merge(extractions, settings, run, cache)
        raw_nodes, merged.raw_nodes = merged.raw_nodes, None  # read once, below
        assert raw_nodes is not None
        memory.after_alignment(cache)
        before = _raw_components(
            extractions, raw_nodes, merged.counts["before_alignment"], settings.cooccurrence
        )
    return Alignment(merged, mention_vectors, before)


def _merge(
    extractions: Iterable[Extraction], settings: GraphSettings, run: Run, cache: VectorCache
) -> tuple[AlignmentResult, Mapping[str, np.ndarray]]:
    """Exact, then semantic merging of every mention (read in one pass), and the mention
    vectors the store keeps."""
    mentions = memory.mention_columns(extractions)
    aligner = Aligner(
        embed=run.embed,
        tau=settings.radius,
        max_neighbors=settings.max_neighbors,
        description_min=settings.description_min,
        model=run.model,
        max_cluster_size=settings.max_cluster_size,
        max_concurrency=run.max_concurrency,
        show_progress=run.show_progress,
        embed_outside=settings.outside_window != "names",
    )
    contextual = settings.alignment == "contextual"
    # record strings show MiniLM's "aligning entities" bar; contextual vectors need their own
    with progress_bar(
        "aligning entities", 1, run.show_progress and contextual, unit="step"
    ) as step:
        merged = aligner.align(mentions, cache.alignment, cache.mentions if contextual else None)
        step.update(1)
    if not contextual:
        return merged, {}
    return merged, memory.keep_rows(cache.mentions, mentions.ids, merged.mention_entity.ids)


def _raw_components(
    extractions: Iterable[Extraction], node_of: memory.MentionTable[int], n: int, scope: str
) -> int:
    """Connected components of the graph before alignment (a manifest statistic): one node per
    raw entity (`node_of`: each mention's), an edge per raw relation, and the co-occurrence
    edges that `cooccurring_pairs` would give over typed mentions' nodes. A co-occurring group
    is joined by a path over its members, not by every pair: the same components, with k - 1
    edges for k members instead of k (k - 1) / 2. One pass over `extractions`."""
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
