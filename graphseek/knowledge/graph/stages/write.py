"""Stage 6, the write: the graph's manifest (settings, counts, alignment statistics, timings),
the store written atomically (`graphseek.knowledge.graph.store.write_store`), then its sentence
layer (`graphseek.knowledge.graph.sentence_write`)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from scipy.sparse import csgraph

from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.sentence_write import write_sentence_layer
from graphseek.knowledge.graph.sentences import SENTENCES_JSON, PooledSentences, SentenceLayer
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, rate
from graphseek.knowledge.graph.stages.align import Alignment
from graphseek.knowledge.graph.stages.embed import GraphVectors
from graphseek.knowledge.graph.stages.link import Links
from graphseek.knowledge.graph.stages.topics import Topics
from graphseek.knowledge.graph.store import GraphData, SQLiteGraphStore, build_matrices, write_store
from graphseek.knowledge.graph.store_writer import CACHE_KIB
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar


def graph_data(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    aligned: Alignment,
    links: Links,
    vectors: GraphVectors,
    topics: Topics,
    run: Run,
) -> GraphData:
    """What the store holds: the stages' results, and the manifest's statistics."""
    merged = aligned.merged
    entities, relations = merged.entities, links.relations
    adjacency, _, _ = build_matrices(entities.ids, [], relations, None)
    counts = {
        "passages": len(passages),
        "entities": len(entities),
        "relations": len(relations),
        "relations_by_kind": relations.kind_counts(),
        "hyperedges": len(topics.hyperedges),
        "topics": len(topics.topics),
        "entity_passage_links": len(links.passages),
        "match_links": links.passages.matches,
    }
    alignment: dict[str, float] = dict(merged.counts)
    before, after = alignment["before_alignment"], alignment["after_semantic"]
    alignment["reduction_pct"] = round(100.0 * (before - after) / before, 2) if before else 0.0
    components = {
        "before_alignment": aligned.components_before,
        "after_alignment": int(csgraph.connected_components(adjacency, directed=False)[0])
        if len(entities)
        else 0,
    }
    manifest = {
        "settings": asdict(settings),
        "counts": counts,
        "alignment": alignment,
        "components": components,
        "passage_matcher": links.matcher.model_dump(),
        "timings": run.timings,
        "llm_usage": links.llm_usage,
    }
    return GraphData(
        passages=passages,
        extractions=extractions,
        entities=entities,
        relations=relations,
        entity_passages=links.passages,
        hyperedges=topics.hyperedges,
        topics=topics.topics,
        entity_vectors=vectors.entities,
        relation_vector_ids=vectors.relation_ids,
        relation_vectors=vectors.relations,
        hyperedge_vectors=topics.vectors,
        base_ids=merged.base_ids,
        base_texts=merged.base_texts,
        base_entity=merged.base_entity,
        base_vectors=merged.base_vectors,
        pairs=merged.pairs,
        mention_entity=merged.mention_entity,
        mention_base=merged.mention_base,
        mention_vectors=aligned.mention_vectors,
        manifest=manifest,
        common_words=links.matcher.common_words,
    )


def write(
    data: GraphData,
    out_dir: str | os.PathLike[str],
    extractor_name: str,
    run: Run,
    started: float,
    cache_kib: int = CACHE_KIB,
) -> SQLiteGraphStore:
    """Write `data` into `out_dir` atomically (`cache_kib`: SQLite's page cache meanwhile);
    the manifest gets the extractor's name and the time from `started` to the write."""
    data.manifest["extractor"] = extractor_name
    total = time.perf_counter() - started
    run.timings["total_before_write"] = {
        "seconds": round(total, 3),
        "passages_per_s": rate(len(data.passages), total),
    }
    data.manifest["timings"] = run.timings
    with progress_bar("writing", 1, run.show_progress, unit="store") as bar:
        path = write_store(data, out_dir, cache_kib=cache_kib)
        bar.update(1)
    return SQLiteGraphStore.open(path)


def write_sentences(
    store: SQLiteGraphStore,
    settings: GraphSettings,
    pooled: PooledSentences | None,
    reuse: Mapping[tuple[str, int, int], np.ndarray] | None,
) -> SQLiteGraphStore:
    """The store with its sentence layer written (`graphseek.knowledge.graph.sentences`; an
    update's stored sentence vectors `reuse`d), opened again (its manifest records the layer)."""
    if settings.sentences == "none" and not (store.dir / SENTENCES_JSON).exists():
        return store
    directory = store.dir
    store.close()
    write_sentence_layer(directory, source=settings.sentences, pooled=pooled, reuse=reuse)
    return SQLiteGraphStore.open(directory)


def stored_sentences(
    store_dir: str | os.PathLike[str],
) -> dict[tuple[str, int, int], Any] | None:
    """The vectors of a store's sentences by passage and span (an update reuses them), or None
    for a store without a sentence layer: one written before sentences were nodes (a PostgreSQL
    graph migrated from schema v4 among them), or with ``sentences="none"``. A PostgreSQL graph
    exported for an update carries its sentence layer (`export_graph`), so its vectors are
    reused as a directory store's are. An update keeps a store without one as it is: it never
    encodes every sentence of a store it only adds to."""
    layer = SentenceLayer.load(store_dir)
    return None if layer is None else layer.vectors_by_span()
