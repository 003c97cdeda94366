"""Evaluation records: one JSON object per (config, dataset, question) in `records.jsonl`.

Record fields: config, config_spec, dataset, question_id, question_index, question, gold
{answers, passage_ids, titles}, answerable, flagged, flag_reason, type, hops, prediction,
abstained, abstain_reason, outcome (right / wrong / abstained, see `graphseek.evaluation.scoring`),
evidence_ids, answer_in_evidence (a gold answer occurs in what the user saw), retrieved_ids (ranked), trace, usage {llm_calls, prompt_tokens, completion_tokens,
seconds, cpu_seconds}, diagnostics, judge {correct, reason, kind}, judge_usage, metrics, error.

The file is append-only: a resumed run appends, and when a key appears twice the last record
wins; a torn last line (a run killed mid-write) is cut before appending.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from graphseek.evaluation.metrics import retrieval_metrics

if TYPE_CHECKING:
    from graphseek.evaluation.configs import EvalConfig
    from graphseek.evaluation.datasets import Dataset, EvalQuestion
    from graphseek.evaluation.judge import Judge

__all__ = [
    "RECALL_KS",
    "RECORDS_FILE",
    "jsonable",
    "load_records",
    "make_record",
    "repair_tail",
]

RECALL_KS: tuple[int, ...] = (1, 2, 5, 10)
"""The k of the Recall@k stored in each record (the report plots curves over them)."""

RECORDS_FILE = "records.jsonl"


def get_field(obj: Any, name: str, default: Any = None) -> Any:
    """`obj[name]` for mappings, else `obj.name`."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def jsonable(value: Any) -> Any:
    """Plain JSON data from pydantic models, dataclasses, tuples, sets and the like."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if hasattr(value, "content") and hasattr(value, "type"):  # a LangChain message
        return {"type": value.type, "content": jsonable(value.content)}
    return str(value)


def passage_ids(items: Iterable[Any] | None) -> list[str]:
    """Distinct passage ids, in order, of ids, hits, evidence items or passages."""
    out: list[str] = []
    for item in items or []:
        if isinstance(item, str):
            pid = item
        else:
            pid = (
                get_field(item, "passage_id")
                or get_field(get_field(item, "passage"), "id")
                or get_field(item, "id")
            )
        if pid and pid not in out:
            out.append(str(pid))
    return out


def _usage(usage: Any, wall: float, cpu: float | None) -> dict[str, Any]:
    out = {
        "llm_calls": int(get_field(usage, "llm_calls", 0) or 0),
        "prompt_tokens": int(get_field(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(get_field(usage, "completion_tokens", 0) or 0),
        "seconds": float(get_field(usage, "seconds", 0.0) or 0.0),
    }
    if out["seconds"] <= 0:
        out["seconds"] = wall
    if cpu is not None:
        out["cpu_seconds"] = cpu
    return out


def make_record(
    dataset: Dataset,
    index: int,
    question: EvalQuestion,
    config: EvalConfig,
    result: Any,
    wall: float,
    judge: Judge,
    error: str | None = None,
    cpu: float | None = None,
) -> dict[str, Any]:
    """The scored record of one answer (`result`: a `graphseek.api.Result` or alike, None when
    the system raised `error`). `wall` and `cpu` are the seconds it took (CPU: process time)."""
    from graphseek.evaluation.scoring import answer_in_evidence, score_answer

    answer = get_field(result, "answer") or ""
    abstained = bool(get_field(result, "abstained", False)) or error is not None
    evidence_ids = passage_ids(get_field(result, "evidence"))
    retrieved_ids = passage_ids(get_field(result, "retrieved_ids")) or list(evidence_ids)
    gold = question.gold_passage_ids
    scores, verdict, outcome = score_answer(question, str(answer), abstained, judge)
    shown = answer_in_evidence(
        question.answers, str(answer), get_field(result, "evidence") or [], abstained
    )
    metrics: dict[str, Any] = dict(scores)
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
        "answerable": question.answerable,
        "flagged": question.flagged,
        "flag_reason": question.flag_reason,
        "type": question.type,
        "hops": question.hops,
        "prediction": str(answer),
        "abstained": abstained,
        "abstain_reason": str(get_field(result, "abstain_reason") or error or "")
        if abstained
        else "",
        "outcome": outcome,
        "evidence_ids": evidence_ids,
        # a gold answer string occurs in what the user saw (answer or abstention; None when
        # the question is unanswerable)
        "answer_in_evidence": shown,
        "retrieved_ids": retrieved_ids,
        "trace": jsonable(get_field(result, "trace", [])),
        "usage": _usage(get_field(result, "usage"), wall, cpu),
        "diagnostics": jsonable(get_field(result, "diagnostics", {}) or {}),
        "judge": {"correct": verdict.correct, "reason": verdict.reason, "kind": verdict.judge},
        "judge_usage": verdict.usage,
        "metrics": metrics,
        "error": error,
    }


def repair_tail(path: Path) -> None:
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
