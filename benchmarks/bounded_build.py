"""Bounded-build benchmark: a graph build's peak RSS per stage, and the same store as a baseline's.

For each size N it builds the offline graph of N synthetic passages (`benchmarks/indexing.py`'s:
the 2Wiki corpus repeated, copies retitled) with `build_graph`, in a fresh child process (so the
peak RSS is the build's own), and prints each stage's seconds and the process's peak RSS at the
stage's end (from the graph manifest's `timings`), the whole run's peak (VmHWM: the write
included), and the growth of the peak between sizes (MB per 1,000 passages; issue 27's target is
4 GB at 100,000 passages and no growth beyond the stores).

``--phases`` also samples the RSS every 50 ms and prints it by step (`reduce_stages.py`'s
steps, with the extraction and the passage pass): where inside a build its peak is (for the
baseline too: this script's child runs on the baseline's code).

``--against REV`` builds each size a second time from a git worktree of REV (the baseline, in
the same run) and checks that the two stores are the same: every file byte for byte, and the
manifest less its timings and write time. It prints both builds' peaks side by side.

``--memory-budget SIZE`` builds each size a second time with that budget (this checkout:
`graphseek.knowledge.graph.memory.budget` picks fewer extraction processes, encoder threads or a
smaller write cache), prints the settings it chose and its estimate, checks that the store is
the default build's (the manifest less its ``memory`` section too), and prints both builds'
peaks side by side.

    .venv/bin/python benchmarks/bounded_build.py [--sizes 2000,10000] [--against 1783b93]
        [--memory-budget 1.2G] [--keep DIR] [--phases]

``--keep DIR`` keeps every store it builds there (``store-N``, ``budget-N``, ``baseline-N``).

``--one N --out DIR --log FILE`` builds N passages in this process, for a run too long to wait
for (1M passages: hours): the log gets a line a minute (the step, the RSS, the workers' memory,
``TMPDIR``'s free space) and the stage bars go to stderr; the JSON line at the end as above.
With ``--index`` it runs the whole ``Index.build(..., graph=True)`` into DIR (what ``graphseek
index`` runs): the graph, then the passage index (BM25, the dense index), whose steps
(``_write_stores``, ``build`` of each) are among the phases.

    nohup nice -n 19 .venv/bin/python benchmarks/bounded_build.py --one 1000000 \
        --out /big/store-1M --log build-1M.log 2> build-1M.bars &

The forked extraction workers are not counted in the peak (VmHWM); "build's peak" adds, at
each 0.2 s sample, their private memory (``/proc/PID/smaps_rollup``) to the build process's
resident memory, which is what a budget counts.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]


def _rollup_mb(pid: int | str) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, value = line.partition(":")
                if value.strip().endswith("kB"):
                    out[key] = int(value.split()[0]) // 1024
    except OSError:
        pass
    return out


def children_private_mb(pid: int) -> dict[str, int]:
    """The private memory (``Private_Clean`` + ``Private_Dirty``, MB) of each child of `pid`
    (the forked extraction workers), by child pid."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    out: dict[str, int] = {}
    for child in children:
        mine = _rollup_mb(child)
        out[child] = mine.get("Private_Clean", 0) + mine.get("Private_Dirty", 0)
    return out


class TreeSampler:
    """The most this process's resident memory and its children's private memory (the
    forked extraction workers) reached together, sampled every 0.2 s."""

    def __init__(self) -> None:
        import threading

        self.peak_mb = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        me = os.getpid()
        while not self.stop.wait(0.2):
            total = _rollup_mb(me).get("Rss", 0) + sum(children_private_mb(me).values())
            self.peak_mb = max(self.peak_mb, total)

    def close(self) -> int:
        self.stop.set()
        self.thread.join()
        return self.peak_mb


def log_progress(log: Path, sampler: Any, every: float = 60.0) -> None:
    """Append a line to `log` every `every` seconds and whenever the step changes, from a
    daemon thread: the time, the minutes since the start, the step `sampler` (a
    `PhaseSampler`) is in, the passages extracted so far (counted at the extraction spool),
    this process's RSS, its forked workers' private memory and the free space of ``TMPDIR``
    (where the build spools). For a build too long to wait for (``--log``): how far it got
    and what it held."""
    import threading

    from graphseek.knowledge.graph.memory.spool import ExtractionSpool

    extracted = [0]
    extend = ExtractionSpool.extend

    def counted(spool: ExtractionSpool, extractions: Any) -> None:
        extend(spool, extractions)
        extracted[0] = len(spool)

    setattr(ExtractionSpool, "extend", counted)  # noqa: B010 (a method replaced on the class)
    started = time.perf_counter()
    spool = tempfile.gettempdir()

    def run() -> None:
        last, written = "", 0.0
        while True:
            time.sleep(2.0)
            if sampler.phase == last and time.perf_counter() - written < every:
                continue
            last, written = sampler.phase, time.perf_counter()
            me = os.getpid()
            rss = _rollup_mb(me).get("Rss", 0)
            workers = sum(children_private_mb(me).values())
            free_gb = shutil.disk_usage(spool).free / 2**30
            minutes = (time.perf_counter() - started) / 60
            line = (
                f"{time.strftime('%H:%M:%S')} {minutes:7.1f} min  step {last:<28} "
                f"extracted {extracted[0]:,}  RSS {rss:,} MB  workers {workers:,} MB  "
                f"TMPDIR free {free_gb:.1f} GB\n"
            )
            with open(log, "a") as f:
                f.write(line)

    threading.Thread(target=run, daemon=True).start()


def child(
    size: int,
    out: Path,
    data_dir: Path,
    phases: bool = False,
    budget: str | None = None,
    log: Path | None = None,
    index: bool = False,
) -> None:
    """Build in this process and print one JSON line: seconds, peak RSS, stage timings (with
    `phases`, the RSS by step: `reduce_stages.PhaseSampler`, the map stages included), the
    build's peak with its workers (`TreeSampler`), the memory plan (with `budget`). With `log`,
    also a line a minute there (`log_progress`) and the stage bars on stderr. `index`: the
    whole `Index.build(..., graph=True)` into `out` (the graph in ``out/graph``, then the
    passage index: BM25, the dense index, the passage file), its steps among the phases."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from indexing import synthetic_stream
    from reduce_stages import PhaseSampler

    from graphseek.knowledge import dense, sparse
    from graphseek.knowledge import index as indexing
    from graphseek.knowledge.graph import build as building
    from graphseek.knowledge.graph.memory.spool import PassageSpool

    sampler = PhaseSampler() if phases or log else None
    if sampler is not None:
        sampler.install()
        for name in ("_extract", "passage_pass"):  # the map stages: extraction, passage pass
            sampler.wrap(building, name)
        if index:  # the passage index, after the graph
            sampler.wrap(indexing, "_write_stores")
            sampler.wrap(sparse.BM25Index, "build", "BM25Index.build")
            sampler.wrap(dense.DenseIndex, "build", "DenseIndex.build")
    passages = PassageSpool.of(synthetic_stream(data_dir, size))  # as a corpus path is read
    if log is not None and sampler is not None:
        log_progress(log, sampler)
    tree = TreeSampler()
    started = time.perf_counter()
    if index:
        options = {"memory_budget": budget} if budget else None
        indexing.Index.build(
            passages, out, graph=True, graph_options=options, show_progress=log is not None
        )
    else:
        run = {"memory_budget": budget, "show_progress": log is not None}
        if hasattr(building, "RunOptions"):
            building.build_graph(passages, out, run=building.RunOptions(**run))
        else:  # a baseline from before `RunOptions` (`--against`)
            building.build_graph(passages, out, **run)
    seconds = time.perf_counter() - started
    tree_peak = tree.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    manifest = json.loads((out / ("graph" if index else "") / "manifest.json").read_text())
    timings = manifest["timings"]
    result = {"n": size, "seconds": seconds, "peak_rss_mb": peak, "timings": timings}
    result["tree_peak_mb"] = max(tree_peak, peak)
    result["memory"] = manifest.get("memory")
    if sampler is not None:
        result["phases"] = sampler.peaks
    print(json.dumps(result))


def run_build(
    size: int,
    out: Path,
    data_dir: Path,
    source: Path,
    phases: bool = False,
    budget: str | None = None,
) -> dict[str, Any]:
    """`child` in a fresh process with `source` (a checkout) first on the import path."""
    args = ["--child", str(size), "--out", str(out), "--data-dir", str(data_dir)]
    args += (["--phases"] if phases else []) + (["--memory-budget", budget] if budget else [])
    return run_child(Path(__file__), args, source, f"the build of {size} passages")


def run_child(script: Path, args: list[str], source: Path, what: str) -> dict[str, Any]:
    """`script` with `args` in a fresh process with `source` (a checkout) first on the import
    path; the JSON line it prints last. `SystemExit` naming `what` if it fails."""
    env = dict(os.environ, PYTHONPATH=str(source))
    cmd = [sys.executable, str(script), *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} from {source} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@contextlib.contextmanager
def checkout(rev: str | None, work: Path) -> Iterator[Path | None]:
    """A git worktree of `rev` at ``work/baseline-src`` (removed afterwards), or None without
    a `rev`: the baseline a benchmark runs in the same run as this checkout."""
    if not rev:
        yield None
        return
    baseline = work / "baseline-src"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(baseline), rev],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield baseline
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
            check=False, capture_output=True,
        )  # fmt: skip


def digests(store: Path) -> dict[str, str]:
    """sha256 of every file of a store, the manifest less its timings, write time and memory
    plan (`--memory-budget` changes only that)."""
    out: dict[str, str] = {}
    for path in sorted(p for p in store.rglob("*") if p.is_file()):
        name = path.relative_to(store).as_posix()
        if name == "manifest.json":
            manifest = json.loads(path.read_text())
            manifest.pop("timings", None)
            manifest.pop("written", None)
            manifest.pop("memory", None)
            data = json.dumps(manifest, sort_keys=True).encode()
        else:
            data = path.read_bytes()
        out[name] = hashlib.sha256(data).hexdigest()
    return out


def same_store(a: Path, b: Path) -> str:
    """ "True", or "False (the files that differ)" (`digests`)."""
    mine, theirs = digests(a), digests(b)
    different = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    return "True" if not different else f"False ({', '.join(different)})"


def stage_table(results: list[dict[str, Any]], labels: list[str]) -> None:
    stages = [k for k, v in results[-1]["timings"].items() if isinstance(v, dict)]
    print(f"\n{'stage (s / peak RSS MB at its end)':<36}" + "".join(f"{x:>22}" for x in labels))
    for stage in stages:
        cells = []
        for r in results:
            t = r["timings"].get(stage, {})
            seconds, peak = t.get("seconds"), t.get("peak_rss_mb")
            if seconds is None:
                cells.append("-")
            else:
                cells.append(f"{seconds:.1f} / {peak:,.0f}" if peak else f"{seconds:.1f}")
        print(f"{stage:<36}" + "".join(f"{c:>22}" for c in cells))
    whole = [f"{r['seconds']:.0f} / {r['peak_rss_mb']:,.0f}" for r in results]
    print(f"{'whole build (VmHWM)':<36}" + "".join(f"{c:>22}" for c in whole))
    tree = [f"{r['tree_peak_mb']:,.0f}" if "tree_peak_mb" in r else "-" for r in results]
    print(f"{'build with its workers, peak MB':<36}" + "".join(f"{c:>22}" for c in tree))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000,10000", help="comma-separated passage counts")
    parser.add_argument("--against", help="a git revision to build as the baseline and compare")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--keep", type=Path, help="keep the stores under this directory")
    parser.add_argument(
        "--phases", action="store_true", help="RSS by step inside the builds (and the baseline's)"
    )
    parser.add_argument(
        "--memory-budget", metavar="SIZE", help="also build with this budget and compare"
    )
    parser.add_argument(
        "--one",
        type=int,
        metavar="N",
        help="build N passages in this process into --out, logging to --log (a long run)",
    )
    parser.add_argument("--out", type=Path, help="the store's directory, with --one")
    parser.add_argument("--log", type=Path, help="with --one: a line a minute of how far it got")
    parser.add_argument(
        "--index",
        action="store_true",
        help="with --one: the whole Index.build (the graph, then BM25 and the dense index)",
    )
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.out, args.data_dir, args.phases, args.memory_budget)
        return
    if args.one:
        if args.out is None or args.log is None:
            raise SystemExit("--one N needs --out DIR and --log FILE")
        child(args.one, args.out, args.data_dir, True, args.memory_budget, args.log, args.index)
        return

    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"load average (1/5/15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="bounded-bench-"))
    try:
        with checkout(args.against, work) as baseline:
            compare(args, work, baseline, head)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compare(args: argparse.Namespace, work: Path, baseline: Path | None, head: str) -> None:
    """The builds `main` asked for, in `work`, against `baseline` (a checkout) if any."""
    from reduce_stages import print_phases  # beside this script

    results: list[dict[str, Any]] = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        store = (args.keep or work) / f"store-{size}"
        shutil.rmtree(store, ignore_errors=True)
        mine = run_build(size, store, args.data_dir, ROOT, args.phases)
        results.append(mine)
        row = [mine]
        labels = [f"{size:,} @ {head}"]
        if args.memory_budget:
            tight = (args.keep or work) / f"budget-{size}"
            within = run_build(size, tight, args.data_dir, ROOT, args.phases, args.memory_budget)
            plan = within["memory"]
            print(
                f"\n{size:,} passages, --memory-budget {args.memory_budget}: extraction "
                f"processes {plan['processes']}, encoder threads {plan['threads']}, write "
                f"cache {plan['cache_kib'] // 1024} MB; estimated "
                f"{plan['estimate_mb']:,} MB (fits: {plan['fits']}); the same store as "
                f"the default build's: {same_store(store, tight)}"
            )
            row.append(within)
            labels.append(f"budget {args.memory_budget}")
            if args.keep is None:
                shutil.rmtree(tight, ignore_errors=True)
        if baseline is not None:
            other = (args.keep or work) / f"baseline-{size}"
            theirs = run_build(size, other, args.data_dir, baseline, args.phases)
            same = same_store(store, other)
            row = [theirs, *row]
            labels = [f"{size:,} @ {args.against}", *labels]
            print(f"\n{size:,} passages: the store is the same as {args.against}'s: {same}")
            if args.keep is None:
                shutil.rmtree(other, ignore_errors=True)
        stage_table(row, labels)
        for result, label in zip(row, labels, strict=True):
            if "phases" in result:
                print()
                print_phases(result["phases"], f"RSS by step, {label} passages")
        if args.keep is None:
            shutil.rmtree(store, ignore_errors=True)
    for a, b in zip(results, results[1:], strict=False):
        if b["n"] > a["n"]:
            slope = (b["peak_rss_mb"] - a["peak_rss_mb"]) * 1000 / (b["n"] - a["n"])
            print(f"\npeak RSS growth {a['n']:,} -> {b['n']:,} passages: {slope:.0f} MB/1,000")
    last = results[-1] if results else None
    if last is not None:
        met = last["peak_rss_mb"] <= 4096
        print(
            f"target (issue 27): peak RSS <= 4 GB at 100,000 passages; "
            f"{last['n']:,} passages: {last['peak_rss_mb']:,.0f} MB"
            + (" (met)" if met and last["n"] >= 100_000 else "")
        )
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
