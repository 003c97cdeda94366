"""A graph build's memory budget (``graphseek index --memory-budget``): the settings that trade
memory for time, chosen to fit it, and the build's peak estimated from the corpus size.

A build keeps its extractions, mention vectors and graph vectors in ``TMPDIR`` between the
stages that use them (docs/scale.md), so what is left for a budget to choose is how much runs
at once, and none of it changes the index (the same store byte for byte, tested):

- **extraction processes** (`OfflineExtractor.n_process`): each forked worker holds about
  `WORKER_MB` of its own (spaCy's pages are shared with the build) while extraction runs;
- **encoder threads** in the passage pass (`Embedder.bulk_threads`): each holds ONNX Runtime's
  working memory for one batch, about `THREAD_MB`, while the pass runs;
- **the write's SQLite page cache** (`store_writer.CACHE_KIB`), at the top of the reduce
  stages' peak (alignment and linking are just under it).

`plan_memory` picks the fastest of these whose estimated peak fits the budget. The estimate
(`estimate_mb`) follows each stage's peak in whole builds of a few sizes (the curves below,
from `benchmarks/bounded_build.py --one N --phases` over `benchmarks/indexing.py`'s synthetic
corpus, and `benchmarks/memory_settings.py`), straight between them and past the largest. That
corpus repeats its names, so a corpus of as many distinct passages has more entities and grows
faster: the curves are a floor. What still grows with the corpus after the passage pass,
alignment's records and the graph's entities and links kept until the write, no setting here
bounds; a budget under the estimate of the smallest settings is reported (`MemoryPlan.fits`),
and the build runs with those settings anyway.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import product

import numpy as np

from graphseek.knowledge.graph.extract.offline import default_processes
from graphseek.knowledge.graph.store.writer import CACHE_KIB

MB = 1 << 20

WORKER_MB = 130
"""Private memory of one forked extraction worker (`/proc/PID/smaps_rollup`, as
`benchmarks/memory_settings.py` prints it)."""
THREAD_MB = 370
"""ONNX Runtime's working memory of one encoder thread in the passage pass: the pass's rise
above its start with one thread and with two (`benchmarks/memory_settings.py`)."""
SMALL = (34, 637)
"""The smallest whole build, (passages, peak MB): `graphseek index` of the packaged demo
corpus with one encoder thread. Every stage's curve below starts there."""
EXTRACT_MB = ((10_000, 665), (100_000, 665))
"""The build process during extraction, (passages, MB), its workers apart (`WORKER_MB`): spaCy
and the start of the passage pass that runs ahead. The passages wait in a temporary file, so
nothing here grows with the corpus: flat at the larger of the two builds' figures."""
PASS_MB = (
    (SMALL[0], SMALL[1] - THREAD_MB),
    (2_000, 1_074 - THREAD_MB),
    (10_000, 1_396 - 2 * THREAD_MB),
    (100_000, 1_698 - 2 * THREAD_MB),
)
"""The passage pass less its threads' working memory, (passages, MB): the pass's peak in
whole builds, with one encoder thread at 2,000 passages and two at 10,000 and 100,000."""
ALIGN_MB = (SMALL, (10_000, 906), (100_000, 1_389))
"""Alignment's top (the base vectors summed, or the radius search in larger builds),
(passages, MB): the whole builds of `PASS_MB`."""
LINK_MB = (SMALL, (10_000, 1_043), (100_000, 1_580))
"""Linking's top (after the passage matcher, while the graph vectors are made), (passages,
MB), the same builds."""
WRITE_MB = (SMALL, (10_000, 903), (100_000, 1_438))
"""The store write less SQLite's page cache, (passages, MB): the write's top in the same
builds less the cache it filled (the database's size, up to the cache). The builds it follows
kept the name caches of `text.py` to the end, which a build empties after alignment: an
estimate on the safe side."""
DATABASE_KB = 21
"""``graph.sqlite`` per passage (KB): the page cache fills up to the database's size."""
CACHE_CHOICES_KIB = (CACHE_KIB, 65_536, 16_384)
"""The write's page cache, largest first (the default first)."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNIT_MB = {"": 1.0, "k": 1 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0 * 1024.0}
MIN_BUDGET_MB = 512


def parse_size(text: str | int | float) -> int:
    """A memory size in MB: a number of MB, or with a unit, ``4G``, ``2500M``, ``1.5GB``,
    ``4GiB`` (powers of 1,024). `ValueError` naming the text when it is not one, or under
    `MIN_BUDGET_MB` (models alone take more)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        mb = float(text)
    else:
        match = _SIZE.match(str(text))
        if match is None:
            raise ValueError(
                f"memory budget {text!r} is not a size: write it like 4G, 2500M or 1.5GB"
            )
        mb = float(match.group(1)) * _UNIT_MB[match.group(2).lower()]
    if mb < MIN_BUDGET_MB:
        raise ValueError(
            f"memory budget {text!r} is under {MIN_BUDGET_MB} MB, less than the models alone take"
        )
    return int(mb)


def physical_mb() -> int | None:
    """The machine's physical memory in MB, or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MB)
    except (AttributeError, OSError, ValueError):  # pragma: no cover - not POSIX
        return None


def default_budget_mb() -> int:
    """Half the machine's memory (the rest for the system, the index's readers, the page
    cache), at least `MIN_BUDGET_MB`; 4 GB where the OS does not say."""
    total = physical_mb()
    return max(MIN_BUDGET_MB, total // 2) if total else 4096


@dataclass(frozen=True)
class MemoryPlan:
    """The settings a build runs with under its budget, and its estimated peak (MB)."""

    budget_mb: int
    processes: int
    """Offline extraction worker processes (1: in the build's own process)."""
    threads: int
    """Encoder threads of the passage pass."""
    cache_kib: int
    """SQLite's page cache while the store is written."""
    estimate_mb: int
    """The build's estimated peak: its process's resident memory and, during extraction, its
    workers' own (`estimate_mb`)."""

    @property
    def fits(self) -> bool:
        return self.estimate_mb <= self.budget_mb

    def describe(self) -> str:
        """The settings in words, e.g. "2 extraction processes, 1 encoder thread, a 64 MB
        write cache"."""

        def count(n: int, noun: str) -> str:
            return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("s") else "s")

        return (
            f"{count(self.processes, 'extraction process')}, "
            f"{count(self.threads, 'encoder thread')}, "
            f"a {self.cache_kib // 1024} MB write cache"
        )

    def as_manifest(self) -> dict[str, int | bool]:
        return {**asdict(self), "fits": self.fits}


def estimate_mb(
    passages: int, *, processes: int, threads: int, cache_kib: int, map_stages: bool = True
) -> int:
    """The estimated peak of a graph build of `passages` passages with these settings (the
    module docstring says what it rests on); `map_stages=False`: the reduce stages only (the
    sharded build's driver, whose workers extract and encode)."""
    cache = min(cache_kib / 1024, DATABASE_KB * passages / 1024)
    reduce = max(_at(ALIGN_MB, passages), _at(LINK_MB, passages), _at(WRITE_MB, passages) + cache)
    if not map_stages:
        return int(reduce)
    workers = processes * WORKER_MB if processes > 1 else 0  # 1: extraction in this process
    extract = _at(EXTRACT_MB, passages) + workers
    passage_pass = _at(PASS_MB, passages) + threads * THREAD_MB
    return int(max(extract, passage_pass, reduce))


def _at(points: Sequence[tuple[int, int]], passages: int) -> float:
    """The measured curve `points` at `passages`: straight between two measured sizes, flat
    below the first, on the last two's line past the last (what grows linearly with the
    corpus there keeps doing so, `docs/scale.md`)."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    if passages >= xs[-1]:
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return ys[-1] + slope * (passages - xs[-1])
    return float(np.interp(passages, xs, ys))


def plan_memory(
    passages: int,
    budget: int | str | None = None,
    *,
    processes: int | None = None,
    threads: int | None = None,
    map_stages: bool = True,
    lower_processes: bool = True,
) -> MemoryPlan:
    """The fastest settings (fewest lost extraction processes and encoder threads, then the
    largest page cache) whose estimate fits `budget` (MB or a size for `parse_size`; None:
    `default_budget_mb`), at most `processes` and `threads` (the defaults: one extraction
    process per core up to `offline.MAX_PROCESSES`, the encoder's `workers`; with
    `lower_processes` false, `processes` is kept: an extractor the caller made); if none fits,
    the smallest, with `fits` false."""
    budget_mb = default_budget_mb() if budget is None else parse_size(budget)
    most_processes = max(1, processes if processes is not None else default_processes())
    if threads is None:
        from graphseek.knowledge.embedder import default_workers

        threads = default_workers()
    most_threads = max(1, threads)
    plans = [
        MemoryPlan(
            budget_mb,
            p,
            t,
            c,
            estimate_mb(passages, processes=p, threads=t, cache_kib=c, map_stages=map_stages),
        )
        for p, t, c in product(
            range(most_processes, 0, -1) if lower_processes else (most_processes,),
            range(most_threads, 0, -1),
            CACHE_CHOICES_KIB,
        )
    ]
    fitting = [plan for plan in plans if plan.fits]
    if not fitting:
        return min(plans, key=lambda plan: (plan.estimate_mb, -plan.processes - plan.threads))
    # extraction and the passage pass take about as long as each other: their time goes as
    # 1/processes + 1/threads
    return min(fitting, key=lambda plan: (1 / plan.processes + 1 / plan.threads, -plan.cache_kib))
