"""The command line, end to end on small inputs (offline)."""

from __future__ import annotations

import json

import pytest

from graphseek.cli import main

PUBLIC_KEYS = {"answer", "abstained", "abstain_reason", "evidence", "trace", "usage", "diagnostics"}
USAGE_KEYS = {
    "llm_calls",
    "failed_calls",
    "prompt_tokens",
    "completion_tokens",
    "tokens_estimated",
    "estimated_calls",
    "llm_seconds",
    "seconds",
}


def _json_out(capsys: pytest.CaptureFixture[str]) -> dict:
    out = capsys.readouterr().out.strip()
    assert out.count("\n") == 0, "--json must print exactly one line: one JSON object"
    return json.loads(out)


def test_demo_json_matches_the_schema_and_answers(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GRAPHSEEK_CACHE_DIR", str(tmp_path))
    assert main(["demo", "--json"]) == 0
    obj = _json_out(capsys)
    assert set(obj) == PUBLIC_KEYS
    assert set(obj["usage"]) == USAGE_KEYS
    assert obj["answer"] == "Bergen" and obj["abstained"] is False
    assert obj["evidence"] and set(obj["evidence"][0]) == {
        "passage_id",
        "title",
        "sentence",
        "context",
        "span",
        "supports_answer",
        "text",
    }
    # every item shows a sentence, with its neighbours as context
    assert all(e["sentence"] and e["sentence"] in e["context"] for e in obj["evidence"])
    assert any(e["supports_answer"] and e["span"] == obj["answer"] for e in obj["evidence"])
    assert "Ingrid Halvorsen" in {e["title"] for e in obj["evidence"]}
    assert obj["trace"][0] == "clarify_question" and obj["trace"][-1] == "finalize_answer"
    assert obj["usage"]["llm_calls"] == 0
    # the cached demo index (with its knowledge graph) is reused on the second run
    (index_dir,) = [p for p in tmp_path.iterdir() if p.name.startswith("demo-index-")]
    assert (index_dir / "graph" / "manifest.json").is_file()
    assert main(["demo", "--json", "--topology", "naive"]) == 0
    # one retrieval for a two-hop question: below the wikipedia profile's operating point, so
    # naive abstains, and shows the answer's sentence among its first three
    naive = _json_out(capsys)
    assert naive["abstained"] and naive["answer"] == ""
    holding = [e for e in naive["evidence"][:3] if "Bergen" in e["context"]]
    assert holding and holding[0]["span"] == "Bergen"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("demo-index-")] == [
        index_dir.name
    ]
    assert main(["stats", str(index_dir)]) == 0
    stats = capsys.readouterr().out
    assert "34 passages" in stats and "ntities" in stats


def test_index_then_ask(tmp_path, capsys: pytest.CaptureFixture[str], tiny_passages) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": p.title, "text": p.text} for p in tiny_passages]))
    out = tmp_path / "idx"
    assert main(["index", str(corpus), "--out", str(out), "--quiet", "--no-graph"]) == 0
    assert "Indexed 8 passages" in capsys.readouterr().out
    question = "Where did Ada Lovelace's father die?"
    # the tiny corpus is encyclopedia articles: kinship ("child of") is the wikipedia profile's
    args = ["ask", str(out), question, "--json", "--retriever", "bm25", "--profile", "wikipedia"]
    assert main(args) == 0
    obj = _json_out(capsys)
    assert obj["answer"] == "Missolonghi"
    assert "Lord Byron" in {e["title"] for e in obj["evidence"]}
    # no graph in this index: stats says how to get one, with a clear error
    assert main(["stats", str(out)]) == 2
    assert "no knowledge graph" in capsys.readouterr().err


def test_topologies_lists_every_workflow(capsys: pytest.CaptureFixture[str]) -> None:
    from graphseek.graphs import TOPOLOGIES

    assert main(["topologies"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(TOPOLOGIES)
    assert len(TOPOLOGIES) == 7


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["index", "missing.json", "--out", "x"], "missing.json"),
        (["ask", "no-such-index", "Who?"], "No index at"),
    ],
)
def test_bad_input_gets_a_clear_error(
    tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str], argv, message
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_unknown_topology_is_a_clear_error(tmp_path, capsys, tiny_index) -> None:
    assert main(["ask", str(tiny_index.path), "Who?", "--topology", "nope"]) == 2
    assert "Unknown topology 'nope'" in capsys.readouterr().err
