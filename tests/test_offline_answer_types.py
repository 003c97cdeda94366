"""Expected answer types, relations, focus entities and comparisons of questions."""

from __future__ import annotations

import pytest

from graphseek.agents.offline.answer_types import (
    country_of,
    expected_answer,
    find_focus,
    parse_comparison,
    starts_with_wh,
)
from graphseek.agents.profiles import GENERAL, WIKIPEDIA, Profile
from graphseek.agents.text import parse_date


@pytest.mark.parametrize(
    ("question", "kind", "first_label"),
    [
        ("Who directed Blood Street?", "entity", "PERSON"),
        ("Whom did Lisbeth Palme marry?", "entity", "PERSON"),
        ("Which company published The Miscellany News?", "entity", "ORG"),
        ("Where was Leo Fong born?", "entity", "GPE"),
        ("Which city hosts the Nordfjord Film Festival?", "entity", "GPE"),
        ("Which country is Marufabad located in?", "entity", "GPE"),
        ("When did Lothair II die?", "entity", "DATE"),
        ("What year was Salt Roads released?", "entity", "DATE"),
        ("How many albums did Lila Marchetti release?", "entity", "CARDINAL"),
        ("How long is the river Orva?", "entity", "DATE"),
        ("Why did John Middleton Murry's wife die?", "text", "TEXT"),
        ("Is Bergen a city in Norway?", "yesno", "YESNO"),
        ("Did Ingrid Halvorsen direct Salt Roads?", "yesno", "YESNO"),
        ("Are both Lake Orvin and Mount Tessaly in the same country?", "yesno", "YESNO"),
        ("Which film came out first, Salt Roads or Harbour of Glass?", "choice", "CHOICE"),
        ("Who was born first, Greta Lindqvist or Arthur Penwright?", "choice", "CHOICE"),
    ],
)
@pytest.mark.parametrize("profile", [GENERAL, WIKIPEDIA], ids=lambda p: p.name)
def test_answer_type_table(question: str, kind: str, first_label: str, profile: Profile) -> None:
    # the wh-word and head noun give the type alone; the wikipedia lexicon must agree with them
    answer = expected_answer(question, profile)
    assert answer.kind == kind
    assert answer.labels[0] == first_label


@pytest.mark.parametrize(
    ("question", "first_label"),
    [
        ("Which band recorded Blue Harbour?", "ORG"),
        ("What nationality is Marco Vellani?", "NORP"),
        ("Which film did Greta Lindqvist direct in 1955?", "WORK_OF_ART"),
        ("Which composer scored Salt Roads?", "PERSON"),
    ],
)
def test_encyclopedia_head_nouns_are_read_only_under_the_wikipedia_profile(
    question: str, first_label: str
) -> None:
    # kinds of works, occupations and nationality are the profile's head nouns
    # (`Profile.head_nouns`); the general reader asks for any noun phrase
    assert expected_answer(question, WIKIPEDIA).labels[0] == first_label
    plain = expected_answer(question)
    assert (plain.kind, plain.labels, plain.head) == ("text", ["TEXT"], None)


@pytest.mark.parametrize(
    ("question", "relation", "focus", "category", "general_focus"),
    [
        ("Who is the director of film Blood Street?", "director", "Blood Street", "film",
         "film Blood Street"),
        ("Who is the performer of song Changed It?", "performer", "Changed It", "song",
         "song Changed It"),
        ("When was Aivar Kuusmaa born?", "birth_date", "Aivar Kuusmaa", "", "Aivar Kuusmaa"),
        ("When did Ermengarde of Tours die?", "death_date", "Ermengarde of Tours", "", "Tours"),
        ("Where did Sylvia Burka die?", "death_place", "Sylvia Burka", "", "Sylvia Burka"),
        ("What nationality is Leo Fong?", "nationality", "Leo Fong", "", "Leo Fong"),
        ("Which country is Marufabad located in?", "country", "Marufabad", "", "Marufabad"),
        ("Who is the mother of Lothair II?", "mother", "Lothair II", "", "Lothair II"),
    ],
)  # fmt: skip
def test_relation_and_focus(
    question: str, relation: str, focus: str, category: str, general_focus: str
) -> None:
    answer = expected_answer(question, WIKIPEDIA)
    assert (answer.relation, answer.focus, answer.category) == (relation, focus, category)
    # the general profile has no relation lexicon, no category words and no life-event frames:
    # its focus is the "of" object or the longest capitalised run
    plain = expected_answer(question)
    assert (plain.relation, plain.focus, plain.category) == (None, general_focus, "")


@pytest.mark.parametrize(
    ("question", "options", "attribute", "pick", "via"),
    [
        (
            "Which film came out first, Aas Ka Panchhi or Phoolwari?",
            ["Aas Ka Panchhi", "Phoolwari"], "date", "min", None,
        ),
        (
            "Who was born first out of Aivar Kuusmaa and Andy Summers?",
            ["Aivar Kuusmaa", "Andy Summers"], "birth_date", "min", None,
        ),
        (
            "Was Sammy Hagar or Renaud Garcia-Fons born first?",
            ["Sammy Hagar", "Renaud Garcia-Fons"], "birth_date", "min", None,
        ),
        ("Who is younger, Denise Kandel or Bruce Robinson?",
         ["Denise Kandel", "Bruce Robinson"], "birth_date", "max", None),
        ("Who lived longer, Ludwig Elsbett or Pamela Ann Rymer?",
         ["Ludwig Elsbett", "Pamela Ann Rymer"], "lifespan", "max", None),
        ("Who died first, Thomas Cooper or John Roosevelt?",
         ["Thomas Cooper", "John Roosevelt"], "death_date", "min", None),
        (
            "Which film has the director who died later, Love, Honor And Oh-Baby! or Brother Rat?",
            ["Love, Honor And Oh-Baby!", "Brother Rat"], "death_date", "max", "director",
        ),
        (
            "Which film whose director is younger, Phalitamsha or Gladiators Seven?",
            ["Phalitamsha", "Gladiators Seven"], "birth_date", "max", "director",
        ),
        (
            "Are Marufabad and Nasamkhrali both located in the same country?",
            ["Marufabad", "Nasamkhrali"], "country", "same", None,
        ),
        (
            "Are both movies, Naked Tango and Algiers (Film), from the same country?",
            ["Naked Tango", "Algiers (Film)"], "origin_country", "same", None,
        ),
        (
            "Does Leslie Pietrzyk have the same nationality as Marianne Wiggins?",
            ["Leslie Pietrzyk", "Marianne Wiggins"], "nationality", "same", None,
        ),
        (
            "Do both films The Umbrella Coup and The Cow And I have the directors that share the "
            "same nationality?",
            ["The Umbrella Coup", "The Cow And I"], "nationality", "same", "director",
        ),
        ("Which is taller, Mount Tessaly or Mount Tessel?",
         ["Mount Tessaly", "Mount Tessel"], "quantity", "max", None),
    ],
)  # fmt: skip
def test_comparisons(
    question: str, options: list[str], attribute: str, pick: str, via: str | None
) -> None:
    comparison = parse_comparison(question, WIKIPEDIA)
    assert comparison is not None
    assert comparison.options == options
    assert (comparison.attribute, comparison.pick, comparison.via) == (attribute, pick, via)
    if attribute in {"date", "country", "quantity"}:  # the general rules read these alike
        plain = parse_comparison(question)
        assert plain is not None and plain.options == options
        assert (plain.attribute, plain.pick, plain.via) == (attribute, pick, via)


@pytest.mark.parametrize(
    ("question", "general"),
    [
        # no life events under `general`: "first" orders by date, "longer" by size
        ("Who was born first out of Aivar Kuusmaa and Andy Summers?", ("date", "min", None)),
        # no comparatives of age: "younger" / "older" are the profile's (`Profile.older_words`)
        ("Who is younger, Denise Kandel or Bruce Robinson?", None),
        ("Which is older, Salt Roads or Harbour of Glass?", None),
        ("Who lived longer, Ludwig Elsbett or Pamela Ann Rymer?", ("quantity", "max", None)),
        # no bridge nouns: the options are compared themselves
        ("Which song has the singer who was born first, Blue Harbour or Salt Roads?",
         ("date", "min", None)),
        # no nationality, no "born" predicate, no bridge: not read as a comparison at all
        ("Does Leslie Pietrzyk have the same nationality as Marianne Wiggins?", None),
        ("Was Sammy Hagar or Renaud Garcia-Fons born first?", None),
    ],
)  # fmt: skip
def test_biography_comparisons_are_read_only_under_the_wikipedia_profile(
    question: str, general: tuple[str, str, str | None] | None
) -> None:
    assert parse_comparison(question, WIKIPEDIA) is not None
    plain = parse_comparison(question)
    assert (plain and (plain.attribute, plain.pick, plain.via)) == general


def test_a_comparisons_bridge_noun_maps_through_the_lexicon_only_under_its_profile() -> None:
    question = "Which song has the singer who was born first, Blue Harbour or Salt Roads?"
    assert parse_comparison(question, WIKIPEDIA).via == "performer"  # type: ignore[union-attr]
    assert parse_comparison(question).via is None  # type: ignore[union-attr]


def test_non_comparisons() -> None:
    assert parse_comparison("Who is the father of the director of film X?") is None
    assert parse_comparison("Is Bergen a city in Norway?") is None


def test_dates_and_countries() -> None:
    assert parse_date("20 March 851") == (851, 3, 20)
    assert parse_date("March 10, 2017") == (2017, 3, 10)
    assert parse_date("1946") == (1946, 0, 0)
    assert parse_date("no date here") is None
    assert country_of("Indian") == "india"
    assert country_of("Isfahan Province, Iran") == "iran"
    assert country_of("American") == country_of("United States")


def test_starts_with_wh() -> None:
    assert starts_with_wh("In which year was X born?")
    assert starts_with_wh("Did X direct Y?")
    assert not starts_with_wh("Brendon Urie wrote new perspective after firing which bassist?")


def test_the_focus_skips_each_sentences_first_word_and_the_pronoun_i():
    """A question of two sentences, or one asked in the first person, names no focus by its
    sentence-initial words or its "I"; names with "I" in them keep it."""
    assert find_focus("When I run strings on a firmware image, how do I see offsets?") == ("", "")
    assert find_focus("Before rebooting I want findmnt to check /etc/fstab. Which option?") == (
        "",
        "",
    )
    assert find_focus("I moved to Paris. Where is the Louvre Museum?")[0] == "Louvre Museum"
    assert find_focus("Who was the father of Henry I of England?")[0] == "Henry I of England"
    assert find_focus("When did World War I end?")[0] == "World War I"
    assert find_focus("Which film came out first, I Love Lucy or Dragnet?")[0] == "I Love Lucy"
