"""Graph statistics (HiGraAgent Tables 2, 15-18): sizes, degrees, passages per entity,
connected components, entity counts before and after alignment.

`graph_stats(store_or_dir)` returns a flat-ish dict; `format_stats(stats)` renders it as a plain
text table (what ``graphseek stats DIR`` prints).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from scipy.sparse import csgraph

from graphseek.knowledge.graph.store import GraphStore, SQLiteGraphStore


def _min_avg_max(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {"min": 0, "avg": 0.0, "max": 0}
    return {
        "min": int(values.min()),
        "avg": round(float(values.mean()), 2),
        "max": int(values.max()),
    }


def graph_stats(store: GraphStore | str | os.PathLike[str]) -> dict[str, Any]:
    """Statistics of a store (an opened `GraphStore` or a store directory)."""
    opened: SQLiteGraphStore | None = None
    if isinstance(store, str | os.PathLike):
        opened = store = SQLiteGraphStore.open(store)
    try:
        manifest = store.manifest
        adjacency, entity_ids = store.adjacency()
        incidence, _, passage_ids = store.entity_passage_matrix()
        relations = store.relations()
        structural = adjacency.copy()
        structural.data[:] = 1
        degree = np.asarray(structural.sum(axis=1)).ravel()
        # relation degree (incident relations, as HiGraAgent Table 17 counts them)
        relation_degree = np.zeros(len(entity_ids), dtype=np.int64)
        position = {e: k for k, e in enumerate(entity_ids)}
        by_kind: dict[str, int] = {}
        for r in relations:
            by_kind[r.kind] = by_kind.get(r.kind, 0) + 1
            for end in {r.source, r.target}:
                k = position.get(end)
                if k is not None:
                    relation_degree[k] += 1
        extracted_degree = np.zeros(len(entity_ids), dtype=np.int64)
        for r in relations:
            if r.kind in ("extracted", "predicted"):
                for end in {r.source, r.target}:
                    k = position.get(end)
                    if k is not None:
                        extracted_degree[k] += 1
        passages_per_entity = np.asarray((incidence > 0).sum(axis=1)).ravel()
        entities_per_passage = np.asarray((incidence > 0).sum(axis=0)).ravel()
        components = (
            int(csgraph.connected_components(adjacency, directed=False)[0]) if entity_ids else 0
        )
        alignment = manifest.get("alignment", {})
        stats: dict[str, Any] = {
            "directory": str(getattr(store, "dir", "")),
            "extractor": manifest.get("extractor", ""),
            "passages": len(passage_ids),
            "entities": len(entity_ids),
            "relations": len(relations),
            "relations_by_kind": dict(sorted(by_kind.items())),
            "hyperedges": len(store.hyperedges()),
            "topics": len(store.topics()),
            "entity_passage_links": int(incidence.nnz),
            "entity_degree": _min_avg_max(relation_degree),
            "entity_degree_extracted": _min_avg_max(extracted_degree),
            "entity_neighbours": _min_avg_max(degree),
            "passages_per_entity": _min_avg_max(passages_per_entity),
            "entities_per_passage": _min_avg_max(entities_per_passage),
            "connected_components": components,
            "components_before_alignment": manifest.get("components", {}).get("before_alignment"),
            "mentions": alignment.get("mentions"),
            "entities_before_alignment": alignment.get("before_alignment"),
            "entities_after_exact_merge": alignment.get("after_exact"),
            "entities_after_alignment": alignment.get("after_semantic"),
            "alignment_reduction_pct": alignment.get("reduction_pct"),
        }
        memory = build_memory(manifest)
        if memory:
            stats["build_memory"] = memory
        delta = manifest.get("delta") or {}
        if delta.get("adds"):
            stats["delta_adds"] = (
                f"{delta['adds']:,} ({delta.get('passages_added', 0):,} passages) since the last "
                "build or exact add: topics, and merges between stored entities, wait for the "
                "next one (the alignment figures above are its own)"
            )
        return stats
    finally:
        if opened is not None:
            opened.close()


def build_memory(manifest: dict[str, Any]) -> str | None:
    """The build's memory plan and its measured peak in words (`budget.MemoryPlan`; the most
    the stages' ends recorded, the write not included), or None for a store written before
    builds had a budget."""
    from dataclasses import fields

    from graphseek.knowledge.graph.memory.budget import MemoryPlan

    recorded = manifest.get("memory")
    if not isinstance(recorded, dict):
        return None
    try:
        plan = MemoryPlan(**{f.name: int(recorded[f.name]) for f in fields(MemoryPlan)})
    except (KeyError, TypeError, ValueError):
        return None
    peaks = [
        t["peak_rss_mb"]
        for t in (manifest.get("timings") or {}).values()
        if isinstance(t, dict) and isinstance(t.get("peak_rss_mb"), (int, float))
    ]
    measured = f", {max(peaks):,.0f} MB measured before the write" if peaks else ""
    return (
        f"budget {plan.budget_mb:,} MB ({plan.describe()}): {plan.estimate_mb:,} MB "
        f"estimated{measured}"
    )


def _fmt(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"min", "avg", "max"}:
        return f"{value['min']} / {value['avg']} / {value['max']}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items()) or "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return "-" if value is None or value == "" else str(value)


_LABELS = [
    ("directory", "store"),
    ("extractor", "extractor"),
    ("passages", "passages"),
    ("entities", "entities"),
    ("relations", "relations"),
    ("relations_by_kind", "  by kind"),
    ("hyperedges", "hyperedges"),
    ("topics", "topics"),
    ("entity_passage_links", "entity-passage links"),
    ("entity_degree", "entity degree (min/avg/max)"),
    ("entity_degree_extracted", "  extracted relations only"),
    ("entity_neighbours", "distinct neighbours"),
    ("passages_per_entity", "passages per entity"),
    ("entities_per_passage", "entities per passage"),
    ("connected_components", "connected components"),
    ("components_before_alignment", "  before alignment"),
    ("mentions", "mentions extracted"),
    ("entities_before_alignment", "entities before alignment"),
    ("entities_after_exact_merge", "  after exact merge"),
    ("entities_after_alignment", "  after semantic merge"),
    ("alignment_reduction_pct", "alignment reduction %"),
    ("build_memory", "build memory"),
    ("delta_adds", "delta adds"),
]


def format_stats(stats: dict[str, Any]) -> str:
    """A two-column plain-text table of `graph_stats` output."""
    rows = [(label, _fmt(stats.get(key))) for key, label in _LABELS if key in stats]
    width = max(len(label) for label, _ in rows) if rows else 0
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)
