"""Scoring one answer: EM/F1/SubEM, the judge, and the outcome right / wrong / abstained.

Every question ends in exactly one outcome:

- **right**: an answerable question answered correctly by the judge (the offline rule: SubEM or
  token F1 >= 0.8; an LLM judge when one is given), or an *unanswerable* question (empty gold
  answer) abstained on;
- **wrong**: an answer that is not right: a judged-incorrect answer to an answerable question,
  or any answer to an unanswerable one;
- **abstained**: an abstention (or an empty answer, or a system error) on an answerable question.

So right + wrong + abstained = questions, and the **wrong-answer rate** is wrong / questions: the
share of questions on which a user would be told something false.

Unanswerable questions follow SQuAD 2.0: an abstention scores EM = F1 = SubEM = 1 and judge
correct; any answer scores 0 and judge incorrect (decided here, without asking a judge model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from graphseek.evaluation.datasets import EvalQuestion
from graphseek.evaluation.judge import Judge, Judgement
from graphseek.evaluation.metrics import answer_metrics

__all__ = ["OUTCOMES", "Outcome", "outcome_metrics", "record_outcome", "score_answer"]

Outcome = Literal["right", "wrong", "abstained"]
OUTCOMES: tuple[Outcome, ...] = ("right", "wrong", "abstained")


def _answered(prediction: str | None, abstained: bool) -> bool:
    return not abstained and bool((prediction or "").strip())


def score_answer(
    question: EvalQuestion, prediction: str | None, abstained: bool, judge: Judge
) -> tuple[dict[str, float], Judgement, Outcome]:
    """(answer metrics {em, f1, subem, judge}, the judgement, the outcome) of one answer."""
    answered = _answered(prediction, abstained)
    if not question.answerable:
        value = 0.0 if answered else 1.0
        metrics = {"em": value, "f1": value, "subem": value, "judge": value}
        reason = (
            "unanswerable question (no gold answer): answering is wrong"
            if answered
            else "unanswerable question (no gold answer): abstaining is right"
        )
        verdict = Judgement(not answered, reason, judge.kind)
        return metrics, verdict, "wrong" if answered else "right"
    scored = str(prediction) if answered else ""
    metrics = answer_metrics(scored, question.answers)
    verdict = judge(question.question, question.answers, scored)
    metrics["judge"] = float(verdict.correct)
    outcome: Outcome = "right" if verdict.correct else ("wrong" if answered else "abstained")
    return metrics, verdict, outcome


def record_outcome(record: Mapping[str, Any]) -> Outcome:
    """The outcome of a record; records written before outcomes existed get it derived from
    their gold answers, abstention, prediction and judge verdict."""
    stored = record.get("outcome")
    if stored in OUTCOMES:
        return stored  # type: ignore[no-any-return]
    answered = _answered(record.get("prediction"), bool(record.get("abstained")))
    answers = (record.get("gold") or {}).get("answers") or []
    if not any(str(a).strip() for a in answers):
        return "wrong" if answered else "right"
    if (record.get("judge") or {}).get("correct"):
        return "right"
    return "wrong" if answered else "abstained"


def outcome_metrics(record: Mapping[str, Any]) -> dict[str, float | None]:
    """Per-question rows for the report: one-hot right/wrong/abstained, `wrong_answer_rate`
    (= wrong), `abstain_any` (any abstention) and `unanswerable_abstained` (None when the
    question is answerable, so its mean is over unanswerable questions only)."""
    outcome = record_outcome(record)
    answers = (record.get("gold") or {}).get("answers") or []
    answerable = any(str(a).strip() for a in answers)
    abstained = not _answered(record.get("prediction"), bool(record.get("abstained")))
    row: dict[str, float | None] = {name: float(outcome == name) for name in OUTCOMES}
    row["wrong_answer_rate"] = row["wrong"]
    row["abstain_any"] = float(abstained)
    row["unanswerable_abstained"] = None if answerable else float(abstained)
    shown = record.get("answer_in_evidence")
    row["answer_in_evidence"] = None if not answerable or shown is None else float(shown)
    return row


#: how many evidence items of a reply count as seen (the CLI prints an abstention's first three)
SHOWN_FIRST = 3


def shown_text(prediction: str, evidence: Sequence[Any], abstained: bool) -> str:
    """What a user sees first of a reply in the CLI text: the answer, then the first three
    evidence items' titles (document and section) and sentences with their context (the
    passage's opening when an item has none)."""
    items = list(evidence)[:SHOWN_FIRST]
    parts = [] if abstained else [prediction]
    for e in items:
        get = e.get if isinstance(e, Mapping) else lambda k, _e=e: getattr(_e, k, "")
        shown = get("context") or get("sentence") or str(get("text") or "")[:200]
        parts.append(f"{get('title') or ''}: {shown}")
    return "\n".join(parts)


def answer_in_evidence(
    answers: Sequence[str], prediction: str, evidence: Sequence[Any], abstained: bool
) -> bool | None:
    """Whether a gold answer string occurs (normalised) in what the user was shown
    (`shown_text`), whatever the reader's threshold; None for an unanswerable question."""
    from graphseek.agents.text import contains

    golds = [a for a in answers if str(a).strip()]
    if not golds:
        return None
    seen = shown_text(prediction, evidence, abstained)
    return any(contains(seen, a) for a in golds)
