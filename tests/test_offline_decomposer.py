"""Grammar-based decomposition into sub-questions with #N placeholders and dependencies."""

from __future__ import annotations

import pytest

from graphseek.agents.offline.decomposer import OfflineDecomposer, decompose_question
from graphseek.agents.profiles import WIKIPEDIA


def plan_of(question: str) -> list[tuple[int, str, list[int]]]:
    return [(s.id, s.question, s.depends_on) for s in decompose_question(question, WIKIPEDIA)]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "When did Lothair II's mother die?",
            [(1, "Who is the mother of Lothair II?", []), (2, "When did #1 die?", [1])],
        ),
        (
            "Who is the father of the director of film Palo Alto (2013 Film)?",
            [
                (1, "Who is the director of film Palo Alto (2013 Film)?", []),
                (2, "Who is the father of #1?", [1]),
            ],
        ),
        (
            "Where was the performer of song Changed It born?",
            [(1, "Who is the performer of song Changed It?", []), (2, "Where was #1 born?", [1])],
        ),
        (
            "What is the place of birth of the director of film Gaby: A True Story?",
            [
                (1, "Who is the director of film Gaby: A True Story?", []),
                (2, "Where was #1 born?", [1]),
            ],
        ),
        (
            "Which country Aleksander Koniecpolski (1620–1659)'s father is from?",
            [
                (1, "Who is the father of Aleksander Koniecpolski (1620–1659)?", []),
                (2, "Which country is #1 from?", [1]),
            ],
        ),
        (
            "Who is Raghnall Mac Ruaidhrí's paternal grandfather?",
            [
                (1, "Who is the father of Raghnall Mac Ruaidhrí?", []),
                (2, "Who is the father of #1?", [1]),
            ],
        ),
        (
            "When was the company that published The Miscellany News founded?",
            [
                (1, "Which company published The Miscellany News?", []),
                (2, "When was #1 founded?", [1]),
            ],
        ),
        (
            "What is the name of the castle in the city where the performer of I'm Alive and on "
            "Fire was formed?",
            [
                (1, "Who is the performer of I'm Alive and on Fire?", []),
                (2, "In which city was #1 formed?", [1]),
                (3, "What is the name of the castle in #2?", [2]),
            ],
        ),
        ("Who directed Blood Street?", [(1, "Who directed Blood Street?", [])]),
        (
            "Who is the mother of Lothair II?",
            [(1, "Who is the mother of Lothair II?", [])],
        ),
    ],
)
def test_chains(question: str, expected: list[tuple[int, str, list[int]]]) -> None:
    assert plan_of(question) == expected


def test_comparison_has_independent_lookups_then_the_comparison() -> None:
    question = "Which film came out first, Aas Ka Panchhi or Phoolwari?"
    assert plan_of(question) == [
        (1, "When did Aas Ka Panchhi come out?", []),
        (2, "When did Phoolwari come out?", []),
        (3, question, [1, 2]),
    ]


@pytest.mark.parametrize(
    ("question", "wikipedia", "general"),
    [
        # no event named: the wikipedia profile asks for a work's release, a band's founding;
        # the general step asks when the option was established
        ("Which film is newer, Salt Roads or Harbour of Glass?", "When was Salt Roads released?",
         "When was Salt Roads established?"),
        ("Which band came first, Orva or Tessaly?", "When was Orva founded?",
         "When was Orva established?"),
        # an event of the profile's ("premiered") is asked for only under it
        ("Which film premiered first, Salt Roads or Harbour of Glass?",
         "When was Salt Roads premiered?", "When was Salt Roads established?"),
        # a general event is asked for under every profile
        ("Which library was released first, zlib or libpng?", "When was zlib released?",
         "When was zlib released?"),
    ],
)  # fmt: skip
def test_date_steps_by_profile(question: str, wikipedia: str, general: str) -> None:
    assert decompose_question(question, WIKIPEDIA)[0].question == wikipedia
    assert decompose_question(question)[0].question == general


def test_born_first() -> None:
    question = "Who was born first, Hywel Teifi Edwards or Felix Schuster?"
    assert plan_of(question) == [
        (1, "When was Hywel Teifi Edwards born?", []),
        (2, "When was Felix Schuster born?", []),
        (3, question, [1, 2]),
    ]


def test_same_country_yes_no() -> None:
    question = "Are Marufabad and Nasamkhrali both located in the same country?"
    assert plan_of(question) == [
        (1, "Which country is Marufabad located in?", []),
        (2, "Which country is Nasamkhrali located in?", []),
        (3, question, [1, 2]),
    ]


def test_bridge_comparison_goes_through_the_directors() -> None:
    question = (
        "Which film has the director who was born later, Playing It Wild or The Lawful Cheater?"
    )
    assert plan_of(question) == [
        (1, "Who is the director of film Playing It Wild?", []),
        (2, "Who is the director of film The Lawful Cheater?", []),
        (3, "When was #1 born?", [1]),
        (4, "When was #2 born?", [2]),
        (5, question, [3, 4]),
    ]


def test_lived_longer_needs_both_dates() -> None:
    steps = plan_of("Who lived longer, Ludwig Elsbett or Pamela Ann Rymer?")
    assert [s[1] for s in steps[:4]] == [
        "When was Ludwig Elsbett born?",
        "When did Ludwig Elsbett die?",
        "When was Pamela Ann Rymer born?",
        "When did Pamela Ann Rymer die?",
    ]
    assert steps[4][2] == [1, 2, 3, 4]


def test_role_interface() -> None:
    step = OfflineDecomposer().decompose("When did Lothair II's mother die?")
    assert [s.id for s in step.value] == [1, 2]
    assert step.usage.llm_calls == 0


def test_empty_question_gives_empty_plan() -> None:
    assert decompose_question("  ") == []
