"""Candidate answer spans of a parsed sentence, each with a coarse kind.

Sources, in order of trust: spaCy's named entities (mapped to the kinds of
`graphseek.agents.reading.question`), numbers and dates found by pattern, identifier-like tokens
the NER misses ("LZMA2", "ShellDetectionFailure", "crypt_gensalt"), and noun chunks (a proper
chunk is a `name`, a common one a `thing`). Spans are character offsets into the sentence, so an
answer is always an exact span of its evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

LABEL_KIND = {
    "PERSON": "person",
    "ORG": "org",
    "NORP": "group",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "DATE": "date",
    "TIME": "date",
    "CARDINAL": "number",
    "QUANTITY": "number",
    "MONEY": "number",
    "PERCENT": "number",
    "ORDINAL": "number",
    "PRODUCT": "name",
    "WORK_OF_ART": "name",
    "EVENT": "name",
    "LAW": "name",
    "LANGUAGE": "name",
}

# a token that names something technical even when the NER does not tag it
_IDENTIFIER = re.compile(
    r"(?<![\w.-])(?:[A-Za-z][a-z]*[A-Z]\w*|[A-Za-z]+\d\w*|[a-z]+_[a-z_\d]+|[A-Z]{2,}[\w+-]*)"
    r"(?:\.\w+)*(?![\w-])"
)
_NUMBER = re.compile(
    r"(?<![\w.])\d[\d,.]*\+?(?:\s*(?:%|percent|million|billion|thousand))?(?![\w])"
)
_YEAR = re.compile(r"(?<![\w.])(?:1[5-9]|20)\d\d(?![\w.])")
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
)
_FULL_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+{_MONTH}\s*,?\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}}\s*,\s*\d{{3,4}}|"
    rf"{_MONTH}\s+\d{{3,4}})\b"
)
_PRONOUNS = frozenset(
    "i me my we us our you your he him his she her it its they them their this that these those "
    "who whom which what one ones itself themselves something anything everything nothing "
    "someone anyone everyone".split()
)
_DETERMINERS = re.compile(
    r"^(?:the|a|an|this|that|these|those|its|their|his|her|our|your|my)\s+", re.I
)


@dataclass(frozen=True)
class Span:
    """A candidate span: its text, kind, and character offsets in its sentence."""

    text: str
    kind: str
    start: int
    end: int
    source: str  # "ent", "pattern", "identifier", "chunk"


def _trim(text: str, start: int, end: int) -> tuple[str, int, int]:
    """Strip surrounding punctuation, a possessive "'s" and a leading determiner."""
    m = re.match(r"^[\s\"'“”‘’(\[,;:]+", text)
    if m:
        start += m.end()
        text = text[m.end() :]
    m = re.search(r"(?:['’]s)?[\s\"'“”‘’)\],;:.]*$", text)
    if m and m.start() > 0:
        end -= len(text) - m.start()
        text = text[: m.start()]
    m = _DETERMINERS.match(text)
    if m and len(text) > m.end():
        start += m.end()
        text = text[m.end() :]
    return text, start, end


def sentence_spans(sent: Any) -> list[Span]:
    """All candidate spans of a spaCy sentence `Span` (offsets relative to the sentence)."""
    base = sent.start_char
    text = sent.text
    out: list[Span] = []
    covered: list[tuple[int, int]] = []

    def add(t: str, kind: str, s: int, e: int, source: str) -> None:
        t, s, e = _trim(t, s, e)
        if not t or t.lower() in _PRONOUNS or len(t) > 80:
            return
        if not re.search(r"[A-Za-z0-9]", t):
            return
        out.append(Span(t, kind, s, e, source))

    for ent in sent.ents:
        kind = LABEL_KIND.get(ent.label_)
        if kind is None:
            continue
        s, e = ent.start_char - base, ent.end_char - base
        add(ent.text, kind, s, e, "ent")
        covered.append((s, e))
    for m in _FULL_DATE.finditer(text):
        add(m.group(0), "date", m.start(), m.end(), "pattern")
    for m in _YEAR.finditer(text):
        add(m.group(0), "date", m.start(), m.end(), "pattern")
    for m in _NUMBER.finditer(text):
        if not _YEAR.fullmatch(m.group(0).strip()):
            add(m.group(0), "number", m.start(), m.end(), "pattern")
    for m in _IDENTIFIER.finditer(text):
        s, e = m.start(), m.end()
        if any(cs <= s and e <= ce and (cs, ce) != (s, e) for cs, ce in covered):
            continue
        add(m.group(0), "name", s, e, "identifier")
    for chunk in sent.noun_chunks:
        s, e = chunk.start_char - base, chunk.end_char - base
        if any(cs == s and ce == e for cs, ce in covered):
            continue
        root = chunk.root
        if root.pos_ == "PRON":
            continue
        proper = root.pos_ == "PROPN" or any(t.pos_ == "PROPN" for t in chunk)
        add(chunk.text, "name" if proper else "thing", s, e, "chunk")
        if proper and len(chunk) > 1:
            # the proper part alone ("the XZ Utils package" -> "XZ Utils")
            props = [t for t in chunk if t.pos_ in {"PROPN", "NUM"}]
            if props:
                ps, pe = props[0].idx - base, props[-1].idx + len(props[-1].text) - base
                if (ps, pe) != (s, e):
                    add(text[ps:pe], "name", ps, pe, "chunk")
    # one span per (offsets, kind): the most trusted source wins
    seen: set[tuple[int, int, str]] = set()
    unique: list[Span] = []
    for span in out:
        key = (span.start, span.end, span.kind)
        if key not in seen:
            seen.add(key)
            unique.append(span)
    return unique
