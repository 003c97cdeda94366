"""The packaged demo corpus and questions, answered end to end by the offline reasoner.

clarify -> decompose -> hybrid retrieval (top 5 per sub-question) -> Librarian -> Seeker, through
the `dual_agent` workflow with no LLM configured.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import graphseek.knowledge
from graphseek.knowledge.passages import Passage

DEMO = Path(graphseek.knowledge.__file__).parent / "demo"


def _load(name: str) -> list[dict]:
    return json.loads((DEMO / name).read_text(encoding="utf-8"))


def test_demo_files_are_well_formed() -> None:
    corpus = _load("demo_corpus.json")
    questions = _load("demo_questions.json")
    assert 30 <= len(corpus) <= 40
    assert all(set(p) == {"title", "text"} and p["title"] and p["text"] for p in corpus)
    titles = {p["title"] for p in corpus}
    assert len(titles) == len(corpus)
    assert len(questions) >= 3
    for q in questions:
        assert set(q) == {"question", "answer", "gold_titles"}
        assert len(q["gold_titles"]) >= 2  # every demo question needs two hops or more
        assert set(q["gold_titles"]) <= titles


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory: pytest.TempPathFactory):
    from graphseek.knowledge.index import Index

    passages = [Passage.from_title_text(p["title"], p["text"]) for p in _load("demo_corpus.json")]
    return Index.build(passages, tmp_path_factory.mktemp("demo") / "index", show_progress=False)


@pytest.mark.parametrize("item", _load("demo_questions.json"), ids=lambda q: q["question"][:40])
def test_offline_reasoner_answers_every_demo_question(demo_index, item: dict) -> None:
    from graphseek.api import ask

    result = ask(
        demo_index, item["question"], topology="dual_agent", llm="offline", profile="wikipedia"
    )
    assert not result.abstained
    assert result.answer.lower() == item["answer"].lower()
    evidence_titles = {e.title for e in result.evidence}
    assert evidence_titles & set(item["gold_titles"])
    assert result.usage.llm_calls == 0
