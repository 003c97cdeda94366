"""Run questions x configurations, resumably, and score every answer.

`run_evaluation(datasets, configs, out_dir)` asks every question of every dataset under every
configuration, through an injectable *system* function (default: `graphseek.api.ask`), and
appends one JSON record per (config, dataset, question) to `out_dir/records.jsonl`, flushed as
soon as it is scored. Re-running with the same arguments skips the records already there, so an
interrupted run continues where it stopped and ends with the same records.

Record fields: config, config_spec, dataset, question_id, question_index, question, gold
{answers, passage_ids, titles}, flagged, flag_reason, type, hops, prediction, abstained,
evidence_ids, retrieved_ids (ranked), trace, usage {llm_calls, prompt_tokens, completion_tokens,
seconds}, diagnostics, judge {correct, reason, kind}, metrics, error.

A system that raises an ordinary exception for one question gets a record with `error` set and a
wrong (abstained) answer, and the run goes on; the next run retries those questions (the newer
record wins). An `ImportError` (a broken installation, not a hard question), `KeyboardInterrupt`
and other `BaseException`s stop the run.

`evaluate_retrieval(dataset, retrievers)` scores retrievers alone (Recall@k, all-in-top-k,
passage-level P/R/F1 at k=5) with the retrievers of the one registry,
`graphseek.tools.retrievers` (`register_retriever(name, fn)` adds one there, for workflows too).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tqdm.auto import tqdm

from graphseek.evaluation.datasets import Dataset, EvalQuestion, require_corpus
from graphseek.evaluation.judge import Judge
from graphseek.evaluation.metrics import (
    aggregate,
    answer_metrics,
    recall_at_k,
    retrieval_metrics,
    retrieval_prf,
)
from graphseek.tools.retrievers import get_retriever as shared_get_retriever
from graphseek.tools.retrievers import register_retriever
from graphseek.tools.retrievers import retriever_names as registered_retrievers

__all__ = [
    "RECALL_KS",
    "EvalConfig",
    "RetrievalReport",
    "RetrieverScores",
    "ApiSystem",
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

RECALL_KS: tuple[int, ...] = (1, 2, 5, 10)
"""The k of the Recall@k stored in each record (the report plots curves over them)."""

RECORDS_FILE = "records.jsonl"
_OFFLINE_SPECS = {"offline", "scripted", "none", ""}


class EvalConfig(BaseModel):
    """One system configuration under evaluation: a topology, a retriever, a model, settings.

    `context` holds extra settings passed to `ask(..., **context)` (top_k, max_turns, agents,
    mode, ...). `cache` is the SQLite LLM response cache path (the runner fills it in).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    topology: str = "naive"
    retriever: str = "hybrid"
    llm: Any = "offline"
    context: dict[str, Any] = Field(default_factory=dict)
    cache: str | None = None

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topology": self.topology,
            "retriever": self.retriever,
            "llm": self.llm if isinstance(self.llm, str | dict | None) else repr(self.llm),
            "context": _jsonable(self.context),
        }


def baseline_configs(llm: Any = "offline") -> list[EvalConfig]:
    """The reference rows every report can include: `naive` with bm25, dense and hybrid."""
    return [
        EvalConfig(name=f"naive-{r}", topology="naive", retriever=r, llm=llm)
        for r in ("bm25", "dense", "hybrid")
    ]


# ------------------------------------------------------------------------------------------
# index cache


def default_index_dir() -> Path:
    """Where dataset indexes are cached: `<cache>/indexes`, with `<cache>` = $GRAPHSEEK_CACHE_DIR,
    else $XDG_CACHE_HOME/graphseek, else ~/.cache/graphseek (as `graphseek` itself uses)."""
    root = os.environ.get("GRAPHSEEK_CACHE_DIR")
    if root:
        base = Path(root).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "graphseek"
    return base / "indexes"


GRAPHLESS_TOPOLOGIES = frozenset({"naive", "dual_agent"})
GRAPHLESS_RETRIEVERS = frozenset({"bm25", "dense", "hybrid"})


def needs_graph(configs: Iterable[EvalConfig]) -> bool:
    """Whether any configuration may use the knowledge graph (a topology other than naive or
    dual_agent, or a retriever other than bm25/dense/hybrid)."""
    return any(
        c.topology not in GRAPHLESS_TOPOLOGIES or c.retriever not in GRAPHLESS_RETRIEVERS
        for c in configs
    )


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "dataset"


def cached_index(
    dataset: Dataset,
    index_dir: str | Path | None = None,
    *,
    graph: bool = False,
    show_progress: bool = True,
) -> Any:
    """Open the dataset's index from the cache, building it on first use.

    The directory is `<index_dir>/<dataset name>-<corpus hash>`, so a changed corpus gets a new
    index and an unchanged one is never rebuilt. With `graph=True` the index must also hold the
    knowledge graph (built offline); a cached index without one gets it added (no re-embedding).
    """
    from graphseek.errors import IndexFormatError, IndexNotFoundError
    from graphseek.knowledge.index import Index

    require_corpus(dataset)
    root = Path(index_dir) if index_dir is not None else default_index_dir()
    path = root / f"{_slug(dataset.name)}-{dataset.corpus_hash()[:12]}"
    if path.exists():
        try:
            index = Index.open(path)
            if graph and not index.has_graph:
                log.info("adding the knowledge graph to the cached index at %s", path)
                index.ensure_graph(show_progress=show_progress)
            return index
        except (IndexNotFoundError, IndexFormatError) as exc:
            log.warning("cached index at %s unusable (%s); rebuilding", path, exc)
    root.mkdir(parents=True, exist_ok=True)
    log.info("building index for %s (%d passages) at %s", dataset.name, len(dataset.corpus), path)
    return Index.build(dataset.corpus, path, show_progress=show_progress, graph=graph)


# ------------------------------------------------------------------------------------------
# the system under test


SystemFn = Callable[[Any, EvalQuestion, EvalConfig], Any]
"""`system(index, question, config) -> result` with the attributes (or keys) of
`graphseek.api.Result`: answer, abstained, evidence, retrieved_ids, trace, usage, diagnostics."""


class ApiSystem:
    """The default system: `graphseek.api.ask` with the configuration's settings.

    A model spec string (other than "offline"/"scripted") becomes one chat model per
    configuration from `graphseek.llm.make_chat_model(spec, cache=config.cache)`, so repeated
    prompts are answered from the on-disk response cache.
    """

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _llm(self, config: EvalConfig) -> Any:
        if not config.cache:
            return config.llm
        with self._lock:
            if config.name not in self._models:
                self._models[config.name] = _with_cache(config.llm, config.cache)
            return self._models[config.name]

    def __call__(self, index: Any, question: EvalQuestion, config: EvalConfig) -> Any:
        from graphseek.api import ask

        return ask(
            index,
            question.question,
            topology=config.topology,
            llm=self._llm(config),
            retriever=config.retriever,
            **config.context,
        )


def _with_cache(llm: Any, cache: str) -> Any:
    """Spec strings (also the values of a role -> spec mapping) as models with the cache."""
    if isinstance(llm, Mapping):
        return {role: _with_cache(v, cache) for role, v in llm.items()}
    if not isinstance(llm, str) or llm.strip().lower() in _OFFLINE_SPECS:
        return llm
    from graphseek.llm import make_chat_model

    return make_chat_model(llm, cache=cache)


# ------------------------------------------------------------------------------------------
# records


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _jsonable(value: Any) -> Any:
    """Plain JSON data from pydantic models, dataclasses, tuples, sets and the like."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return _jsonable(asdict(value))
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if hasattr(value, "content") and hasattr(value, "type"):  # a LangChain message
        return {"type": value.type, "content": _jsonable(value.content)}
    return str(value)


def _ids(items: Iterable[Any] | None) -> list[str]:
    out: list[str] = []
    for item in items or []:
        if isinstance(item, str):
            pid = item
        else:
            pid = _get(item, "passage_id") or _get(_get(item, "passage"), "id") or _get(item, "id")
        if pid and pid not in out:
            out.append(str(pid))
    return out


def _usage(usage: Any, wall: float) -> dict[str, Any]:
    out = {
        "llm_calls": int(_get(usage, "llm_calls", 0) or 0),
        "prompt_tokens": int(_get(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(_get(usage, "completion_tokens", 0) or 0),
        "seconds": float(_get(usage, "seconds", 0.0) or 0.0),
    }
    if out["seconds"] <= 0:
        out["seconds"] = wall
    return out


def _record(
    dataset: Dataset,
    index: int,
    question: EvalQuestion,
    config: EvalConfig,
    result: Any,
    wall: float,
    judge: Judge,
    error: str | None = None,
) -> dict[str, Any]:
    answer = _get(result, "answer") or ""
    abstained = bool(_get(result, "abstained", False)) or error is not None
    evidence_ids = _ids(_get(result, "evidence"))
    retrieved_ids = _ids(_get(result, "retrieved_ids")) or list(evidence_ids)
    scored = "" if abstained else str(answer)
    gold = question.gold_passage_ids
    metrics: dict[str, Any] = answer_metrics(scored, question.answers)
    verdict = judge(question.question, question.answers, scored)
    metrics["judge"] = float(verdict.correct)
    metrics.update(retrieval_metrics(retrieved_ids, evidence_ids, gold, ks=RECALL_KS))
    return {
        "config": config.name,
        "config_spec": config.spec(),
        "dataset": dataset.name,
        "question_id": question.id,
        "question_index": index,
        "question": question.question,
        "gold": {
            "answers": list(question.answers),
            "passage_ids": list(gold),
            "titles": list(question.gold_titles),
        },
        "flagged": question.flagged,
        "flag_reason": question.flag_reason,
        "type": question.type,
        "hops": question.hops,
        "prediction": str(answer),
        "abstained": abstained,
        "evidence_ids": evidence_ids,
        "retrieved_ids": retrieved_ids,
        "trace": _jsonable(_get(result, "trace", [])),
        "usage": _usage(_get(result, "usage"), wall),
        "diagnostics": _jsonable(_get(result, "diagnostics", {}) or {}),
        "judge": {"correct": verdict.correct, "reason": verdict.reason, "kind": verdict.judge},
        "judge_usage": verdict.usage,
        "metrics": metrics,
        "error": error,
    }


def _repair_tail(path: Path) -> None:
    """Cut a partly written last line (a run killed mid-write) so appends stay valid JSONL."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        data = path.read_bytes()
        f.truncate(data.rfind(b"\n") + 1)


def load_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a records.jsonl file (a directory means its records.jsonl).

    Unreadable lines (a torn last write) are skipped; when a key appears twice the last wins.
    """
    p = Path(path)
    if p.is_dir():
        p = p / RECORDS_FILE
    if not p.exists():
        return []
    by_key: dict[tuple[str, str, str], dict[str, Any]] = {}
    with p.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and {"config", "dataset", "question_id"} <= rec.keys():
                by_key[(rec["config"], rec["dataset"], rec["question_id"])] = rec
    return list(by_key.values())


def run_evaluation(
    datasets: Sequence[Dataset],
    configs: Sequence[EvalConfig],
    out_dir: str | Path,
    *,
    system: SystemFn | None = None,
    judge: Judge | None = None,
    concurrency: int = 1,
    index_factory: Callable[[Dataset], Any] | None = None,
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
    in order, in this thread). Returns the records of this run's datasets x configs x questions
    in dataset, config, question order.
    """
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ValueError(f"configuration names must be unique: {names}")
    if len({ds.name for ds in datasets}) != len(datasets):
        raise ValueError(f"dataset names must be unique: {[ds.name for ds in datasets]}")
    for ds in datasets:
        if len({q.id for q in ds.questions}) != len(ds.questions):
            raise ValueError(f"dataset {ds.name!r} has duplicate question ids")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cache = str(llm_cache) if llm_cache is not None else str(out / "llm_cache.sqlite")
    configs = [c if c.cache else c.model_copy(update={"cache": cache}) for c in configs]
    system = system or ApiSystem()
    judge = judge or Judge(None)
    if index_factory is None:
        graph = needs_graph(configs)

        def index_factory(ds: Dataset) -> Any:
            return cached_index(ds, index_dir, graph=graph)

    path = out / RECORDS_FILE
    _repair_tail(path)
    done = {(r["config"], r["dataset"], r["question_id"]): r for r in load_records(path)}
    skip = {key for key, r in done.items() if not (retry_errors and r.get("error"))}

    tasks = [
        (ds, i, q, cfg)
        for ds in datasets
        for cfg in configs
        for i, q in enumerate(ds.questions)
        if (cfg.name, ds.name, q.id) not in skip
    ]
    indexes: dict[str, Any] = {}
    for ds in datasets:
        if any(t[0] is ds for t in tasks):
            indexes[ds.name] = index_factory(ds)

    def work(task: tuple[Dataset, int, EvalQuestion, EvalConfig]) -> dict[str, Any]:
        ds, i, q, cfg = task
        start = time.perf_counter()
        error = None
        try:
            result = system(indexes[ds.name], q, cfg)
        except ImportError:
            raise
        except Exception as exc:  # one failing question must not end a long run
            log.warning("%s / %s / %s failed: %r", cfg.name, ds.name, q.id, exc)
            result, error = None, f"{type(exc).__name__}: {exc}"
        return _record(ds, i, q, cfg, result, time.perf_counter() - start, judge, error)

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


# ------------------------------------------------------------------------------------------
# retrieval-only evaluation


RetrieverFn = Callable[[Any, str, int], list[str]]


def get_retriever(name: str) -> RetrieverFn:
    """Retriever `name` of the one registry (`graphseek.tools.retrievers`), as ranked ids."""
    try:
        fn = shared_get_retriever(name)
    except ValueError:
        raise KeyError(
            f"unknown retriever {name!r}; registered: {', '.join(registered_retrievers())}"
        ) from None

    def ids(index: Any, query: str, k: int) -> list[str]:
        return [hit.passage.id for hit in fn(index, query, k)]

    ids.__name__ = f"retrieve_{name}"
    return ids


class RetrieverScores(BaseModel):
    """Mean retrieval scores of one retriever on one dataset (flagged questions skipped)."""

    retriever: str
    n: int = Field(description="Questions scored (not flagged).")
    recall: dict[int, float | None] = Field(description="k -> mean Recall@k.")
    all_recall: dict[int, float | None] = Field(description="k -> share with all gold in top k.")
    precision_at_k: float | None
    recall_at_k: float | None
    f1_at_k: float | None
    seconds_per_query: float


class RetrievalReport(BaseModel):
    """Retrieval-only results for one dataset."""

    dataset: str
    n_questions: int
    n_flagged: int
    k_values: list[int]
    f1_k: int
    scores: list[RetrieverScores]
    per_question: list[dict[str, Any]] = Field(default_factory=list)


def evaluate_retrieval(
    dataset: Dataset,
    retrievers: Sequence[str] = ("bm25", "dense", "hybrid"),
    k_values: Sequence[int] = (2, 5, 10),
    *,
    index: Any = None,
    index_dir: str | Path | None = None,
    f1_k: int = 5,
    progress: bool = False,
) -> RetrievalReport:
    """Recall@k (each k in k_values, plus 2 and 5), all-in-top-k, and passage-level
    precision/recall/F1 of the top `f1_k` for each retriever, over the non-flagged questions.
    """
    fns = {name: get_retriever(name) for name in retrievers}
    ks = sorted({*k_values, 2, 5, f1_k})
    if index is None:
        index = cached_index(dataset, index_dir)
    per_question: list[dict[str, Any]] = []
    scores: list[RetrieverScores] = []
    scored = [q for q in dataset.questions if not q.flagged]
    for name, fn in fns.items():
        rows: list[dict[str, Any]] = []
        seconds = 0.0
        if scored:  # warm-up, untimed: the first dense query loads the encoder
            fn(index, scored[0].question, max(ks))
        for q in tqdm(scored, desc=f"retrieval {name}", disable=not progress):
            start = time.perf_counter()
            ranked = list(dict.fromkeys(fn(index, q.question, max(ks))))
            seconds += time.perf_counter() - start
            row: dict[str, Any] = {
                f"recall@{k}": recall_at_k(ranked, q.gold_passage_ids, k) for k in ks
            }
            for k in ks:
                row[f"all@{k}"] = float(set(q.gold_passage_ids) <= set(ranked[:k]))
            prf = retrieval_prf(ranked[:f1_k], q.gold_passage_ids)
            row.update({f"ret_{m}@{f1_k}": v for m, v in prf.items()})
            rows.append(row)
            per_question.append({"retriever": name, "question_id": q.id, "ranked": ranked, **row})
        agg = aggregate(rows)

        def mean(key: str, agg: dict[str, dict[str, Any]] = agg) -> float | None:
            return agg.get(key, {}).get("mean")

        scores.append(
            RetrieverScores(
                retriever=name,
                n=len(rows),
                recall={k: mean(f"recall@{k}") for k in ks},
                all_recall={k: mean(f"all@{k}") for k in ks},
                precision_at_k=mean(f"ret_precision@{f1_k}"),
                recall_at_k=mean(f"ret_recall@{f1_k}"),
                f1_at_k=mean(f"ret_f1@{f1_k}"),
                seconds_per_query=seconds / len(rows) if rows else 0.0,
            )
        )
    return RetrievalReport(
        dataset=dataset.name,
        n_questions=len(dataset.questions),
        n_flagged=dataset.n_flagged,
        k_values=ks,
        f1_k=f1_k,
        scores=scores,
        per_question=per_question,
    )
