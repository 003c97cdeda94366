"""Retrieval-only evaluation: Recall@k, all-in-top-k and passage-level P/R/F1 per retriever.

Retrievers are looked up by name in the one registry, `graphseek.tools.retrievers` (bm25, dense,
hybrid, and the graph retrievers higra and progressive), which the workflows use too. Ad hoc
retrievers for one evaluation are passed as a mapping `{name: fn(index, query, k)}` returning
ranked passage ids or hits; nothing is registered for them.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from tqdm.auto import tqdm

from graphseek.evaluation.datasets import Dataset
from graphseek.evaluation.index_cache import cached_index
from graphseek.evaluation.metrics import aggregate, recall_at_k, retrieval_prf
from graphseek.evaluation.records import passage_ids

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

__all__ = [
    "RetrievalReport",
    "RetrieverFn",
    "RetrieverScores",
    "configured_retrievers",
    "evaluate_retrieval",
    "get_retriever",
    "register_retriever",
    "registered_retrievers",
]

RetrieverFn = Callable[["IndexStore", str, int], list[str]]
"""`fn(index, query, k) -> ranked passage ids`."""


def register_retriever(name: str, fn: Callable[[IndexStore, str, int], list[Any]]) -> None:
    """Register `fn(index, query, k) -> list[Hit]` as retriever `name` in the shared registry
    (`graphseek.tools.retrievers`), where both the workflows and this evaluation find it."""
    from graphseek.tools.retrievers import register_retriever as register

    register(name, fn)


def registered_retrievers() -> list[str]:
    """The names in the shared retriever registry."""
    from graphseek.tools.retrievers import retriever_names

    return retriever_names()


def _as_ids(name: str, fn: Callable[[IndexStore, str, int], list[Any]]) -> RetrieverFn:
    def ids(index: IndexStore, query: str, k: int) -> list[str]:
        return passage_ids(fn(index, query, k))

    ids.__name__ = f"retrieve_{name}"
    return ids


def _registered(name: str) -> Callable[..., list[Any]]:
    """The registry's function `name`; KeyError naming the known retrievers when none."""
    from graphseek.tools.retrievers import get_retriever as lookup

    try:
        return lookup(name)
    except ValueError:
        raise KeyError(
            f"unknown retriever {name!r}; registered: {', '.join(registered_retrievers())}"
        ) from None


def get_retriever(name: str) -> RetrieverFn:
    """Retriever `name` from the shared registry, as `fn(index, query, k) -> ranked ids`.

    Raises KeyError naming the known retrievers when there is none of that name."""
    return _as_ids(name, _registered(name))


#: `Context` settings that a registered retriever function takes as a keyword (in a run it reads
#: them from the run's context), each with the suffix of the row of a retriever it turns on
RETRIEVER_SETTINGS = {"bridge_seeds": "bridge"}


def _keywords(fn: Callable[..., Any]) -> set[str]:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no signature to read: it takes no setting
        return set()
    return {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


def _reranked(fn: Callable[..., Any], spec: str) -> Callable[[IndexStore, str, int], list[Any]]:
    """`fn`'s hits reordered by the reranker of `spec` as a run's `retrieve` reorders them
    (`graphseek.tools.retrievers.reranked`)."""
    from graphseek.tools.retrievers import reranked

    def run(index: IndexStore, query: str, k: int) -> list[Any]:
        return reranked(spec, lambda depth: fn(index, query, depth), query, k)

    return run


def configured_retrievers(
    names: Sequence[str], settings: Mapping[str, Any] | None = None
) -> dict[str, Callable[[IndexStore, str, int], list[Any]]]:
    """Retrievers `names` from the shared registry with the settings of `settings` (a run's
    `--context`) that they take (`RETRIEVER_SETTINGS`), by the name of their row: outside a
    run a retriever cannot read the context, so `graphseek eval --retrieval-only --context
    bridge_seeds=true` passes it here. A retriever a setting turns on is named with its
    suffix (`higra+bridge`); one that takes none of them, or has them off, keeps its name.
    A `reranker` setting reorders every retriever's candidates as a run does (`retrieve`),
    its rows named with `+rerank`. Other settings are left alone; a bad value fails as
    `Context` fails it."""
    given = {key: value for key, value in (settings or {}).items() if key in RETRIEVER_SETTINGS}
    spec = str((settings or {}).get("reranker") or "")
    if given or spec:
        from graphseek.state.context import Context

        # ContextError (a ValueError) naming a bad value
        checked: dict[str, Any] = {**given, **({"reranker": spec} if spec else {})}
        Context(**checked)
    out: dict[str, Callable[[IndexStore, str, int], list[Any]]] = {}
    for name in names:
        fn = _registered(name)
        applied = {key: value for key, value in given.items() if key in _keywords(fn)}
        row = name + "".join(f"+{RETRIEVER_SETTINGS[key]}" for key, on in applied.items() if on)
        configured = functools.partial(fn, **applied) if applied else fn
        out[row + ("+rerank" if spec else "")] = _reranked(configured, spec) if spec else configured
    return out


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
    retrievers: Sequence[str] | Mapping[str, Callable[[IndexStore, str, int], list[Any]]] = (
        "bm25",
        "dense",
        "hybrid",
    ),
    k_values: Sequence[int] = (2, 5, 10),
    *,
    index: IndexStore | None = None,
    index_dir: str | Path | None = None,
    f1_k: int = 5,
    progress: bool = False,
) -> RetrievalReport:
    """Recall@k (each k in k_values, plus 2 and 5), all-in-top-k, and passage-level
    precision/recall/F1 of the top `f1_k` for each retriever, over the non-flagged questions.

    `retrievers` are names in the shared registry, or a mapping {name: fn(index, query, k)}
    for retrievers that exist only for this evaluation.
    """
    if isinstance(retrievers, Mapping):
        fns = {name: _as_ids(name, fn) for name, fn in retrievers.items()}
    else:
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
