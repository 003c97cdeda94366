"""Reduce-stage benchmark: a graph build's stages after the passage pass, from a stored build.

A whole build of 100,000 passages takes an hour here, most of it extraction and the passage
pass, whose peak RSS no change to the later stages moves. This runs only the later stages
(alignment, linking, hyperedges and topics, the write) on a stored graph's map results: its
extractions streamed from ``graph.sqlite`` (`SQLiteGraphStore.extractions`) into an `ExtractionSpool`, its mention vectors read
back into a `MentionVectors` file, passage vectors of the same shape; then
`build_graph(..., mapped=...)`, as the sharded build's driver runs them. Before that it loads
what a single-process build holds when alignment starts: spaCy in this process (300 passages
extracted), MiniLM after a pass over them, its memory released.

It prints each stage's seconds and peak RSS, the process's peak (VmHWM), and whether the store
it wrote is the stored one, file by file (the manifest less its timings and write time): the
stages since changed must give the same index.

    .venv/bin/python benchmarks/reduce_stages.py STORE_DIR [--out DIR]

STORE_DIR: a graph store directory (e.g. ``$GRAPHSEEK_CACHE_DIR/bench-add/synthetic-100000/graph``
from `benchmarks/incremental_add.py`), built with the offline extractor and contextual vectors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def digest(path: Path) -> str:
    if path.name == "manifest.json":
        manifest = json.loads(path.read_text())
        manifest.pop("timings", None)
        manifest.pop("written", None)
        return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a graph store directory")
    parser.add_argument("--out", type=Path, help="write the new store here (default: a temp dir)")
    args = parser.parse_args()

    import numpy as np

    from graphseek.knowledge.embedder import get_embedder
    from graphseek.knowledge.graph.build import MappedPassages, build_graph
    from graphseek.knowledge.graph.contextual import MentionVectors, encode_passages
    from graphseek.knowledge.graph.offline import OfflineExtractor
    from graphseek.knowledge.graph.spool import ExtractionSpool
    from graphseek.knowledge.graph.store import SQLiteGraphStore

    stored = SQLiteGraphStore.open(args.store)
    passages = stored.passages()
    # what a single-process build holds when alignment starts
    warm = passages[:300]
    extracted = OfflineExtractor(show_progress=False).extract(warm)
    encoder = get_embedder()
    encode_passages(encoder, warm, extracted)
    encoder.release_memory()
    del extracted

    started = time.perf_counter()
    spool = ExtractionSpool.of(stored.extractions())  # streamed, one passage at a time
    stored.close()
    ids = json.loads((args.store / "nodes.json").read_text())["mentions_embedded"]
    mentions = MentionVectors.from_npy(args.store / "mention_vectors.npy", ids)
    del ids
    vectors = np.full((len(passages), mentions.dim), 0.1, dtype=np.float32)
    print(
        f"{len(passages):,} passages' map results read back in {time.perf_counter() - started:.0f} s;"
    )
    print(f"peak RSS before alignment {peak_mb():,} MB (spaCy, MiniLM, the map results)")

    work = Path(tempfile.mkdtemp(prefix="reduce-bench-"))
    out = args.out or work / "graph"
    try:
        started = time.perf_counter()
        build_graph(
            passages, out, mapped=MappedPassages(spool, vectors, mentions), show_progress=False
        )
        seconds = time.perf_counter() - started
        print(f"stages after the passage pass, and the write: {seconds:.0f} s")
        timings = json.loads((out / "manifest.json").read_text())["timings"]
        for stage, t in timings.items():
            if isinstance(t, dict) and t.get("peak_rss_mb"):
                print(
                    f"  {stage:<20} {t['seconds']:>8.1f} s   peak RSS {t['peak_rss_mb']:>8,.0f} MB"
                )
        print(f"whole process peak RSS (VmHWM): {peak_mb():,} MB")
        files = sorted(p for p in out.iterdir() if p.is_file())
        different = [p.name for p in files if digest(p) != digest(args.store / p.name)]
        print(
            f"the same store as {args.store}: {not different} ({len(files)} files compared"
            + (f"; different: {', '.join(different)})" if different else ")")
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
