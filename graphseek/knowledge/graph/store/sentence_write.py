"""Writing a graph store's sentence layer (`graphseek.knowledge.graph.store.sentences`) from the
store itself: its passages, entities and entity–passage links, with vectors pooled by the passage
pass, reused from the layer before an update, or encoded."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from graphseek.knowledge.graph.store import MANIFEST, SQLiteGraphStore
from graphseek.knowledge.graph.store.sentences import (
    SENTENCE_DTYPE,
    SENTENCE_FILES,
    SENTENCE_VECTOR_SOURCES,
    PooledSentences,
    SentenceLayer,
    link_sentences,
    passage_sentences,
    replace_file,
)


def write_sentence_layer(
    store_dir: str | os.PathLike[str],
    *,
    source: str = "pooled",
    pooled: PooledSentences | None = None,
    reuse: Mapping[tuple[str, int, int], np.ndarray] | None = None,
    encode: Callable[[Sequence[str]], np.ndarray] | None = None,
) -> SentenceLayer | None:
    """Write the sentence layer of the graph store in `store_dir` (its passages, entities and
    entity–passage links): vectors from `pooled` (the passage pass's), else `reuse` (by
    passage id and span: an update's stored ones), else encoded with `encode` (MiniLM by
    default). ``source="none"`` removes a layer and writes none. Records its counts in the
    store's manifest under ``"sentences"`` (its seconds under ``"timings"``); returns the
    layer."""
    root = Path(store_dir)
    if source not in SENTENCE_VECTOR_SOURCES:
        raise ValueError(
            f"unknown sentence vectors {source!r}; choose {', '.join(SENTENCE_VECTOR_SOURCES)}"
        )
    if source == "none":
        for name in SENTENCE_FILES:
            (root / name).unlink(missing_ok=True)
        return None
    started = time.perf_counter()
    with SQLiteGraphStore.open(root) as store:
        passages = store.passages()
        incidence, entity_ids, passage_ids = store.entity_passage_matrix()
        names = [[e.name, *e.aliases] for e in store.entities()]
        if [e for e in entity_ids] != store.entity_ids():
            raise ValueError(f"graph store {root}: link rows are not the entity order")
    order = {pid: j for j, pid in enumerate(passage_ids)}
    passages = sorted((p for p in passages if p.id in order), key=lambda p: order[p.id])
    spans = [passage_sentences(p) for p in passages]
    total = sum(len(s) for s in spans)
    dim = 0
    vectors: list[np.ndarray | None] = [None] * total
    missing: list[int] = []
    texts: list[str] = []
    counts = {"pooled": 0, "reused": 0, "encoded": 0}
    k = 0
    for p, s in zip(passages, spans, strict=True):
        got = pooled.get(p.id) if (pooled is not None and source == "pooled") else None
        same = got is not None and got[0].shape == s.shape and bool((got[0] == s).all())
        content = p.content
        for r, (a, b) in enumerate(s.tolist()):
            v = None
            if same:
                assert got is not None
                row = got[1][r]
                if np.abs(row).sum() > 0:
                    v = row
                    counts["pooled"] += 1
            if v is None and reuse is not None:
                v = reuse.get((p.id, a, b))
                if v is not None:
                    counts["reused"] += 1
            if v is None:
                missing.append(k)
                texts.append(content[a:b])
            else:
                vectors[k] = v
                dim = len(v)
            k += 1
    if missing:
        if encode is None:
            from graphseek.knowledge.dense import encode_texts
            from graphseek.knowledge.embedder import get_embedder

            embedder = get_embedder()

            def encode(items: Sequence[str]) -> np.ndarray:
                return encode_texts(embedder, list(items), batch_size=64)

        rows = np.asarray(encode(texts), dtype=np.float32)
        dim = rows.shape[1]
        for at, row in zip(missing, rows, strict=True):
            vectors[at] = row
        counts["encoded"] = len(missing)
    matrix = np.zeros((total, dim or 384), dtype=SENTENCE_DTYPE)
    for at, v in enumerate(vectors):
        if v is not None:
            matrix[at] = v
    passage_col = np.repeat(np.arange(len(passages), dtype=np.int32), [len(s) for s in spans])
    stacked = np.concatenate(spans) if spans else np.zeros((0, 2), dtype=np.int64)
    edges = link_sentences(passages, spans, names, incidence)
    layer = SentenceLayer(
        passage_ids=[p.id for p in passages],
        passage=passage_col,
        start=stacked[:, 0].astype(np.int32),
        end=stacked[:, 1].astype(np.int32),
        vectors=matrix,
        entity_ids=list(entity_ids),
        edges=edges,
        meta={"source": source, "vectors": counts, "space": "minilm"},
    )
    layer.save(root)
    manifest_path = root / MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["sentences"] = {
        "source": source,
        "count": total,
        "edges": int(edges.nnz),
        "vectors": counts,
    }
    # how long it took is how it ran, with the build's other timings
    manifest.setdefault("timings", {})["sentence_layer"] = {
        "seconds": round(time.perf_counter() - started, 3)
    }
    text = json.dumps(manifest, indent=2, ensure_ascii=False, default=str)
    replace_file(manifest_path, lambda h: h.write(text.encode("utf-8")))
    return layer
