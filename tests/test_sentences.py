"""Evidence by sentence: the ranker (`agents/reading/sentences.py`) orders sentences by relevance
to the question alone, each with its context; `with_sentences` gives a model's whole-passage
citations their sentences; a model's sentence answer keeps only spans the evidence holds."""

from __future__ import annotations

import pytest

from graphseek.agents.reading.answer_fit import fit_answer
from graphseek.agents.reading.evidence import with_sentences
from graphseek.agents.reading.sentences import (
    CONTEXT_BELOW,
    FEATURES,
    HAND_WEIGHTS,
    context_of,
    known_tokens,
    rank_sentences,
    specific_token_list,
    top_sentences,
    weights,
)
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import EvidenceItem

ZSTD = (
    "zstd is a fast lossless compression algorithm. The default compression level is 3. "
    "Levels range from 1 to 19 in normal use. The --ultra option unlocks compression levels "
    "beyond 19, up to 22. Such levels use more memory."
)
XZ = "xz compresses files. Compressed files get the suffix .xz appended. The original is removed."


def _hits(*docs: tuple[str, str, str]) -> list[Hit]:
    return [
        Hit(passage=Passage(id=pid, title=title, text=text), score=1.0, rank=i)
        for i, (pid, title, text) in enumerate(docs, 1)
    ]


def test_the_weights_are_one_per_feature() -> None:
    assert len(HAND_WEIGHTS) == len(FEATURES) == len(weights())


def test_context_is_the_sentence_with_its_neighbours() -> None:
    texts = ["First one.", "Second one.", "Third one."]
    assert context_of(texts, 1) == "First one. Second one. Third one."
    assert context_of(texts, 0) == "First one. Second one."
    long = ["Before.", "x" * CONTEXT_BELOW, "After."]
    assert context_of(long, 1) == long[1]  # long enough to read alone


def test_specific_tokens_are_values_the_question_lacks() -> None:
    known = known_tokens("Which option of zstd unlocks levels above 19?")
    found = specific_token_list(
        "The --ultra option of zstd goes beyond 19 to 22 in /usr/bin.", known
    )
    assert found == ["--ultra", "22", "/usr/bin"]


@pytest.mark.slow
def test_the_sentence_holding_the_answer_ranks_first() -> None:
    hits = _hits(("xz", "xz: DESCRIPTION", XZ), ("zstd", "zstd: OPTIONS", ZSTD))
    ranked = rank_sentences("How do I use compression levels above 19 with zstd?", hits)
    assert "--ultra" in ranked[0].text
    assert ranked[0].passage.id == "zstd"
    assert ranked[0].text in ranked[0].context
    assert len(ranked[0].features) == len(FEATURES)
    # the ranker's order does not change with the reader's guess of an answer type: the
    # same question asked as "which option" ranks the same sentence first
    again = rank_sentences("Which option lets zstd use compression levels above 19?", hits)
    assert "--ultra" in again[0].text


@pytest.mark.slow
def test_top_sentences_skip_a_sentence_already_shown_as_context() -> None:
    hits = _hits(("zstd", "zstd: OPTIONS", ZSTD))
    ranked = rank_sentences("zstd compression levels", hits)
    shown = top_sentences(ranked, 5)
    indexes = sorted(s.index for s in shown)
    assert all(b - a > 1 for a, b in zip(indexes, indexes[1:], strict=False))


@pytest.mark.slow
def test_a_model_citation_gets_the_sentence_that_holds_the_answer() -> None:
    cited = [EvidenceItem(passage_id="zstd", title="zstd: OPTIONS", text=ZSTD)]
    items = with_sentences("Which option unlocks levels above 19?", cited, "--ultra")
    assert "--ultra" in items[0].sentence
    assert items[0].sentence in items[0].context
    assert items[0].span == "--ultra"
    # without an answer in it, the most relevant sentence
    other = with_sentences("What is the default compression level of zstd?", cited, "")
    assert "default compression level" in other[0].sentence and other[0].span == ""


@pytest.mark.slow
def test_a_model_sentence_keeps_the_span_the_evidence_holds() -> None:
    evidence = [f"zstd: OPTIONS {ZSTD}"]
    q = "Which option of zstd unlocks compression levels above 19?"
    # "-22" and "file.tar" are the model's own example, not in the evidence
    fit = fit_answer(q, "You must pass --ultra, for example zstd --ultra -22 file.tar.", 0.5,
                     evidence=evidence)  # fmt: skip
    assert fit.fits and fit.answer == "--ultra"
    # a sentence that says the evidence does not hold it answers nothing
    doubt = fit_answer(q, "The passages do not say, but --ultra may be related.", 0.5,
                       evidence=evidence)  # fmt: skip
    assert not doubt.fits


@pytest.mark.slow
def test_a_model_sentence_naming_one_grounded_value_answers() -> None:
    q = "Which suffix does xz give compressed files?"
    right = fit_answer(q, "It appends the .xz suffix to the file name.", 0.5, evidence=[XZ])
    assert right.fits and right.answer == ".xz"
    made_up = fit_answer(q, "It appends the .lzma suffix to the file name.", 0.5, evidence=[XZ])
    assert not made_up.fits


@pytest.mark.slow
def test_among_grounded_values_the_kind_the_question_names_answers() -> None:
    evidence = [
        "Checkpointers: set LANGGRAPH_STRICT_MSGPACK=true or pass an explicit "
        "allowed_msgpack_modules list when creating your checkpointer."
    ]
    said = (
        "Set `LANGGRAPH_STRICT_MSGPACK=true` or pass an explicit `allowed_msgpack_modules` list "
        "when creating your checkpointer."
    )
    q = "Which environment variable should be set to true so the checkpointer only loads safe types?"
    fit = fit_answer(q, said, 0.5, evidence=evidence)
    assert fit.fits and fit.answer == "LANGGRAPH_STRICT_MSGPACK"
    # a question that names no kind cannot choose between the two values: nothing answers
    other = fit_answer("How do I make the checkpointer load only safe types?", said, 0.5,
                       evidence=evidence)  # fmt: skip
    assert not other.fits


def test_the_best_guess_sentence_is_shown_second_when_ranked_lower() -> None:
    from graphseek.agents.reading.evidence import with_best_guess
    from graphseek.agents.reading.sentences import RankedSentence
    from graphseek.state.models import Draft

    passage = Passage(id="p", title="t", text="x")
    ranked = [
        RankedSentence(passage, i, text, text, 1.0 - i / 10, ())
        for i, text in enumerate(["A one.", "B two.", "C three.", "D four.", "E holds Bergen."])
    ]
    shown = [ranked[0], ranked[2], ranked[4]]  # neighbours skipped
    guess = Draft(
        question="q",
        answer="Bergen",
        confidence=0.4,
        evidence=[EvidenceItem(passage_id="p", text="x", sentence="E holds Bergen.")],
    )
    assert with_best_guess(shown[:2], ranked, [guess]) == [ranked[0], ranked[4]]
    # already among the first two, or none to show: unchanged
    assert with_best_guess([ranked[4], ranked[0]], ranked, [guess]) == [ranked[4], ranked[0]]
    assert with_best_guess(shown, ranked, []) == shown
    assert with_best_guess(shown, ranked, [guess.model_copy(update={"answer": ""})]) == shown


@pytest.mark.slow
def test_top_sentences_show_a_sentence_once_when_passages_overlap() -> None:
    """Two passages that share a sentence (overlapping chunks, a line repeated) show it once;
    the freed place goes to the next sentence."""
    shared = "The default compression level is 3."
    hits = _hits(
        ("a", "zstd: OPTIONS", f"zstd is fast. {shared}"),
        ("b", "zstd: OPTIONS", f"{shared} Levels range from 1 to 19."),
    )
    ranked = rank_sentences("What is the default compression level of zstd?", hits)
    shown = top_sentences(ranked, 3)
    texts = [s.text for s in shown]
    assert texts.count(shared) == 1
    assert sum(shared in s.text for s in ranked) == 2  # ranked twice, shown once
