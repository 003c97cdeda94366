"""Delta add benchmark: does adding passages to a graph store touching only what they reach (the
delta add, `add_passages(..., delta=True)`) keep retrieval equal to a full build?

On the 2Wiki corpus (the passages `benchmarks/graph_retrieval.py` loads, deduplicated, in order),
K passages are held out by a seeded random sample (``random.Random(0)``, ``--held``, default 300):
a sample of the corpus, never chosen by looking at the questions. Two directory indexes with
their graph (`Index.build(..., graph=True)`, the defaults) are built, each in a fresh child
process, and cached under ``$GRAPHSEEK_CACHE_DIR/delta-recall/`` (reused when they hold the
expected passages and a graph; ``--fresh`` rebuilds them):

1. **full**: every passage;
2. **base**: every passage but the K held out.

``--prepare`` builds them (printing each build's wall seconds); ``--run`` (the default when both
are cached) then, for each add mode of ``--modes`` (default ``exact,delta``), in a fresh child
process, copies **base** to a temporary directory and adds the K passages
(``Index.open(copy).add_documents(held_out, graph_options=...)``: ``{}`` for **exact**, today's
add, which writes the store a full build of base + held out writes; ``{"delta": True}`` for
**delta**), recording the add's wall seconds (open and add), its peak RSS (``ru_maxrss`` of the
child, read right after the add) and the graph manifest's counts, then computes Recall@2/@5 of
every retriever (`benchmarks/sharded_build.py`'s `recall_rows`: `graphseek.tools.retrievers`,
questions, gold titles and Recall@k as `benchmarks/graph_retrieval.py` computes them) on the dev
slice (``--questions 0:200``). **full** is evaluated the same way, in this process. It prints
the graph counts of each index, a table per index, and each add mode's R@5 difference against
**full** in points (target: within 0.3). The held-out passages are appended after the base's, so
even the exact add orders passages (and ties) differently from **full**, which keeps corpus order.

    .venv/bin/python benchmarks/delta_add.py --prepare [--held 300] [--fresh]
    .venv/bin/python benchmarks/delta_add.py [--run] [--modes exact,delta] [--held 300]
        [--questions 0:200] [--data-dir DIR]

``--n N`` uses only the first N passages (a quick trial; the caches are kept per N and K), e.g.
``--prepare --run --n 300 --held 30 --modes exact``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from graph_retrieval import Slice, load_2wiki, parse_slice  # noqa: E402
from sharded_build import (  # noqa: E402
    METHODS,
    graph_manifest,
    print_recall_tables,
    recall_rows,
)

MODES = {"exact": {}, "delta": {"delta": True}}
"""Each add mode's `graph_options` for `Index.add_documents`."""
SEED = 0
TARGET_POINTS = 0.3
"""An add's Recall@5 on the 2Wiki dev slice within this many points of the full build's."""


# -- the corpus, the held-out sample and the cached builds --------------------------------------


def corpus(args: argparse.Namespace) -> Slice:
    """The 2Wiki slice (questions `args.questions`), its passages cut to the first `args.n`."""
    sl = load_2wiki(args.data_dir / "2wikimultihopqa", parse_slice(args.questions))
    return replace(sl, passages=sl.passages[: args.n or None])


def split(passages: list[Any], k: int) -> tuple[list[Any], list[Any]]:
    """(base, held out): `k` passages sampled by `random.Random(SEED)`, both in corpus order."""
    if not 0 < k < len(passages):
        sys.exit(f"--held {k}: must be between 1 and {len(passages) - 1}")
    held = set(random.Random(SEED).sample(range(len(passages)), k))
    base = [p for i, p in enumerate(passages) if i not in held]
    return base, [p for i, p in enumerate(passages) if i in held]


def cache_dir(args: argparse.Namespace) -> Path:
    from graphseek.evaluation.index_cache import default_index_dir

    return default_index_dir().parent / "delta-recall" / (f"n{args.n}" if args.n else "all")


def store_path(args: argparse.Namespace, store: str) -> Path:
    """Where the build `store` ("full" or "base") is cached; base is keyed by K and the seed."""
    name = "full" if store == "full" else f"base-held{args.held}-seed{SEED}"
    return cache_dir(args) / name


def wanted(args: argparse.Namespace, store: str) -> list[Any]:
    passages = corpus(args).passages
    return passages if store == "full" else split(passages, args.held)[0]


def complete(path: Path, passages: list[Any]) -> bool:
    """Whether `path` holds an index of exactly `passages` (in order) with its graph."""
    from graphseek.knowledge.index import Index

    try:
        index = Index.open(path)
    except Exception:
        return False
    return index.has_graph and [p.id for p in index.passages] == [p.id for p in passages]


def source_state() -> dict[str, Any]:
    """The commit and the state of graphseek/ this process runs (others edit it meanwhile): the
    changed files and a digest of their changes (equal digests: the same code)."""
    import hashlib

    def git(*cmd: str) -> str:
        done = subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True)
        return done.stdout

    changed = git("status", "--porcelain", "--untracked-files=all", "--", "graphseek")
    digest = hashlib.sha1(git("diff", "HEAD", "--", "graphseek").encode())
    for line in changed.splitlines():
        path = ROOT / line[3:]
        if line.startswith("??") and path.is_file():
            digest.update(path.read_bytes())
    return {
        "commit": git("rev-parse", "--short", "HEAD").strip(),
        "graphseek_changed": changed.splitlines(),
        "graphseek_digest": digest.hexdigest()[:10] if changed else "clean",
    }


def build_child(args: argparse.Namespace) -> dict[str, Any]:
    """Build `args.store` into the cache; its seconds and peak RSS (also kept beside it)."""
    from graphseek.knowledge.index import Index

    state = source_state()  # before the build reads graphseek/ (others edit it meanwhile)
    passages = wanted(args, args.store)
    target = store_path(args, args.store)
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    Index.build(passages, target, graph=True, show_progress=False)
    row = {
        "store": args.store,
        "passages": len(passages),
        "build_s": round(time.perf_counter() - started, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        **state,
    }
    target.with_suffix(".build.json").write_text(json.dumps(row, indent=1) + "\n")
    return row


def prepare(args: argparse.Namespace) -> None:
    for store in ("full", "base"):
        path = store_path(args, store)
        if not args.fresh and complete(path, wanted(args, store)):
            print(f"{store:5}: reusing {path} ({recorded(path)})", flush=True)
            continue
        started = time.perf_counter()
        row = child(args, ["--child", "build", "--store", store])
        print(f"{store:5}: built {row['passages']} passages in {row['build_s']} s (child wall "
              f"{time.perf_counter() - started:.1f} s, peak RSS {row['peak_rss_mb']} MB) -> "
              f"{path}", flush=True)  # fmt: skip


def record(path: Path) -> dict[str, Any]:
    """The build's record beside `path` (`build_child`), or {}."""
    try:
        return dict(json.loads(path.with_suffix(".build.json").read_text()))
    except (OSError, ValueError):
        return {}


def recorded(path: Path) -> str:
    """What the build's record beside `path` says, in a few words."""
    row = record(path)
    if not row:
        return "no build record"
    return (f"built in {row['build_s']} s, peak RSS {row['peak_rss_mb']} MB, {row['finished']}, "
            f"{code(row)}")  # fmt: skip


def code(row: dict[str, Any]) -> str:
    """The code a row's process ran, in a few words (`source_state`)."""
    changed = len(row.get("graphseek_changed") or [])
    digest = row.get("graphseek_digest", "?")
    return f"code {row.get('commit')}+{changed} changed files under graphseek/ (digest {digest})"


# -- the adds and the recall --------------------------------------------------------------------


def add_child(args: argparse.Namespace) -> dict[str, Any]:
    """Copy base, add the held-out passages in `args.mode`; the add's figures and the recall
    table of the result."""
    state = source_state()
    from graphseek.knowledge.index import Index

    sl = corpus(args)
    _, held = split(sl.passages, args.held)
    work = Path(tempfile.mkdtemp(prefix="graphseek-delta-"))
    try:
        copy = work / "index"
        shutil.copytree(store_path(args, "base"), copy)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        index = Index.open(copy).add_documents(held, graph_options=MODES[args.mode])
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        manifest = graph_manifest(index)
        same = sorted(p.id for p in index.passages) == sorted(p.id for p in sl.passages)
        started = time.perf_counter()
        rows = recall_rows(index, sl)
        return {
            "add_s": round(seconds, 1),
            "peak_rss_mb": round(peak),
            "rss_before_mb": round(rss_before),
            "passages": len(index),
            "same_passages_as_full": same,
            "counts": manifest.get("counts") or {},
            "stages": stage_seconds(manifest, args.mode),
            "recall_s": round(time.perf_counter() - started, 1),
            "rows": rows,
            **state,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stage_seconds(manifest: dict[str, Any], mode: str) -> dict[str, Any]:
    """The seconds of each stage the add timed, from the graph manifest: a delta add keeps its
    own under ``delta.timings`` (leaving the base build's ``timings`` as they were)."""
    timings = manifest.get("timings") or {}
    if mode == "delta":
        timings = (manifest.get("delta") or {}).get("timings") or {}
    return {k: v["seconds"] for k, v in timings.items() if isinstance(v, dict) and "seconds" in v}


def child(args: argparse.Namespace, extra: list[str]) -> dict[str, Any]:
    """This script in a fresh child process with `extra` arguments; its JSON row (exits when
    it fails)."""
    row = try_child(args, extra)
    if "error" in row:
        sys.exit(row["error"])
    return row


def try_child(args: argparse.Namespace, extra: list[str]) -> dict[str, Any]:
    """This script in a fresh child process; its JSON row, or {"error": ...} when it failed."""
    cmd = [sys.executable, __file__, *extra, "--held", str(args.held), "--n", str(args.n)]
    cmd += ["--questions", args.questions, "--data-dir", str(args.data_dir)]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": f"{' '.join(extra)} failed after {time.perf_counter() - started:.0f} s:"
                         f"\n{done.stderr[-3000:]}"}  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run(args: argparse.Namespace) -> None:
    from graphseek.knowledge.index import Index

    sl = corpus(args)
    now = source_state()
    print(f"now  : {code(now)}")
    for store in ("full", "base"):
        print(f"{store:5}: {store_path(args, store)} ({recorded(store_path(args, store))})")
    key = ("commit", "graphseek_digest")
    if any([record(store_path(args, s)).get(k) for k in key] != [now[k] for k in key]
           for s in ("full", "base")):  # fmt: skip
        print("WARNING: full or base was built with other code than this run's (or unknown): "
              "differences may come from the code, not the add; rebuild them with "
              "--prepare --fresh", flush=True)  # fmt: skip
    full = Index.open(store_path(args, "full"))
    counts = {"full": graph_manifest(full).get("counts") or {}}
    started = time.perf_counter()
    tables = {"full": recall_rows(full, sl)}
    print(f"recall of full in {time.perf_counter() - started:.0f} s", flush=True)
    for mode in args.modes:
        row = try_child(args, ["--child", "add", "--mode", mode])
        if "error" in row:
            print(f"{mode:5}: {row['error']}", flush=True)
            continue
        print(f"{mode:5}: add of {args.held} passages {row['add_s']} s, peak RSS "
              f"{row['peak_rss_mb']} MB ({row['rss_before_mb']} MB before the add), "
              f"{row['passages']} passages, the same as full: {row['same_passages_as_full']}; "
              f"recall in {row['recall_s']} s; {code(row)}", flush=True)  # fmt: skip
        print(f"       graph stages (s): {json.dumps(row['stages'])}")
        counts[f"{mode}-added"] = row["counts"]
        tables[f"{mode}-added"] = row["rows"]
    report(counts, tables)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


def report(counts: dict[str, dict[str, Any]], tables: dict[str, dict[str, Any]]) -> None:
    """The graph counts side by side, each index's table, then each add's R@5 against full."""
    keys = [k for k in counts["full"] if k != "relations_by_kind"]
    print(f"\n{'graph counts':22}" + "".join(f"{name:>14}" for name in counts))
    for key in keys:
        print(f"{key:22}" + "".join(f"{str(c.get(key, '-')):>14}" for c in counts.values()))
    print_recall_tables(tables)
    full = tables["full"]
    for name, added in tables.items():
        if name == "full":
            continue
        print(f"\nR@5, {name} vs full (target: within {TARGET_POINTS} points):")
        for method in METHODS:
            points = 100 * (added[method]["R@5"] - full[method]["R@5"])
            r2 = 100 * (added[method]["R@2"] - full[method]["R@2"])
            met = "met" if abs(points) <= TARGET_POINTS + 1e-9 else "NOT met"
            print(f"{method:12} {added[method]['R@5']:6.3f} vs {full[method]['R@5']:6.3f}  "
                  f"difference {points:+.1f} points  {met}  (R@2 {r2:+.1f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepare", action="store_true", help="build full and base (cached)")
    parser.add_argument("--run", action="store_true", help="the adds and the recall")
    parser.add_argument("--modes", default="exact,delta", help="add modes: exact,delta")
    parser.add_argument("--held", type=int, default=300, help="passages held out (default 300)")
    parser.add_argument("--n", type=int, default=0, help="first N passages only (a trial)")
    parser.add_argument("--questions", default="0:200", help="the 2Wiki question slice")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--fresh", action="store_true", help="--prepare rebuilds cached builds")
    parser.add_argument("--child", choices=("build", "add"), help=argparse.SUPPRESS)
    parser.add_argument("--store", choices=("full", "base"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=tuple(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        row = build_child(args) if args.child == "build" else add_child(args)
        print(json.dumps(row))
        return
    args.modes = [m for m in args.modes.split(",") if m]
    unknown = sorted(set(args.modes) - set(MODES))
    if unknown:
        sys.exit(f"--modes: unknown {', '.join(unknown)} (choose from {', '.join(MODES)})")
    print(f"2Wiki: {len(corpus(args).passages)} passages, {args.held} held out (seed {SEED}), "
          f"questions {args.questions}; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    if args.prepare:
        prepare(args)
    if args.run or not args.prepare:
        stores = ("full", "base")
        missing = [s for s in stores if not complete(store_path(args, s), wanted(args, s))]
        if missing:
            sys.exit(f"not built yet: {', '.join(missing)}; run with --prepare first")
        run(args)


if __name__ == "__main__":
    main()
