"""Extraction for the HiGra graph: the offline (spaCy) extractor, the rule coreferencer, the LLM
extractor driven by a scripted model, and the HippoRAG OpenIE importer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphseek.errors import CorpusError, LLMOutputError
from graphseek.knowledge.graph import (
    Extraction,
    LLMExtractor,
    OfflineExtractor,
    OpenIEImporter,
    RuleCoreferencer,
)
from graphseek.knowledge.graph.models import CONCEPT
from graphseek.knowledge.passages import Passage
from graphseek.llm import ScriptedChatModel

CURRY = Passage.from_title_text(
    "Stephen Curry",
    "Stephen Curry, an American basketball player, plays for the Golden State Warriors (GSW). "
    "He was born in Akron, Ohio.",
)
NBA = Passage.from_title_text(
    "National Basketball Association",
    "The National Basketball Association (NBA) is a professional league. The NBA was founded "
    "in 1946 by Maurice Podoloff, also known as Mo.",
)
FILM = Passage.from_title_text(
    "Seven Women (1965 film)",
    "Seven Women is a 1965 American drama film directed by John Ford. It stars Anne Bancroft.",
)


def _by_name(extraction: Extraction) -> dict[str, object]:
    return {m.name: m for m in extraction.mentions}


def _triples(extraction: Extraction) -> set[tuple[str, str, str]]:
    names = {m.id: m.name for m in extraction.mentions}
    return {(names[r.source], r.label, names[r.target]) for r in extraction.relations}


@pytest.fixture(scope="module")
def offline() -> list[Extraction]:
    return OfflineExtractor().extract([CURRY, NBA, FILM])


def test_offline_entities_types_and_ids(offline: list[Extraction]) -> None:
    curry = offline[0]
    assert curry.passage_id == CURRY.id
    mentions = _by_name(curry)
    assert mentions["Stephen Curry"].types == ["PERSON"]  # type: ignore[attr-defined]
    assert mentions["Akron"].types == ["GPE"]  # type: ignore[attr-defined]
    assert mentions["basketball player"].types == [CONCEPT]  # type: ignore[attr-defined]
    assert [m.id for m in curry.mentions] == [f"{CURRY.id}#m{k}" for k in range(len(mentions))]
    # the apposition describes the subject
    assert mentions["Stephen Curry"].description == "American basketball player"  # type: ignore[attr-defined]


def test_offline_aliases(offline: list[Extraction]) -> None:
    curry, nba, _ = offline
    assert _by_name(curry)["Golden State Warriors"].aliases == ["GSW"]  # type: ignore[attr-defined]
    nba_mentions = _by_name(nba)
    assert nba_mentions["National Basketball Association"].aliases == ["NBA"]  # type: ignore[attr-defined]
    assert "NBA" not in nba_mentions  # the acronym was folded into the full name
    assert nba_mentions["Maurice Podoloff"].aliases == ["Mo."]  # type: ignore[attr-defined]


def test_offline_relations_and_pronouns(offline: list[Extraction]) -> None:
    curry, nba, film = offline
    assert ("Stephen Curry", "play for", "Golden State Warriors") in _triples(curry)
    assert ("Stephen Curry", "born in", "Akron") in _triples(curry)  # "He" -> Stephen Curry
    assert ("Akron", "located in", "Ohio") in _triples(curry)
    assert ("National Basketball Association", "founded by", "Maurice Podoloff") in _triples(nba)
    # a lower-case class is a description, not a hub edge
    assert ("National Basketball Association", "is a", "professional league") not in _triples(nba)
    assert _by_name(nba)["National Basketball Association"].description == "professional league"  # type: ignore[attr-defined]
    title = "Seven Women (1965 film)"  # the title's qualifier renames the text's mention
    assert (title, "directed by", "John Ford") in _triples(film)
    assert (title, "star", "Anne Bancroft") in _triples(film)  # "It" -> the film


def test_offline_facts_are_sentences(offline: list[Extraction]) -> None:
    curry = offline[0]
    names = {m.id: m.name for m in curry.mentions}
    assert [f.relation for f in curry.facts] == [
        "Stephen Curry, an American basketball player, plays for the Golden State Warriors (GSW).",
        "He was born in Akron, Ohio.",
    ]
    assert [names[m] for m in curry.facts[1].mentions] == ["Stephen Curry", "Akron", "Ohio"]


def test_worker_processes_give_the_single_process_extractions(
    offline: list[Extraction], monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.knowledge.graph.extract import offline as module

    monkeypatch.setattr(module, "PARALLEL_MIN", 2)
    monkeypatch.setattr(module, "CHUNK", 1)
    passages = [CURRY, NBA, FILM] * 3
    forked = OfflineExtractor(n_process=2).extract(passages)
    assert forked == offline * 3
    assert OfflineExtractor(n_process=1).extract(passages) == offline * 3


def test_rule_coreferencer_rewrites_pronouns() -> None:
    out = RuleCoreferencer().resolve([CURRY, FILM])
    assert out[0].id == CURRY.id and out[0].title == CURRY.title
    assert out[0].text.endswith("Stephen Curry was born in Akron, Ohio.")
    assert out[1].text.endswith("Seven Women (1965 film) stars Anne Bancroft.")


# -- LLM extractor ------------------------------------------------------------------------------

CURRY_REPLY = {
    "entities": [
        {
            "id": "e1",
            "name": "Stephen Curry",
            "aliases": ["Steph Curry"],
            "description": "American basketball player",
            "types": ["person"],
        },
        {"id": "e2", "name": "Golden State Warriors", "aliases": ["GSW"], "types": ["ORG"]},
        {"id": "e3", "name": "Akron", "types": ["CITY"]},
    ],
    "relations": [
        {"source": "e1", "label": "Plays for", "target": "e2"},
        {"source": "e1", "label": "born in", "target": "Akron"},
        {"source": "e1", "label": "coached by", "target": "e9"},
    ],
    "facts": [
        {"relation": "Curry plays for GSW and was born in Akron", "entities": ["e1", "e2", "e3"]}
    ],
}
FILM_REPLY = {
    "entities": [
        {"id": "a", "name": "Seven Women", "types": ["FILM"]},
        {"id": "b", "name": "John Ford", "types": ["PERSON"]},
    ],
    "relations": [{"source": "a", "label": "directed by", "target": "b"}],
    "facts": [],
}


def _script(messages: list) -> object:
    text = messages[-1].content
    if "Stephen Curry" in text:
        return CURRY_REPLY
    if "Seven Women" in text:
        return FILM_REPLY
    return "not json at all"


def test_llm_extractor_with_scripted_model() -> None:
    model = ScriptedChatModel(responses=_script)
    extractor = LLMExtractor(model, max_concurrency=2, show_progress=False)
    curry, film = extractor.extract([CURRY, FILM])
    assert curry.passage_id == CURRY.id and film.passage_id == FILM.id
    people = _by_name(curry)
    assert people["Stephen Curry"].aliases == ["Steph Curry"]  # type: ignore[attr-defined]
    assert people["Stephen Curry"].types == ["PERSON"]  # type: ignore[attr-defined]
    # labels lower-cased, a target named instead of id'd is matched, an unknown id is dropped
    assert _triples(curry) == {
        ("Stephen Curry", "plays for", "Golden State Warriors"),
        ("Stephen Curry", "born in", "Akron"),
    }
    assert len(curry.facts) == 1 and len(curry.facts[0].mentions) == 3
    assert _triples(film) == {("Seven Women", "directed by", "John Ford")}
    assert len(model.calls) == 2
    assert extractor.meter.usage.llm_calls == 2


def test_llm_extractor_skips_or_raises_on_malformed_output() -> None:
    bad = Passage.from_title_text("X", "Nothing to see.")
    skipping = LLMExtractor(
        ScriptedChatModel(responses=_script), max_retries=1, show_progress=False
    )
    assert skipping.extract([bad]) == [Extraction(passage_id=bad.id)]
    assert skipping.meter.failures == 1
    raising = LLMExtractor(
        ScriptedChatModel(responses=_script), max_retries=0, on_error="raise", show_progress=False
    )
    with pytest.raises(LLMOutputError):
        raising.extract([bad])


def test_llm_extractor_uses_the_response_cache(tmp_path: Path) -> None:
    cache = tmp_path / "llm.sqlite"
    first = LLMExtractor(
        ScriptedChatModel(responses=[FILM_REPLY]), cache=cache, show_progress=False
    )
    assert _triples(first.extract([FILM])[0]) == {("Seven Women", "directed by", "John Ford")}
    empty = ScriptedChatModel(responses=[])  # would raise if it were called
    again = LLMExtractor(empty, cache=cache, show_progress=False)
    assert _triples(again.extract([FILM])[0]) == {("Seven Women", "directed by", "John Ford")}
    assert empty.calls == []


# -- OpenIE importer ----------------------------------------------------------------------------


def _openie_file(path: Path) -> tuple[Path, list[Passage]]:
    docs = [
        {
            "title": "Journal of Mathematical Physics",
            "text": "The Journal of Mathematical Physics is published by AIP.",
            "extracted_entities": ["Journal of Mathematical Physics", "AIP", "1960"],
            "extracted_triples": [
                ["Journal of Mathematical Physics", "published by", "AIP"],
                ["Journal of Mathematical Physics", "first published in", "1960"],
                ["AIP", "publishes"],  # malformed: two items
                ["AIP", "based in", "Melville", "New York"],  # malformed: four items
            ],
        },
        {
            "title": "Melville",
            "text": "Melville is a hamlet in New York.",
            "extracted_entities": ["Melville", "New York"],
            "extracted_triples": [["Melville", "located in", "New York"], ["Melville", "", "x"]],
        },
    ]
    body = json.dumps({"docs": docs, "ents_by_doc": []})[:-1] + ', "avg_ent_chars": NaN}'
    target = path / "openie.json"
    target.write_text(body, encoding="utf-8")
    passages = [Passage.from_title_text(d["title"], d["text"]) for d in docs]
    return target, passages


def test_openie_importer_counts_and_extractions(tmp_path: Path) -> None:
    path, passages = _openie_file(tmp_path)
    importer = OpenIEImporter(path)
    stats = importer.stats
    assert (stats.docs, stats.triples_total, stats.entities_total) == (2, 6, 5)
    assert (stats.triples_valid, stats.triples_malformed) == (3, 3)
    assert (stats.malformed_arity, stats.malformed_empty) == (2, 1)
    assert stats.triples_valid + stats.triples_malformed == stats.triples_total
    assert [p.id for p in importer.passages()] == [p.id for p in passages]
    journal, melville = importer.extract(list(reversed(passages)))[::-1]
    assert sum(len(x.relations) for x in (journal, melville)) == 3
    assert _triples(melville) == {("Melville", "located in", "New York")}
    assert len(journal.mentions) == 3  # triple ends reuse the listed entities
    assert [f.relation for f in melville.facts] == ["Melville located in New York"]
    unknown = Passage.from_title_text("Other", "Not in the file.")
    assert importer.extract([unknown]) == [Extraction(passage_id=unknown.id)]


def test_openie_importer_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="not found"):
        OpenIEImporter(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"documents": []}', encoding="utf-8")
    with pytest.raises(CorpusError, match="docs"):
        OpenIEImporter(bad)


def test_definite_description_refers_to_the_title() -> None:
    passage = Passage.from_title_text(
        "Seven Women",
        "Seven Women is a 1965 American drama film directed by John Ford. "
        "The film stars Anne Bancroft.",
    )
    (extraction,) = OfflineExtractor().extract([passage])
    assert ("Seven Women", "star", "Anne Bancroft") in _triples(extraction)
    assert "film" not in _by_name(extraction)


def test_a_verbs_lemma_does_not_depend_on_the_passages_parsed_before() -> None:
    """A word the parser makes an auxiliary is lemmatised as a verb (the rule lemmatizer has
    no AUX rules and gave "influenced" back unchanged): with the cache keyed by text and tag,
    the first token's POS decided the label of every later one in the process, so forked
    extraction wrote "influenced among" in one build and "influence among" in the next."""
    extractor = OfflineExtractor(n_process=1)
    doc = extractor.nlp("He influenced a generation of writers.")
    tables = extractor.tables
    assert tables.lemma(doc, 1, "influenced", "VBN", "AUX") == "influence"
    assert tables.lemma(doc, 1, "influenced", "VBN", "VERB") == "influence"
    fresh = OfflineExtractor(n_process=1).tables
    assert fresh.lemma(doc, 1, "influenced", "VBN", "VERB") == "influence"
    assert fresh.lemma(doc, 1, "influenced", "VBN", "AUX") == "influence"
    # the true auxiliaries are the attribute ruler's exceptions, whatever the POS
    doc = extractor.nlp("She has a dog and was happy.")
    assert {tables.lemma(doc, 1, "has", "VBZ", pos) for pos in ("AUX", "VERB")} == {"have"}
    assert {tables.lemma(doc, 5, "was", "VBD", pos) for pos in ("AUX", "VERB")} == {"be"}
