"""The general decomposer splits a question where it describes its bridge entity (questions made
for the test, not taken from any data set)."""

from __future__ import annotations

import pytest

from graphseek.agents.offline.decomposer import OfflineDecomposer
from graphseek.agents.reading.decompose import plan_steps


@pytest.mark.parametrize(
    ("question", "steps"),
    [
        (
            "Who designed the file format used by the archiver that Foobar depends on?",
            ["Which archiver Foobar depends on?", "Who designed the file format used by #1?"],
        ),
        (
            "Who maintains the parser whose grammar Quux is based on?",
            ["Which parser whose grammar Quux is based on?", "Who maintains #1?"],
        ),
        (
            "In which year was the city where Anna Berg was born founded?",
            ["Which city Anna Berg was born?", "In which year was #1 founded?"],
        ),
        (
            "What county borders the county in which Millbrook is located?",
            ["Which county Millbrook is located in?", "What county borders #1?"],
        ),
        (  # the small tagger reads the lower-case name "zq" as the clause's verb
            "Which library must be installed for regular-expression support in the JSON "
            "processor that zq requires as a dependency?",
            [
                "Which JSON processor zq requires as a dependency?",
                "Which library must be installed for regular-expression support in #1?",
            ],
        ),
        (
            "Zorblib needs a small hashing library to build. Who wrote that library?",
            ["Which small hashing library Zorblib needs to build?", "Who wrote #1?"],
        ),
        (
            "Which protocol does Quuxly's only dependency besides Foobar implement?",
            [
                "What is Quuxly's only dependency besides Foobar?",
                "Which protocol does #1 implement?",
            ],
        ),
    ],
)
def test_a_described_bridge_becomes_the_first_step(question: str, steps: list[str]) -> None:
    assert plan_steps(question) == steps


@pytest.mark.parametrize(
    "question",
    [
        "What is the default compression level of Zorblib?",
        "What is Quuxly's licence?",  # an attribute, not an entity: one step
        "Which library that ships with Zorblib supports streaming?",  # the wh-phrase's own clause
        "Who is the author of the fact that the sky is blue?",
    ],
)
def test_a_question_without_a_described_bridge_is_one_step(question: str) -> None:
    assert plan_steps(question) == [question]


def test_the_general_profile_uses_it_and_the_wikipedia_profile_keeps_relation_chains() -> None:
    q = "Who maintains the parser whose grammar Quux is based on?"
    general = OfflineDecomposer("general").decompose(q).value
    assert [s.question for s in general] == plan_steps(q)
    assert general[1].depends_on == [1]
    wiki = OfflineDecomposer("wikipedia").decompose(
        "Who is the father of the director of film Xyz?"
    )
    assert [s.question for s in wiki.value][0] == "Who is the director of film Xyz?"
