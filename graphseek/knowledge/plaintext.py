"""Plain text read by its layout: sections at its headings, blocks at its blank lines and indents.

`plain_document(text)` reads a `.txt` file the way `markup` reads Markdown: into the document's
own title and its sections, each a `(title, text)` whose title is the path of headings above it
joined with " > " ("" before the first heading). Only the layout is read, by generic rules (no
rule knows a tool, a file name or a format such as man pages):

- **Margins of marks.** A run of lines that open with `|` or `>` at one column (a class's body
  as pydoc writes it, a quoted mail) has the mark read as indentation (`_unmarked`); a table,
  whose lines also end with the mark, keeps it.
- **Lines and their indents.** A run of lines at one indent, with no blank line between them, is
  one paragraph. A paragraph may hang: a first line such as `* item text`, `1. item text` or
  `-v     verbose...` whose continuation lines up with its text. A line that starts with a list
  marker (`-`, `*`, `+`, `•`, `1.`, `a)`, `(i)`, `[1]`) starts a new paragraph.
- **Hard-wrapped lines are joined.** A paragraph is hard-wrapped at its right margin (its widest
  line; for a paragraph of two lines, which tell nothing of their margin, the text's own: 95% of
  the lines that a line of their paragraph follows are no wider), when that margin is
  `MIN_WRAP_WIDTH` to `MAX_WRAP_WIDTH` characters from the left edge and at least half of the
  paragraph's lines reach it: the next line's first word would not have fitted. Each such line
  is joined to the next with a space (with none after a hyphen ending a word, and the hyphen
  itself left out where it is the U+2010 that man pages set where they break a word at the
  margin before a lower-case letter: "De‐" "faults" is "Defaults"); a line that stops
  short keeps its line break, and so do a paragraph of short lines (a list, a code example) and
  lines of aligned columns (a gap of four spaces or more beside single spaces, or a leader of
  dots; justified text widens all its gaps alike). Runs of spaces are collapsed. Each paragraph
  has its own margin, as texts written by many hands (changelogs, commit logs) wrap at
  different widths.
- **Headings.** A line followed by a line of one repeated `= - ~ ^ * # + _` at least half its
  length (optionally with the same line above it), after a blank line and not ending in
  `. , ;`, is an underlined heading. A single line after a blank line (or a heading) that starts
  with a letter or digit, ends without `. , ; : ! ?` and is at most `MAX_HEADING_CHARS` long is
  a heading when it is flush left of the text: indented less than the least indent of any
  hard-wrapped paragraph (`NAME` above an indented body, a subsection indented between the two,
  a changelog entry's first line above its items). In a text with no such line (a flush-left
  text), a single line at its left edge between blank lines is a heading when it is all
  capitals, numbered (`2.1 Scope`) or in title case, and looks like words (no code characters,
  no columns). A heading candidate with nothing after it is text. Headings of a **series** are
  read anywhere: at least three one-line paragraphs after a blank line that open with the same
  word (after the same list marker, if any), each holding a number and something else after it
  ("* Noteworthy changes in release 3.8 (2021-08-01)", "Changes in 2.40:", "v1.5.4 (Feb
  2023)"), as a changelog or a numbered manual writes its entries. Levels go by the order in which
  each kind of heading first appears (an underline character, with or without an overline; an
  indent with a numbering depth), as reStructuredText's do.
- **Blocks.** A paragraph with every paragraph indented under it, and every paragraph that
  follows with no blank line between, form one block: an option or term with its description,
  a paragraph with the example it introduces, a list. A block that starts in lower case after a
  block that ends mid-sentence continues that block when the block before starts with
  hard-wrapped prose or holds an indented example (text interrupted by an example). In a
  section's text, blocks are separated by a blank line and the lines of a block by a line break,
  for `chunking.chunk_text(..., whole_paragraphs=True)`, which packs blocks whole into passages.

The document title is the first heading when it is the only heading of the first level, as in
`markup`; the loader falls back on the file stem. A text with no layout to read (paragraphs
between blank lines) comes back as one section holding its paragraphs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["PlainDocument", "PlainSection", "plain_document"]

#: how the headings of a section's path are joined into its title (as `markup.PATH_SEPARATOR`)
PATH_SEPARATOR = " > "
#: the widest right margin of hard-wrapped text (terminals, man pages, e-mail, RFCs: 72-80)
MAX_WRAP_WIDTH = 100
#: the narrowest right margin of hard-wrapped text
MIN_WRAP_WIDTH = 60
#: the longest line read as a heading
MAX_HEADING_CHARS = 80
TAB_SIZE = 8
#: the fewest headings of one series (`_series`)
SERIES_MIN = 3
#: the fewest lines of a margin of marks read as indentation (`_unmarked`)
MARGIN_MIN_LINES = 3

# a line of one repeated character: an underline (or overline) of a heading, else a separator
_RULE = re.compile(r"([=\-~^*#+_])\1{2,}")
_RULE_CHARACTERS = frozenset("=-~^*#+_")
# a list marker and the space after it, at the start of a line
_MARKER = re.compile(r"(?:[-*+•·‣◦]|\d{1,3}[.)]|[a-zA-Z][.)]|\([0-9a-zA-Z]{1,4}\)|\[\d{1,3}\])\s")
_SECTION_NUMBER = re.compile(r"(?:\d+|[A-Z])((?:\.\d+)*)\.?\s")
_END_PUNCTUATION = re.compile(r"[.,;:!?]$")
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*$")
_HYPHEN_END = re.compile(r"\w[-\u2010]$")
#: the hyphen groff (man) writes where it breaks a word at a line's end; the word's own hyphens
#: are ASCII in its output
_BREAK_HYPHEN = "\u2010"
_CODE_CHARACTERS = re.compile(r"[_=\\{}<>$@|;#~^*`]")
_GAPS = re.compile(r"(?<=\S) +(?=\S)")
_LEADER = re.compile(r"\.{4,}|(?:\. ){3,}")
_WORD = re.compile(r"[^\W\d_]+")
# a margin mark at the start of a line: its indent and the mark, then a space or the line's end
_MARGIN = re.compile(r"( *)([|>])(?= |$)")


class PlainSection(NamedTuple):
    """A run of text under one heading path ("" before the first heading)."""

    title: str
    text: str


@dataclass(frozen=True)
class PlainDocument:
    """A text read by its layout: its own title ("" if it has none) and its non-empty sections."""

    title: str
    sections: list[PlainSection]


@dataclass(frozen=True, slots=True)
class _Line:
    indent: int
    text: str  # without the indent and trailing spaces

    @property
    def end(self) -> int:
        return self.indent + len(self.text)


@dataclass(slots=True)
class _Node:
    """A paragraph (lines at one indent, the first possibly hanging) or a heading."""

    indent: int
    lines: list[_Line]
    blank_before: bool
    heading: tuple[tuple[object, ...], str] | None = None  # (kind, title) of a heading
    joins: list[bool] = field(default_factory=list)  # line i is joined to line i + 1

    @property
    def wrapped(self) -> bool:
        return any(self.joins)


def _reaches(a: _Line, b: _Line, width: int) -> bool:
    """Whether `a` reaches the right margin `width`: `b`'s first word would not have fitted."""
    return a.end + 1 + len(b.text.split(maxsplit=1)[0]) > width


def _unmarked(raws: list[str]) -> list[str]:
    """`raws` with each margin of marks read as indentation: a run of at least `MARGIN_MIN_LINES`
    lines that open with the same mark at the same column, `|` or `>` followed by a space or the
    line's end (a quoted mail, a class's body as pydoc writes it), has the mark replaced by a
    space, so its text is indented under the line above it. A run where a line also ends with
    the mark is a table and keeps it."""
    out = list(raws)
    i = 0
    while i < len(raws):
        first = _MARGIN.match(raws[i])
        j = i + 1
        if first:
            key = first.group(1, 2)
            while j < len(raws) and (m := _MARGIN.match(raws[j])) and m.group(1, 2) == key:
                j += 1
            run = raws[i:j]
            table = any(len(r.strip()) > 1 and r.rstrip().endswith(key[1]) for r in run)
            if j - i >= MARGIN_MIN_LINES and not table:
                at = len(key[0])
                out[i:j] = [f"{r[:at]} {r[at + 1 :]}" for r in run]
        i = j
    return out


def _read_lines(text: str) -> list[_Line | None]:
    lines: list[_Line | None] = []
    for raw in _unmarked(text.expandtabs(TAB_SIZE).splitlines()):
        stripped = raw.strip()
        lines.append(_Line(len(raw) - len(raw.lstrip()), stripped) if stripped else None)
    return lines


def _text_width(lines: list[_Line | None]) -> int:
    """The text's own right margin: 95% of the lines that a line of their paragraph follows (at
    their indent or hanging, not a list item) are no wider; 0 if none, or if past
    `MAX_WRAP_WIDTH`."""
    widths = sorted(
        a.end
        for a, b in zip(lines, lines[1:], strict=False)
        if a is not None
        and b is not None
        and not _is_rule(a)
        and not _is_rule(b)
        and not _MARKER.match(b.text)
        and (a.indent == b.indent or (b.indent > a.indent and _hangs(a, b)))
    )
    if not widths:
        return 0
    width = widths[min(len(widths) - 1, int(len(widths) * 0.95))]
    return width if width <= MAX_WRAP_WIDTH else 0


def _columns(text: str) -> bool:
    """Whether a line holds aligned columns: a gap of four spaces or more beside a gap three
    narrower (justified text widens all its gaps alike), or a leader of dots."""
    if "    " not in text and "...." not in text and ". . ." not in text:
        return False
    gaps = [len(gap) for gap in _GAPS.findall(text)]
    return bool(_LEADER.search(text)) or (
        bool(gaps) and max(gaps) >= 4 and max(gaps) - min(gaps) >= 3
    )


def _joins(lines: list[_Line], hang: int, text_width: int) -> list[bool]:
    """Which lines of a paragraph are hard-wrapped into the next (module docstring). `hang`:
    where the text of a hanging first line starts; `text_width`: the text's `_text_width`."""
    # two lines tell nothing of their margin: the text's own stands for it
    width = text_width if len(lines) == 2 else max(line.end for line in lines)
    if len(lines) < 2 or not MIN_WRAP_WIDTH <= width <= MAX_WRAP_WIDTH:
        return [False] * (len(lines) - 1)
    texts = [lines[0].text[hang:]] + [line.text for line in lines[1:]]
    joins = [
        _reaches(a, b, width) and not _columns(texts[i]) and not _columns(texts[i + 1])
        for i, (a, b) in enumerate(zip(lines, lines[1:], strict=False))
    ]
    if sum(joins) * 2 < len(joins):  # lines of a list, not a wrapped paragraph
        return [False] * len(joins)
    return joins


def _is_rule(line: _Line | None) -> bool:
    return (
        line is not None and line.text[0] in _RULE_CHARACTERS and bool(_RULE.fullmatch(line.text))
    )


def _underlined(lines: list[_Line | None]) -> dict[int, tuple[int, tuple[object, ...]]]:
    """Underlined headings: first line index -> (number of lines, kind)."""
    found: dict[int, tuple[int, tuple[object, ...]]] = {}
    for i in range(len(lines) - 1):
        title, under = lines[i], lines[i + 1]
        if title is None or under is None or _is_rule(title) or not _is_rule(under):
            continue
        if len(under.text) * 2 < len(title.text) or len(title.text) > MAX_HEADING_CHARS:
            continue
        if not any(c.isalnum() for c in title.text) or title.text[-1] in ".,;":
            continue  # a sentence above a separator
        above = lines[i - 1] if i else None
        overlined = above is not None and above.text == under.text and (i < 2 or not lines[i - 2])
        start = i - 1 if overlined else i
        if start and lines[start - 1] is not None and not _is_rule(lines[start - 1]):
            continue  # the last line of a paragraph, not a heading
        found[start] = (3 if overlined else 2, ("underline", under.text[0], overlined))
    return found


def _hangs(a: _Line, b: _Line) -> bool:
    """Whether `b` (indented more than `a`) continues `a` as a hanging paragraph: `b` lines up
    with a word of `a` that follows a list marker or a gap of two spaces or more."""
    column = b.indent - a.indent
    if column >= len(a.text) or a.text[column - 1] != " " or a.text[column] == " ":
        return False
    marker = _MARKER.match(a.text)
    return (marker is not None and marker.end() == column) or a.text[column - 2] == " "


def _hung_on(a: _Line, b: _Line | None) -> bool:
    return b is not None and b.indent > a.indent and not _is_rule(b) and _hangs(a, b)


def _nodes(lines: list[_Line | None]) -> list[_Node]:
    underlined = _underlined(lines)
    starts = set(underlined)
    width = _text_width(lines)
    nodes: list[_Node] = []
    blank_before = True
    i = 0
    while i < len(lines):
        line = lines[i]
        if i in underlined:
            count, kind = underlined[i]
            title = lines[i + count - 2]
            assert title is not None
            nodes.append(_Node(title.indent, [title], blank_before, (kind, title.text)))
            i += count
            blank_before = True
            continue
        if line is None or _is_rule(line):  # a separator rule reads as a blank line
            blank_before = True
            i += 1
            continue
        node = _Node(line.indent, [line], blank_before)
        text_indent = line.indent
        hang = 0
        i += 1
        while i < len(lines) and i not in starts:
            b, a = lines[i], node.lines[-1]
            if b is None or _is_rule(b):
                break
            if _MARKER.match(b.text) and not (width and _reaches(a, b, width)):
                break  # a new list item (unless the line before ran to the margin)
            if b.indent != text_indent:
                if len(node.lines) > 1 or b.indent < a.indent or not _hangs(a, b):
                    break
                text_indent = b.indent
                hang = b.indent - a.indent
            elif _hung_on(b, lines[i + 1] if i + 1 < len(lines) else None):
                break  # `b` is the first line of a hanging paragraph
            node.lines.append(b)
            i += 1
        node.joins = _joins(node.lines, hang, width)
        nodes.append(node)
        blank_before = False
    return nodes


def _line_heading(
    node: _Node, following: _Node | None, margin: int | None, flush: int, after_heading: bool
) -> tuple[object, ...] | None:
    """The kind of heading a one-line paragraph is, or None if it is text (module docstring)."""
    if len(node.lines) > 1 or following is None or not (node.blank_before or after_heading):
        return None
    text = node.lines[0].text
    if not text[0].isalnum() or len(text) > MAX_HEADING_CHARS or _END_PUNCTUATION.search(text):
        return None
    words = _WORD.findall(text)
    if not words:
        return None
    number = _SECTION_NUMBER.match(text)
    depth = 1 + (number.group(1).count(".") if number else 0)
    capitals = all(w.isupper() for w in words if len(w) > 1) and any(len(w) > 1 for w in words)
    kind = ("line", node.indent, depth)
    if margin is not None and node.indent < margin:
        return kind
    if node.indent != flush or (margin is not None and margin > flush):
        return None  # only in a text with no lines left of its own (a flush-left text)
    standalone = following.blank_before and following.indent >= node.indent
    if not standalone or _CODE_CHARACTERS.search(text) or _columns(text):
        return None
    title_case = words[0][0].isupper() and all(w[0].isupper() for w in words if len(w) > 3)
    return kind if capitals or number or title_case else None


@dataclass
class _Sections:
    """Collects sections under their heading paths (as `markup`'s builder does)."""

    levels: dict[tuple[object, ...], int] = field(default_factory=dict)
    headings: list[tuple[int, str]] = field(default_factory=list)  # (level, title)
    path: list[int] = field(default_factory=list)  # indexes into `headings`
    found: list[tuple[tuple[int, ...], str]] = field(default_factory=list)

    def heading(self, kind: tuple[object, ...], title: str) -> None:
        level = self.levels.setdefault(kind, len(self.levels) + 1)
        while self.path and self.headings[self.path[-1]][0] >= level:
            self.path.pop()
        self.path.append(len(self.headings))
        self.headings.append((level, " ".join(title.split())))

    def text(self, text: str) -> None:
        if text:
            self.found.append((tuple(self.path), text))

    def document(self) -> PlainDocument:
        """The sections; the document title is the first heading when it is the only heading
        of level 1 (then it is left out of every section's path)."""
        top = [i for i, (level, _) in enumerate(self.headings) if level == 1]
        title = 0 if top == [0] else None
        sections = [
            PlainSection(PATH_SEPARATOR.join(self.headings[i][1] for i in path if i != title), text)
            for path, text in self.found
        ]
        return PlainDocument(self.headings[0][1] if title == 0 else "", sections)


def _render(node: _Node) -> list[str]:
    """A paragraph's lines, hard-wrapped runs joined, spaces collapsed."""
    out: list[str] = []
    current = node.lines[0].text
    for a, b, join in zip(node.lines, node.lines[1:], node.joins, strict=False):
        if join:
            if a.text.endswith(_BREAK_HYPHEN) and b.text[:1].islower():
                current = current[: -len(_BREAK_HYPHEN)] + b.text  # "De‐" "faults": Defaults
            else:
                current += b.text if _HYPHEN_END.search(a.text) else " " + b.text
        else:
            out.append(current)
            current = b.text
    out.append(current)
    return [" ".join(line.split()) for line in out]


def _section_text(nodes: list[_Node]) -> str:
    """The blocks of a section's paragraphs (module docstring), a blank line apart."""
    blocks: list[list[str]] = []
    # whether a sentence may go on past the last block: it starts with hard-wrapped prose, or
    # holds lines indented under its first paragraph (an example)
    may_continue = False
    open_indents: list[int] = []
    for node in nodes:
        while open_indents and open_indents[-1] >= node.indent:
            open_indents.pop()
        lines = _render(node)
        if open_indents or (blocks and not node.blank_before):
            blocks[-1].extend(lines)  # indented under the block's paragraphs, or no blank line
            may_continue = may_continue or bool(open_indents)
        elif may_continue and lines[0][0].islower() and not _SENTENCE_END.search(blocks[-1][-1]):
            blocks[-1].extend(lines)  # the sentence goes on after an example
        else:
            blocks.append(lines)
            may_continue = node.wrapped
        open_indents.append(node.indent)
    return "\n\n".join("\n".join(block) for block in blocks)


_SERIES_END = re.compile(r"[.,;!?]$")
_FIRST_WORD = re.compile(r"[^\W\d_]+")


def _series(nodes: list[_Node]) -> dict[int, tuple[object, ...]]:
    """Headings that a text numbers in a series: one-line paragraphs after a blank line that
    open with the same word, each holding a number ("* Noteworthy changes in release 3.8
    (2021-08-01)", "Changes in 2.40:", "version 1.31 - 2019-01-02", "v1.5.4 (Feb 2023)"), at
    least `SERIES_MIN` of them, each followed by something that is not one of them. Lists of
    one-liners between blank lines do not qualify: their lines follow one another."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, node in enumerate(nodes):
        if len(node.lines) > 1 or not (node.blank_before or i == 0) or node.heading is not None:
            continue
        text = node.lines[0].text
        marker = _MARKER.match(text)
        body = text[marker.end() :] if marker else text
        word = _FIRST_WORD.match(body)
        if (
            not word
            or len(body) > MAX_HEADING_CHARS
            or not any(c.isdigit() for c in body)
            or _SERIES_END.search(body)
        ):
            continue
        groups.setdefault(
            (text[: marker.end()].strip() if marker else "", word.group(0).lower()), []
        ).append(i)
    out: dict[int, tuple[object, ...]] = {}
    for key, members in groups.items():
        spaced = all(b - a > 1 for a, b in zip(members, members[1:], strict=False))
        if len(members) >= SERIES_MIN and spaced and members[-1] + 1 < len(nodes):
            for i in members:
                out[i] = ("numbered", *key)
    return out


def plain_document(text: str) -> PlainDocument:
    """The title and sections of a plain text, read by its layout (see the module docstring)."""
    lines = _read_lines(text)
    nodes = _nodes(lines)
    for i, numbered in _series(nodes).items():
        line = nodes[i].lines[0].text
        marker = _MARKER.match(line)
        nodes[i].heading = (numbered, line[marker.end() :] if marker else line)
    wrapped = [n.indent for n in nodes if n.heading is None and n.wrapped]
    margin = min(wrapped) if wrapped else None
    flush = min((n.indent for n in nodes), default=0)
    sections = _Sections()
    body: list[_Node] = []
    for i, node in enumerate(nodes):
        if node.heading is None:
            following = nodes[i + 1] if i + 1 < len(nodes) else None
            after_heading = i > 0 and nodes[i - 1].heading is not None
            kind = _line_heading(node, following, margin, flush, after_heading)
            if kind is not None:
                node.heading = (kind, node.lines[0].text)
        if node.heading is None:
            body.append(node)
            continue
        sections.text(_section_text(body))
        body = []
        sections.heading(*node.heading)
    sections.text(_section_text(body))
    return sections.document()
