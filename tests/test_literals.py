"""The literals of technical writing (`graphseek.agents.reading.literals`): pure functions."""

from __future__ import annotations

import pytest

from graphseek.agents.reading.literals import asked_kinds, asked_token, literal_spans


@pytest.mark.parametrize(
    ("clause", "primary"),
    [
        ("which option does that", "option"),
        ("which environment variable sets a sysroot", "envvar"),
        ("which command-line flag turns it off", "option"),
        ("what is the name of the file it saved", "path"),
        ("which .gitmodules key makes git clone shallow", "key"),
        ("which coreutils program converts to z85", "command"),
        ("what exit status means the lock was held", "number"),
        ("how do i make the filter flush each line", "option"),
    ],
)
def test_the_kind_a_clause_names(clause: str, primary: str) -> None:
    kinds = asked_kinds(clause)
    assert kinds is not None and kinds[0][0] == primary


def test_a_clause_that_names_no_literal_gives_none() -> None:
    assert asked_kinds("which film came out first") is None
    assert asked_kinds("who directed the film") is None


def test_english_words_are_not_literals_but_unknown_lower_case_words_are() -> None:
    kinds = {(t, k) for t, k, _, _ in literal_spans("Use basenc to encode the data")}
    assert ("basenc", "command") in kinds and ("basenc", "key") in kinds
    assert not any(t in ("encode", "data", "use") for t, _ in kinds)


def test_abbreviations_and_urls_are_not_paths() -> None:
    texts = {t for t, k, _, _ in literal_spans("See e.g. https://example.org/a for i.e. more")}
    assert "e.g" not in texts and "i.e" not in texts
    assert not any(t.startswith("//") for t in texts)


def test_a_model_token_of_the_asked_kind() -> None:
    token = asked_token("Which environment variable holds the colour?")
    assert token is not None and token.search("GREP_COLORS") and not token.search("--color")
    assert asked_token("Who wrote it?") is None
    assert {k for t, k, _, _ in literal_spans("--strip-debug")} == {"option"}
    assert ("/etc/skel", "path") in {(t, k) for t, k, _, _ in literal_spans("/etc/skel")}


def test_a_dotted_key_with_a_placeholder_is_one_key() -> None:
    spans = {(t, k) for t, k, _, _ in literal_spans("Set submodule.<name>.shallow to true.")}
    assert ("submodule.<name>.shallow", "key") in spans


def test_options_written_together_are_one_answer() -> None:
    from graphseek.agents.reading.literals import option_aliases

    assert option_aliases("-s, --spaces break at spaces")["-s"] == {"-s", "--spaces"}
    assert option_aliases("-w, --width=WIDTH use WIDTH columns")["--width"] == {"-w", "--width"}
    assert option_aliases("-a --all Scan the whole file")["-a"] == {"-a", "--all"}
    assert option_aliases("Use -a and -b together") == {}


def test_the_reader_pools_an_option_with_its_alias() -> None:
    from graphseek.agents.reading.reader import get_reader
    from graphseek.knowledge.passages import Hit, Passage

    text = (
        "-b, --bytes\ncount bytes\n\n-s, --spaces\nbreak at spaces\n\n-w, --width=WIDTH\nset width"
    )
    hits = [Hit(passage=Passage.from_title_text("fold: OPTIONS", text), score=1.0, rank=1)]
    question = "Which fold option makes it break lines at spaces?"
    reader = get_reader()
    ranked = reader.rank(question, hits)
    best = ranked[0]
    assert best.text in ("-s", "--spaces") and best.aliases == {"-s", "--spaces"} - {best.text}
    # the alias's probability counts for the answer, not against it
    alone = [c for c in ranked if c.text not in best.aliases]
    assert reader.confidence(ranked) > reader.confidence(alone)
