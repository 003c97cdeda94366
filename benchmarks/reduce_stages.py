"""Reduce-stage benchmark: a graph build's stages after the passage pass, from a stored build.

A whole build of 100,000 passages takes an hour here, most of it extraction and the passage
pass, whose peak RSS no change to the later stages moves. This runs only the later stages
(alignment, linking, hyperedges and topics, the write) on a stored graph's map results: its
extractions streamed from ``graph.sqlite`` (`SQLiteGraphStore.extractions`) into an `ExtractionSpool`, its mention vectors read
back into a `MentionVectors` file, passage vectors of the same shape; then
`build_graph(..., mapped=...)`, as the sharded build's driver runs them. Before that it loads
what a single-process build holds when alignment starts: spaCy in this process (300 passages
extracted), MiniLM after a pass over them, its memory released.

It prints each stage's seconds and peak RSS, the process's peak (VmHWM), and whether the store
it wrote is the stored one, file by file (the manifest less its timings and write time): the
stages since changed must give the same index. ``--phases`` also samples the process's RSS
every 50 ms and prints, for each step of the stages (the functions in `PHASES`, and the code
between them, named ``after <function>``), the RSS when it began and the most it reached:
where inside a stage the peak is. ``--held`` prints, when the write starts, what the
`GraphData` it is handed holds, field by field (deep sizes, each object counted once), and the
C heap (glibc's `mallinfo2`: in use, free, and blocks mapped on their own).

    .venv/bin/python benchmarks/reduce_stages.py STORE_DIR [--out DIR] [--phases] [--held]
        [--memory-budget SIZE]

STORE_DIR: a graph store directory (e.g. ``$GRAPHSEEK_CACHE_DIR/bench-add/synthetic-100000/graph``
from `benchmarks/incremental_add.py`), built with the offline extractor and contextual vectors.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import linecache
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


PHASES = {
    "graphseek.knowledge.graph.algorithms.align": [
        "exact_groups",
        "raw_entity_count",
        "radius_pair_rows",
        "ambiguous_generics",
        "Aligner._base_vectors",
        "Aligner._decide_offline",
    ],
    "graphseek.knowledge.graph.stages.align": ["_raw_components"],
    "graphseek.knowledge.graph.stages.topics": ["build_hyperedges", "assign_topics"],
    "graphseek.knowledge.graph.stages.link": [
        "extracted_relations",
        "cooccurrence_edges",
        "match_numbers",
    ],
    # the relations' parts added as they are made (the similarity edges are made while added:
    # `similar_relations` is a generator), then sorted
    "graphseek.knowledge.graph.memory.relation_columns": [
        "RelationBuilder.add",
        "RelationBuilder.finish",
    ],
    "graphseek.knowledge.graph.stages.write": ["build_matrices", "write_store"],
    # inside the write, this thread's steps (the database is written on another meanwhile);
    # the matrices and nodes.json are written after `build_matrices`
    "graphseek.knowledge.graph.store.writer": ["_save_npy", "_save_rows", "build_matrices"],
}
"""The functions `--phases` names the RSS samples after (module: names, ``Class.method``)."""


class PhaseSampler:
    """The RSS at the start of each phase and its most within it, sampled by a thread every
    `interval` seconds; `wrap` makes a function a phase (the code after it is ``after name``)."""

    def __init__(self, interval: float = 0.05) -> None:
        import threading

        self.phase = "start"
        self.peaks: dict[str, list[int]] = {}
        self.interval = interval
        threading.Thread(target=self._sample, daemon=True).start()

    @staticmethod
    def rss_mb() -> int:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) // 1024
        return 0

    def _sample(self) -> None:
        while True:
            now, phase = self.rss_mb(), self.phase
            seen = self.peaks.setdefault(phase, [now, now])
            seen[1] = max(seen[1], now)
            time.sleep(self.interval)

    def wrap(self, owner: object, name: str, label: str | None = None) -> None:
        """Make `owner.name` a phase, called `label` (default: `name`)."""
        import functools

        fn = getattr(owner, name)
        called = label or name

        @functools.wraps(fn)
        def phase(*args: object, **kwargs: object) -> object:
            self.phase = called
            try:
                return fn(*args, **kwargs)
            finally:
                self.phase = f"after {called}"

        setattr(owner, name, phase)

    def install(self) -> None:
        import importlib

        for module, names in PHASES.items():
            loaded = importlib.import_module(module)
            for dotted in names:
                owner: object = loaded
                *classes, name = dotted.split(".")
                for cls in classes:
                    owner = getattr(owner, cls)
                self.wrap(owner, name)

    def report(self, title: str = "RSS by phase") -> None:
        print_phases(self.peaks, title)


def print_phases(peaks: dict[str, list[int]], title: str) -> None:
    """`PhaseSampler.peaks` as a table (also read back from a child's JSON)."""
    print(f"{title}, MB (at its start, the most within it):")
    for phase, (first, most) in peaks.items():
        print(f"  {phase:<32} {first:>7,} {most:>7,}")


def digest(path: Path) -> str:
    if path.name == "manifest.json":
        manifest = json.loads(path.read_text())
        manifest.pop("timings", None)
        manifest.pop("written", None)
        manifest.pop("memory", None)  # how it ran (`--memory-budget`), not what it wrote
        return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def trace_holders(top: int) -> None:
    """Start tracemalloc and print, when `write_store` is called, the `top` source lines whose
    allocations since then are still held (what the reduce stages keep until the write), and
    their total."""
    import functools
    import tracemalloc

    from graphseek.knowledge.graph.stages import write as building

    tracemalloc.start()
    write = building.write_store

    @functools.wraps(write)
    def traced(*args: Any, **kwargs: Any) -> Any:
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        stats = snapshot.statistics("lineno")
        total = sum(s.size for s in stats)
        print(f"held at the write's start (tracemalloc, since alignment): {total / 2**20:,.0f} MB")
        for stat in stats[:top]:
            frame = stat.traceback[0]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            line = linecache.getline(frame.filename, frame.lineno).strip()[:70]
            print(f"  {stat.size / 2**20:8,.1f} MB {stat.count:>10,} blocks  {where:<26} {line}")
        return write(*args, **kwargs)

    building.write_store = traced  # type: ignore[assignment]


def deep_sizer() -> Any:
    """A function giving an object's deep size in bytes, counting each object once across
    calls (a shared object goes to the first field that reaches it): numpy arrays and typed
    arrays by their buffers, containers and objects (``__dict__``, ``__slots__``) by their
    items. Files, locks and classes count as nothing."""
    import sys
    import types
    from array import array

    import numpy as np

    seen: set[int] = set()
    code = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)

    def size(obj: Any) -> int:
        if id(obj) in seen or isinstance(obj, code):
            return 0
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):  # a view counts its base's buffer once
            return 112 + (obj.nbytes if obj.base is None else size(obj.base))
        if isinstance(obj, array):
            return 64 + obj.buffer_info()[1] * obj.itemsize
        total = sys.getsizeof(obj)
        if isinstance(obj, (str, bytes, bytearray, int, float)) or obj is None:
            return total
        if isinstance(obj, dict):
            items: list[Any] = [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            items = list(obj)
        elif type(obj).__module__.split(".")[0] in ("graphseek", "builtins"):
            items = [obj.__dict__] if hasattr(obj, "__dict__") else []
            slots = (n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ()))
            items += [getattr(obj, n) for n in slots if hasattr(obj, n)]
        else:  # open files, locks, memory maps: their Python objects only
            items = []
        return total + sum(size(item) for item in items)

    return size


def c_heap_mb() -> dict[str, int] | None:
    """glibc's `mallinfo2`, MB: the heap in use and free, and the blocks `malloc` mapped on
    their own; None where the C library has none."""
    import ctypes

    from graphseek.knowledge.heap import _libc_function

    class MallInfo2(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_size_t)
            for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                         "uordblks", "fordblks", "keepcost")
        ]  # fmt: skip

    mallinfo2 = _libc_function("mallinfo2", (), MallInfo2)
    if mallinfo2 is None:
        return None
    info: Any = mallinfo2()
    return {
        "in use": info.uordblks >> 20,
        "free": info.fordblks >> 20,
        "mapped on their own": info.hblkhd >> 20,
        "mapped blocks": info.hblks,
    }


def print_held() -> None:
    """Print, when `write_store` is called, the deep size of each field of the `GraphData` it
    is handed (largest first), their total, the RSS and the C heap (`c_heap_mb`)."""
    import dataclasses
    import functools

    from graphseek.knowledge.graph.stages import write as building

    write = building.write_store

    @functools.wraps(write)
    def sized(data: Any, *args: Any, **kwargs: Any) -> Any:
        size = deep_sizer()
        rows = sorted(
            ((size(getattr(data, f.name)), f.name) for f in dataclasses.fields(data)),
            reverse=True,
        )
        print(f"held at the write's start (RSS {PhaseSampler.rss_mb():,} MB), GraphData by field:")
        for nbytes, name in rows:
            print(f"  {nbytes / 2**20:8,.1f} MB  {name}")
        print(f"  {sum(n for n, _ in rows) / 2**20:8,.1f} MB  in all")
        heap = c_heap_mb()
        if heap is not None:
            print("  the C heap, MB: " + ", ".join(f"{k} {v:,}" for k, v in heap.items()))
        return write(data, *args, **kwargs)

    building.write_store = sized  # type: ignore[assignment]


def stored_passages(database: Path) -> Iterator[Any]:
    """The passages of a stored graph (``graph.sqlite``), in corpus order, one at a time."""
    import sqlite3

    from graphseek.knowledge.passages import Passage

    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT id, title, text, source FROM passages ORDER BY ord")
        for pid, title, text, source in rows:
            yield Passage(id=pid, title=title, text=text, source=source)
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path, help="a graph store directory")
    parser.add_argument("--out", type=Path, help="write the new store here (default: a temp dir)")
    parser.add_argument("--phases", action="store_true", help="RSS by step inside the stages")
    parser.add_argument(
        "--memory-budget",
        metavar="SIZE",
        help="build_graph's memory_budget (here only the write's page cache can follow it)",
    )
    parser.add_argument(
        "--holders",
        type=int,
        metavar="N",
        help="trace allocations from alignment on and list the N lines holding the most "
        "memory when the write starts (tracemalloc; slow)",
    )
    parser.add_argument(
        "--held",
        action="store_true",
        help="print what the write is handed, field by field, and the C heap, when it starts",
    )
    args = parser.parse_args()
    sampler = PhaseSampler() if args.phases else None
    if sampler is not None:
        sampler.install()

    import numpy as np

    from graphseek.knowledge.embedder import get_embedder
    from graphseek.knowledge.graph.algorithms.contextual import MentionVectors, encode_passages
    from graphseek.knowledge.graph.build import MappedPassages, build_graph
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor
    from graphseek.knowledge.graph.memory.spool import ExtractionSpool, PassageSpool
    from graphseek.knowledge.graph.settings import RunOptions
    from graphseek.knowledge.graph.store import SQLiteGraphStore

    stored = SQLiteGraphStore.open(args.store)
    # the corpus in a temporary file, as a build reads a corpus path (`Index.build`)
    passages = PassageSpool.of(stored_passages(args.store / "graph.sqlite"))
    # what a single-process build holds when alignment starts
    warm = passages[:300]
    extracted = OfflineExtractor(show_progress=False).extract(warm)
    encoder = get_embedder()
    encode_passages(encoder, warm, extracted)
    encoder.release_memory()
    del extracted

    started = time.perf_counter()
    spool = ExtractionSpool.of(stored.extractions())  # streamed, one passage at a time
    stored.close()
    ids = json.loads((args.store / "nodes.json").read_text())["mentions_embedded"]
    mentions = MentionVectors.from_npy(args.store / "mention_vectors.npy", ids)
    del ids
    vectors = np.full((len(passages), mentions.dim), 0.1, dtype=np.float32)
    print(
        f"{len(passages):,} passages' map results read back in {time.perf_counter() - started:.0f} s;"
    )
    print(f"peak RSS before alignment {peak_mb():,} MB (spaCy, MiniLM, the map results)")

    work = Path(tempfile.mkdtemp(prefix="reduce-bench-"))
    out = args.out or work / "graph"
    if args.holders:
        trace_holders(args.holders)
    if args.held:
        print_held()
    try:
        started = time.perf_counter()
        build_graph(
            passages,
            out,
            mapped=MappedPassages(spool, vectors, mentions),
            run=RunOptions(memory_budget=args.memory_budget, show_progress=False),
        )
        seconds = time.perf_counter() - started
        print(f"stages after the passage pass, and the write: {seconds:.0f} s")
        manifest = json.loads((out / "manifest.json").read_text())
        timings = manifest["timings"]
        if args.memory_budget:
            print(f"memory plan: {manifest['memory']}")
        for stage, t in timings.items():
            if isinstance(t, dict) and t.get("peak_rss_mb"):
                print(
                    f"  {stage:<20} {t['seconds']:>8.1f} s   peak RSS {t['peak_rss_mb']:>8,.0f} MB"
                )
        print(f"whole process peak RSS (VmHWM): {peak_mb():,} MB")
        if sampler is not None:
            sampler.report()
        # a file the stored build did not write (matcher.json before 96d759d) is named apart
        files = sorted(p for p in out.iterdir() if p.is_file())
        new = [p.name for p in files if not (args.store / p.name).is_file()]
        files = [p for p in files if p.name not in new]
        different = [p.name for p in files if digest(p) != digest(args.store / p.name)]
        print(
            f"the same store as {args.store}: {not different} ({len(files)} files compared"
            + (f"; different: {', '.join(different)}" if different else "")
            + (f"; not in the stored build: {', '.join(new)})" if new else ")")
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
