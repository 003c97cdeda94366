"""Extractive drafting from hand-made hits: the right span and the right evidence passage."""

from __future__ import annotations

import pytest

from graphseek.agents.offline.librarian import OfflineLibrarian
from graphseek.agents.profiles.wikipedia import clean_text
from graphseek.knowledge.passages import Hit, Passage

PASSAGES = {
    "keeper": (
        "The Lantern Keeper",
        "The Lantern Keeper is a 1987 Norwegian drama film directed by Ingrid Halvorsen. Its "
        "score was composed by Tomas Brekke.",
    ),
    "bearers": (
        "The Lantern Bearers (film)",
        "The Lantern Bearers is a 1955 Swedish historical film directed by Greta Lindqvist.",
    ),
    "ingrid": (
        "Ingrid Halvorsen",
        "Ingrid Halvorsen (14 March 1941 – 2 September 2015) was a Norwegian film director. She "
        "was born in Bergen and studied in Łódź. Halvorsen was the daughter of the painter Olav "
        "Halvorsen.",
    ),
    "greta": (
        "Greta Lindqvist",
        "Greta Lindqvist( 22 August 1908 – 30 January 1990) was a Swedish film director. She was "
        "born in Uppsala.",
    ),
    "dana": (
        "Dana Whitcombe",
        "Dana Whitcombe (born 17 October 1968) is an American film director. She was born in "
        "Portland, Oregon, and is the daughter of the surgeon Paul Whitcombe and the novelist "
        "Ellen Whitcombe.",
    ),
    "orvin": (
        "Lake Orvin",
        "Lake Orvin is a lake in the municipality of Lesja in Innlandet county, Norway.",
    ),
    "tessaly": (
        "Mount Tessaly",
        "Mount Tessaly is a mountain in the Jotunheimen range in Vang Municipality, Norway.",
    ),
    "tessel": (
        "Mount Tessel",
        "Mount Tessel is a mountain in the Alps in the canton of Valais, Switzerland.",
    ),
    "glass": (
        "Harbour of Glass",
        "Harbour of Glass is a 1994 Italian romantic drama film directed by Marco Vellani.",
    ),
    "orchard": (
        "The Copper Orchard",
        "The Copper Orchard is a 2003 American independent film directed by Dana Whitcombe.",
    ),
    "orla": (
        "Lady Orla of Wend",
        "Lady Orla of Wend (1801 – 1850) was the eldest child of Brann, Duke of Corvel, and his "
        "wife Mira Anselm. She married Tobin Vance in 1822.",
    ),
}


def hits(*ids: str) -> list[Hit]:
    return [
        Hit(passage=Passage(id=pid, title=PASSAGES[pid][0], text=PASSAGES[pid][1]),
            score=1.0 / rank, rank=rank)
        for rank, pid in enumerate(ids, start=1)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def librarian() -> OfflineLibrarian:
    # Wikipedia-style passages: the cue-based drafting of the wikipedia profile
    return OfflineLibrarian(profile="wikipedia")


@pytest.mark.parametrize(
    ("question", "ids", "answer", "evidence_id"),
    [
        ("Who is the director of film The Lantern Keeper?", ("bearers", "keeper", "greta"),
         "Ingrid Halvorsen", "keeper"),
        ("When was Greta Lindqvist born?", ("ingrid", "greta", "bearers"),
         "22 August 1908", "greta"),
        ("When did Greta Lindqvist die?", ("greta", "ingrid"), "30 January 1990", "greta"),
        ("Where was Ingrid Halvorsen born?", ("greta", "ingrid", "keeper"), "Bergen", "ingrid"),
        ("Who is the mother of Dana Whitcombe?", ("dana", "orchard"), "Ellen Whitcombe", "dana"),
        ("Who is the father of Dana Whitcombe?", ("dana", "orchard"), "Paul Whitcombe", "dana"),
        ("Who is the child of Olav Halvorsen?", ("ingrid", "keeper"), "Ingrid Halvorsen",
         "ingrid"),
        ("What nationality is Greta Lindqvist?", ("greta", "bearers"), "Swedish", "greta"),
        ("Which country is Mount Tessaly located in?", ("tessel", "tessaly"), "Norway",
         "tessaly"),
        ("When was Harbour of Glass released?", ("orchard", "glass"), "1994", "glass"),
        # a title after a comma belongs to an encyclopedia's form of the name
        ("Who is the father of Lady Orla of Wend?", ("orla", "dana"), "Brann, Duke of Corvel",
         "orla"),
    ],
)  # fmt: skip
def test_picks_the_span_and_its_passage(
    librarian: OfflineLibrarian, question: str, ids: tuple[str, ...], answer: str, evidence_id: str
) -> None:
    draft = librarian.draft(question, hits(*ids)).value
    assert draft.answer == answer
    assert draft.evidence[0].passage_id == evidence_id
    assert draft.evidence[0].sentence in clean_text(PASSAGES[evidence_id][1])
    assert 0.0 <= draft.confidence <= 1.0
    assert draft.confidence >= 0.3
    assert answer not in draft.candidates


def test_other_plausible_answers_are_candidates(librarian: OfflineLibrarian) -> None:
    draft = librarian.draft(
        "Who is the director of film The Lantern Keeper?", hits("keeper", "bearers")
    ).value
    assert draft.answer == "Ingrid Halvorsen"
    assert "Greta Lindqvist" in draft.candidates


def test_choice_question_compares_dates(librarian: OfflineLibrarian) -> None:
    draft = librarian.draft(
        "Which film came out first, The Copper Orchard or Harbour of Glass?",
        hits("orchard", "glass"),
    ).value
    assert draft.answer == "Harbour of Glass"
    assert {e.passage_id for e in draft.evidence} == {"orchard", "glass"}


def test_same_country_question(librarian: OfflineLibrarian) -> None:
    ids = ("orvin", "tessaly", "tessel")
    same = librarian.draft(
        "Are Lake Orvin and Mount Tessaly located in the same country?", hits(*ids)
    ).value
    assert same.answer == "yes"
    other = librarian.draft(
        "Are Lake Orvin and Mount Tessel located in the same country?", hits(*ids)
    ).value
    assert other.answer == "no"


def test_no_hits_no_answer(librarian: OfflineLibrarian) -> None:
    draft = librarian.draft("Who directed The Lantern Keeper?", []).value
    assert (draft.answer, draft.confidence, draft.evidence) == ("", 0.0, [])


def test_spacy_docs_are_cached_per_passage(librarian: OfflineLibrarian) -> None:
    librarian.draft("Who directed The Lantern Keeper?", hits("keeper"))
    parsed = librarian._cache["keeper"]
    librarian.draft("Who composed the score of The Lantern Keeper?", hits("keeper"))
    assert librarian._cache["keeper"] is parsed


def test_clean_text_repairs_dump_artefacts() -> None:
    assert (
        clean_text("Teutberga( died 875) was a lay- abbot")
        == "Teutberga (died 875) was a lay-abbot"
    )
