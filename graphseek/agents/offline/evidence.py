"""Text tests on evidence that several offline checks share (coverage, sufficiency, Triple-Check,
rewrite, refinement): the names a question mentions, content-word overlap, whether an answer
occurs in a text, a passage's one-line summary, and name alignment.

All plain string work over normalised text (`answer_types.normalize`), no model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from graphseek.agents.offline.answer_types import AUX_WORDS, WH_WORDS, normalize, parse_date
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import EvidenceItem

STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being do does "
    "did has have had which what who whom whose when where why how that this these those it its "
    "as into about than then there their his her he she they them also same both either".split()
)
_NAME_RUN = re.compile(
    r"[A-Z0-9][\w'’.-]*(?:\s+(?:(?:of|de|the|von|van|la|le|du|da|del)\s+)?[A-Z0-9][\w'’.-]*)*"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'“(])")


def content_words(text: str) -> set[str]:
    """Lower-case words of `text` without stopwords, one-letter words or plural/verb endings."""
    return {_stem(w) for w in normalize(text).split() if w not in STOPWORDS and len(w) > 1}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def overlap(words: set[str], text: str) -> float:
    """Share of `words` that occur in `text` (0 when `words` is empty)."""
    if not words:
        return 0.0
    return len(words & content_words(text)) / len(words)


def question_names(question: str) -> list[str]:
    """The proper names a question mentions: its capitalised runs (not a leading wh-word or
    auxiliary), longest first, without duplicates."""
    names: list[str] = []
    for match in _NAME_RUN.finditer(question):
        text = match.group(0).strip(" .,'’")
        text = re.sub(r"['’]s$", "", text)
        words = text.split()
        if match.start() == 0 and words and words[0].lower() in WH_WORDS + AUX_WORDS:
            words = words[1:]
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]
        text = " ".join(words)
        if text and normalize(text) and text.lower() not in STOPWORDS:
            names.append(text)
    out: list[str] = []
    seen: set[str] = set()
    for name in sorted(names, key=len, reverse=True):
        key = normalize(name)
        if key and key not in seen and not any(key in s for s in seen):
            seen.add(key)
            out.append(name)
    return out


def contains(text: str, phrase: str) -> bool:
    """Whether normalised `phrase` occurs in normalised `text` on word boundaries."""
    p = normalize(phrase)
    return bool(p) and f" {p} " in f" {normalize(text)} "


def name_coverage(names: Sequence[str], texts: Iterable[str]) -> float:
    """Share of `names` found in any of `texts` (1 when there are no names)."""
    if not names:
        return 1.0
    joined = " \n ".join(texts)
    return sum(1 for n in names if contains(joined, n)) / len(names)


def answer_occurs(answer: str, text: str) -> bool:
    """Whether `answer` is stated in `text`: as a phrase, by all its content words, or, for a
    date, as the same date written another way."""
    if not answer.strip() or not text.strip():
        return False
    if contains(text, answer):
        return True
    words = content_words(answer)
    if words and words <= content_words(text):
        return True
    date = parse_date(answer)
    if date is not None:
        for match in re.finditer(r"[^.;]*\d{3,4}[^.;]*", text):
            found = parse_date(match.group(0))
            if found is not None and _same_date(date, found):
                return True
    return False


def _same_date(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return all(x == y or 0 in (x, y) for x, y in zip(a, b, strict=True))


def summary(text: str, max_chars: int = 240) -> str:
    """A passage's summary for the coverage gate: its first sentence, cut to `max_chars`."""
    text = " ".join(text.split())
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    return first if len(first) <= max_chars else first[: max_chars - 3].rstrip() + "..."


def align_names(query: str, names: Iterable[str]) -> str:
    """Replace each name in `query` by the fullest known name that contains it (the graph's or
    the evidence's), e.g. "Halvorsen's father" -> "Ingrid Halvorsen's father"."""
    known = sorted({n.strip() for n in names if n and n.strip()}, key=len, reverse=True)
    out = query
    for mention in question_names(query):
        m_words = normalize(mention).split()
        if not m_words:
            continue
        for name in known:
            n_words = normalize(name).split()
            if len(n_words) <= len(m_words) or not _is_subsequence(m_words, n_words):
                continue
            if contains(out, name):
                break
            out = re.sub(rf"\b{re.escape(mention)}\b", name, out, count=1)
            break
    return out


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(w in it for w in short)


def as_hits(items: Sequence[EvidenceItem]) -> list[Hit]:
    """Evidence items as ranked hits (the shape the Librarian reads)."""
    return [
        Hit(passage=Passage(id=e.passage_id, title=e.title, text=e.text), score=e.score, rank=i)
        for i, e in enumerate(items, 1)
    ]
