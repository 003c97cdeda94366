"""Alignment scaling: semantic-merge candidates by exact search (n^2) against HNSW (n log n).

Entity alignment pairs every base entity with its neighbours within cosine distance tau
(`graphseek.knowledge.graph.algorithms.candidates.radius_pairs`). The exact search compares every
pair, so a corpus ten times larger costs a hundred times more; above `EXACT_PAIRS_MAX` base entities
the build switches to an HNSW graph. This prints, per size, both searches' CPU seconds and the share
of the exact pairs the HNSW search finds (pairs of a fixed sample of query entities).

Vectors: the base-entity vectors of a graph index (the 2Wiki corpus's has 63K entities; build
it with ``benchmarks/retrieval.py --out DIR --graph``), and larger sets made from them:
copy c is the real set turned by its own random rotation, so each copy keeps the real set's
neighbourhoods and the copies are unrelated to each other (a corpus of many similar documents).
The exact search's time at a size is measured on `--sample` queries and scaled to all of them
(its cost per query is the same for every query: one pass over all vectors).

    .venv/bin/python benchmarks/alignment_scaling.py --index DIR [--copies 1,4,16]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from graphseek.knowledge.graph.algorithms.candidates import EXACT_PAIRS_MAX, radius_pairs

TAU = 0.25
MAX_NEIGHBORS = 10


def rotated_copies(vectors: np.ndarray, copies: int, seed: int = 0) -> np.ndarray:
    """`vectors`, then `copies - 1` copies each turned by its own random orthogonal matrix."""
    rng = np.random.default_rng(seed)
    parts = [vectors]
    for _ in range(copies - 1):
        rotation, _ = np.linalg.qr(rng.standard_normal((vectors.shape[1],) * 2))
        parts.append((vectors @ rotation.astype(np.float32)).astype(np.float32))
    return np.ascontiguousarray(np.vstack(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="a graph index directory")
    parser.add_argument("--copies", default="1,4,16", help="set sizes, as copies of the real set")
    parser.add_argument("--sample", type=int, default=2048, help="query entities for recall")
    args = parser.parse_args()
    path = args.index / "graph" / "base_vectors.npy"
    if not path.is_file():
        raise SystemExit(f"no base-entity vectors at {path}: build a graph index first")
    real = np.load(path).astype(np.float32)
    print(f"load average (1/5/15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(
        f"{len(real):,} base-entity vectors from {args.index}; tau {TAU}, "
        f"{MAX_NEIGHBORS} neighbours; the build searches exactly up to {EXACT_PAIRS_MAX:,}"
    )
    print(
        f"{'entities':>10} {'exact CPU s':>12} {'HNSW CPU s':>11} {'exact/HNSW':>10} "
        f"{'pairs found':>11}"
    )
    rng = np.random.default_rng(1)
    for copies in [int(c) for c in args.copies.split(",") if c.strip()]:
        data = rotated_copies(real, copies)
        n = len(data)
        sample = np.sort(rng.choice(n, size=min(args.sample, n), replace=False)).tolist()
        t = time.process_time()
        exact = radius_pairs(data, sample, TAU, MAX_NEIGHBORS, exact_max=n)
        exact_s = (time.process_time() - t) * n / len(sample)
        approx = radius_pairs(data, sample, TAU, MAX_NEIGHBORS, exact_max=0)
        found = len(set(exact) & set(approx)) / len(exact) if exact else 1.0
        t = time.process_time()
        radius_pairs(data, list(range(n)), TAU, MAX_NEIGHBORS, exact_max=0)
        hnsw_s = time.process_time() - t
        print(
            f"{n:>10,} {exact_s:>12.1f} {hnsw_s:>11.1f} {exact_s / hnsw_s:>9.1f}x "
            f"{100 * found:>10.1f}%",
            flush=True,
        )
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
