"""A delta add: new passages into a graph store, touching only what they reach.

`add_passages(..., delta=True)` (`graphseek.knowledge.graph.build`) runs the build's first two
stages (`graphseek.knowledge.graph.stages`: extraction, the passage pass) on the new passages as
the exact add does; then, instead of re-assembling the whole graph from every stored extraction,
`delta_add` runs the later stages *onto the stored graph* (`graphseek.knowledge.graph.store.stored.
StoredGraph`: the store's database, read-only, and its files), each stage's variant for it from
the stage's own module, in the build's order:

3. `stages.align.align_new`: the new mentions' base entities join stored entities (by name and
   type, or by the offline merge decision against the stored entity's record) or become new
   entities; two stored entities are never merged;
4. `stages.link.link_onto`: the new passages' relations (a stored relation gains their weight
   and passages), the aliases stored entities gain, their mention links and the matcher's
   links, its counts taken over the whole corpus for the names it hits;
5. `stages.topics.topics_onto`: new hyperedges, each in the topic of the nearest stored topic
   centroid; `stages.embed.graph_vectors_onto`: the vectors of what is new or grown;
6. `stages.write.copy_store` (on a thread, meanwhile) and `stages.write.write_onto`: the store
   copied into the new directory and changed there (rows inserted or updated in one SQLite
   transaction, vectors appended, the sparse matrices extended), then swapped in atomically,
   as a build's is.

Each stage module says, beside its variant, why it is not the build's function.

The result is not byte for byte the store a rebuild gives: the k-means topics, matcher links
whose counts cross `theta`, entity names and vectors that more mentions would change, and
bridges between stored entities are a rebuild's to redo (`graphseek index`, or an exact add).
The contract is equal retrieval, measured on the dev slices (`benchmarks/delta_add.py`); the
manifest's ``delta`` section counts what the adds since the last rebuild did.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.atomic import atomic_directory
from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.algorithms.vectors import Embed, string_embed
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import align, embed, link, timed, topics, write
from graphseek.knowledge.graph.store import SQLiteGraphStore
from graphseek.knowledge.graph.store.stored import StoredGraph
from graphseek.knowledge.graph.store.writer import MANIFEST, check_target
from graphseek.knowledge.passages import Passage


def delta_add(
    store_dir: str | os.PathLike[str],
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    mention_vectors: Mapping[str, np.ndarray],
    settings: GraphSettings,
    *,
    embed: Embed,
    extractor_name: str,
    timings: dict[str, Any],
    started: float,
    out_dir: str | os.PathLike[str] | None = None,
) -> SQLiteGraphStore:
    """Add `new` passages (extracted as `extracted`, their contextual mention vectors in
    `mention_vectors`) to the store in `store_dir` as a delta (the module docstring), written
    to `out_dir` (a new directory) or in place, atomically. Returns the store written."""
    source = Path(store_dir).expanduser().resolve()
    dest = check_target(source if out_dir is None else out_dir)
    contextual = settings.alignment == "contextual"
    new_mentions = sorted(mention_vectors) if contextual else []
    with atomic_directory(dest) as tmp:
        # the database and the mention vectors (most of the store's bytes) are copied by the
        # kernel on a thread while the delta is computed from the store itself, read-only
        copying = Background(lambda: write.copy_store(source, tmp, mention_vectors, new_mentions))
        try:
            with StoredGraph.open(source) as stored:
                manifest = _apply(stored, tmp, new, extracted, mention_vectors,
                                  new_mentions, settings, embed, timings, copying)  # fmt: skip
        except BaseException:
            copying.wait()  # the directory goes once the thread is done with it
            raise
        manifest["extractor"] = extractor_name or manifest.get("extractor", "")
        timings["total_before_write"] = {"seconds": round(time.perf_counter() - started, 3)}
        manifest.setdefault("delta", {})["timings"] = timings
        manifest["written"] = time.time()
        (tmp / MANIFEST).write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False, default=str), encoding="utf-8"
        )
    return SQLiteGraphStore.open(dest)


def _apply(
    stored: StoredGraph,
    tmp: Path,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    mention_vectors: Mapping[str, np.ndarray],
    new_mentions: list[str],
    settings: GraphSettings,
    encoder: Embed,
    timings: dict[str, Any],
    copying: Background[None],
) -> dict[str, Any]:
    """Stages 3-6 onto the `stored` graph, in the build's order (`graphseek.knowledge.graph.
    build.assemble`), each its stage module's variant for a stored graph; written into `tmp`
    once `copying` has copied the files it changes in place. Returns the store's manifest with
    the new counts, for the caller to finish and write."""
    n = len(new)
    strings = string_embed(settings, encoder)
    # 3. alignment: the new mentions -> new entities, or stored ones they join
    with timed(timings, "align", n):
        mentions = [m for x in extracted for m in x.mentions]
        contextual = settings.alignment == "contextual"
        bases = align.new_bases(mentions, mention_vectors if contextual else {}, settings, encoder)
        count = stored.count("base_entities")
        # the stored base vectors near each new one, on a thread (BLAS, the GIL released)
        search = Background(lambda: align.near_stored(stored, bases.vectors, settings, count))
        surfaces = link.stored_surfaces(stored)  # the matcher's names, meanwhile
        aligned = align.align_new(stored, bases, search.result(), settings, encoder)
    # 4. linking: relations, stored entities' new aliases, entity-passage links
    links = link.link_onto(stored, new, extracted, aligned, settings, timings, surfaces)
    # 5. hyperedges and topics; the vectors of entities and relations
    with timed(timings, "hyperedges_topics", n):
        hyperedges = topics.topics_onto(stored, extracted, aligned, settings, strings)
    with timed(timings, "embed", n):
        vectors = embed.graph_vectors_onto(stored, aligned, links, settings, strings)
    # 6. write
    with timed(timings, "copy_wait", n):
        copying.result()
    with timed(timings, "write", n):
        return write.write_onto(stored, tmp, new, extracted, new_mentions, aligned, links,
                                hyperedges, vectors, settings)  # fmt: skip
