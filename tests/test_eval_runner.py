"""The runner (resume, errors, concurrency), retrieval-only evaluation, the report and the CLI.

The system under test is a fake; the index is a stand-in with `search(query, k, method)`.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from graphseek.evaluation.cli import add_eval_arguments, make_configs, run_eval
from graphseek.evaluation.datasets import Dataset, EvalQuestion
from graphseek.evaluation.report import write_report
from graphseek.evaluation.runner import (
    EvalConfig,
    baseline_configs,
    evaluate_retrieval,
    load_records,
    register_retriever,
    run_evaluation,
)
from graphseek.knowledge.passages import Hit, Passage

PASSAGES = [Passage(id=f"p{i}", title=f"T{i}", text=f"text {i}") for i in range(6)]


def _dataset(name: str = "tiny", n: int = 5) -> Dataset:
    questions = [
        EvalQuestion(
            id=f"q{i}",
            question=f"question {i}?",
            answers=[f"answer {i}", f"alias {i}"],
            gold_passage_ids=[f"p{i}", f"p{i + 1}"],
            gold_titles=[f"T{i}", f"T{i + 1}"],
            flagged=(i == 4),
            flag_reason="gold passage not found" if i == 4 else "",
        )
        for i in range(n)
    ]
    return Dataset(name=name, questions=questions, corpus=PASSAGES)


@dataclass
class Ev:
    passage_id: str


@dataclass
class FakeResult:
    answer: str
    abstained: bool
    evidence: list[Ev]
    retrieved_ids: list[str]
    trace: list[dict[str, Any]]
    usage: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)


class Interrupted(BaseException):
    """Stands in for Ctrl-C / a killed process."""


class FakeSystem:
    """Answers question i correctly when i is even; raises after `fail_after` calls if set."""

    def __init__(self, fail_after: int | None = None, error_on: str | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail_after = fail_after
        self.error_on = error_on

    def __call__(self, index: Any, q: EvalQuestion, cfg: EvalConfig) -> FakeResult:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise Interrupted
        self.calls.append((cfg.name, q.id))
        if q.id == self.error_on:
            raise ValueError("boom")
        i = int(q.id[1:])
        answer = f"The answer {i}." if i % 2 == 0 else "something else"
        stage = ["local", "bridge", "ppr"][i % 3]
        return FakeResult(
            answer=answer,
            abstained=(i == 3),
            evidence=[Ev(f"p{i}")],
            retrieved_ids=[f"p{i}", "p5", f"p{i + 1}"],
            trace=[{"node": "retrieve"}, {"node": "answer"}],
            usage={
                "llm_calls": 2,
                "prompt_tokens": 100 + i,
                "completion_tokens": 10,
                "seconds": 0.5,
            },
            diagnostics={"stage_reached": stage},
        )


CONFIGS = [
    EvalConfig(name="naive-bm25", topology="naive", retriever="bm25"),
    EvalConfig(name="adaptive-hybrid", topology="adaptive", retriever="hybrid"),
]


def _run(out: Path, system: FakeSystem, concurrency: int = 1) -> list[dict[str, Any]]:
    return run_evaluation(
        [_dataset()],
        CONFIGS,
        out,
        system=system,
        index_factory=lambda ds: None,
        concurrency=concurrency,
        progress=False,
    )


def test_records_have_the_documented_fields_and_metrics(tmp_path: Path) -> None:
    records = _run(tmp_path, FakeSystem())
    assert len(records) == 10
    r0 = records[0]
    assert {
        "config",
        "dataset",
        "question_id",
        "question",
        "gold",
        "prediction",
        "abstained",
        "evidence_ids",
        "retrieved_ids",
        "trace",
        "usage",
        "diagnostics",
        "metrics",
    } <= r0.keys()
    assert (r0["config"], r0["dataset"], r0["question_id"]) == ("naive-bm25", "tiny", "q0")
    assert r0["prediction"] == "The answer 0."
    assert r0["metrics"]["em"] == 1.0 and r0["metrics"]["subem"] == 1.0
    assert r0["metrics"]["recall@1"] == 0.5 and r0["metrics"]["recall@2"] == 0.5
    assert r0["metrics"]["recall@5"] == 1.0
    assert r0["metrics"]["ret_precision"] == 1.0 and r0["metrics"]["ret_recall"] == 0.5
    assert r0["judge"]["kind"] == "rule" and r0["judge"]["correct"] is True
    assert r0["usage"] == {
        "llm_calls": 2,
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "seconds": 0.5,
    }
    assert r0["config_spec"]["topology"] == "naive"
    assert r0["config_spec"]["name"] == "naive-bm25"
    # abstained answers score zero even though the fake wrote a prediction
    r3 = next(r for r in records if r["question_id"] == "q3")
    assert r3["abstained"] and r3["metrics"]["f1"] == 0.0 and r3["metrics"]["judge"] == 0.0
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    assert len(lines) == 10 and json.loads(lines[0]) == r0


def test_interrupted_run_resumes_to_the_same_records(tmp_path: Path) -> None:
    reference = _run(tmp_path / "clean", FakeSystem())

    out = tmp_path / "resumed"
    first = FakeSystem(fail_after=3)
    with pytest.raises(Interrupted):
        _run(out, first)
    assert len(load_records(out)) == 3
    # a torn half-written line from the kill is repaired, not fatal
    with (out / "records.jsonl").open("a") as f:
        f.write('{"config": "naive-bm25", "dataset": "ti')
    second = FakeSystem()
    resumed = _run(out, second)
    assert len(second.calls) == 7  # only what was missing
    assert ("naive-bm25", "q0") not in second.calls
    assert resumed == reference
    # a third run has nothing to do
    third = FakeSystem()
    assert _run(out, third) == reference and third.calls == []


def test_system_error_is_recorded_and_run_goes_on(tmp_path: Path) -> None:
    records = _run(tmp_path, FakeSystem(error_on="q1"))
    failed = [r for r in records if r["error"]]
    assert len(failed) == 2 and all(r["question_id"] == "q1" for r in failed)
    assert failed[0]["abstained"] and failed[0]["error"] == "ValueError: boom"
    assert len(records) == 10
    # the next run retries only the failed questions; the new records replace the old
    again = FakeSystem()
    retried = _run(tmp_path, again)
    assert sorted(again.calls) == [("adaptive-hybrid", "q1"), ("naive-bm25", "q1")]
    assert not any(r["error"] for r in retried) and len(retried) == 10
    assert len(load_records(tmp_path)) == 10


def test_import_error_stops_the_run(tmp_path: Path) -> None:
    def broken(index: Any, q: EvalQuestion, cfg: EvalConfig) -> Any:
        raise ModuleNotFoundError("No module named 'graphseek.missing'")

    with pytest.raises(ImportError):
        _run(tmp_path, broken)  # type: ignore[arg-type]
    assert load_records(tmp_path) == []


def test_concurrency_gives_the_same_records(tmp_path: Path) -> None:
    sequential = _run(tmp_path / "one", FakeSystem())
    parallel = _run(tmp_path / "two", FakeSystem(), concurrency=2)
    assert parallel == sequential


def test_duplicate_config_names_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unique"):
        run_evaluation([_dataset()], [CONFIGS[0], CONFIGS[0]], tmp_path, system=FakeSystem())


def test_report_table_summary_and_plots(tmp_path: Path) -> None:
    records = _run(tmp_path, FakeSystem())
    summary = write_report(records, tmp_path)
    for name in ("table.md", "summary.json", "records.jsonl"):
        assert (tmp_path / name).is_file()
    for png in ("accuracy_vs_tokens.png", "recall_at_k.png", "adaptive_stages.png"):
        assert (tmp_path / "plots" / png).stat().st_size > 1000
    table = (tmp_path / "table.md").read_text()
    assert "## tiny" in table and "Acc (rule)" in table
    # EM: q0, q2, q4 correct out of 5 -> 60.0; abstention 1 of 5 -> 20.0
    row = next(line for line in table.splitlines() if line.startswith("| naive-bm25 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "5" and cells[2] == "60.0" and cells[-1] == "20.0"
    # R@2 skips the flagged q4: every other question has 1 of 2 gold in the top 2
    assert cells[6] == "50.0"
    cell = summary["cells"]["naive-bm25"]["tiny"]
    assert cell["recall@2"] == {"mean": 0.5, "n": 4}
    assert cell["em"]["n"] == 5
    assert cell["tokens"]["mean"] == pytest.approx(112.0)
    assert json.loads((tmp_path / "summary.json").read_text())["judge"] == "rule"
    assert any("flagged" in n for n in summary["notes"])


def test_report_without_adaptive_stages_notes_the_skip(tmp_path: Path) -> None:
    records = run_evaluation(
        [_dataset(), _dataset("other", 3)],
        [CONFIGS[0]],
        tmp_path,
        system=FakeSystem(),
        index_factory=lambda ds: None,
        progress=False,
    )
    summary = write_report(records, tmp_path)
    assert not (tmp_path / "plots" / "adaptive_stages.png").exists()
    assert any("adaptive" in n for n in summary["notes"])
    table = (tmp_path / "table.md").read_text()
    assert "## Average over datasets" in table
    average = table.split("## Average over datasets")[1]
    assert "| naive-bm25 | 8 |" in average  # counts add up over datasets
    assert summary["averages"]["naive-bm25"]["datasets"]["mean"] == 2


class FakeIndex:
    def search(self, query: str, k: int, method: str = "hybrid") -> list[Hit]:
        i = int(query.split()[1].rstrip("?"))
        order = {"bm25": [i, i + 1], "dense": [5, i], "hybrid": [i, 5, i + 1]}[method]
        ids = [f"p{j}" for j in order][:k]
        by_id = {p.id: p for p in PASSAGES}
        return [
            Hit(passage=by_id[pid], score=1.0 / (r + 1), rank=r + 1) for r, pid in enumerate(ids)
        ]


def test_evaluate_retrieval_registry_and_scores() -> None:
    by_id = {p.id: p for p in PASSAGES}
    register_retriever(
        "oracle",
        lambda index, query, k: [
            Hit(passage=by_id[f"p{j}"], score=1.0, rank=j + 1) for j in range(6)
        ][:k],
    )
    report = evaluate_retrieval(
        _dataset(), ["bm25", "dense", "hybrid", "oracle"], k_values=(1, 2, 5), index=FakeIndex()
    )
    assert report.n_questions == 5 and report.n_flagged == 1
    scores = {s.retriever: s for s in report.scores}
    assert scores["bm25"].n == 4
    assert scores["bm25"].recall[2] == 1.0 and scores["bm25"].recall[1] == 0.5
    assert scores["dense"].recall[2] == 0.5 and scores["dense"].all_recall[2] == 0.0
    assert scores["hybrid"].recall[2] == 0.5 and scores["hybrid"].recall[5] == 1.0
    # P/R/F1 over the top 5: bm25 returns 2 ids, both gold
    assert scores["bm25"].precision_at_k == 1.0 and scores["bm25"].f1_at_k == 1.0
    assert scores["hybrid"].precision_at_k == pytest.approx(2 / 3)
    # oracle top 5 = p0..p4: q0..q3 have both gold except q3 (p4 in, p4 yes) -> all in
    assert scores["oracle"].recall[5] == 1.0
    assert scores["oracle"].precision_at_k == pytest.approx(2 / 5)
    with pytest.raises(KeyError, match="unknown retriever"):
        evaluate_retrieval(_dataset(), ["nope"], index=FakeIndex())


def test_baselines_and_config_names() -> None:
    assert [c.name for c in baseline_configs()] == ["naive-bm25", "naive-dense", "naive-hybrid"]
    configs = make_configs(["naive", "dual_agent"], ["hybrid"], baselines=True)
    assert [c.name for c in configs] == [
        "naive-hybrid",
        "dual_agent-hybrid",
        "naive-bm25",
        "naive-dense",
    ]


def test_cli_arguments_and_run_eval(tmp_path: Path) -> None:
    parser = add_eval_arguments(argparse.ArgumentParser())
    args = parser.parse_args(
        [
            "--dataset",
            "2wiki",
            "--dataset",
            "musique-train",
            "--topology",
            "naive,adaptive",
            "--retriever",
            "bm25",
            "--baselines",
            "--concurrency",
            "2",
            "--context",
            "top_k=3",
        ]
    )
    assert args.dataset == ["2wiki", "musique-train"] and args.questions == "0:200"
    assert args.topology == ["naive,adaptive"] and args.baselines and args.concurrency == 2
    assert args.judge is None and args.llm == "offline" and not args.retrieval_only

    outcome = run_eval(
        [_dataset()],
        topologies=["naive", "adaptive"],
        retrievers=["bm25"],
        baselines=True,
        context={"top_k": 3},
        out=tmp_path,
        progress=False,
        system=FakeSystem(),
        index_factory=lambda ds: None,
    )
    configs = outcome["summary"]["configs"]
    assert configs == ["naive-bm25", "adaptive-bm25", "naive-dense", "naive-hybrid"]
    assert len(outcome["records"]) == 20
    assert outcome["records"][0]["config_spec"]["context"] == {"top_k": 3}
    assert (tmp_path / "plots" / "adaptive_stages.png").exists()

    ret = run_eval(
        [_dataset()],
        retrieval_only=True,
        out=tmp_path / "ret",
        progress=False,
        index_factory=lambda ds: FakeIndex(),
    )
    assert (tmp_path / "ret" / "retrieval.json").is_file()
    assert (tmp_path / "ret" / "plots" / "recall_at_k_retrievers.png").is_file()
    table = (tmp_path / "ret" / "table.md").read_text()
    assert "Retrieval only: tiny" in table and "| bm25 |" in table
    assert [s.retriever for s in ret["retrieval"][0].scores] == ["bm25", "dense", "hybrid"]


@pytest.mark.slow
def test_retrieval_and_index_cache_on_a_real_index(
    tiny_passages: list[Passage], tiny_index: Any, tmp_path: Path
) -> None:
    from graphseek.evaluation.runner import cached_index

    question = EvalQuestion(
        id="byron",
        question="Where did Ada Lovelace's father die?",
        answers=["Missolonghi"],
        gold_passage_ids=["ada", "byron"],
    )
    dataset = Dataset(name="tiny", questions=[question], corpus=tiny_passages)
    report = evaluate_retrieval(dataset, ["bm25", "hybrid"], k_values=(2, 5), index=tiny_index)
    for scores in report.scores:
        ranked = [h.passage.id for h in tiny_index.search(question.question, 5, scores.retriever)]
        expected = len({"ada", "byron"} & set(ranked[:5])) / 2
        assert scores.recall[5] == expected

    built = cached_index(dataset, tmp_path, show_progress=False)
    manifest = next(p for p in built.path.iterdir() if p.suffix == ".json")
    stamp = manifest.stat().st_mtime_ns
    reopened = cached_index(dataset, tmp_path)
    assert reopened.path == built.path and built.path.name.startswith("tiny-")
    assert manifest.stat().st_mtime_ns == stamp  # opened, not rebuilt
    assert len(reopened) == len(tiny_passages)


def test_graph_need_and_index_cache_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.evaluation.runner import default_index_dir, needs_graph

    assert not needs_graph(make_configs(["naive", "dual_agent"], ["bm25", "hybrid"]))
    assert needs_graph(make_configs(["adaptive"], ["hybrid"]))
    assert needs_graph(make_configs(["dual_agent"], ["higra"]))
    monkeypatch.setenv("GRAPHSEEK_CACHE_DIR", str(tmp_path / "c"))
    assert default_index_dir() == tmp_path / "c" / "indexes"
    monkeypatch.delenv("GRAPHSEEK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_index_dir() == tmp_path / "x" / "graphseek" / "indexes"
