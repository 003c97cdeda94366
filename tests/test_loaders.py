"""Corpus loading and chunking on tiny inline corpora written to tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphseek.errors import CorpusError
from graphseek.knowledge import load_corpus
from graphseek.knowledge.chunking import chunk_spans, chunk_text
from graphseek.knowledge.passages import passage_id


def write(path: Path, content: str | object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = content if isinstance(content, str) else json.dumps(content, indent=2)
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ formats


def test_hipporag_json_list(tmp_path: Path) -> None:
    path = write(
        tmp_path / "corpus.json",
        [
            {"title": "Teutberga", "text": "Teutberga was a queen of Lotharingia."},
            {"title": "Lothair II", "text": "Lothair II was a king.", "idx": 1},
        ],
    )
    passages = load_corpus(path)
    assert [(p.title, p.text) for p in passages] == [
        ("Teutberga", "Teutberga was a queen of Lotharingia."),
        ("Lothair II", "Lothair II was a king."),
    ]
    assert passages[0].id == passage_id("Teutberga", "Teutberga was a queen of Lotharingia.")
    assert passages[0].source == str(path)


def test_json_list_with_paragraph_text_ids_and_plain_strings(tmp_path: Path) -> None:
    path = write(
        tmp_path / "musique.json",
        [
            {"id": "m-1", "title": "Journal", "paragraph_text": "A peer-reviewed journal."},
            {"id": 7, "text": "No title here."},
            "Just a string.",
        ],
    )
    passages = load_corpus(path)
    assert [p.id for p in passages] == ["m-1", "7", passage_id("", "Just a string.")]
    assert [p.title for p in passages] == ["Journal", "", ""]
    assert passages[0].text == "A peer-reviewed journal."


def test_hotpotqa_dict_joins_sentences(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hotpot.json",
        {
            "Demon Dice": ["Demon Dice is a dice game.", " It was created by Lester Smith."],
            "Plain": "A plain text value.",
        },
    )
    passages = load_corpus(path)
    assert [(p.title, p.text) for p in passages] == [
        ("Demon Dice", "Demon Dice is a dice game. It was created by Lester Smith."),
        ("Plain", "A plain text value."),
    ]


def test_jsonl(tmp_path: Path) -> None:
    lines = [
        json.dumps({"title": "A", "text": "Alpha text.", "id": "a"}),
        "",
        json.dumps({"text": "Untitled text."}),
    ]
    passages = load_corpus(write(tmp_path / "corpus.jsonl", "\n".join(lines) + "\n"))
    assert [(p.id, p.title, p.text) for p in passages] == [
        ("a", "A", "Alpha text."),
        (passage_id("", "Untitled text."), "", "Untitled text."),
    ]


def test_single_text_and_markdown_files(tmp_path: Path) -> None:
    txt = load_corpus(write(tmp_path / "notes.txt", "  Some notes.\n"))
    assert [(p.title, p.text) for p in txt] == [("notes", "Some notes.")]
    # markup is read, not kept: the lone top-level heading is the document's title
    md = load_corpus(write(tmp_path / "README.md", "# Title\n\nBody text."))
    assert [(p.title, p.text) for p in md] == [("Title", "Body text.")]
    untitled = load_corpus(write(tmp_path / "notes.md", "Body *text*."))
    assert [(p.title, p.text) for p in untitled] == [("notes", "Body text.")]


def test_folder_of_text_files(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write(folder / "b.md", "Bravo.")
    write(folder / "a.txt", "Alpha.")
    write(folder / "sub" / "c.txt", "Charlie.")
    write(folder / "ignored.pdf", "%PDF")
    write(folder / ".hidden" / "d.txt", "Hidden.")
    write(folder / "empty.txt", "   ")
    passages = load_corpus(folder)
    assert [(p.title, p.text) for p in passages] == [
        ("a", "Alpha."),
        ("b", "Bravo."),
        ("c", "Charlie."),
    ]
    assert passages[2].source == str(folder / "sub" / "c.txt")


def test_duplicates_are_dropped_and_given_ids_made_unique(tmp_path: Path) -> None:
    path = write(
        tmp_path / "dups.json",
        [
            {"title": "T", "text": "Same."},
            {"title": "T", "text": "Same."},
            {"title": "T", "text": "Other."},
            {"id": "x", "title": "U", "text": "One."},
            {"id": "x", "title": "U", "text": "Two."},
        ],
    )
    passages = load_corpus(path)
    assert [p.text for p in passages] == ["Same.", "Other.", "One.", "Two."]
    assert [p.id for p in passages][2:] == ["x", "x~2"]
    assert len({p.id for p in passages}) == len(passages)


def test_iter_corpus_gives_read_corpus_passages_a_file_at_a_time(tmp_path: Path) -> None:
    """The stream a build spools: the passages `read_corpus` gives, in order, deduplicated the
    same way; its arguments and path are checked at the call, a bad file is reported in
    `skipped` when the stream meets it, and a folder's files are read as the stream goes."""
    from graphseek.knowledge import loaders

    folder = tmp_path / "docs"
    write(folder / "a.txt", "Alpha.")
    write(folder / "b.json", [{"title": "T", "text": "Same."}, {"title": "T", "text": "Same."},
                              {"id": "x", "title": "U", "text": "One."},
                              {"id": "x", "title": "U", "text": "Two."}])  # fmt: skip
    write(folder / "c.md", "# C\n\nCharlie.")
    (folder / "d.txt").write_bytes(b"\xff\xfe not utf-8")
    write(folder / "e.txt", "Alpha.")  # another title: kept
    (folder / "docs2").mkdir()
    write(folder / "docs2" / "f.txt", "Foxtrot.")
    # .json is not read from a folder: only text and markup files are
    expected = loaders.read_corpus(folder, on_bad_file="skip")
    skipped: list[loaders.Skipped] = []
    stream = loaders.iter_corpus(folder, on_bad_file="skip", skipped=skipped)
    first = next(stream)
    assert first == expected.passages[0] and skipped == []  # d.txt not read yet
    assert [first, *stream] == expected.passages and skipped == expected.skipped
    assert [s.where for s in skipped] == [str(folder / "d.txt")]
    dups = folder / "b.json"
    assert list(loaders.iter_corpus(dups)) == load_corpus(dups)
    assert [p.id for p in load_corpus(dups)][1:] == ["x", "x~2"]
    with pytest.raises(ValueError, match="chunk_size"):
        loaders.iter_corpus(folder, chunk_size=-1)  # at the call, before any read
    with pytest.raises(CorpusError, match="not found"):
        loaders.iter_corpus(tmp_path / "missing")
    empty = write(tmp_path / "empty.jsonl", "\n")
    stream = loaders.iter_corpus(empty)
    with pytest.raises(CorpusError, match="Empty corpus"):
        list(stream)


# ------------------------------------------------------------------------------ chunking

LONG = "\n\n".join(
    " ".join(
        f"Paragraph {p} sentence {s} says something about topic {p * 10 + s}." for s in range(8)
    )
    for p in range(6)
)


def test_long_documents_are_chunked_with_stable_ids(tmp_path: Path) -> None:
    path = write(tmp_path / "long.txt", LONG)
    passages = load_corpus(path, chunk_size=300, overlap=80)
    assert len(passages) > 5
    assert all(len(p.text) <= 300 for p in passages)
    assert {p.title for p in passages} == {"long"}
    assert [p.id for p in passages] == [p.id for p in load_corpus(path, chunk_size=300, overlap=80)]
    assert all(p.id == passage_id("long", p.text) for p in passages)
    whole = load_corpus(path, chunk_size=0)
    assert [p.text for p in whole] == [LONG]


def test_chunked_record_with_given_id_gets_numbered_ids(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", json.dumps({"id": "doc", "title": "D", "text": LONG}))
    passages = load_corpus(path, chunk_size=400, overlap=0)
    assert [p.id for p in passages] == [f"doc#{i}" for i in range(len(passages))]


def test_chunks_cover_every_sentence_and_overlap() -> None:
    chunks = chunk_text(LONG, chunk_size=300, overlap=80)
    for p in range(6):
        for s in range(8):
            sentence = f"Paragraph {p} sentence {s} says something about topic {p * 10 + s}."
            assert any(sentence in c for c in chunks)
    for before, after in zip(chunks, chunks[1:], strict=False):
        # each chunk starts with whole sentences from the end of the one before (<= 80 chars)
        head = after.split(".")[0] + "."
        assert head in before and len(head) <= 80
        assert after[0].isupper()


def test_chunks_prefer_sentence_boundaries_and_are_slices() -> None:
    spans = chunk_spans(LONG, chunk_size=300, overlap=0)
    for start, end in spans:
        assert LONG[end - 1] == "."  # every chunk ends at a sentence end
        assert end - start <= 300
    assert chunk_text(LONG, 300, 0) == [LONG[s:e] for s, e in spans]


def test_chunk_short_text_and_long_words() -> None:
    assert chunk_text("  short text \n", 100, 10) == ["short text"]
    assert chunk_text("   ", 100, 10) == []
    pieces = chunk_text("x" * 250, 100, 10)
    assert [len(p) for p in pieces] == [100, 100, 50]
    words = chunk_text("word " * 100, 50, 12)
    assert all(len(c) <= 50 and c.startswith("word") and c.endswith("word") for c in words)


def test_chunk_parameters_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("text", 100, 100)
    with pytest.raises(ValueError, match="chunk_size"):
        chunk_text("text", 0, 0)
    with pytest.raises(ValueError, match="overlap"):
        load_corpus(write(tmp_path / "a.txt", "text"), chunk_size=100, overlap=200)


# -------------------------------------------------------------------------------- errors


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"not found.*nope\.json"):
        load_corpus(tmp_path / "nope.json")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.json", "[]"),
        ("empty_dict.json", "{}"),
        ("blank.jsonl", "\n\n"),
        ("blank.txt", "  \n "),
        ("only_empty_texts.json", '[{"title": "A", "text": "  "}]'),
    ],
)
def test_empty_corpus(tmp_path: Path, name: str, content: str) -> None:
    path = write(tmp_path / name, content)
    with pytest.raises(CorpusError, match="Empty corpus") as info:
        load_corpus(path)
    assert str(path) in str(info.value)


def test_empty_folder(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "data.csv", "a,b")
    with pytest.raises(CorpusError, match=r"Empty corpus.*\.txt"):
        load_corpus(tmp_path / "docs")


def test_malformed_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(
        tmp_path / "bad.json", '[\n  {"title": "A", "text": "x"},\n  {"title": "B" "text"}\n]'
    )
    with pytest.raises(CorpusError, match=r"Malformed JSON in .*bad\.json at line 3, column 17"):
        load_corpus(path)


def test_malformed_jsonl_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", '{"text": "ok"}\n{"text": "broken"\n')
    with pytest.raises(CorpusError, match=r"bad\.jsonl at line 2"):
        load_corpus(path)


def test_jsonl_content_in_a_json_file_gets_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path / "lines.json", '{"text": "a"}\n{"text": "b"}\n')
    with pytest.raises(CorpusError, match=r"line 2, column 1: Extra data.*\.jsonl"):
        load_corpus(path)


@pytest.mark.parametrize(
    ("name", "content", "pattern"),
    [
        ("r.json", [{"title": "A", "text": "x"}, {"title": "B"}], r"without text.*record 1.*title"),
        ("r.jsonl", '{"text": "x"}\n{"title": "B", "body": "y"}\n', r"without text.*line 2"),
        ("n.json", [{"title": "A", "text": 3}], r"without text.*record 0.*int"),
    ],
)
def test_record_without_text(tmp_path: Path, name: str, content: object, pattern: str) -> None:
    with pytest.raises(CorpusError, match=pattern):
        load_corpus(write(tmp_path / name, content))


@pytest.mark.parametrize(
    ("name", "content", "pattern"),
    [
        ("corpus.pdf", "%PDF-1.4", r"Unsupported corpus file type '\.pdf'"),
        ("corpus", "text", r"Unsupported corpus file type '\(no extension\)'"),
        ("number.json", "42", r"Unsupported JSON corpus.*int"),
        ("nested.json", {"A": {"x": 1}}, r"Unsupported record.*'A'"),
        ("items.json", [[1, 2]], r"Unsupported record.*record 0"),
    ],
)
def test_unsupported_inputs(tmp_path: Path, name: str, content: object, pattern: str) -> None:
    with pytest.raises(CorpusError, match=pattern):
        load_corpus(write(tmp_path / name, content))


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café".encode("latin-1"))
    with pytest.raises(CorpusError, match="not UTF-8"):
        load_corpus(path)


# ------------------------------------------------------------------------------- markup


def test_folder_of_markup_files_reads_clean_sections(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    write(
        folder / "wordfreq" / "README.md",
        "[![PyPI](https://img.shields.io/pypi/v/wordfreq.svg)](https://pypi.org/p/wordfreq)\n\n"
        "# wordfreq\n\nLooks up [word frequencies](https://example.org/wf).\n\n"
        "## Tokenization\n\nUses the external library `jieba` for Chinese.\n",
    )
    write(
        folder / "guide.rst",
        "Install\n=======\n\nRun ``pip install guide``.\n\nUse\n===\n\nRun it.\n",
    )
    write(
        folder / "page.html",
        "<html><head><title>Page</title><script>x()</script></head>"
        "<body><p>Hello <a href='https://x.org'>there</a>.</p></body></html>",
    )
    write(folder / "old.htm", "<h1>Old</h1><p>Old page.</p>")
    write(folder / "notes.txt", "# Not markup\n\n[kept](as written)")
    passages = load_corpus(folder)
    assert [(p.title, p.text) for p in passages] == [
        ("guide: Install", "Run `pip install guide`."),
        ("guide: Use", "Run it."),
        ("notes", "# Not markup\n\n[kept](as written)"),
        ("Old", "Old page."),
        ("Page", "Hello there."),
        ("wordfreq", "Looks up word frequencies."),
        ("wordfreq: Tokenization", "Uses the external library `jieba` for Chinese."),
    ]
    assert all(p.id == passage_id(p.title, p.text) for p in passages)
    assert [p.id for p in load_corpus(folder)] == [p.id for p in passages]
    assert passages[-1].source == str(folder / "wordfreq" / "README.md")


def test_sections_are_chunked_on_their_own(tmp_path: Path) -> None:
    body = " ".join(f"Sentence {i} of the part." for i in range(40))
    path = write(tmp_path / "doc.md", f"# Doc\n\n## One\n\n{body}\n\n## Two\n\n{body}\n")
    passages = load_corpus(path, chunk_size=300, overlap=60)
    titles = [p.title for p in passages]
    assert set(titles) == {"Doc: One", "Doc: Two"}
    assert titles == sorted(titles)  # every chunk of One before any of Two
    ones = [p.text for p in passages if p.title == "Doc: One"]
    assert ones == chunk_text(body, 300, 60)
    assert [p.text for p in passages if p.title == "Doc: Two"] == ones  # same text, own ids
    assert len({p.id for p in passages}) == len(passages)


def test_markup_with_no_text_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "docs"
    write(folder / "badges.md", "[![ci](https://ci/badge.svg)](https://ci)\n<!-- todo -->\n")
    write(folder / "real.md", "Real text.")
    assert [p.text for p in load_corpus(folder)] == ["Real text."]
    assert "badges.md: no text once its markup is removed" in caplog.text
    with pytest.raises(CorpusError, match="Empty corpus"):
        load_corpus(folder / "badges.md")


def test_markup_suffixes_are_the_converters() -> None:
    from graphseek.knowledge.loaders import MARKUP_SUFFIXES
    from graphseek.knowledge.markup import CONVERTERS

    assert MARKUP_SUFFIXES == tuple(CONVERTERS)


def test_markup_parser_failure_is_a_bad_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.knowledge import loaders, markup

    def fail(text: str, suffix: str) -> None:
        raise markup.MarkupError("reStructuredText parser failed: boom")

    monkeypatch.setattr(markup, "convert", fail)
    folder = tmp_path / "docs"
    write(folder / "a.rst", "Text.")
    write(folder / "b.txt", "Plain.")
    with pytest.raises(CorpusError, match=r"Cannot read .*a\.rst: reStructuredText parser failed"):
        load_corpus(folder)
    loaded = loaders.read_corpus(folder, on_bad_file="skip")
    assert [p.text for p in loaded.passages] == ["Plain."]
    assert [s.where for s in loaded.skipped] == [str(folder / "a.rst")]
