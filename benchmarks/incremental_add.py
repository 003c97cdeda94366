"""Incremental add benchmark: adding a few passages to a store of N passages, against its build.

For each size N it builds (or reuses, under ``$GRAPHSEEK_CACHE_DIR/bench-add``) a directory
index with its graph over `benchmarks/indexing.py`'s synthetic corpus (the 2Wiki corpus in order,
copies retitled), then, in a fresh child process each (so model loads and peak RSS are the
add's own), copies it to a temporary directory and calls ``index.add_documents`` with
``--add`` new passages (2Wiki passages retitled ``"<title> [add]"``: new ids, names the store
already knows, as a user's next document would be). It prints:

- the add's wall seconds, its peak RSS, and its ratio to the store's build time (the baseline,
  measured in this run unless the store came from the cache, when the build time recorded in
  its manifest is used and the row says so);
- where the add's time goes: the graph stages the manifest times (extraction and the passage
  pass over the new passages only; alignment, linking, hyperedges and topics over all of them),
  and the rest (reading the store back, model loads, writing the graph store and the index);
- a line fit of add seconds over N (at least two sizes) and its value at 100,000 passages
  beside issue 27's target (adding 100 passages to a 100K store in 30 s or less);
- with ``--delta``, the same for the delta add (`add_passages(..., delta=True)`: only what the
  new passages reach changes; its stages are timed in the manifest's ``delta`` section), then a
  second delta add of the next ``--add`` passages into the grown copy (the "next add" row: what
  a store pays once, such as its HNSW graph when it passes 100,000 passages, is paid by the
  first);
- with ``--parts``, where "the rest" goes: the wall seconds of the functions an add passes
  through outside the timed stages (reading the store back, writing the graph store and the
  index files), each wrapped by a timer in the child.

    .venv/bin/python benchmarks/incremental_add.py [--sizes 1000,3000] [--add 100] [--fresh]
        [--repeat 3] [--parts] [--delta]
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
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from indexing import CORPUS, synthetic  # noqa: E402

TARGET_N = 100_000
TARGET_S = 30.0
#: stages of the graph manifest's timings, in build order
STAGES = (
    "extract",
    "embed_passages",
    "align",
    "link_entities",
    "link_passages",
    "embed",
    "hyperedges_topics",
    "copy_wait",
    "write",
)


#: (module, attribute path, what it is) of the functions ``--parts`` times, in the add's order
PARTS = (
    ("graphseek.knowledge.graph.build", "extract", "extraction of the new passages"),
    ("graphseek.knowledge.graph.build", "cache_from_store", "the vector cache read back"),
    (
        "graphseek.knowledge.graph.memory.spool",
        "ExtractionSpool.of",
        "the stored extractions spooled",
    ),
    ("graphseek.knowledge.graph.build", "new_passage_pass", "passage pass of the new passages"),
    ("graphseek.knowledge.graph.build", "assemble", "alignment, linking, vectors, topics"),
    ("graphseek.knowledge.graph.build", "write", "the graph store written"),
    ("graphseek.knowledge.graph.store.writer", "_write_arrays", "  of which vectors, matrices"),
    ("graphseek.knowledge.graph.delta", "delta_add", "the delta add (copy, change, write)"),
    ("graphseek.knowledge.graph.delta", "_apply", "  of which the changes (not the copy)"),
    ("graphseek.knowledge.graph.stages.link", "match_links", "    of which the matcher"),
    ("graphseek.knowledge.index", "_write_stores", "the index files written"),
    ("graphseek.knowledge.sparse", "BM25Index.build", "  of which BM25 rebuilt"),
)


def time_parts() -> dict[str, float]:
    """Wrap each of `PARTS` with a timer; the returned dict fills in as they run."""
    import functools
    import importlib

    spent: dict[str, float] = {}
    for module, attribute, label in PARTS:
        owner: Any = importlib.import_module(module)
        *path, name = attribute.split(".")
        for step in path:
            owner = getattr(owner, step)
        fn = getattr(owner, name)

        def timed(*a: Any, _fn: Any = fn, _label: str = label, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                spent[_label] = spent.get(_label, 0.0) + time.perf_counter() - started

        # a classmethod is taken bound and set back as a plain function: called on its class
        setattr(owner, name, functools.wraps(fn)(timed))
    return spent


def store_dir(n: int) -> Path:
    from graphseek.evaluation.index_cache import default_index_dir

    return default_index_dir().parent / "bench-add" / f"synthetic-{n}"


def build_child(n: int, data_dir: Path) -> dict[str, Any]:
    """Build the store of size `n` into the cache; its wall seconds."""
    from graphseek.knowledge.index import Index

    target = store_dir(n)
    target.parent.mkdir(parents=True, exist_ok=True)
    passages = synthetic(data_dir, n)
    started = time.perf_counter()
    Index.build(passages, target, graph=True, show_progress=False)
    return {"build_s": time.perf_counter() - started}


def add_child(
    n: int, k: int, data_dir: Path, parts: bool = False, delta: bool = False
) -> dict[str, Any]:
    """Copy the store of size `n` and add `k` new passages (with `delta`, as a delta add);
    the add's figures (with `parts`, the seconds of each of `PARTS`). With `delta`, a second
    add of the next `k` passages follows on the same copy, in the same process (``"next"``):
    the first add into a store pays what a store does once (its HNSW graph when it crosses
    `HNSW_THRESHOLD` passages; the matcher's common words when it was built before they were
    kept), the next shows an add into a store that has them."""
    spent = time_parts() if parts else {}
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.passages import Passage

    corpus = json.loads((data_dir / CORPUS).read_text())
    batches = [
        [
            Passage.from_title_text(f"{r['title']} [add]", r["text"], source="added")
            for r in corpus[start : start + k]
        ]
        for start in ((0, k) if delta else (0,))
    ]
    work = Path(tempfile.mkdtemp(prefix="graphseek-add-"))
    try:
        copy = work / "index"
        shutil.copytree(store_dir(n), copy)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        rows = []
        for new in batches:
            spent.clear()
            started = time.perf_counter()
            index = Index.open(copy)
            index.add_documents(new, graph_options={"delta": True} if delta else None)
            wall = time.perf_counter() - started
            manifest = json.loads((copy / "graph" / "manifest.json").read_text())
            timings = (manifest.get("delta") or {}).get("timings") if delta else None
            timings = timings or manifest.get("timings", {})
            rows.append(
                {
                    "add_s": wall,
                    "passages_after": len(index),
                    "stages": {s: timings[s]["seconds"] for s in STAGES if s in timings},
                    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                    "rss_before_mb": rss_before,
                    "parts": {
                        label: round(spent[label], 1) for _, _, label in PARTS if label in spent
                    },
                }
            )
        first = rows[0]
        if len(rows) > 1:
            first["next"] = rows[1]
        return first
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_child(mode: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    command = (
        [
            sys.executable,
            __file__,
            "--child",
            mode,
            "--n",
            str(n),
            "--add",
            str(args.add),
            "--data-dir",
            str(args.data_dir),
        ]
        + (["--parts"] if args.parts else [])
        + (["--delta"] if args.delta else [])
    )
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} child for N={n} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def line_fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least-squares a + b*N over `points`."""
    import numpy as np

    xs = np.array([p[0] for p in points], dtype=float)
    ys = np.array([p[1] for p in points], dtype=float)
    b, a = np.polyfit(xs, ys, 1)
    return float(a), float(b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000")
    parser.add_argument("--add", type=int, default=100, help="passages added (default 100)")
    parser.add_argument("--fresh", action="store_true", help="rebuild cached stores")
    parser.add_argument(
        "--repeat", type=int, default=1, help="add runs per size, the fastest kept (default 1)"
    )
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument(
        "--parts", action="store_true", help="time the functions outside the stages too"
    )
    parser.add_argument(
        "--delta",
        action="store_true",
        help="add as a delta (`graph_options={'delta': True}`) instead of the exact add",
    )
    parser.add_argument("--child", choices=["build", "add"], help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "build":
        print(json.dumps(build_child(args.n, args.data_dir)))
        return
    if args.child == "add":
        print(json.dumps(add_child(args.n, args.add, args.data_dir, args.parts, args.delta)))
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        target = store_dir(n)
        cached = (target / "manifest.json").exists() and not args.fresh
        if cached:
            build_s = float(json.loads((target / "manifest.json").read_text())["build_seconds"])
        else:
            shutil.rmtree(target, ignore_errors=True)
            build_s = run_child("build", n, args)["build_s"]
        tries = [run_child("add", n, args) for _ in range(max(1, args.repeat))]
        row = min(tries, key=lambda t: t["add_s"])
        row["tries_s"] = [round(t["add_s"], 1) for t in tries]
        row.update(n=n, build_s=build_s, cached=cached)
        rows.append(row)
        print(json.dumps(row), flush=True)

    kind = "a delta add" if args.delta else "the exact add"
    print(
        f"\nAdding {args.add} passages to a store of N passages (directory index with its "
        f"graph; {kind})"
    )
    head = f"{'N':>7} {'build s':>9} {'add s':>7} {'add/build':>9} {'peak MB':>8}  "
    print(head + " ".join(f"{s[:9]:>9}" for s in STAGES) + f" {'rest':>6}")
    for r in rows:
        staged = sum(r["stages"].values())
        mark = "*" if r["cached"] else " "
        print(
            f"{r['n']:>7} {r['build_s']:>8.1f}{mark} {r['add_s']:>7.1f} "
            f"{r['add_s'] / r['build_s']:>9.2f} {r['peak_rss_mb']:>8.0f}  "
            + " ".join(f"{r['stages'].get(s, 0.0):>9.1f}" for s in STAGES)
            + f" {r['add_s'] - staged:>6.1f}"
        )
    if any(r["cached"] for r in rows):
        print("* build time recorded when the cached store was built (another run, maybe load)")
    for r in rows:
        if "next" in r:
            x = r["next"]
            staged = sum(x["stages"].values())
            print(
                f"{r['n'] + args.add:>7} {'next add':>9} {x['add_s']:>7.1f} {'':>9} "
                f"{x['peak_rss_mb']:>8.0f}  "
                + " ".join(f"{x['stages'].get(s, 0.0):>9.1f}" for s in STAGES)
                + f" {x['add_s'] - staged:>6.1f}"
            )
    for r in rows:
        for name, row in (("", r), (" (next add)", r.get("next") or {})):
            if row.get("parts"):
                size = r["n"] + (args.add if name else 0)
                print(
                    f"\nwhere the add into N={size:,}{name} goes (wall seconds; stages included):"
                )
                for label, seconds in row["parts"].items():
                    print(f"  {label:<40} {seconds:>7.1f}")
    for r in rows:
        if r["n"] != TARGET_N or args.add != 100:
            continue
        adds = [("the add", r["add_s"])]
        if "next" in r:
            adds = [("the first add", r["add_s"]), ("the next add", r["next"]["add_s"])]
        for label, seconds in adds:
            met = "met" if seconds <= TARGET_S else "not met"
            print(
                f"\ntarget: 100 passages into a {TARGET_N:,}-passage store in {TARGET_S:.0f} s "
                f"or less ({kind}, {label}): {seconds:.1f} s, {met}"
            )
    if len(rows) >= 2:
        a, b = line_fit([(r["n"], r["add_s"]) for r in rows])
        if b <= 0:
            print(
                f"\nfit: add s = {a:.1f} + {b * 1000:.2f} per 1,000 passages of the store: no "
                "growth measurable between these sizes (fixed costs and the host's load dominate); "
                "measure larger stores to extrapolate"
            )
            return
        at = a + b * TARGET_N
        print(
            f"\nfit: add s = {a:.1f} + {b * 1000:.2f} per 1,000 passages of the store; "
            f"at {TARGET_N:,}: {at:.0f} s (target <= {TARGET_S:.0f} s: "
            f"{'met' if at <= TARGET_S else 'not met'})"
        )


if __name__ == "__main__":
    main()
