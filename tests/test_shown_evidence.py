"""Evidence on every reply: an abstention shows the passages and sentences most likely to hold the
answer (span marked, never flagged as support); an answer's evidence is flagged where it holds the
answer; the CLI text and `--json`; `answer_in_evidence` in evaluation records."""

from __future__ import annotations

import json

import pytest

from graphseek import ask
from graphseek.agents.reading.evidence import (
    ANSWER_ITEMS,
    mark_support,
    shown_evidence,
    with_related,
)
from graphseek.agents.text import contains
from graphseek.evaluation.scoring import answer_in_evidence, shown_text
from graphseek.graphs import TOPOLOGIES
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import Draft, EvidenceItem

pytestmark = pytest.mark.slow

HITS = [
    Hit(passage=Passage(id=pid, title=title, text=text), score=1.0, rank=i)
    for i, (pid, title, text) in enumerate(
        [
            ("zlib", "zlib", "zlib is a compression library. It was written by Jean-loup Gailly."),
            ("png", "libpng", "libpng is the reference PNG library. It relies on zlib."),
            ("misc", "Weather", "It rained in Paris on Tuesday."),
        ],
        1,
    )
]


def test_contains_is_a_normalised_whole_word_match() -> None:
    assert contains("Written by Jean-loup Gailly.", "jean-loup gailly")
    assert contains("The `jieba` library", "jieba")
    assert not contains("zlibrary", "zlib")
    assert not contains("anything", "")


def test_abstention_shows_the_most_relevant_sentences_with_a_draft_span() -> None:
    draft = Draft(
        question="Who wrote zlib?",
        answer="Jean-loup Gailly",
        confidence=0.3,
        evidence=[
            EvidenceItem(
                passage_id="zlib",
                title="zlib",
                text=HITS[0].passage.text,
                sentence="It was written by Jean-loup Gailly.",
            )
        ],
    )
    shown = shown_evidence("Who wrote the zlib library?", [draft], HITS)
    # among the first three: the zlib passage's sentence, its context holding the draft's
    # guess, which is marked
    (item,) = [e for e in shown[:3] if e.passage_id == "zlib"]
    assert item.span == "Jean-loup Gailly" and "Jean-loup Gailly" in item.context
    assert {e.passage_id for e in shown} == {"zlib", "png", "misc"}
    assert not any(e.supports_answer for e in shown)
    assert all(e.sentence and e.sentence in e.text for e in shown)


def test_abstention_without_drafts_reads_the_passages(tiny_index) -> None:
    hits = tiny_index.search("Where did Lord Byron die?", k=4, method="bm25")
    shown = shown_evidence("Where did Lord Byron die?", [], hits)
    assert shown[0].passage_id == "byron"
    assert "Missolonghi" in shown[0].context  # the sentence, or its neighbour
    assert shown[0].span == "Missolonghi"
    assert shown[0].context.count(shown[0].sentence) == 1
    # a sentence shown as another's context is not shown again
    seen = [(e.passage_id, e.sentence) for e in shown]
    assert len(seen) == len(set(seen)) <= 5


def test_answer_evidence_is_flagged_where_it_holds_the_answer() -> None:
    items = [
        EvidenceItem(
            passage_id="a", text="Byron died at Missolonghi.", sentence="Byron died at Missolonghi."
        ),
        EvidenceItem(passage_id="b", text="Ada was his daughter."),
    ]
    marked = mark_support(items, "Missolonghi")
    assert [e.supports_answer for e in marked] == [True, False]
    assert marked[0].span == "Missolonghi" and marked[1].span == ""


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_every_topology_shows_evidence_when_it_abstains(tiny_index, topology: str) -> None:
    # a threshold no answer reaches: every workflow abstains, and still shows what it read
    result = ask(
        tiny_index,
        "What was Charles Babbage's favourite food?",
        topology=topology,
        abstain_threshold=0.999,
    )
    assert result.abstained and result.answer == ""
    assert result.retrieved_ids
    assert result.evidence, f"{topology} abstained showing nothing"
    assert set(e.passage_id for e in result.evidence) <= set(result.retrieved_ids)
    assert not any(e.supports_answer for e in result.evidence)
    assert all(e.sentence for e in result.evidence)
    public = result.to_public_dict()
    assert public["evidence"][0]["sentence"] and "supports_answer" in public["evidence"][0]


def test_an_answer_is_flagged_as_supported(tiny_index) -> None:
    result = ask(tiny_index, "Where did Ada Lovelace's father die?", profile="wikipedia")
    assert result.answer == "Missolonghi"
    supporting = [e.passage_id for e in result.evidence if e.supports_answer]
    assert supporting == ["byron"]
    public = result.to_public_dict()["evidence"]
    # its grounding (the chain's two passages, the second holding the answer), then the other
    # sentences the run found most relevant, each shown once
    assert [e["passage_id"] for e in public[:2]] == ["ada", "byron"]
    assert len(public) >= ANSWER_ITEMS and all(e["sentence"] for e in public)
    shown = [(e["passage_id"], e["sentence"]) for e in public]
    assert len(shown) == len(set(shown))


def test_a_wrong_answer_does_not_hide_the_sentence_that_holds_the_right_one() -> None:
    grounding = [
        EvidenceItem(
            passage_id="png",
            title="libpng",
            text=HITS[1].passage.text,
            sentence="It relies on zlib.",
            context="libpng is the reference PNG library. It relies on zlib.",
            supports_answer=True,
        )
    ]
    shown = with_related("Who wrote the zlib library?", grounding, [], HITS, "libpng")
    assert shown[0] == grounding[0] and len(shown) == ANSWER_ITEMS
    added = shown[1:]
    # the sentence naming the author is among them; the grounding's sentence is not repeated
    assert any("Jean-loup Gailly" in e.context for e in added)
    assert not any(e.passage_id == "png" and e.sentence in grounding[0].context for e in added)
    assert all(e.sentence and e.sentence in e.text for e in added)
    # flagged only where the passage states the answer ("libpng" is stated in none of them)
    assert not any(e.supports_answer for e in added)
    # a grounding of ANSWER_ITEMS items or more is shown as it is
    assert (
        with_related("q?", grounding * ANSWER_ITEMS, [], HITS, "libpng") == grounding * ANSWER_ITEMS
    )


def test_cli_answer_shows_its_grounding_then_what_else_is_relevant(tiny_index, capsys) -> None:
    from graphseek.cli import main

    code = main(
        [
            "ask",
            str(tiny_index.path),
            "Where did Ada Lovelace's father die?",
            "--profile",
            "wikipedia",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "Answer: Missolonghi" in out
    grounding, _, rest = out.partition("Also relevant:")
    assert "[byron]" in grounding and rest.strip()


def test_cli_abstention_reads_like_a_search_result(tiny_index, capsys) -> None:
    from graphseek.cli import main

    question = "What was Charles Babbage's favourite food?"
    code = main(["ask", str(tiny_index.path), question, "--abstain-threshold", "0.999"])
    out = capsys.readouterr().out
    assert code == 0
    assert "No confident answer" in out and "Most relevant:" in out
    assert "[babbage] Charles Babbage" in out
    code = main(["ask", "--json", str(tiny_index.path), question, "--abstain-threshold", "0.999"])
    data = json.loads(capsys.readouterr().out)
    assert data["abstained"] and data["evidence"]


def test_answer_in_evidence_reads_what_the_user_saw() -> None:
    evidence = [
        {"sentence": "Its default is VerifyHostKeyDNS no.", "text": "..."},
        {"sentence": "Unrelated.", "text": ""},
        {"sentence": "Also unrelated.", "text": ""},
        {"sentence": "The fourth item says yes.", "text": ""},
    ]
    assert answer_in_evidence(["VerifyHostKeyDNS"], "", evidence, abstained=True) is True
    # an abstention shows three items: the fourth is not seen
    assert answer_in_evidence(["says yes"], "", evidence, abstained=True) is False
    assert answer_in_evidence(["Bergen"], "Bergen", [], abstained=False) is True
    assert answer_in_evidence([""], "", evidence, abstained=True) is None
    assert "VerifyHostKeyDNS" in shown_text("", evidence, True)


def test_abstention_evidence_depends_on_the_run_only(tiny_index) -> None:
    """What an abstention shows does not depend on what the process read before it."""
    from graphseek.agents.reading.reader import get_reader

    question = "Where did Lord Byron die?"
    hits = tiny_index.search(question, k=6, method="bm25")
    first = shown_evidence(question, [], hits)
    # the process reads other passages (other questions, other runs) ...
    get_reader().rank("Who was Ada Lovelace's father?", list(reversed(hits)))
    # ... and the same run shows the same evidence
    assert shown_evidence(question, [], hits) == first
