"""Alignment's radius search: its candidate pairs kept per block of queries, against per query.

`radius_pair_rows` finds every base entity's neighbours within the merge radius (an exact
search up to `EXACT_PAIRS_MAX` base entities, an HNSW graph above) and keeps each query's
nearest others. Until f2c8217 it kept them as three small arrays per query (157,601 queries at
a 100,000-passage build); `nearest_others` now keeps a few arrays per block of queries. This
runs both, each in a fresh process, on the base vectors of a graph store (`base_vectors.npy`,
every base entity a query, as a build's alignment), and prints their seconds, their peak RSS
above the vectors held, whether their pairs are the same, and the ratios.

    .venv/bin/python benchmarks/radius_search.py $GRAPHSEEK_CACHE_DIR/fresh27/bench-add/synthetic-100000/graph

``--graphs N``: instead, how many of the exact pairs of N sampled queries (each query's
`--max-neighbors` nearest within the radius) the HNSW search finds, with the graph the build
makes (`candidates.hnsw_graph`: added `HNSW_ADD_ROWS` rows at a time, the upper levels first)
against one FAISS add of every row (in row order, and in two shuffled orders: how much the
share moves with the order the graph is built in alone).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.graph.algorithms import candidates
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


def graph_recall(vectors_path: Path, sample: int, tau: float, max_neighbors: int) -> None:
    """Prints each graph's share of the exact pairs of `sample` random queries (`--graphs`)."""
    import faiss

    x = np.ascontiguousarray(np.load(vectors_path), dtype=np.float32)
    n, k, threshold = len(x), max_neighbors + 1, 1.0 - tau - 1e-6
    queries = np.sort(np.random.default_rng(1).choice(n, min(sample, n), replace=False))

    def pairs(rows: np.ndarray, found: np.ndarray, sims: np.ndarray) -> set[tuple[int, int]]:
        keep = (found >= 0) & (sims >= threshold) & (found != rows[:, None])
        a = np.repeat(rows, keep.sum(axis=1))
        b = found[keep]
        return set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist(), strict=True))

    flat = faiss.IndexFlatIP(x.shape[1])
    flat.add(x)
    sims, found = flat.search(x[queries], k)
    exact = pairs(queries, found, sims)
    del flat
    print(f"{n:,} base vectors; {len(exact):,} exact pairs of {len(queries):,} queries")

    def share(name: str, index: Any, row_of: np.ndarray) -> float:
        index.hnsw.efSearch = max(candidates.HNSW_SEARCH_DEPTH, k)
        sims, found = index.search(x, k)
        found = np.where(found >= 0, row_of[np.maximum(found, 0)], -1)
        got = len(exact & pairs(np.arange(n), found, sims)) / len(exact)
        print(f"  {name:<44} {100 * got:6.2f}% of the exact pairs")
        return got

    singles = []
    for seed in (None, 1, 2):
        order = np.arange(n) if seed is None else np.random.default_rng(seed).permutation(n)
        index = faiss.IndexHNSWFlat(x.shape[1], candidates.HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = candidates.HNSW_BUILD_DEPTH
        index.add(x[order])
        name = "one add, row order" if seed is None else f"one add, shuffled (seed {seed})"
        singles.append(share(name, index, order))
    built = share(
        f"hnsw_graph ({candidates.HNSW_ADD_ROWS:,} rows an add)", *candidates.hnsw_graph(x)
    )
    print(f"hnsw_graph / one add (mean of the three): {built / np.mean(singles):.4f}x")


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
    parser.add_argument(
        "--graphs", type=int, metavar="N", help="the HNSW graphs' share of N queries' exact pairs"
    )
    parser.add_argument("--one", choices=("per-query", "blocks"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    path = args.graph / "base_vectors.npy"
    if args.graphs:
        graph_recall(path, args.graphs, args.tau, args.max_neighbors)
        return
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
