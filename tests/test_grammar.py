"""Grammar features of questions (HiGraAgent App. P.2, Figure 6) from the spaCy parse."""

from __future__ import annotations

import json

from graphseek.agents.grammar import QuestionFeatures, question_features

PAPER_QUESTION = (
    "What is the name of the castle in the city where the performer of I'm Alive and on Fire "
    "was formed?"
)


def test_paper_example_matches_figure_6() -> None:
    features = question_features(PAPER_QUESTION)
    assert features.full_relative_clauses == [
        "the city where the performer of I'm Alive and on Fire was formed"
    ]
    assert features.reduced_relative_clauses == []
    assert features.of_structures == ["the name of the castle", "the performer of I"]
    assert features.possessive_s_structures == []


def test_features_are_json_serialisable() -> None:
    features = question_features(PAPER_QUESTION)
    data = json.loads(features.model_dump_json())
    assert set(data) == {
        "full_relative_clauses",
        "reduced_relative_clauses",
        "of_structures",
        "possessive_s_structures",
    }
    assert QuestionFeatures.model_validate(data) == features


def test_possessive_keeps_the_whole_name() -> None:
    features = question_features(
        "Where was the place of death of Maurice, Prince Of Orange's father?"
    )
    assert features.possessive_s_structures == ["Maurice, Prince Of Orange's father"]
    assert "the place of death" in features.of_structures


def test_possessive_simple() -> None:
    assert question_features("When did Lothair II's mother die?").possessive_s_structures == [
        "Lothair II's mother"
    ]


def test_of_structure_keeps_the_film_title() -> None:
    features = question_features("Who is the father of the director of film Palo Alto (2013 Film)?")
    assert features.of_structures == [
        "the father of the director",
        "the director of film Palo Alto (2013 Film)",
    ]


def test_subject_relative_clause() -> None:
    features = question_features("When was the company that published The Miscellany News founded?")
    assert features.full_relative_clauses == ["the company that published The Miscellany News"]


def test_reduced_relative_clause() -> None:
    features = question_features("Who is the man known as Elvis?")
    assert features.reduced_relative_clauses == ["the man known as Elvis"]


def test_empty_question() -> None:
    assert question_features("").is_empty
