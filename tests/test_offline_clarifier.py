"""Rule-based clarification (HiGraAgent App. P.1)."""

from __future__ import annotations

import pytest

from graphseek.agents.offline.clarifier import OfflineClarifier, clarify_question, is_wh_question


@pytest.mark.parametrize(
    "question",
    [
        "When did Lothair II's mother die?",
        "Is Bergen in Norway?",
        "In which year was Salt Roads released?",
        "Which film came out first, A or B?",
    ],
)
def test_questions_starting_with_a_question_word_are_kept(question: str) -> None:
    assert is_wh_question(question)
    assert clarify_question(question) == question


@pytest.mark.parametrize(
    ("question", "clarified"),
    [
        (
            "Brendon Urie wrote new perspective after firing which bassist?",
            "Which bassist did Brendon Urie fire after writing new perspective?",
        ),
        ("Steve Jobs founded which company?", "Which company did Steve Jobs found?"),
        ("Marie Curie was born in which city?", "In which city was Marie Curie born?"),
        ("Blood Street was directed by whom?", "By whom was Blood Street directed?"),
        ("Tell me the maintainer of libpng", "Who is the maintainer of libpng?"),
        # an occupation of films is the wikipedia profile's word, not a general person noun
        ("Tell me the director of Blood Street", "What is the director of Blood Street?"),
        ("the birthplace of Leo Fong", "What is the birthplace of Leo Fong?"),
    ],
)
def test_rewrites(question: str, clarified: str) -> None:
    assert not is_wh_question(question)
    assert clarify_question(question) == clarified


def test_trailing_wh_phrase_moves_to_the_front_at_least() -> None:
    out = OfflineClarifier().clarify("Salt Roads, a documentary, was made in what year").value
    assert out.lower().startswith(("in what year", "what year"))
