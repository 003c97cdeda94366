"""Run questions x configurations, resumably, and score every answer.

`run_evaluation(datasets, configs, out_dir)` asks every question of every dataset under every
configuration, through an injectable *system* function (default: `graphseek.api.ask`, see
`graphseek.evaluation.system`), and appends one JSON record per (config, dataset, question) to
`out_dir/records.jsonl` (fields: `graphseek.evaluation.records`), flushed as soon as it is
scored (`graphseek.evaluation.scoring`). Re-running with the same arguments skips the records
already there, so an interrupted run continues where it stopped and ends with the same records.

A system that raises an ordinary exception for one question gets a record with `error` set and a
wrong (abstained) answer, and the run goes on; the next run retries those questions (the newer
record wins). An `ImportError` (a broken installation, not a hard question), `KeyboardInterrupt`
and other `BaseException`s stop the run.

The names this module exported before it was split (index cache, configurations, the system,
records, retrieval-only evaluation) are re-exported here unchanged.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from graphseek.evaluation.configs import EvalConfig, baseline_configs
from graphseek.evaluation.datasets import Dataset, EvalQuestion
from graphseek.evaluation.index_cache import cached_index, default_index_dir, needs_graph
from graphseek.evaluation.judge import Judge
from graphseek.evaluation.records import (
    RECALL_KS,
    RECORDS_FILE,
    load_records,
    make_record,
    repair_tail,
)
from graphseek.evaluation.retrieval import (
    RetrievalReport,
    RetrieverScores,
    evaluate_retrieval,
    get_retriever,
    register_retriever,
    registered_retrievers,
)
from graphseek.evaluation.system import ApiSystem, SystemFn

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

__all__ = [
    "RECALL_KS",
    "ApiSystem",
    "EvalConfig",
    "RetrievalReport",
    "RetrieverScores",
    "SystemFn",
    "baseline_configs",
    "cached_index",
    "default_index_dir",
    "evaluate_retrieval",
    "get_retriever",
    "load_records",
    "needs_graph",
    "register_retriever",
    "registered_retrievers",
    "run_evaluation",
]

log = logging.getLogger(__name__)

Task = tuple[Dataset, int, EvalQuestion, EvalConfig]


def _check_unique(datasets: Sequence[Dataset], configs: Sequence[EvalConfig]) -> None:
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ValueError(f"configuration names must be unique: {names}")
    if len({ds.name for ds in datasets}) != len(datasets):
        raise ValueError(f"dataset names must be unique: {[ds.name for ds in datasets]}")
    for ds in datasets:
        if len({q.id for q in ds.questions}) != len(ds.questions):
            raise ValueError(f"dataset {ds.name!r} has duplicate question ids")


def ask_one(
    system: SystemFn, index: IndexStore, task: Task, judge: Judge, *, measure_cpu: bool = True
) -> dict[str, Any]:
    """Ask one question and return its scored record; an ordinary exception becomes a record
    with `error` set (an `ImportError` propagates: a broken installation, not a hard question).

    `measure_cpu` records the process CPU seconds the question took (`usage.cpu_seconds`);
    it is exact only when one question runs at a time."""
    ds, i, q, cfg = task
    cpu_start = time.process_time()
    start = time.perf_counter()
    error = None
    try:
        result = system(index, q, cfg)
    except ImportError:
        raise
    except Exception as exc:  # one failing question must not end a long run
        log.warning("%s / %s / %s failed: %r", cfg.name, ds.name, q.id, exc)
        result, error = None, f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu_start if measure_cpu else None
    return make_record(ds, i, q, cfg, result, wall, judge, error, cpu=cpu)


def run_evaluation(
    datasets: Sequence[Dataset],
    configs: Sequence[EvalConfig],
    out_dir: str | Path,
    *,
    system: SystemFn | None = None,
    judge: Judge | None = None,
    concurrency: int = 1,
    index_factory: Callable[[Dataset], IndexStore] | None = None,
    index_dir: str | Path | None = None,
    llm_cache: str | Path | None = None,
    progress: bool = True,
    retry_errors: bool = True,
) -> list[dict[str, Any]]:
    """Ask every question of every dataset under every configuration; return all the records.

    Records already in `out_dir/records.jsonl` are kept and not re-run (except those with an
    `error`, when `retry_errors`). `system` defaults to
    `ApiSystem()`; `index_factory(dataset)` to `cached_index(dataset, index_dir, graph=...)`,
    with the graph when `needs_graph(configs)` (called only for datasets with questions still
    to run). `llm_cache` (default `out_dir/llm_cache.sqlite`)
    is set on configurations that have none. `concurrency` threads ask questions at once (1:
    in order, in this thread; CPU seconds per question are recorded only then). Returns the
    records of this run's datasets x configs x questions in dataset, config, question order.
    """
    _check_unique(datasets, configs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = str(llm_cache) if llm_cache is not None else str(out / "llm_cache.sqlite")
    configs = [c if c.cache else c.model_copy(update={"cache": cache}) for c in configs]
    system = system or ApiSystem()
    judge = judge or Judge(None)
    if index_factory is None:
        graph = needs_graph(configs)

        def index_factory(ds: Dataset) -> IndexStore:
            return cached_index(ds, index_dir, graph=graph)

    path = out / RECORDS_FILE
    repair_tail(path)
    done = {(r["config"], r["dataset"], r["question_id"]): r for r in load_records(path)}
    skip = {key for key, r in done.items() if not (retry_errors and r.get("error"))}

    tasks: list[Task] = [
        (ds, i, q, cfg)
        for ds in datasets
        for cfg in configs
        for i, q in enumerate(ds.questions)
        if (cfg.name, ds.name, q.id) not in skip
    ]
    indexes: dict[str, IndexStore] = {}
    for ds in datasets:
        if any(t[0] is ds for t in tasks):
            indexes[ds.name] = index_factory(ds)

    def work(task: Task) -> dict[str, Any]:
        return ask_one(system, indexes[task[0].name], task, judge, measure_cpu=concurrency <= 1)

    bar = tqdm(total=len(tasks), desc="eval", unit="q", disable=not progress, dynamic_ncols=True)
    try:
        with path.open("a", encoding="utf-8") as f:

            def write(rec: dict[str, Any]) -> None:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                f.flush()
                done[(rec["config"], rec["dataset"], rec["question_id"])] = rec
                bar.set_postfix_str(f"{rec['dataset']}/{rec['config']}", refresh=False)
                bar.update(1)

            if concurrency <= 1:
                for task in tasks:
                    write(work(task))
            else:
                for rec in _parallel(work, tasks, concurrency):
                    write(rec)
    finally:
        bar.close()

    return [
        done[(cfg.name, ds.name, q.id)]
        for ds in datasets
        for cfg in configs
        for q in ds.questions
        if (cfg.name, ds.name, q.id) in done
    ]


def _parallel(
    fn: Callable[[Any], dict[str, Any]], tasks: Sequence[Any], workers: int
) -> Iterator[dict[str, Any]]:
    """Results of fn over tasks with at most `workers` in flight; stops early on an exception."""
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graphseek-eval")
    pending: set[Future[dict[str, Any]]] = set()
    queue = iter(tasks)
    try:
        for task in queue:
            pending.add(pool.submit(fn, task))
            if len(pending) >= workers:
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                yield fut.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(fn, nxt))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
