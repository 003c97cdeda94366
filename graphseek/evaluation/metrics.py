"""Answer and retrieval metrics (pure functions).

Answer metrics follow the SQuAD / HotpotQA evaluation scripts: answers are normalised (lower case,
punctuation and the articles a/an/the removed, whitespace collapsed), and EM and token F1 are the
maximum over every gold alias. SubEM (GraphSearch App. D) counts a prediction as correct when a
normalised gold alias is a substring of the normalised prediction.

Retrieval metrics work on passage ids: Recall@k is the fraction of gold passages among the top k
retrieved (HippoRAG, A2RAG Table I), all-in-top-k is 1 when every gold passage is there, and the
passage-level precision/recall/F1 compares the set of evidence ids a system returns with the gold
set (KAIR's "retrieval F1").
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "RETRIEVAL_METRICS",
    "aggregate",
    "all_in_top_k",
    "answer_metrics",
    "exact_match",
    "normalize_answer",
    "recall_at_k",
    "retrieval_metrics",
    "retrieval_prf",
    "sub_exact_match",
    "token_f1",
]

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lower case, drop punctuation and articles, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _golds(answers: str | Sequence[str]) -> list[str]:
    return [answers] if isinstance(answers, str) else [a for a in answers if a is not None]


def _em_one(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1_one(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(pred_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str | None, answers: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals some normalised gold alias."""
    if not prediction:
        return 0.0
    return max((_em_one(prediction, g) for g in _golds(answers)), default=0.0)


def token_f1(prediction: str | None, answers: str | Sequence[str]) -> float:
    """SQuAD token F1 against the best-matching gold alias."""
    if not prediction:
        return 0.0
    return max((_f1_one(prediction, g) for g in _golds(answers)), default=0.0)


def sub_exact_match(prediction: str | None, answers: str | Sequence[str]) -> float:
    """1.0 when some normalised (non-empty) gold alias occurs in the normalised prediction."""
    if not prediction:
        return 0.0
    pred = normalize_answer(prediction)
    for g in _golds(answers):
        gold = normalize_answer(g)
        if gold and gold in pred:
            return 1.0
    return 0.0


def answer_metrics(prediction: str | None, answers: str | Sequence[str]) -> dict[str, float]:
    """{'em', 'f1', 'subem'} for one prediction."""
    return {
        "em": exact_match(prediction, answers),
        "f1": token_f1(prediction, answers),
        "subem": sub_exact_match(prediction, answers),
    }


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(ids))


def recall_at_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """Fraction of the gold ids among the first k distinct retrieved ids (None: no gold)."""
    gold_set = set(gold)
    if not gold_set:
        return None
    top = set(_unique(retrieved)[:k])
    return len(gold_set & top) / len(gold_set)


def all_in_top_k(retrieved: Sequence[str], gold: Iterable[str], k: int) -> float | None:
    """1.0 when every gold id is among the first k distinct retrieved ids (None: no gold)."""
    gold_set = set(gold)
    if not gold_set:
        return None
    return float(gold_set <= set(_unique(retrieved)[:k]))


def retrieval_prf(evidence: Iterable[str], gold: Iterable[str]) -> dict[str, float | None]:
    """Passage-level precision, recall and F1 of a set of evidence ids against the gold set.

    An empty evidence set has precision 0 (nothing right was returned); no gold gives None.
    """
    ev, gold_set = set(evidence), set(gold)
    if not gold_set:
        return {"precision": None, "recall": None, "f1": None}
    hit = len(ev & gold_set)
    precision = hit / len(ev) if ev else 0.0
    recall = hit / len(gold_set)
    f1 = 2 * precision * recall / (precision + recall) if hit else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def retrieval_metrics(
    retrieved: Sequence[str],
    evidence: Sequence[str],
    gold: Sequence[str],
    ks: Iterable[int] = (2, 5),
) -> dict[str, float | None]:
    """Recall@k / all@k over the ranked retrieved ids and P/R/F1 of the evidence ids.

    Keys: 'recall@K', 'all@K' for each K, and 'ret_precision', 'ret_recall', 'ret_f1'.
    """
    out: dict[str, float | None] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(retrieved, gold, k)
        out[f"all@{k}"] = all_in_top_k(retrieved, gold, k)
    prf = retrieval_prf(evidence, gold)
    out["ret_precision"] = prf["precision"]
    out["ret_recall"] = prf["recall"]
    out["ret_f1"] = prf["f1"]
    return out


RETRIEVAL_METRICS = re.compile(r"^(recall@\d+|all@\d+|ret_precision|ret_recall|ret_f1)$")
"""Names of the retrieval metrics: skipped for flagged questions when aggregating."""


def aggregate(
    rows: Iterable[Mapping[str, Any]],
    flagged: Iterable[bool] | None = None,
) -> dict[str, dict[str, float | int | None]]:
    """Mean of each metric over questions, with the number of questions each mean is over.

    `rows` are per-question {metric: value}; None values and booleans are handled (None is
    skipped, booleans count as 0/1). Retrieval metrics (see `RETRIEVAL_METRICS`) skip the
    questions marked in `flagged`, whose gold passages are incomplete. Returns
    {metric: {"mean": float | None, "n": int}}.
    """
    rows = list(rows)
    flags = list(flagged) if flagged is not None else [False] * len(rows)
    if len(flags) != len(rows):
        raise ValueError(f"{len(rows)} metric rows but {len(flags)} flags")
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row, flag in zip(rows, flags, strict=True):
        for name, value in row.items():
            sums.setdefault(name, 0.0)
            counts.setdefault(name, 0)
            if value is None or (flag and RETRIEVAL_METRICS.match(name)):
                continue
            sums[name] += float(value)
            counts[name] += 1
    return {
        name: {"mean": (sums[name] / counts[name]) if counts[name] else None, "n": counts[name]}
        for name in sums
    }
