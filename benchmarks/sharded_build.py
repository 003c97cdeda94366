"""Sharded build benchmark: the single-process build against the sharded build on a local Dask
cluster, on the same passages (issue 27, item 2).

The first N passages of the 2Wiki corpus (default 800) are indexed with their graph
(`Index.build(..., graph=True)`, the defaults) twice, each build in a fresh child process so
both pay their model loads:

1. **single**: the build in one process (its offline extractor forks its own workers);
2. **sharded**: `Index.build(..., workers=W)`: a `distributed.LocalCluster` of W worker
   processes (one thread each) started and closed by the build; extraction, the passage pass and
   the passage embeddings run there as tasks over contiguous shards, the rest in the driver.

It prints both wall times and their ratio, the map stages' seconds (and shards), the peak RSS of
the building process and of its child processes (sampled every 0.2 s: the extraction workers of
the single build, the Dask workers and their nanny of the sharded one), the time to start and
close an idle cluster of W workers and their idle RSS, and whether the two indexes are the same
(passages, largest embedding difference, graph store files, manifest less timings).

    .venv/bin/python benchmarks/sharded_build.py [--n 800] [--workers 2] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "2wikimultihopqa/2wikimultihopqa_corpus.json"


def first_passages(data_dir: Path, n: int) -> list[Any]:
    """The first `n` passages of the 2Wiki corpus, in order."""
    from graphseek.knowledge.passages import Passage

    corpus = json.loads((data_dir / CORPUS).read_text())[:n]
    return [Passage.from_title_text(r["title"], r["text"], source="2wiki") for r in corpus]


class ChildRSS:
    """The largest summed RSS of this process's children, sampled on a thread."""

    def __init__(self, every: float = 0.2) -> None:
        import psutil

        self.me, self.every, self.peak, self.count = psutil.Process(), every, 0.0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        import psutil

        while not self.stop.wait(self.every):
            total, count = 0, 0
            for child in self.me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                    count += 1
                except psutil.Error:
                    continue
            if total / 2**20 > self.peak:
                self.peak, self.count = total / 2**20, count

    def close(self) -> tuple[float, int]:
        self.stop.set()
        self.thread.join()
        return round(self.peak, 1), self.count


def child(args: argparse.Namespace) -> None:
    """One build in this process; prints a JSON row."""
    from graphseek.knowledge.index import Index

    passages = first_passages(args.data_dir, args.n)
    sampler = ChildRSS()
    started = time.perf_counter()
    workers = args.workers if args.mode == "sharded" else None
    Index.build(passages, args.out, graph=True, show_progress=False, workers=workers)
    seconds = time.perf_counter() - started
    children_mb, children = sampler.close()
    timings = json.loads((args.out / "graph" / "manifest.json").read_text())["timings"]
    print(
        json.dumps(
            {
                "seconds": round(seconds, 1),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "children_peak_mb": children_mb,
                "children": children,
                "map": timings.get("map"),
                "extract_s": (timings.get("extract") or {}).get("seconds"),
                "passage_pass_s": (timings.get("embed_passages") or {}).get("seconds"),
            }
        )
    )


def idle_cluster(workers: int) -> dict[str, Any]:
    """Seconds to start and close a LocalCluster of `workers`, and its processes' idle RSS."""
    import psutil
    from distributed import Client, LocalCluster

    started = time.perf_counter()
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(workers)
        up = time.perf_counter() - started
        rss = [p.memory_info().rss / 2**20 for p in psutil.Process().children(recursive=True)]
        closing = time.perf_counter()
    return {
        "start_s": round(up, 1),
        "close_s": round(time.perf_counter() - closing, 1),
        "children_idle_mb": [round(r) for r in sorted(rss)],
    }


def run(mode: str, base: argparse.Namespace, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", mode, "--out", str(out), "--n", str(base.n)]
    cmd += ["--workers", str(base.workers), "--data-dir", str(base.data_dir)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{mode} build failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def same_index(a: Path, b: Path) -> dict[str, Any]:
    import numpy as np

    from graphseek.knowledge.index import Index

    one, two = Index.open(a), Index.open(b)

    def files(path: Path) -> dict[str, bytes]:
        return {
            p.relative_to(path).as_posix(): p.read_bytes()
            for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != "manifest.json"
        }

    def manifest(path: Path) -> dict[str, Any]:
        data = json.loads((path / "manifest.json").read_text())
        return {k: v for k, v in data.items() if k not in ("timings", "written")}

    ga, gb = files(a / "graph"), files(b / "graph")
    return {
        "passages_equal": one.passages == two.passages,
        "max_embedding_diff": float(np.abs(np.asarray(one.embeddings) - two.embeddings).max()),
        "graph_files_equal": ga == gb,
        "graph_manifest_equal": manifest(a / "graph") == manifest(b / "graph"),
        "bm25_files_equal": files(a / "bm25") == files(b / "bm25"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=800)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--child", choices=("single", "sharded"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.mode = args.child
        child(args)
        return
    root = Path(tempfile.mkdtemp(prefix="graphseek-sharded-"))
    try:
        print(f"{args.n} passages (2Wiki, in order), graph on; {os.cpu_count()} cores, load "
              f"average {os.getloadavg()[0]:.1f} at the start")  # fmt: skip
        cluster = idle_cluster(args.workers)
        print(f"idle LocalCluster of {args.workers}: start {cluster['start_s']} s, close "
              f"{cluster['close_s']} s, process RSS MB {cluster['children_idle_mb']}")  # fmt: skip
        single = run("single", args, root / "single")
        print(f"single   : {single['seconds']:7.1f} s  peak RSS {single['peak_rss_mb']} MB, "
              f"children {single['children_peak_mb']} MB ({single['children']} processes); "
              f"map stages: extract {single['extract_s']} s + passage pass "
              f"{single['passage_pass_s']} s")  # fmt: skip
        sharded = run("sharded", args, root / "sharded")
        mapped = sharded["map"] or {}
        print(f"sharded  : {sharded['seconds']:7.1f} s  peak RSS {sharded['peak_rss_mb']} MB, "
              f"children {sharded['children_peak_mb']} MB ({sharded['children']} processes); "
              f"map stages {mapped.get('seconds')} s over {mapped.get('shards')} shards on "
              f"{mapped.get('workers')} workers")  # fmt: skip
        print(f"ratio sharded / single: {sharded['seconds'] / single['seconds']:.2f}")
        print(f"same index: {same_index(root / 'single', root / 'sharded')}")
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
