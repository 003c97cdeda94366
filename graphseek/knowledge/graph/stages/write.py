"""Stage 6, the write: the graph's manifest (settings, counts, alignment statistics, timings),
the store written atomically (`graphseek.knowledge.graph.store.write_store`), then its sentence
layer (`graphseek.knowledge.graph.store.sentence_write`): `write`. Onto a stored graph (a delta
add), the store copied and changed where the new passages reach it: `copy_store`, `write_onto`
(below, with why they are their own)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, rate
from graphseek.knowledge.graph.stages.align import Alignment, DeltaAlignment
from graphseek.knowledge.graph.stages.embed import DeltaVectors, GraphVectors
from graphseek.knowledge.graph.stages.link import DeltaLinks, Links
from graphseek.knowledge.graph.stages.topics import DeltaTopics, Topics
from graphseek.knowledge.graph.store import GraphData, SQLiteGraphStore, build_matrices, write_store
from graphseek.knowledge.graph.store.sentence_write import write_sentence_layer
from graphseek.knowledge.graph.store.sentences import SENTENCES_JSON, PooledSentences, SentenceLayer
from graphseek.knowledge.graph.store.stored import StoredGraph
from graphseek.knowledge.graph.store.writer import (
    CACHE_KIB,
    DATABASE,
    MANIFEST,
    MATCHER,
    _dumps,
    insert_base_entities,
    insert_entities,
    insert_extractions,
    insert_hyperedges,
    insert_passages,
    insert_relations,
    write_id_lists,
)
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar
from graphseek.knowledge.text import normalize_name


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
    """The store with its sentence layer written (`graphseek.knowledge.graph.store.sentences`; an
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


# -- onto a stored graph (a delta add) ----------------------------------------------------------
#
# `write` writes a whole new store. A delta add changes a stored one: its files are copied
# into the new directory (`copy_store`, on a thread while the other stages run) and changed
# there (`write_onto`: rows inserted or updated in one SQLite transaction with the build's
# table writers, vectors appended to their ``.npy`` files, the sparse matrices extended), then
# swapped in atomically by the caller, as a build's are.

REWRITTEN = frozenset(
    {
        "entity_vectors.npy",
        "relation_vectors.npy",
        "hyperedge_vectors.npy",
        "base_vectors.npy",
        "mention_vectors.npy",
        "adjacency_entity.npz",
        "adjacency_full.npz",
        "entity_passage.npz",
        "nodes.json",
        MANIFEST,
        MATCHER,
    }
)
"""The store's files a delta writes anew (the others are copied as they are)."""


def copy_store(
    source: Path, tmp: Path, mention_vectors: Mapping[str, np.ndarray], new_mentions: list[str]
) -> None:
    """The files of `source` the delta does not write anew, copied into `tmp`, and the mention
    vectors with the new mentions' rows appended (`new_mentions`, in that order)."""
    for item in source.iterdir():
        if item.is_file() and item.name not in REWRITTEN:
            shutil.copyfile(item, tmp / item.name)
    stored = source / "mention_vectors.npy"
    if new_mentions and stored.exists():
        append_rows(stored, tmp / stored.name, memory.stack_rows(mention_vectors, new_mentions))
    elif stored.exists():
        shutil.copyfile(stored, tmp / stored.name)


def write_onto(
    stored: StoredGraph,
    tmp: Path,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    new_mentions: list[str],
    aligned: DeltaAlignment,
    links: DeltaLinks,
    topics: DeltaTopics,
    vectors: DeltaVectors,
    settings: GraphSettings,
) -> dict[str, Any]:
    """The delta written into `tmp` (the files it changes, copied there already): the rows,
    the ids, the vectors appended, the matrices extended, the matcher's words. Returns the
    store's manifest with the new counts."""
    source = stored.dir
    written = sqlite3.connect(tmp / DATABASE)
    try:
        written.execute("PRAGMA journal_mode=OFF")
        written.execute("PRAGMA synchronous=OFF")
        _write_rows(written, new, extracted, aligned, links, topics)
        manifest = stored.manifest()
        _count(manifest, written, aligned, len(new))
    finally:
        written.close()
    nodes = stored.nodes()
    nodes["entities"] += [e.id for e in aligned.new_entities]
    nodes["passages"] += [p.id for p in new]
    nodes["relations_embedded"] += [r.id for r in vectors.embedded]
    nodes["hyperedges"] += [h.id for h in topics.fresh]
    if new_mentions and (source / "mention_vectors.npy").exists():
        nodes.setdefault("mentions_embedded", []).extend(new_mentions)
    for name, rows in (
        ("entity_vectors", vectors.entities),
        ("relation_vectors", vectors.relations),
        ("hyperedge_vectors", topics.vectors),
        ("base_vectors", aligned.base_vectors),
    ):
        if len(rows) and rows.ndim == 2 and rows.shape[1] > 1:
            append_rows(source / f"{name}.npy", tmp / f"{name}.npy", rows)
        elif (source / f"{name}.npy").exists():
            shutil.copyfile(source / f"{name}.npy", tmp / f"{name}.npy")
    weights: dict[tuple[str, str], float] = defaultdict(float)
    for r in links.relations:
        weights[(r.source, r.target)] += r.weight
    _extend_matrices(source, tmp, nodes["entities"], nodes["passages"], weights, links.passages)
    if vectors.grown:
        _overwrite_rows(
            tmp / "entity_vectors.npy", nodes["entities"], vectors.grown, vectors.grown_vectors
        )
    write_id_lists(tmp / "nodes.json", nodes)
    (tmp / MATCHER).write_text(
        _dumps({"top_k_common": settings.top_k_common, "common_words": sorted(links.common)}),
        encoding="utf-8",
    )
    return manifest


def _write_rows(
    con: sqlite3.Connection,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    links: DeltaLinks,
    topics: DeltaTopics,
) -> None:
    """The delta's rows, in one transaction (the table writers of a build's store where the
    rows are the same: passages, the raw layer, entities, relations, hyperedges). Every
    hyperedge the new passages give gets their passages; those new to the store (`fresh`) are
    inserted, with their topics."""
    relations, stored_relations = links.relations, links.stored_relations
    hyperedges, fresh_hyper = topics.hyperedges, topics.fresh

    def next_ord(table: str) -> int:
        return int(con.execute(f"SELECT COALESCE(MAX(ord), -1) + 1 FROM {table}").fetchone()[0])

    me = aligned.mention_entity
    with con:
        insert_passages(con, new, next_ord("passages"))
        insert_extractions(con, extracted, me, aligned.mention_base)
        insert_base_entities(
            con,
            aligned.base_ids,
            aligned.base_texts,
            aligned.base_entity,
            next_ord("base_entities"),
        )
        # only pairs of two new base entities: a pair with a stored one was decided against
        # the stored *entity's* record, which an exact add must not take for its base's
        fresh_bases = set(aligned.base_ids)
        con.executemany(
            "INSERT OR REPLACE INTO merge_pairs VALUES (?, ?, ?, ?)",
            (
                (a, b, sim, int(ok))
                for (a, b), (sim, ok) in aligned.pairs.items()
                if a in fresh_bases and b in fresh_bases
            ),
        )
        insert_entities(con, aligned.new_entities, next_ord("entities"))
        for eid, aliases in links.new_aliases.items():
            first = len(aligned.stored[eid].aliases) if eid in aligned.stored else 0
            con.executemany(
                "INSERT INTO entity_aliases VALUES (?, ?, ?, ?)",
                ((eid, first + k, a, normalize_name(a)) for k, a in enumerate(aliases)),
            )
        con.executemany(
            "INSERT INTO provenance VALUES (?, ?, ?)",
            ((me[m.id], m.id, m.passage_id) for x in extracted for m in x.mentions if m.id in me),
        )
        con.executemany(
            "INSERT OR IGNORE INTO entity_passages VALUES (?, ?, ?)",
            ((eid, pid, kind) for (eid, pid), kind in sorted(links.passages.items())),
        )
        insert_relations(
            con, [r for r in relations if r.id not in stored_relations], next_ord("relations")
        )
        con.executemany(
            "UPDATE relations SET weight = weight + ? WHERE id = ?",
            ((r.weight, r.id) for r in relations if r.id in stored_relations),
        )
        con.executemany(
            "INSERT INTO relation_passages VALUES (?, ?)",
            ((r.id, pid) for r in relations for pid in r.passage_ids),
        )
        insert_hyperedges(con, fresh_hyper, next_ord("hyperedges"))
        con.executemany(
            "INSERT INTO hyperedge_passages VALUES (?, ?)",
            ((h.id, pid) for h in hyperedges for pid in h.passage_ids),
        )
        for topic, size in Counter(h.topic_id for h in fresh_hyper if h.topic_id).items():
            con.execute("UPDATE topics SET size = size + ? WHERE id = ?", (size, topic))


def _count(
    manifest: dict[str, Any], con: sqlite3.Connection, aligned: DeltaAlignment, n: int
) -> None:
    """The manifest's counts, read back from the changed database, and the ``delta`` section
    (what the adds since the last build did)."""

    def one(sql: str) -> int:
        return int(con.execute(sql).fetchone()[0])

    counts = manifest.setdefault("counts", {})
    counts.update(
        passages=one("SELECT COUNT(*) FROM passages"),
        entities=one("SELECT COUNT(*) FROM entities"),
        relations=one("SELECT COUNT(*) FROM relations"),
        relations_by_kind=dict(con.execute("SELECT kind, COUNT(*) FROM relations GROUP BY kind")),
        hyperedges=one("SELECT COUNT(*) FROM hyperedges"),
        topics=one("SELECT COUNT(*) FROM topics"),
        entity_passage_links=one("SELECT COUNT(*) FROM entity_passages"),
        match_links=one("SELECT COUNT(*) FROM entity_passages WHERE kind = 'match'"),
    )
    delta = manifest.setdefault("delta", {})
    delta["adds"] = int(delta.get("adds", 0)) + 1
    delta["passages_added"] = int(delta.get("passages_added", 0)) + n
    totals = delta.setdefault("alignment", {})
    for key, value in aligned.counts.items():
        totals[key] = int(totals.get(key, 0)) + int(value)
    delta["last"] = dict(aligned.counts, passages=n)


def append_rows(src: Path, dst: Path, rows: np.ndarray) -> None:
    """``dst``: the ``.npy`` at `src` with `rows` appended (its dtype kept; an empty stored
    array takes the rows' width). The stored rows are copied by the kernel
    (``copy_file_range``), behind a new header."""
    with open(src, "rb") as handle:
        np.lib.format.read_magic(handle)
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        offset = handle.tell()
    if fortran or len(shape) != 2:
        raise ValueError(f"{src}: not a C-ordered 2-d array")
    width = shape[1] if shape[0] else (rows.shape[1] if rows.ndim == 2 else shape[1])
    if len(rows) and rows.shape[1] != width:
        raise ValueError(f"{src}: rows of width {rows.shape[1]} for an array of width {width}")
    header = {
        "descr": np.lib.format.dtype_to_descr(dtype),
        "fortran_order": False,
        "shape": (shape[0] + len(rows), width),
    }
    size = shape[0] * shape[1] * dtype.itemsize
    with open(src, "rb") as source, open(dst, "wb") as target:
        np.lib.format.write_array_header_1_0(target, header)
        target.flush()
        _copy_range(source.fileno(), target.fileno(), offset, size)
        target.seek(0, os.SEEK_END)
        if len(rows):
            target.write(np.ascontiguousarray(rows, dtype=dtype).tobytes())


def _copy_range(src: int, dst: int, offset: int, size: int) -> None:
    """`size` bytes of `src` from `offset` to the end of `dst`, in the kernel where it can."""
    at = os.lseek(dst, 0, os.SEEK_END)
    done = 0
    while done < size:
        try:
            moved = os.copy_file_range(src, dst, size - done, offset + done, at + done)
        except (AttributeError, OSError):
            os.lseek(src, offset + done, os.SEEK_SET)
            os.lseek(dst, at + done, os.SEEK_SET)
            while done < size:
                chunk = os.read(src, min(1 << 24, size - done))
                if not chunk:
                    break
                os.write(dst, chunk)
                done += len(chunk)
            return
        if moved == 0:
            break
        done += moved
    if done != size:
        raise OSError(f"copied {done} of {size} bytes")


def _overwrite_rows(
    path: Path, row_ids: Sequence[str], ids: Sequence[str], rows: np.ndarray
) -> None:
    """Write `rows` over the rows of `ids` (row k of the file: `row_ids[k]`) of the ``.npy`` at
    `path`, a file of this delta's own (copied or appended, never the source store's); the
    memory map is closed on return."""
    wanted = set(ids)
    position = {eid: k for k, eid in enumerate(row_ids) if eid in wanted}
    stored = np.load(path, mmap_mode="r+")
    for eid, row in zip(ids, rows, strict=True):
        stored[position[eid]] = row
    stored.flush()


def _grow(matrix: sparse.csr_matrix, shape: tuple[int, int]) -> sparse.csr_matrix:
    out = matrix.tocsr().copy()
    out.resize(shape)
    return out


def _extend_matrices(
    store_dir: Path,
    tmp: Path,
    entity_ids: Sequence[str],
    passage_ids: Sequence[str],
    weights: Mapping[tuple[str, str], float],
    links: Iterable[tuple[str, str]],
) -> None:
    """The three matrices with the new entities and passages appended and the new weights
    (entity pairs, either order, summed into both cells) and links added."""
    ne, np_ = len(entity_ids), len(passage_ids)
    epos = {e: k for k, e in enumerate(entity_ids)}
    ppos = {p: k for k, p in enumerate(passage_ids)}
    adjacency = _grow(sparse.load_npz(store_dir / "adjacency_entity.npz"), (ne, ne))
    rows, cols, vals = [], [], []
    for (a, b), w in weights.items():
        i, j = epos.get(a), epos.get(b)
        if i is None or j is None or i == j:
            continue
        rows += [i, j]
        cols += [j, i]
        vals += [w, w]
    delta = sparse.csr_matrix(
        (np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(ne, ne), dtype=np.float32
    )
    adjacency = (adjacency + delta).tocsr()
    adjacency.sum_duplicates()
    incidence = _grow(sparse.load_npz(store_dir / "entity_passage.npz"), (ne, np_))
    pairs = [(epos[e], ppos[p]) for e, p in links if e in epos and p in ppos]
    if pairs:
        add = sparse.csr_matrix(
            (np.ones(len(pairs), dtype=np.float32), tuple(np.array(pairs).T)),
            shape=(ne, np_),
            dtype=np.float32,
        )
        incidence = (incidence + add).tocsr()
    incidence.sum_duplicates()
    incidence.data[:] = 1.0
    full = sparse.bmat(
        [[adjacency, incidence], [incidence.T, None]], format="csr", dtype=np.float32
    )
    if full.shape != (ne + np_, ne + np_):
        full = sparse.csr_matrix((ne + np_, ne + np_), dtype=np.float32)
    # not compressed: zlib would take seconds of an add on a large store (a build compresses)
    sparse.save_npz(tmp / "adjacency_entity.npz", adjacency.astype(np.float32).tocsr(), False)
    sparse.save_npz(tmp / "adjacency_full.npz", full.tocsr(), False)
    sparse.save_npz(tmp / "entity_passage.npz", incidence.astype(np.float32).tocsr(), False)
