"""LLM-as-judge: the offline rule, and the LLM path driven by a scripted chat model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graphseek.agents.prompts.judge import JUDGE_SYSTEM, JUDGE_USER
from graphseek.evaluation.datasets import Dataset, EvalQuestion
from graphseek.evaluation.judge import Judge, JudgeVerdict, rule_judgement
from graphseek.evaluation.runner import EvalConfig, run_evaluation
from graphseek.llm import ScriptedChatModel


def test_rule_is_subem_or_f1_at_least_0_8() -> None:
    assert rule_judgement("He was born in Paris.", ["Paris"]).correct  # SubEM
    # SubEM = 0 (word order differs) but token F1 = 1.0
    assert rule_judgement("york new", ["New York"]).correct
    assert not rule_judgement("York", ["New York City"]).correct  # F1 = 0.5
    verdict = rule_judgement("", ["Paris"])
    assert not verdict.correct and verdict.judge == "rule"
    judge = Judge(None)
    assert judge.kind == "rule"
    assert Judge("offline").kind == "rule" and Judge("rule").kind == "rule"
    assert judge("q?", ["Paris"], "Paris").correct


def test_verdict_schema_puts_reason_before_verdict() -> None:
    assert list(JudgeVerdict.model_fields) == ["reason", "correct"]
    assert all(p in JUDGE_USER for p in ("{question}", "{gold_answers}", "{prediction}"))
    assert "reason" in JUDGE_SYSTEM and "correct" in JUDGE_SYSTEM


def test_llm_judge_with_scripted_model() -> None:
    model = ScriptedChatModel(
        responses=[
            {"reason": "Same person, shorter name.", "correct": True},
            {"reason": "Different city.", "correct": False},
        ]
    )
    judge = Judge(model)
    assert judge.kind == "llm"
    first = judge("Who?", ["G. Stanley Hall"], "Hall")
    assert first.correct and first.judge == "llm" and first.reason.startswith("Same person")
    assert first.usage.get("llm_calls") == 1
    second = judge("Where?", ["Paris"], "Lyon")
    assert not second.correct
    prompt = model.calls[0][-1].content
    assert "G. Stanley Hall" in prompt and "Hall" in prompt and "Who?" in prompt
    # an empty prediction costs no call
    assert not judge("Where?", ["Paris"], "").correct
    assert len(model.calls) == 2


def test_malformed_llm_output_falls_back_to_the_rule() -> None:
    model = ScriptedChatModel(responses=["not json"] * 3)
    verdict = Judge(model, max_retries=2)("Where?", ["Paris"], "in Paris")
    assert verdict.judge == "rule" and verdict.correct
    assert "LLM judge failed" in verdict.reason


def test_runner_records_llm_judgements(tmp_path: Path) -> None:
    def grade(messages: list[Any]) -> dict[str, Any]:
        ok = "Predicted answer: yes" in messages[-1].content
        return {"reason": "checked", "correct": ok}

    question = EvalQuestion(id="q", question="Is it?", answers=["yes"], gold_passage_ids=["p"])
    dataset = Dataset(name="d", questions=[question], corpus=[])
    records = run_evaluation(
        [dataset],
        [EvalConfig(name="c")],
        tmp_path,
        system=lambda index, q, cfg: {"answer": "yes", "evidence": ["p"]},
        judge=Judge(ScriptedChatModel(responses=grade)),
        index_factory=lambda ds: None,
        progress=False,
    )
    (record,) = records
    assert record["judge"] == {"correct": True, "reason": "checked", "kind": "llm"}
    assert record["metrics"]["judge"] == 1.0 and record["judge_usage"]["llm_calls"] == 1
    assert record["retrieved_ids"] == ["p"] and record["metrics"]["recall@1"] == 1.0
