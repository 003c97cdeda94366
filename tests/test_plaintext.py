"""Plain text read by its layout (`graphseek.knowledge.plaintext`), on tiny texts written here:
a man-page-like text, an underlined-heading document, a changelog and plain prose."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

from graphseek.knowledge import load_corpus
from graphseek.knowledge.chunking import chunk_spans, chunk_text
from graphseek.knowledge.passages import passage_id
from graphseek.knowledge.plaintext import PlainSection, plain_document


def wrapped(text: str, indent: int, width: int = 78) -> str:
    """`text` hard-wrapped at `width` columns, every line indented by `indent`."""
    pad = " " * indent
    return textwrap.fill(text, width=width, initial_indent=pad, subsequent_indent=pad)


DESCRIPTION = (
    "frob reads each FILE and frobnicates it in place, one block at a time. Frobnication is "
    "reversible: run frob a second time on the same file to get the original back."
)
VERBOSE = (
    "Print the name of each file as it is frobnicated, with the time it took and the number "
    "of bytes it changed."
)
LEVEL = (
    "Frobnicate N times over. A level above nine is rejected, as the result can no longer be "
    "told apart from noise."
)
MAN_PAGE = "\n".join(
    [
        "FROB(1)                        User Commands                        FROB(1)",
        "",
        "NAME",
        "       frob - frobnicate files",
        "",
        "SYNOPSIS",
        "       frob [OPTION]... FILE...",
        "",
        "DESCRIPTION",
        wrapped(DESCRIPTION, 7),
        "",
        "OPTIONS",
        "   Output control",
        "       -v, --verbose",
        wrapped(VERBOSE, 14),
        "",
        "       --level=N",
        wrapped(LEVEL, 14),
        "",
        "EXAMPLES",
        "       Frobnicate a file twice over, and say so:",
        "",
        "              frob -v --level=2 notes.txt",
        "",
        "       which leaves notes.txt as it was.",
        "",
    ]
)

INSTALL = (
    "Run the installer from the release page, then restart the machine so that the widget "
    "driver is loaded before the first widget is plugged in."
)
GUIDE = "\n".join(
    [
        "Widget Guide",
        "============",
        "",
        "Widgets are small devices. This guide says how to install and configure them.",
        "",
        "Installation",
        "------------",
        "",
        wrapped(INSTALL, 0, 72),
        "",
        "Configuration",
        "-------------",
        "",
        "Edit widget.conf in your home folder.",
        "",
        "Colours",
        "~~~~~~~",
        "",
        "Widgets come in red and blue.",
        "",
    ]
)

FIX = (
    "* Fix the frobnicator so that it no longer crashes when the input file is empty or holds "
    "only blank lines."
)
CHANGELOG = "\n".join(
    [
        "widget (1.2) unstable; urgency=low",
        "",
        textwrap.fill(FIX, width=78, initial_indent="  ", subsequent_indent="    "),
        "  * Speed up loading.",
        "",
        " -- Jane Doe <jane@example.org>  Mon, 01 Jan 2024 10:00:00 +0000",
        "",
        "widget (1.1) unstable; urgency=low",
        "",
        "  * First release.",
        "",
        " -- Jane Doe <jane@example.org>  Fri, 01 Dec 2023 10:00:00 +0000",
        "",
    ]
)

SENTENCE_START = re.compile(r"[.!?][\"')\]]*\s+")


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def unit_starts(text: str) -> set[int]:
    """Where a passage may start in a section's text: at a block or a sentence."""
    starts = {0} | {m.end() for m in re.finditer(r"\n\n", text)}
    return starts | {m.end() for m in SENTENCE_START.finditer(text)}


# -------------------------------------------------------------------- man-page-like text


def test_man_page_sections_are_titled_by_their_headings(tmp_path: Path) -> None:
    passages = load_corpus(write(tmp_path / "frob.txt", MAN_PAGE))
    assert [p.title for p in passages] == [
        "frob: NAME",
        "frob: SYNOPSIS",
        "frob: DESCRIPTION",
        "frob: OPTIONS > Output control",
        "frob: EXAMPLES",
    ]
    assert passages[0].text == "frob - frobnicate files"  # the page header is no passage


def test_an_option_stays_with_its_description_and_wrapped_lines_join(tmp_path: Path) -> None:
    passages = load_corpus(write(tmp_path / "frob.txt", MAN_PAGE))
    by_title = {p.title: p.text for p in passages}
    assert by_title["frob: DESCRIPTION"] == DESCRIPTION  # hard-wrapped lines are one line
    assert by_title["frob: OPTIONS > Output control"] == (
        f"-v, --verbose\n{VERBOSE}\n\n--level=N\n{LEVEL}"
    )
    # the sentence interrupted by an example goes on in the same block
    assert by_title["frob: EXAMPLES"] == (
        "Frobnicate a file twice over, and say so:\nfrob -v --level=2 notes.txt\n"
        "which leaves notes.txt as it was."
    )


def test_no_passage_starts_inside_a_sentence(tmp_path: Path) -> None:
    path = write(tmp_path / "frob.txt", MAN_PAGE)
    passages = load_corpus(path, chunk_size=140, overlap=40)
    sections = {f"frob: {s.title}": s.text for s in plain_document(MAN_PAGE).sections}
    assert len(passages) > len(sections)  # the description is cut
    for p in passages:
        assert len(p.text) <= 140
        assert sections[p.title].find(p.text) in unit_starts(sections[p.title])
    options = [p.text for p in passages if p.title == "frob: OPTIONS > Output control"]
    assert options == [f"-v, --verbose\n{VERBOSE}", f"--level=N\n{LEVEL}"]  # blocks whole


def test_a_text_without_lines_left_of_its_margin_has_no_flush_left_headings() -> None:
    text = "\n".join(
        [
            wrapped(DESCRIPTION, 7),
            "",
            "       FROB_HOME",
            "              Where frob keeps its state.",
        ]
    )
    document = plain_document(text)
    assert document.sections == [
        PlainSection("", f"{DESCRIPTION}\n\nFROB_HOME\nWhere frob keeps its state.")
    ]


# ----------------------------------------------------------------- underlined headings


def test_underlined_headings_nest_as_markup_headings_do(tmp_path: Path) -> None:
    document = plain_document(GUIDE)
    assert document.title == "Widget Guide"
    assert document.sections == [
        PlainSection(
            "", "Widgets are small devices. This guide says how to install and configure them."
        ),
        PlainSection("Installation", INSTALL),
        PlainSection("Configuration", "Edit widget.conf in your home folder."),
        PlainSection("Configuration > Colours", "Widgets come in red and blue."),
    ]
    passages = load_corpus(write(tmp_path / "guide.txt", GUIDE))
    assert [p.title for p in passages] == [
        "Widget Guide",
        "Widget Guide: Installation",
        "Widget Guide: Configuration",
        "Widget Guide: Configuration > Colours",
    ]


def test_changelog_entries_are_sections_and_items_join_their_lines() -> None:
    document = plain_document(CHANGELOG)
    assert document.title == ""
    assert [s.title for s in document.sections] == [
        "widget (1.2) unstable; urgency=low",
        "widget (1.1) unstable; urgency=low",
    ]
    assert document.sections[0].text == (
        f"{FIX}\n* Speed up loading.\n\n"
        "-- Jane Doe <jane@example.org> Mon, 01 Jan 2024 10:00:00 +0000"
    )


def test_all_capitals_and_numbered_headings_in_flush_left_text() -> None:
    text = "\n".join(
        [
            "INTRODUCTION",
            "",
            "Widgets are small devices.",
            "",
            "1. Getting Started",
            "",
            "Plug the widget in.",
            "",
            "1.1 First Steps",
            "",
            "Press the button.",
            "",
            "Thanks for reading",
        ]
    )
    document = plain_document(text)
    assert [s.title for s in document.sections] == [
        "INTRODUCTION",
        "1. Getting Started",
        "1. Getting Started > 1.1 First Steps",
    ]
    assert document.sections[-1].text == "Press the button.\n\nThanks for reading"


# ------------------------------------------------------------------------------- prose


def test_plain_prose_loads_as_its_paragraphs(tmp_path: Path) -> None:
    text = "First paragraph, on one line.\n\nSecond paragraph: also one line.\n"
    (passage,) = load_corpus(write(tmp_path / "notes.txt", text))
    assert (passage.title, passage.text) == ("notes", text.strip())  # as before this reader
    assert passage.id == passage_id("notes", text.strip())
    prose = wrapped(INSTALL, 0, 72) + "\n\n" + wrapped(DESCRIPTION, 0, 72)
    assert plain_document(prose).sections == [PlainSection("", f"{INSTALL}\n\n{DESCRIPTION}")]


def test_short_lines_keep_their_breaks() -> None:
    text = "tar -cvf etc.tar /etc\nor\ntar -c -v -f etc.tar /etc\n\nParis\nLondon\nRome"
    assert plain_document(text).sections == [PlainSection("", text)]


def test_long_prose_is_cut_between_paragraphs(tmp_path: Path) -> None:
    paragraphs = [wrapped(f"Paragraph {n}. " + DESCRIPTION, 0, 72) for n in range(4)]
    path = write(tmp_path / "prose.txt", "\n\n".join(paragraphs))
    passages = load_corpus(path, chunk_size=400, overlap=100)
    assert [p.text for p in passages] == [
        f"Paragraph {a}. {DESCRIPTION}\n\nParagraph {a + 1}. {DESCRIPTION}" for a in (0, 2)
    ]


# --------------------------------------------------------------------------------- ids


def test_passage_ids_are_stable_and_follow_the_text(tmp_path: Path) -> None:
    path = write(tmp_path / "frob.txt", MAN_PAGE)
    first = load_corpus(path, chunk_size=140, overlap=40)
    again = load_corpus(path, chunk_size=140, overlap=40)
    assert [p.id for p in first] == [p.id for p in again]
    assert all(p.id == passage_id(p.title, p.text) for p in first)
    write(path, MAN_PAGE.replace("in place, one block", "in place, one chunk"))
    edited = load_corpus(path, chunk_size=140, overlap=40)
    changed = {p.id for p in first} ^ {p.id for p in edited}
    assert {p.title for p in first + edited if p.id in changed} == {"frob: DESCRIPTION"}


def test_json_records_are_not_read_by_layout(tmp_path: Path) -> None:
    text = "NAME\n       frob - frobnicate files\n"
    path = write(tmp_path / "c.json", json.dumps([{"title": "frob", "text": text}]))
    assert [p.text for p in load_corpus(path)] == [text.strip()]


# ---------------------------------------------------------------------------- chunking


def test_whole_paragraphs_packs_blocks_whole_and_cuts_long_ones_at_sentences() -> None:
    item = "-v, --verbose\nSay what is done. Say it twice."
    long_block = "\n".join([f"--opt{n}\nOption {n} does thing {n}." for n in range(8)])
    text = f"Intro sentence one. Intro sentence two.\n\n{item}\n\n{long_block}"
    spans = chunk_spans(text, 120, 30, whole_paragraphs=True)
    chunks = [text[s.start : s.end] for s in spans]
    assert chunks == chunk_text(text, 120, 30, whole_paragraphs=True)
    assert chunks[0].startswith(f"Intro sentence one. Intro sentence two.\n\n{item}")
    for a, b in zip(spans, spans[1:], strict=False):  # cut where an item ends a sentence
        assert text[b.start :].startswith("--opt") and text[: a.end].endswith(".")
        assert text[: b.start].endswith("\n")  # an item whole, carried over or not
    assert all(len(c) <= 120 for c in chunks)
    # a long paragraph is cut at its sentences, the overlap carrying whole sentences
    prose = " ".join(f"Sentence {n} says a thing." for n in range(12))
    spans = chunk_spans(prose, 100, 30, whole_paragraphs=True)
    assert all(prose[s.start : s.start + 9] == "Sentence " for s in spans)
    assert any(b.start < a.end for a, b in zip(spans, spans[1:], strict=False))


def test_a_numbered_series_of_entry_lines_are_headings_wherever_they_stand() -> None:
    news = textwrap.dedent(
        """\
        GNU frob NEWS

        * Noteworthy changes in release 2.1 (2022-04-07) [stable]

        ** Bug fixes

          frob no longer loops on empty input.

        * Noteworthy changes in release 2.0 (2021-09-03) [stable]

          New option --zap removes every frob.

        * Noteworthy changes in release 1.9 (2020-01-07) [stable]

          The default level is now 3.
        """
    )
    sections = plain_document(news).sections
    titled = {s.title.split(" > ")[0]: s.text for s in sections if s.title}
    assert "Noteworthy changes in release 2.0 (2021-09-03) [stable]" in titled
    assert "--zap" in titled["Noteworthy changes in release 2.0 (2021-09-03) [stable]"]
    assert "default level" in titled["Noteworthy changes in release 1.9 (2020-01-07) [stable]"]


def test_one_liners_between_blank_lines_are_not_a_series() -> None:
    items = "Notes\n\n" + "\n\n".join(f"- Fix bug {n} in the parser" for n in range(5)) + "\n"
    sections = plain_document(items).sections
    assert not any("Fix bug" in s.title for s in sections)
    assert "Fix bug 3" in " ".join(s.text for s in sections)


def test_a_word_man_broke_at_the_margin_is_whole_again() -> None:
    """man sets U+2010 where it breaks a word at the right margin ("De‐" / "faults"): the joined
    line has the word whole; a hyphen of the text itself (ASCII, "system-" / "wide") stays."""
    lines = [
        "       SKEL_IGNORE_REGEX",
        "              When populating the newly created home directory of a non-system",
        "              user, files in SKEL matching this regex are not copied.   De\u2010",
        "              faults to a regular expression matching files left over from a",
        "              system-wide upgrade that was stopped before it could finish its",
        "              work, as a package manager leaves them.",
    ]
    text = "\n".join(["ADDUSER.CONF(5)", "", "DESCRIPTION", *lines, ""])
    (section,) = [s for s in plain_document(text).sections if "SKEL" in s.text]
    assert "are not copied. Defaults to a regular" in section.text
    assert "\u2010" not in section.text and "non-system user" in section.text
    assert "system-wide" in section.text


def test_a_margin_of_marks_is_read_as_indentation() -> None:
    """A class's body as pydoc writes it (and a quoted mail) opens each line with a mark; the mark
    is layout, not text: the lines read as a block indented under the line above them."""
    text = (
        "CLASSES\n"
        "    class Frame(builtins.object)\n"
        "     |  Frame(width=80)\n"
        "     |\n"
        "     |  A frame draws a border of the given width.\n"
        "     |  The default width is 80 columns.\n"
    )
    (section,) = plain_document(text).sections
    assert "|" not in section.text
    assert "A frame draws a border of the given width." in section.text
    quoted = plain_document("He wrote:\n\n> first line\n> second line\n> third line\n").sections
    assert ">" not in " ".join(s.text for s in quoted)


def test_a_table_keeps_its_bars() -> None:
    table = "| name | value |\n| ---- | ----- |\n| width | 80 |\n"
    assert plain_document(table).sections[0].text.count("|") == 9
