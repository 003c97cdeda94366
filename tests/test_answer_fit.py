"""A chat model's answer is read before it is given (`graphseek.agents.reading.answer_fit`,
`graphseek.graphs.common.finalize_answer`): a sentence gives way to the span that answers, a
sentence about something else or an answer that only repeats the question is an abstention
that shows its evidence, and an answer no passage the run read states is never given."""

from __future__ import annotations

from typing import Any

import pytest

from graphseek.agents.prompts.librarian import LIBRARIAN_SYSTEM
from graphseek.agents.reading.answer_fit import fit_answer, is_sentence
from graphseek.graphs import get_workflow
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context

QUESTION = "Where did Lord Byron die?"


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("Missolonghi", False),
        ("The Lord of the Rings", False),  # a title, whatever its words
        ("Who Framed Roger Rabbit", False),
        ("Byron died at Missolonghi in 1824.", True),
        ("The engine was designed by Charles Babbage.", True),  # a passive: the finite verb is aux
    ],
)
def test_a_sentence_is_a_finite_clause_of_a_few_words_not_a_title(text: str, sentence: bool):
    assert is_sentence(text) is sentence


def test_a_sentence_that_states_the_answer_gives_way_to_its_span():
    fit = fit_answer(QUESTION, "Lord Byron died of a fever at Missolonghi in 1824.", 0.5)
    assert (fit.answer, fit.fits) == ("Missolonghi", True)
    assert fit.read_from.startswith("Lord Byron died")
    fit = fit_answer("When was the Analytical Engine first described?",
                     "The Analytical Engine was first described in 1837.", 0.5)  # fmt: skip
    assert (fit.answer, fit.fits) == ("1837", True)


def test_a_sentence_about_something_else_does_not_answer():
    fit = fit_answer(QUESTION, "Lord Byron was an English Romantic poet.", 0.5)
    assert not fit.fits and fit.answer == "Lord Byron was an English Romantic poet."
    assert "does not state what the question asks" in fit.reason
    fit = fit_answer("When was the Analytical Engine first described?",
                     "The Analytical Engine was designed by Charles Babbage.", 0.5)  # fmt: skip
    assert not fit.fits


def test_an_answer_that_repeats_the_question_does_not_answer_unless_it_is_a_choice():
    assert not fit_answer(QUESTION, "Lord Byron", 0.5).fits
    assert fit_answer(QUESTION, "Missolonghi", 0.5).fits
    choice = "Who was born first, Lord Byron or Charles Babbage?"
    assert fit_answer(choice, "Lord Byron", 0.5).fits


def test_a_yes_no_answer_is_its_first_word():
    fit = fit_answer("Was Lord Byron an English poet?", "Yes, he was an English poet.", 0.5)
    assert (fit.answer, fit.fits) == ("yes", True)
    assert fit_answer("Was Lord Byron an English poet?", "no", 0.5) == fit_answer(
        "Was Lord Byron an English poet?", "no", 0.5
    )


def librarian_says(answer: str, passage_ids: list[str]) -> ScriptedChatModel:
    def respond(messages: list[Any]) -> Any:
        assert messages[0].content == LIBRARIAN_SYSTEM, messages[0].content[:60]
        return {"answer": answer, "passage_ids": passage_ids, "confidence": 0.9}

    return ScriptedChatModel(responses=respond)


def ask(tiny_index: Any, model: ScriptedChatModel) -> dict[str, Any]:
    context = Context(index=tiny_index, llm=model, retriever="bm25", max_retries=0)
    return get_workflow("naive").invoke({"question": QUESTION}, context=context)


def test_a_model_sentence_answer_is_given_as_its_span_with_the_sentence_recorded(tiny_index):
    sentence = "Lord Byron died of a fever at Missolonghi in 1824 while fighting in Greece."
    final = ask(tiny_index, librarian_says(sentence, ["byron"]))
    assert final["answer"] == "Missolonghi" and not final["abstained"]
    assert final["diagnostics"]["answer_read_from"] == sentence
    assert [e.passage_id for e in final["evidence"] if e.supports_answer] == ["byron"]


def test_a_sentence_copied_from_a_passage_that_answers_another_question_is_refused(tiny_index):
    copied = "George Gordon Byron, known as Lord Byron, was an English Romantic poet."
    final = ask(tiny_index, librarian_says(copied, ["byron"]))
    assert final["abstained"] and final["answer"] == ""
    assert "does not state what the question asks" in final["abstain_reason"]
    assert final["diagnostics"]["answer_misfit"] == copied
    assert final["evidence"], "an abstention shows what the run read"


def test_an_answer_no_passage_read_states_is_refused(tiny_index):
    final = ask(tiny_index, librarian_says("Athens", ["byron"]))
    assert final["abstained"]
    assert (
        final["abstain_reason"]
        == "the answer 'Athens' is stated in none of the passages the run read"
    )


def test_an_answer_with_no_cited_passage_is_grounded_on_a_passage_the_run_read(tiny_index):
    final = ask(tiny_index, librarian_says("Missolonghi", []))
    assert final["answer"] == "Missolonghi"
    assert any(e.supports_answer for e in final["evidence"])


def test_a_sentence_is_read_under_the_title_of_its_passage():
    """A pronoun stands for the passage's subject: under its title the sentence answers."""
    sentence = "He died of a fever at Missolonghi in 1824."
    assert not fit_answer(QUESTION, sentence, 0.5).fits
    assert fit_answer(QUESTION, sentence, 0.5, title="Lord Byron").answer == "Missolonghi"
