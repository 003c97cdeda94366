"""Candidate answer spans of a parsed sentence, each with a coarse kind.

Sources, in order of trust: spaCy's named entities (mapped to the kinds of
`graphseek.agents.reading.question`), numbers and dates found by pattern, identifier-like tokens
the NER misses ("LZMA2", "ShellDetectionFailure", "crypt_gensalt"), and noun chunks (a proper
chunk is a `name`, a common one a `thing`). Technical documentation adds kinds of its own, found
by patterns of how such documents are written, never by per-package tables: `code` (a code span
in backticks, a flag such as `--force-enable-socket`, a numbered standard such as "RFC 7159", a
dotted, hyphenated or underscored lower-case name such as "grpc_tools.protoc", and every
identifier-like token), `version` ("3.12", "v3.2", "6.1.1"), `licence` ("MIT", "GPLv2",
"Apache License 2.0", "MPL 2.0"), and numbers with a unit, a bound ("over 500") or as an
expression ("100*1024*1024 bytes"). The literals of technical writing (`literals`: an `option`,
an `envvar`, a `path`, a `key`, a `command`) are proposed with their own kinds. Spans are
character offsets into the sentence, so an answer is always an exact span of its evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from graphseek.agents.reading.literals import literal_spans

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
_UNITS = (
    r"%|percent|million|billion|thousand|[KMGTP]i?B|bytes?|bits?|[KMG]?Hz|ms|seconds?|"
    r"minutes?|hours?|days?|weeks?|months?|years?|lines?|characters?|languages?|entries|"
    r"items?|threads?|cores?|requests?|connections?|files?|times"
)
_NUMBER = re.compile(
    rf"(?<![\w.])(?:(?:over|more than|less than|fewer than|about|around|up to|at least|at most|"
    rf"nearly|approximately|roughly)\s+)?\d[\d,.]*\+?(?:\s*(?:{_UNITS}))?(?![\w])"
)
# an arithmetic expression of numbers ("100*1024*1024", "2**20", "64 x 1024")
_EXPRESSION = re.compile(
    r"(?<![\w.])\d+(?:\s*(?:\*\*?|[x×/+^])\s*\d+)+(?:\s*(?:" + _UNITS + r"))?(?![\w])"
)
# a version number: "3.12", "v3.2", "6.1.1", "2.0.0rc1" (not a decimal in running prose: two
# dotted parts need a "v" or a third part, or follow the word "version"/"release")
_VERSION = re.compile(
    r"(?<![\w.])(?:v\d+(?:\.\d+)+|\d+\.\d+(?:\.\d+)+)(?:[-.]?(?:a|b|rc|dev|post|alpha|beta)\d*)?"
    r"(?![\w.]*\w)"
    r"|(?<=\bversion )\d+(?:\.\d+)+|(?<=\brelease )\d+(?:\.\d+)+"
)
# software licence names, as documentation writes them
_LICENCE = re.compile(
    r"\b(?:(?:GNU\s+)?(?:Affero\s+|Lesser\s+|Library\s+)?General Public Licen[sc]e"
    r"(?:,?\s+[Vv]ersion\s+\d(?:\.\d)?)?|A?GPL(?:-?v?\d(?:\.\d)?\+?)?|LGPL(?:-?v?\d(?:\.\d)?\+?)?"
    r"|Apache(?:\s+Licen[sc]e)?(?:,?\s+(?:[Vv](?:ersion)?\s*)?\d\.\d)?|Apache-2\.0"
    r"|MIT(?:\s+Licen[sc]e)?|BSD(?:[-\s]\d-Clause)?(?:\s+Licen[sc]e)?|ISC(?:\s+Licen[sc]e)?"
    r"|MPL(?:[-\s]?v?\d\.\d)?|Mozilla Public Licen[sc]e(?:,?\s+(?:[Vv](?:ersion)?\s*)?\d\.\d)?"
    r"|PSF(?:\s+Licen[sc]e)?|Python Software Foundation Licen[sc]e|Unlicense|CC0(?:[-\s]1\.0)?"
    r"|CC[-\s]BY(?:[-\s](?:SA|NC|ND))*(?:[-\s]\d\.\d)?|zlib Licen[sc]e|Boost Software Licen[sc]e"
    r"|Artistic Licen[sc]e(?:\s+\d\.\d)?|EPL(?:-\d\.\d)?|public domain)\b"
)
# a literal of technical writing: a code span (`...`), a command-line flag, a numbered standard
_CODE_SPAN = re.compile(r"`([^`\n]{1,80})`")
_FLAG = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:=[\w.-]+)?")
_STANDARD = re.compile(r"\b(?:RFC|PEP|ISO|IEEE|ECMA|BCP|STD)[\s-]?\d+(?:[-:.]\d+)*\b")
# lower-case names joined by dots, hyphens or underscores: modules, packages, settings, files
# ("grpc_tools.protoc", "prometheus-client", "mark-symlinked-directories", "langgraph.json")
_DOTTED = re.compile(r"(?<![\w.-])[a-z][a-z\d]*(?:[._-][a-z\d]+)+(?![\w-])")
# a negative number, written as a value ("-1" for "never"): after a space, "=" or "("
_NEGATIVE = re.compile(r"(?:(?<=[\s(=])|^)-\d+(?:\.\d+)?(?![\w.-])")
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
        t, s, e = _trim(t.strip("`"), s, e)
        if not t or t.lower() in _PRONOUNS or len(t) > 80 or "`" in t:
            return  # a span across code-span marks ("cmarkgfm` `pipenv") is two things
        if t.count('"') % 2 or t.count("\u201c") != t.count("\u201d"):
            return  # a span across a quotation's edge ('name "git') is half of two things
        if not re.search(r"[A-Za-z0-9]", t):
            return
        if kind == "number" and re.fullmatch(r"\d+(?:\.\d+){2,}", t):
            return  # "1.21.9", "10.0.0.1": a version or an address, not a quantity
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
    for m in _EXPRESSION.finditer(text):
        add(m.group(0), "number", m.start(), m.end(), "pattern")
    for m in _VERSION.finditer(text):
        add(m.group(0), "version", m.start(), m.end(), "pattern")
    for m in _LICENCE.finditer(text):
        add(m.group(0), "licence", m.start(), m.end(), "pattern")
    for m in _CODE_SPAN.finditer(text):
        add(m.group(1), "code", m.start(1), m.end(1), "code")
    for pattern in (_FLAG, _STANDARD, _DOTTED):
        for m in pattern.finditer(text):
            add(m.group(0), "code", m.start(), m.end(), "code")
    for m in _NEGATIVE.finditer(text):
        add(m.group(0), "number", m.start(), m.end(), "pattern")
    for literal, kind, s, e in literal_spans(text):
        add(literal, kind, s, e, "literal")
    for m in _IDENTIFIER.finditer(text):
        s, e = m.start(), m.end()
        if any(cs <= s and e <= ce and (cs, ce) != (s, e) for cs, ce in covered):
            continue
        add(m.group(0), "name", s, e, "identifier")
        add(m.group(0), "code", s, e, "identifier")
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
