"""The pages under docs/ stay reference pages a reader can take in: none over `MAX_LINES`
lines (the history of a figure belongs in `git log`, not on the page), and every relative
link of docs/ and README.md reaches a file that exists and, with a ``#fragment``, a heading
of that page (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens, a
repeated heading numbered ``-1``, ``-2``)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from markdown_it import MarkdownIt  # rich's Markdown parser (a dependency of rich)

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
MAX_LINES = 400


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """The anchors of a page's headings, repeated headings numbered as GitHub numbers them."""
    tokens = MarkdownIt().parse(markdown)
    seen: Counter[str] = Counter()
    out: set[str] = set()
    for opening, inline in zip(tokens, tokens[1:], strict=False):
        if opening.type != "heading_open":
            continue
        text = "".join(child.content for child in inline.children or [])
        base = slug(text)
        out.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return out


def links(markdown: str) -> list[str]:
    """Every link target of a page outside code (inline links; images are not checked)."""
    found: list[str] = []
    for token in MarkdownIt().parse(markdown):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs.get("href", "")))
    return found


def test_slugs_follow_github() -> None:
    assert slug("Recall@5 on the 2Wiki dev slice, into PostgreSQL (the issue's target)") == (
        "recall5-on-the-2wiki-dev-slice-into-postgresql-the-issues-target"
    )
    assert slug("What a build holds, stage by stage") == "what-a-build-holds-stage-by-stage"
    assert anchors("# A\n\n## A\n\n## `code` here\n") == {"a", "a-1", "code-here"}
    assert links("[x](a.md#b) `[y](c.md)`\n\n```\n[z](d.md)\n```\n") == ["a.md#b"]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_each_doc_page_is_at_most_the_cap(page: Path) -> None:
    lines = len(page.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"docs/{page.name} has {lines} lines, over {MAX_LINES}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_their_anchors_resolve(page: Path) -> None:
    own = page.read_text(encoding="utf-8")
    for href in links(own):
        if re.match(r"^[a-z][a-z0-9+.-]*:", href):  # https:, mailto: ...
            continue
        path, _, fragment = href.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name} links to missing {path}"
        if fragment and target.suffix == ".md":
            known = anchors(target.read_text(encoding="utf-8"))
            assert fragment in known, f"{page.name} links to {href}: no such heading"


FIGURE = re.compile(
    r"\d ?(ms|us|µs)\b"  # a latency
    r"|\d(\.\d+)? ?x (faster|slower|fewer|more|less)\b"  # a speed-up
    r"|\btook [\d~]|\bwent from\b|\bwas [\d~]"  # a before and after
    r"|[KMG]B/s\b"  # a throughput
    r"|\d ?[KMG]B (less|more|saved|smaller|lower)\b"  # a memory saving
)
"""How a benchmark figure reads in prose: a latency, a speed-up, a before and after, a
throughput, a memory saving. Such figures belong in docs/, beside the command that measures
them."""


def prose_of(source: str) -> list[tuple[int, str]]:
    """The docstrings (module, class, function, attribute) and comments of a module, with the
    line each starts on."""
    import ast
    import io
    import tokenize

    found = [
        (t.start[0], t.string)
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            found.append((node.lineno, node.value.value))
    return found


def test_prose_of_finds_docstrings_and_comments() -> None:
    source = '"""Top."""\nX = 1\n"""About X."""\n\n\ndef f():  # why\n    """Does."""\n'
    assert sorted(prose_of(source)) == [(1, "Top."), (3, "About X."), (6, "# why"), (7, "Does.")]
    assert FIGURE.search("a query went from 12 to 35") and FIGURE.search("about 7 ms")
    assert not FIGURE.search("the 2 MB default of SQLite's page cache")


def test_no_docstring_or_comment_quotes_a_benchmark_figure() -> None:
    """Docstrings and comments in `graphseek/` say what the code does and why, not what a
    benchmark printed (`FIGURE`); the figures are in docs/, each with its command."""
    quoted = [
        f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}"
        for path in sorted((ROOT / "graphseek").rglob("*.py"))
        for line, text in prose_of(path.read_text(encoding="utf-8"))
        for match in [FIGURE.search(text)]
        if match
    ]
    assert not quoted, "\n".join(quoted)
