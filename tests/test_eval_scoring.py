"""Outcomes right / wrong / abstained, unanswerable questions and the report's columns.

The system under test is a fake; datasets are built inline (nothing reads ../shared/data).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphseek.evaluation.configs import EvalConfig
from graphseek.evaluation.datasets import Dataset, EvalQuestion
from graphseek.evaluation.judge import Judge
from graphseek.evaluation.records import load_records
from graphseek.evaluation.report import write_report
from graphseek.evaluation.runner import run_evaluation
from graphseek.evaluation.scoring import outcome_metrics, record_outcome, score_answer
from graphseek.knowledge.passages import Passage

CORPUS = [Passage(id=f"p{i}", title=f"T{i}", text=f"text {i}") for i in range(3)]


def _q(qid: str, answers: list[str]) -> EvalQuestion:
    gold = ["p0"] if answers else []
    return EvalQuestion(
        id=qid,
        question=f"question {qid}?",
        answers=answers,
        gold_passage_ids=gold,
        flagged=not answers,
        flag_reason="" if answers else "unanswerable",
    )


# q1: answered right; q2: answered wrong; q3: abstained (answerable);
# q4: unanswerable, abstained (right); q5: unanswerable, answered (wrong)
QUESTIONS = [
    _q("q1", ["Phil Katz"]),
    _q("q2", ["LZMA2"]),
    _q("q3", ["GNU GMP"]),
    _q("q4", []),
    _q("q5", []),
]
ANSWERS = {
    "q1": ("Phil Katz", False),
    "q2": ("zlib", False),
    "q3": ("", True),
    "q4": ("", True),
    "q5": ("1999", False),
}


def _system(index: Any, q: EvalQuestion, cfg: EvalConfig) -> dict[str, Any]:
    answer, abstained = ANSWERS[q.id]
    return {
        "answer": answer,
        "abstained": abstained,
        "evidence": [],
        "retrieved_ids": ["p0"],
        "usage": {"seconds": 0.25},
    }


@pytest.mark.parametrize(
    ("answers", "prediction", "abstained", "outcome", "em"),
    [
        (["Phil Katz"], "Phil Katz", False, "right", 1.0),
        (["Phil Katz"], "the deflate format", False, "wrong", 0.0),
        (["Phil Katz"], "Phil Katz", True, "abstained", 0.0),  # abstention wins over the text
        (["Phil Katz"], "  ", False, "abstained", 0.0),  # an empty answer is no answer
        ([], "", True, "right", 1.0),
        ([], "1999", False, "wrong", 0.0),
        ([], "1999", True, "right", 1.0),
    ],
)
def test_score_answer_outcomes(
    answers: list[str], prediction: str, abstained: bool, outcome: str, em: float
) -> None:
    metrics, verdict, got = score_answer(_q("x", answers), prediction, abstained, Judge(None))
    assert got == outcome
    assert metrics["em"] == em and metrics["f1"] == em and metrics["judge"] == em
    assert verdict.correct is (outcome == "right") and verdict.judge == "rule"


def test_unanswerable_questions_never_reach_a_judge_model() -> None:
    class Exploding(Judge):
        def __call__(self, question: str, answers: Any, prediction: str | None) -> Any:
            raise AssertionError("the judge was asked about an unanswerable question")

    _, verdict, outcome = score_answer(_q("x", []), "1999", False, Exploding(None))
    assert outcome == "wrong" and "unanswerable" in verdict.reason


def test_outcomes_partition_the_questions_and_fill_the_report(tmp_path: Path) -> None:
    dataset = Dataset(name="docs", questions=QUESTIONS, corpus=CORPUS)
    config = EvalConfig(name="dual_agent-hybrid", topology="dual_agent")
    records = run_evaluation(
        [dataset], [config], tmp_path, system=_system, index_factory=lambda ds: None, progress=False
    )
    outcomes = {r["question_id"]: r["outcome"] for r in records}
    assert outcomes == {
        "q1": "right",
        "q2": "wrong",
        "q3": "abstained",
        "q4": "right",
        "q5": "wrong",
    }
    assert [r["answerable"] for r in records] == [True, True, True, False, False]
    assert all(r["usage"]["cpu_seconds"] >= 0 for r in records)

    summary = write_report(records, tmp_path, plots=False)
    cell = summary["cells"]["dual_agent-hybrid"]["docs"]
    assert cell["right"] == {"mean": 0.4, "n": 5, "count": 2}
    assert cell["wrong"] == {"mean": 0.4, "n": 5, "count": 2}
    assert cell["abstained"] == {"mean": 0.2, "n": 5, "count": 1}
    assert cell["wrong_answer_rate"]["mean"] == pytest.approx(0.4)
    assert cell["unanswerable_abstained"] == {"mean": 0.5, "n": 2, "count": 1}
    assert cell["abstain_any"]["mean"] == pytest.approx(0.4)  # q3 and q4
    assert cell["em"]["mean"] == pytest.approx(0.4)  # q1 and the abstention on q4
    assert any(n.startswith("Unanswerable questions") and "docs: 2" in n for n in summary["notes"])
    assert not any(n.startswith("Retrieval metrics skip flagged") for n in summary["notes"])
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["cells"]["dual_agent-hybrid"]["docs"]["wrong_answer_rate"]["mean"] == 0.4

    table = (tmp_path / "table.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| config |"))
    row = next(line for line in table.splitlines() if line.startswith("| dual_agent-hybrid |"))
    cells = dict(
        zip(
            [c.strip() for c in header.strip("|").split("|")],
            [c.strip() for c in row.strip("|").split("|")],
            strict=True,
        )
    )
    assert cells["right"] == "2 (40%)" and cells["wrong"] == "2 (40%)"
    assert cells["abstained"] == "1 (20%)" and cells["wrong-answer rate"] == "40.0"
    assert cells["unans. abstained"] == "1/2"


def test_averages_add_the_counts_over_datasets(tmp_path: Path) -> None:
    one = Dataset(name="a", questions=QUESTIONS[:3], corpus=CORPUS)
    two = Dataset(name="b", questions=QUESTIONS[3:], corpus=CORPUS)
    config = EvalConfig(name="naive-hybrid")
    records = run_evaluation(
        [one, two],
        [config],
        tmp_path,
        system=_system,
        index_factory=lambda ds: None,
        progress=False,
    )
    avg = write_report(records, tmp_path, plots=False)["averages"]["naive-hybrid"]
    assert avg["right"]["count"] == 2 and avg["wrong"]["count"] == 2
    assert avg["abstained"]["count"] == 1
    assert avg["unanswerable_abstained"]["count"] == 1 and avg["unanswerable_abstained"]["n"] == 2


def test_records_without_an_outcome_get_one_derived(tmp_path: Path) -> None:
    """Records written before outcomes existed (a resumed older run) still get the columns."""
    old = [
        {
            "gold": {"answers": ["x"]},
            "prediction": "x",
            "abstained": False,
            "judge": {"correct": 1},
        },
        {"gold": {"answers": ["x"]}, "prediction": "y", "abstained": False, "judge": {}},
        {"gold": {"answers": ["x"]}, "prediction": "x", "abstained": True, "judge": {}},
        {"gold": {"answers": [""]}, "prediction": "", "abstained": True, "judge": {}},
        {"gold": {"answers": []}, "prediction": "z", "abstained": False, "judge": {}},
    ]
    assert [record_outcome(r) for r in old] == ["right", "wrong", "abstained", "right", "wrong"]
    assert outcome_metrics(old[3])["unanswerable_abstained"] == 1.0
    assert outcome_metrics(old[0])["unanswerable_abstained"] is None
    # and through a records file whose lines carry no outcome
    lines = []
    for i, rec in enumerate(old):
        rec = {**rec, "config": "c", "dataset": "d", "question_id": f"q{i}", "metrics": {}}
        lines.append(json.dumps(rec))
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    summary = write_report(load_records(tmp_path), tmp_path / "report", plots=False)
    assert summary["cells"]["c"]["d"]["wrong"]["count"] == 2


def test_eval_on_a_docqa_directory_and_the_reserved_heldout_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphseek.evaluation.cli import eval_main, run_eval

    root = tmp_path / "data" / "docqa"
    root.mkdir(parents=True)
    records = [
        {"_id": "q1", "question": "Who?", "answer": "Phil Katz", "supporting_facts": [["T0", 0]]},
        {"_id": "q4", "question": "When?", "answer": "", "supporting_facts": []},
    ]
    (root / "docqa_dev.json").write_text(json.dumps(records))
    corpus = [{"title": p.title, "text": p.text} for p in CORPUS]
    (root / "docqa_corpus.json").write_text(json.dumps(corpus))
    outcome = run_eval(
        ["docqa"],
        topologies=["dual_agent"],
        data_dir=tmp_path / "data",
        out=tmp_path / "out",
        system=_system,
        index_factory=lambda ds: None,
        progress=False,
    )
    assert [r["outcome"] for r in outcome["records"]] == ["right", "right"]
    assert "wrong-answer rate" in (tmp_path / "out" / "table.md").read_text()

    monkeypatch.delenv("GRAPHSEEK_DOCQA_HELDOUT", raising=False)
    code = eval_main(["--dataset", "docqa-heldout", "--data-dir", str(tmp_path / "data")])
    captured = capsys.readouterr()  # the error is one line on stderr, nothing on stdout
    err = captured.err
    assert code == 2 and "docqa-heldout=PATH" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "docqa-heldout" not in captured.out


def test_unknown_topology_or_retriever_fails_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphseek.evaluation.cli import eval_main

    missing = str(tmp_path / "no-such-data")  # never read: the names are checked first
    for option, name in (("--topology", "nosuch"), ("--retriever", "nosuch")):
        code = eval_main(["--dataset", "docqa", "--data-dir", missing, option, name])
        err = capsys.readouterr().err  # one line on stderr
        assert (
            code == 2 and f"unknown {option[2:]} 'nosuch'" in err.lower() and "Traceback" not in err
        )
