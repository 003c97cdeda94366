"""Alignment's radius search: its candidate pairs kept per block of queries, against per query.

`radius_pair_rows` finds every base entity's neighbours within the merge radius (an exact
search up to `EXACT_PAIRS_MAX` base entities, an HNSW graph above) and keeps each query's
nearest others. Until f2c8217 it kept them as three small arrays per query (157,601 queries at
a 100,000-passage build); `nearest_others` now keeps a few arrays per block of queries. This
runs both, each in a fresh process, on the base vectors of a graph store (`base_vectors.npy`,
every base entity a query, as a build's alignment), and prints their seconds, their peak RSS
above the vectors held, whether their pairs are the same, and the ratios.

    .venv/bin/python benchmarks/radius_search.py $GRAPHSEEK_CACHE_DIR/fresh27/bench-add/synthetic-100000/graph
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from graphseek.knowledge.graph import candidates
from graphseek.knowledge.graph.settings import DEFAULT_TAU


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def per_query_rows(
    vectors: np.ndarray, queries: list[int], tau: float, max_neighbors: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The baseline: `radius_pair_rows` as it was before f2c8217, three arrays per query (the
    same searches, the same rule, the same pairs)."""
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    kept = []
    for ids, lims, found_all, sims_all in candidates.radius_hits(data, queries, tau, max_neighbors):
        for k, i in enumerate(ids.tolist()):
            cand, sim = found_all[lims[k] : lims[k + 1]], sims_all[lims[k] : lims[k + 1]]
            order = np.lexsort((cand, -sim))
            found = np.asarray(cand, dtype=np.int64)[order]
            other = found != i
            found = found[other][:max_neighbors]
            kept.append(
                (
                    np.full(len(found), i, dtype=np.int64),
                    found,
                    np.asarray(sim, dtype=np.float32)[order][other][:max_neighbors],
                )
            )
    return candidates.pairs_once(kept, len(data))


def run_one(kind: str, vectors_path: Path, out: Path, tau: float, max_neighbors: int) -> None:
    """In this process: one search of every base vector, its pairs saved to `out`, its figures
    printed as JSON."""
    vectors = np.array(np.load(vectors_path))
    start = _status_kib("VmRSS")
    began = time.perf_counter()
    search = per_query_rows if kind == "per-query" else candidates.radius_pair_rows
    a, b, s = search(vectors, list(range(len(vectors))), tau, max_neighbors)
    seconds = time.perf_counter() - began
    peak = _status_kib("VmHWM")
    np.savez(out, a=a, b=b, s=s)
    print(json.dumps({"seconds": seconds, "peak_above_mb": (peak - start) / 1024, "pairs": len(a)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph", type=Path, help="a graph store directory (base_vectors.npy)")
    parser.add_argument("--tau", type=float, default=DEFAULT_TAU["contextual"])
    parser.add_argument("--max-neighbors", type=int, default=30)
    parser.add_argument("--one", choices=("per-query", "blocks"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = args.graph / "base_vectors.npy"
    if args.one:
        run_one(args.one, path, args.out, args.tau, args.max_neighbors)
        return
    rows = np.load(path, mmap_mode="r").shape[0]
    how = "exact" if rows <= candidates.EXACT_PAIRS_MAX else "HNSW"
    print(f"{rows:,} base vectors ({how} search), tau {args.tau}, {args.max_neighbors} neighbours")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("per-query", "blocks"):
            out = Path(tmp) / f"{kind}.npz"
            command = [sys.executable, __file__, str(args.graph), "--one", kind, "--out", str(out)]
            command += ["--tau", str(args.tau), "--max-neighbors", str(args.max_neighbors)]
            done = subprocess.run(command, check=True, capture_output=True, text=True)
            results[kind] = json.loads(done.stdout.strip().splitlines()[-1])
            results[kind]["pairs_file"] = np.load(out)
            r = results[kind]
            print(
                f"  {kind:<10} {r['seconds']:7.1f} s  peak {r['peak_above_mb']:6.0f} MB above "
                f"the vectors  {r['pairs']:,} pairs"
            )
        old, new = results["per-query"]["pairs_file"], results["blocks"]["pairs_file"]
        same = all(np.array_equal(old[k], new[k]) for k in ("a", "b", "s"))
    base, now = results["per-query"], results["blocks"]
    print(f"same pairs: {same}")
    print(
        f"blocks / per-query: {now['seconds'] / base['seconds']:.2f}x the seconds, "
        f"{now['peak_above_mb'] / base['peak_above_mb']:.2f}x the peak above the vectors"
    )


if __name__ == "__main__":
    main()
