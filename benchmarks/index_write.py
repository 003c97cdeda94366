"""Index-write benchmark: the passage index written after the graph (BM25, the dense index, the
passage file), alone, with its RSS by step, against a baseline checkout in the same run.

`Index.build` ends with `_write_stores`: the passage file, BM25 over every text, the dense
index over every vector. This runs that step alone on N synthetic passages
(`benchmarks/indexing.py`'s corpus, spooled as a corpus path is read) with N random unit vectors
in a temporary file (`SpilledArray`, as the graph's passage pass hands them on), the passage
encoder loaded first (an `Index.build` holds it), in a fresh process per checkout: this one,
and with ``--against REV`` a git worktree of REV. It prints the RSS when the step begins, the
most within BM25's build and the dense index's build and save (sampled every 50 ms), the
step's peak above its start, and whether the two checkouts wrote the same files.

    .venv/bin/python benchmarks/index_write.py [--size 100000] [--against f048888]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bounded_build import checkout, digests, run_child  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def child(size: int, out: Path, data_dir: Path) -> None:
    """Write the passage index of `size` passages into `out`; print one JSON line."""
    import numpy as np
    from indexing import synthetic_stream
    from reduce_stages import PhaseSampler

    from graphseek.knowledge import dense, embedders, sparse
    from graphseek.knowledge import index as indexing
    from graphseek.knowledge.graph.memory.spool import PassageSpool, SpilledArray
    from graphseek.knowledge.heap import bound_heap

    bound_heap()  # as a graph build leaves the process
    encoder = embedders.embedder_for(None)
    encoder.encode(["the encoder loaded, as an Index.build holds it"])
    items = PassageSpool.of(synthetic_stream(data_dir, size))
    rng = np.random.default_rng(0)

    def unit_rows() -> Any:
        for start in range(0, size, 10_000):
            rows = rng.standard_normal((min(10_000, size - start), encoder.dim))
            yield (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)

    vectors = SpilledArray.of_blocks(unit_rows(), encoder.dim)
    out.mkdir(parents=True, exist_ok=True)
    sampler = PhaseSampler()
    sampler.wrap(sparse.BM25Index, "build", "BM25Index.build")
    sampler.wrap(dense.DenseIndex, "build", "DenseIndex.build")
    sampler.wrap(dense.DenseIndex, "save", "DenseIndex.save")
    time.sleep(0.2)
    begin = sampler.rss_mb()
    sampler.phase = "_write_stores"
    started = time.perf_counter()
    indexing._write_stores(items, out, False, 64, vectors=vectors, encoder=encoder)
    seconds = time.perf_counter() - started
    sampler.phase = "end"
    time.sleep(0.2)
    peak = max(top for _, top in sampler.peaks.values())
    print(json.dumps({"begin": begin, "peak": peak, "seconds": seconds, "phases": sampler.peaks}))


def run(size: int, out: Path, data_dir: Path, source: Path) -> dict[str, Any]:
    args = ["--child", str(size), "--out", str(out), "--data-dir", str(data_dir)]
    return run_child(Path(__file__), args, source, "the index write")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="passages")
    parser.add_argument("--against", help="a git revision to run as the baseline")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.out, args.data_dir)
        return
    work = Path(tempfile.mkdtemp(prefix="index-write-"))
    try:
        with checkout(args.against, work) as baseline:
            runs: list[tuple[str, dict[str, Any], Path]] = []
            if baseline is not None:
                out = work / "baseline"
                runs.append((args.against, run(args.size, out, args.data_dir, baseline), out))
            out = work / "this"
            runs.append(("this checkout", run(args.size, out, args.data_dir, ROOT), out))
        report(args.size, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(size: int, runs: list[tuple[str, dict[str, Any], Path]]) -> None:
    """The RSS by step of each run, and, for two, whether they wrote the same files."""
    steps = ["_write_stores", "BM25Index.build", "DenseIndex.build", "DenseIndex.save"]
    print(f"passage index write of {size:,} passages, RSS MB (its start / the most):")
    print(f"{'step':<22}" + "".join(f"{label:>24}" for label, _, _ in runs))
    for step in steps:
        cells = []
        for _, result, _ in runs:
            seen = result["phases"].get(step)
            cells.append(f"{seen[0]:,} / {seen[1]:,}" if seen else "-")
        print(f"{step:<22}" + "".join(f"{c:>24}" for c in cells))
    row = [f"+{r['peak'] - r['begin']:,} ({r['seconds']:.1f} s)" for _, r, _ in runs]
    print(f"{'peak above its start':<22}" + "".join(f"{c:>24}" for c in row))
    if len(runs) == 2:
        (_, before, a), (_, after, b) = runs
        same = digests(a) == digests(b)
        drop = (before["peak"] - before["begin"]) - (after["peak"] - after["begin"])
        print(f"the same files: {same}; the step's peak {drop:+,} MB lower than the baseline's")


if __name__ == "__main__":
    main()
