"""A graph build's memory budget (issue 27): sizes read as a user writes them, the settings
chosen to fit, and the encoder's thread limit (the same vectors). That a build under the least
settings writes the same store is in test_bounded_build.py (it reuses that module's build)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from graphseek.cli import main
from graphseek.knowledge.graph.memory.budget import (
    CACHE_CHOICES_KIB,
    THREAD_MB,
    WORKER_MB,
    MemoryPlan,
    estimate_mb,
    parse_size,
    plan_memory,
)

# -- sizes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "mb"),
    [("4G", 4096), ("4g", 4096), ("4GB", 4096), ("4GiB", 4096), ("1.5G", 1536), ("2500M", 2500)],
)
def test_sizes_are_read_in_megabytes(text: str, mb: int) -> None:
    assert parse_size(text) == mb


def test_a_bare_number_is_megabytes() -> None:
    assert parse_size("3000") == 3000
    assert parse_size(3000) == 3000


@pytest.mark.parametrize("text", ["four gigs", "4X", "", "-2G", "G"])
def test_a_size_that_is_not_one_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="is not a size") as info:
        parse_size(text)
    assert repr(text) in str(info.value)


def test_a_budget_under_what_the_models_take_is_refused() -> None:
    with pytest.raises(ValueError, match="under 512 MB"):
        parse_size("100M")


# -- plans ------------------------------------------------------------------------------------


def test_a_roomy_budget_keeps_every_process_thread_and_the_whole_cache() -> None:
    plan = plan_memory(10_000, "64G", processes=2, threads=2)
    assert (plan.processes, plan.threads, plan.cache_kib) == (2, 2, CACHE_CHOICES_KIB[0])
    assert plan.fits and plan.estimate_mb < 64 * 1024


def test_the_write_cache_goes_before_threads_and_processes() -> None:
    # at 300,000 passages the write, with its page cache, is the estimated peak
    roomy = plan_memory(300_000, "64G", processes=2, threads=2)
    plan = plan_memory(300_000, roomy.estimate_mb - 50, processes=2, threads=2)
    assert plan.fits and (plan.processes, plan.threads) == (2, 2)
    assert plan.cache_kib < CACHE_CHOICES_KIB[0]


def test_the_passage_pass_loses_a_thread_when_it_is_the_peak() -> None:
    # at 10,000 passages the passage pass is the estimated peak: a thread fewer lowers it
    two = estimate_mb(10_000, processes=2, threads=2, cache_kib=CACHE_CHOICES_KIB[0])
    one = estimate_mb(10_000, processes=2, threads=1, cache_kib=CACHE_CHOICES_KIB[0])
    assert 0 < two - one <= THREAD_MB
    plan = plan_memory(10_000, two - 1, processes=2, threads=2)
    assert plan.fits and plan.threads == 1 and plan.processes == 2


def test_extraction_workers_count_while_they_run() -> None:
    # a corpus so small that extraction with many workers is the peak
    many = estimate_mb(0, processes=8, threads=1, cache_kib=CACHE_CHOICES_KIB[-1])
    fewer = estimate_mb(0, processes=7, threads=1, cache_kib=CACHE_CHOICES_KIB[-1])
    assert many - fewer == WORKER_MB
    plan = plan_memory(0, many - 1, processes=8, threads=1)
    assert plan.fits and plan.processes < 8


def test_a_budget_nothing_fits_gives_the_least_and_says_so() -> None:
    plan = plan_memory(1_000_000, "2G", processes=2, threads=2)
    assert not plan.fits and plan.as_manifest()["fits"] is False
    least = min(
        estimate_mb(1_000_000, processes=p, threads=t, cache_kib=c)
        for p in (1, 2)
        for t in (1, 2)
        for c in CACHE_CHOICES_KIB
    )
    assert plan.estimate_mb == least > 2048
    # the reduce stages are the estimated peak there: no process or thread is given up, and
    # the write's cache is lowered only as far as that lowers the estimate
    assert (plan.processes, plan.threads) == (2, 2) and plan.cache_kib < CACHE_CHOICES_KIB[0]
    larger = [c for c in CACHE_CHOICES_KIB if c > plan.cache_kib]
    assert all(estimate_mb(1_000_000, processes=2, threads=2, cache_kib=c) > least for c in larger)
    # at 10,000 passages the least is one thread and a smaller cache
    small = plan_memory(10_000, 600, processes=2, threads=2)
    assert not small.fits and small.threads == 1


def test_a_callers_extractor_keeps_its_processes() -> None:
    plan = plan_memory(0, 600, processes=4, threads=1, lower_processes=False)
    assert plan.processes == 4


def test_the_sharded_drivers_estimate_is_the_reduce_stages_only() -> None:
    whole = estimate_mb(1000, processes=2, threads=2, cache_kib=CACHE_CHOICES_KIB[0])
    driver = estimate_mb(
        1000, processes=2, threads=2, cache_kib=CACHE_CHOICES_KIB[0], map_stages=False
    )
    assert driver < whole


def test_the_default_budget_is_half_the_machine() -> None:
    from graphseek.knowledge.graph.memory.budget import default_budget_mb, physical_mb

    total = physical_mb()
    assert total is not None and default_budget_mb() == max(512, total // 2)


def test_a_plan_says_its_settings_in_words() -> None:
    plan = MemoryPlan(4096, 1, 2, 65_536, 3000)
    assert plan.describe() == "1 extraction process, 2 encoder threads, a 64 MB write cache"


# -- the encoder's threads --------------------------------------------------------------------


def test_one_encoder_thread_gives_the_same_vectors_on_no_pool() -> None:
    from graphseek.knowledge.embedder import Embedder

    embedder = Embedder(workers=2)
    ids = embedder._onnx.token_ids(  # type: ignore[union-attr]
        [f"Passage {k} about the river Thames and {k} bridges." * (1 + k % 5) for k in range(40)]
    )
    started: list[str] = []

    def pooled() -> np.ndarray:
        before = set(threading.enumerate())
        out = embedder.encode_ids(ids, batch_size=4)
        started.extend(
            t.name for t in threading.enumerate() if t not in before and "embed" in t.name
        )
        return out

    with embedder.bulk_threads(1):
        one = pooled()
    assert started == []  # one thread: every batch on the caller's
    two = pooled()
    assert started  # the pool's threads
    assert np.array_equal(one, two)
    with pytest.raises(ValueError, match="threads must be"):
        with embedder.bulk_threads(0):
            pass


# -- the command line -------------------------------------------------------------------------


def test_the_cli_refuses_a_budget_that_is_not_a_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"title": "A", "text": "Alpha is a river."}\n')
    code = main(["index", str(corpus), "--out", str(tmp_path / "i"), "--memory-budget", "4X"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "memory budget '4X' is not a size" in err


def test_the_cli_refuses_a_budget_without_a_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"title": "A", "text": "Alpha is a river."}\n')
    code = main(
        ["index", str(corpus), "--out", str(tmp_path / "i"), "--no-graph", "--memory-budget", "4G"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--no-graph has none" in err


def test_the_cli_builds_under_a_budget_and_records_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        '{"title": "Alpha", "text": "Alpha is a river in Norway. It flows into Lake Beta."}\n'
        '{"title": "Lake Beta", "text": "Lake Beta lies near Oslo, the capital of Norway."}\n'
    )
    out = tmp_path / "idx"
    with caplog.at_level("WARNING", logger="graphseek.knowledge.graph.memory"):
        code = main(["index", str(corpus), "--out", str(out), "--quiet", "--memory-budget", "600M"])
    assert code == 0, capsys.readouterr().err
    memory = json.loads((out / "graph" / "manifest.json").read_text())["memory"]
    assert memory["budget_mb"] == 600 and memory["fits"] is False
    assert (memory["processes"], memory["threads"]) == (1, 1)  # two passages: no worker forked
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "over the memory budget of 600 MB" in warned
    capsys.readouterr()
    assert main(["stats", str(out)]) == 0
    shown = capsys.readouterr().out
    line = next(x for x in shown.splitlines() if x.startswith("build memory"))
    assert "budget 600 MB (1 extraction process, 1 encoder thread" in line
    assert "MB estimated" in line and "MB measured before the write" in line


def test_every_step_the_phase_sampler_names_exists() -> None:
    """`benchmarks/reduce_stages.py`'s `PHASES` name the functions `bounded_build.py --one`
    wraps; a name a refactor removed would stop that build at its start."""
    import importlib
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from reduce_stages import PHASES
    finally:
        sys.path.pop(0)
    for module, names in PHASES.items():
        loaded = importlib.import_module(module)
        for dotted in names:
            owner: object = loaded
            for part in dotted.split("."):
                assert hasattr(owner, part), f"{module}.{dotted}"
                owner = getattr(owner, part)
