"""Split long documents into passages: sentence- and paragraph-aware, with a character budget.

A document is cut into units (sentences inside paragraphs; a sentence longer than the budget is
cut at whitespace), and units are packed greedily into chunks of at most `chunk_size` characters.
Each chunk after the first starts with the trailing whole sentences of the previous chunk that fit
in `overlap` characters (or, when no whole sentence fits, its last words up to `overlap`
characters), so a fact cut at a boundary is still read in context.

With `whole_paragraphs=True` (a text laid out in blocks, as `plaintext` writes sections: blocks
a blank line apart, the lines of a block a line break apart) every paragraph is a unit that is
never cut when it fits the budget. A longer one is cut where a line ends a sentence (so an item
stays with its description), then at its other sentence ends, then at line breaks, then at
whitespace, each only inside a piece still over the budget. A chunk starts only where a unit
does (a block or a sentence; a line or a word only inside a sentence longer than the budget):
the overlap carries whole units from the end of the chunk before, and only inside a paragraph
that was cut; a chunk that starts a paragraph carries none.

Chunks are slices of the original text (whitespace inside a chunk is kept as written), so the
same document always gives the same chunks. A text that fits the budget is returned unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

# A paragraph break: a blank line (possibly holding spaces).
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A sentence ends at . ! or ? (optionally followed by closing quotes/brackets) then whitespace.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_WHITESPACE = re.compile(r"\s+")
# a line break after a line that ends a sentence (closing quotes/brackets allowed)
_LINE_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*[ \t]*\n\s*")
_LINE_BREAK = re.compile(r"[ \t]*\n\s*")


class Span(NamedTuple):
    """A half-open character range [start, end) of the original text."""

    start: int
    end: int


def _paragraph_spans(text: str) -> list[Span]:
    spans = []
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        spans.append(Span(start, match.start()))
        start = match.end()
    spans.append(Span(start, len(text)))
    return [s for s in (_strip(text, s) for s in spans) if s.end > s.start]


def _strip(text: str, span: Span) -> Span:
    start, end = span
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Span(start, end)


def _sentence_spans(text: str, para: Span) -> list[Span]:
    spans = []
    start = para.start
    for match in _SENTENCE_END.finditer(text, para.start, para.end):
        spans.append(Span(start, match.start() + len(match.group(0).rstrip())))
        start = match.end()
    spans.append(Span(start, para.end))
    return [s for s in (_strip(text, s) for s in spans) if s.end > s.start]


def _split_long(text: str, span: Span, budget: int) -> list[Span]:
    """Cut a span longer than `budget` at whitespace (or hard, for a word longer than budget)."""
    pieces = []
    start = span.start
    while span.end - start > budget:
        limit = start + budget
        cut = -1
        for match in _WHITESPACE.finditer(text, start + 1, limit + 1):
            cut = match.start()
        if cut <= start:  # one word longer than the budget: hard cut
            pieces.append(Span(start, limit))
            start = limit
        else:
            pieces.append(Span(start, cut))
            start = cut
        while start < span.end and text[start].isspace():
            start += 1
    if span.end > start:
        pieces.append(Span(start, span.end))
    return pieces


def _units(text: str, budget: int) -> list[Span]:
    units: list[Span] = []
    for para in _paragraph_spans(text):
        for sentence in _sentence_spans(text, para):
            if sentence.end - sentence.start > budget:
                units.extend(_split_long(text, sentence, budget))
            else:
                units.append(sentence)
    return units


def _split_at(pattern: re.Pattern[str]) -> Callable[[str, Span], list[Span]]:
    """A splitter cutting a span after each match of `pattern` (the match left out)."""

    def split(text: str, span: Span) -> list[Span]:
        spans = []
        start = span.start
        for match in pattern.finditer(text, span.start, span.end):
            spans.append(Span(start, match.start() + len(match.group(0).rstrip())))
            start = match.end()
        spans.append(Span(start, span.end))
        return [s for s in (_strip(text, s) for s in spans) if s.end > s.start]

    return split


# how a paragraph over the budget is cut, most preferred first (whole_paragraphs=True)
_BLOCK_SPLITTERS = (
    _split_at(_LINE_SENTENCE_END),
    _sentence_spans,
    _split_at(_LINE_BREAK),
)


def _whole_units(text: str, budget: int) -> tuple[list[Span], list[int]]:
    """Units of a text packed a paragraph at a time, and the paragraph of each (module
    docstring)."""
    units: list[Span] = []
    paragraphs: list[int] = []

    def add(span: Span, level: int, paragraph: int) -> None:
        if span.end - span.start <= budget:
            units.append(span)
            paragraphs.append(paragraph)
        elif level == len(_BLOCK_SPLITTERS):
            pieces = _split_long(text, span, budget)
            units.extend(pieces)
            paragraphs.extend([paragraph] * len(pieces))
        else:
            for piece in _BLOCK_SPLITTERS[level](text, span):
                add(piece, level + 1, paragraph)

    for n, para in enumerate(_paragraph_spans(text)):
        add(para, 0, n)
    return units, paragraphs


def _overlap_start(
    text: str,
    units: list[Span],
    chunk_start: int,
    first: int,
    last: int,
    overlap: int,
    paragraphs: list[int] | None = None,
) -> int:
    """Where the chunk after `units[first..last]` (which starts at `chunk_start`) begins: the
    earliest of its sentence starts within `overlap` characters of its end, else the first word
    boundary inside that window, else the next unit (no overlap). With `paragraphs` (the
    paragraph of each unit) only whole units of the next unit's paragraph are carried over."""
    end = units[last].end
    start = -1
    for i in range(last, first - 1, -1):
        if end - units[i].start > overlap or units[i].start <= chunk_start:
            break
        if paragraphs is not None and paragraphs[i] != paragraphs[last + 1]:
            break
        start = units[i].start
    if start >= 0 or paragraphs is not None:
        return start if start >= 0 else units[last + 1].start
    match = _WHITESPACE.search(text, max(end - overlap, chunk_start + 1), end)
    if match is not None and match.end() < end:
        return match.end()
    return units[last + 1].start


def chunk_spans(
    text: str, chunk_size: int = 1200, overlap: int = 150, *, whole_paragraphs: bool = False
) -> list[Span]:
    """Character spans of the chunks of `text` (see the module docstring)."""
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= overlap < chunk_size:
        raise ValueError(
            f"overlap must be in [0, chunk_size), got {overlap} (chunk_size {chunk_size})"
        )
    whole = _strip(text, Span(0, len(text)))
    if whole.end <= whole.start:
        return []
    if whole.end - whole.start <= chunk_size:
        return [whole]
    paragraphs: list[int] | None = None
    if whole_paragraphs:
        units, paragraphs = _whole_units(text, chunk_size)
    else:
        units = _units(text, chunk_size)
    chunks: list[Span] = []
    start = units[0].start
    first = 0  # index of the first unit not yet in any chunk
    while first < len(units):
        if units[first].end - start > chunk_size:  # overlap + next unit does not fit: drop overlap
            start = units[first].start
        last = first
        while last + 1 < len(units) and units[last + 1].end - start <= chunk_size:
            last += 1
        chunks.append(Span(start, units[last].end))
        if last + 1 >= len(units):
            break
        if overlap > 0:
            start = _overlap_start(text, units, chunks[-1].start, first, last, overlap, paragraphs)
        else:
            start = units[last + 1].start
        first = last + 1
    return chunks


def chunk_text(
    text: str, chunk_size: int = 1200, overlap: int = 150, *, whole_paragraphs: bool = False
) -> list[str]:
    """Split `text` into chunks of at most `chunk_size` characters with `overlap` characters of
    context carried over; a text that fits the budget comes back whole (stripped).
    `whole_paragraphs=True` packs paragraphs whole (see the module docstring)."""
    spans = chunk_spans(text, chunk_size, overlap, whole_paragraphs=whole_paragraphs)
    return [text[s.start : s.end] for s in spans]
