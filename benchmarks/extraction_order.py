"""Whether a passage's offline extraction depends on the passages parsed before it.

Extracts N synthetic passages (`benchmarks/indexing.py`'s corpus) three ways: in one process
in corpus order, in one process in reverse order, and with 2 forked workers (which worker parses
which chunk is decided by timing). Prints, for the reversed and the forked run, how many
passages' extractions differ from the first run's and how many relation labels. A build is
reproducible only when both are 0 (before the lemma cache was keyed by POS, a verb's label
followed the first POS its process had seen for it).

    .venv/bin/python benchmarks/extraction_order.py --data-dir ../shared/data [--passages 3000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def differences(reference: list, other: list) -> tuple[int, int]:
    """(passages whose extractions differ, relation labels that differ) between two runs over
    the same passages, in the same order."""
    passages = labels = 0
    for a, b in zip(reference, other, strict=True):
        if a != b:
            passages += 1
            first = sorted((r.source, r.target, r.label) for r in a.relations)
            second = sorted((r.source, r.target, r.label) for r in b.relations)
            labels += len(set(first) ^ set(second))
    return passages, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--passages", type=int, default=3000)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from indexing import synthetic

    from graphseek.knowledge.graph.offline import OfflineExtractor

    passages = synthetic(args.data_dir, args.passages)
    runs = {}
    for name, processes, order in (
        ("one process, in order", 1, 1),
        ("one process, reversed", 1, -1),
        ("2 forked workers", 2, 1),
    ):
        start = time.perf_counter()
        out = OfflineExtractor(n_process=processes).extract(passages[::order])
        runs[name] = out[::order]
        seconds = time.perf_counter() - start
        print(f"{name:24s} {seconds:7.1f} s", flush=True)
    reference = runs["one process, in order"]
    print(f"{args.passages} passages: differences from one process in corpus order")
    for name in ("one process, reversed", "2 forked workers"):
        passages, labels = differences(reference, runs[name])
        print(f"  {name:24s} passages {passages:5d}   relations {labels:5d}")


if __name__ == "__main__":
    main()
