"""Text helpers every layer above `knowledge` shares: graph nodes, LLM policies and offline policies.

Normalisation (SQuAD-style), content words, the names a question mentions, whether an answer
occurs in a text, dates and numbers, `#N` placeholders of a plan, and the best of several drafts.
Plain string work, no model, nothing specific to one data set.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import Draft, EvidenceItem

WH_WORDS = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how")
AUX_WORDS = (
    "is", "are", "was", "were", "do", "does", "did", "has", "have", "had", "can", "could",
    "will", "would", "should", "shall", "may", "might", "must",
)  # fmt: skip


def starts_with_wh(question: str) -> bool:
    """True when a question starts with a wh-word, an auxiliary or a preposition + wh-word
    ("In which year ...")."""
    q = " ".join(question.replace("’", "'").split()).lower()
    words = q.split()
    if not words:
        return False
    if words[0].strip(",") in WH_WORDS or words[0].strip(",") in AUX_WORDS:
        return True
    m = re.match(r"^(in|on|at|from|for|to|by|of|with|during|since|after|before)\s+(\w+)", q)
    return bool(m and m.group(2) in WH_WORDS)


def normalize(text: str) -> str:
    """Lower-case, strip accents, punctuation and articles (SQuAD-style)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = re.sub(r"[^\w\s]", " ", text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}  # fmt: skip


def parse_date(text: str) -> tuple[int, int, int] | None:
    """A sortable (year, month, day) from free text ("20 March 851", "March 10, 2017", "1946").

    Unknown month or day are 0. BC years are negative. Returns None when no year is found.
    """
    t = text.lower().replace(",", " ")
    t = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", t)
    bc = bool(re.search(r"\b(?:bc|bce|b\.c\.)\b", t))
    years = [m for m in re.finditer(r"\b(\d{3,4})\b", t)]
    if not years:
        cm = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)? century\b", t)
        if cm:
            year = (int(cm.group(1)) - 1) * 100 + 50
            return (-year if bc else year, 0, 0)
        m = re.search(r"\b(\d{1,2})\s*(?:bc|bce)\b", t)
        if m:
            return (-int(m.group(1)), 0, 0)
        return None
    ym = years[0]
    year = int(ym.group(1))
    month = 0
    day = 0
    for name, num in MONTHS.items():
        mm = re.search(rf"\b{name}\b\.?", t)
        if mm:
            month = num
            after = re.match(r"\s*(\d{1,2})\b", t[mm.end() :])
            before = re.search(r"\b(\d{1,2})\s*$", t[: mm.start()])
            if before:
                day = int(before.group(1))
            elif after and int(after.group(1)) <= 31 and after.group(1) != ym.group(1):
                day = int(after.group(1))
            break
    if bc:
        year = -year
    return (year, month, day)


def parse_number(text: str) -> float | None:
    """The first number in `text` (commas allowed), or None."""
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", text)
    if not m:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


PLACEHOLDER = re.compile(r"#(\d+)")


def fill_placeholders(text: str, answers: Mapping[str, str]) -> str:
    """Replace `#N` by the answer of step N where it is known."""

    def sub(match: re.Match[str]) -> str:
        answer = answers.get(match.group(1))
        return answer if answer else match.group(0)

    return PLACEHOLDER.sub(sub, text)


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
    return {stem(w) for w in normalize(text).split() if w not in STOPWORDS and len(w) > 1}


def stem(word: str) -> str:
    """A light suffix stripper (-ing, -ed, -es, -s) for matching question and passage words."""
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


def best_draft(drafts: Sequence[Draft]) -> Draft | None:
    """The most confident draft with an answer, else the last one (None when there are none)."""
    answered = [d for d in drafts if d.answer]
    if answered:
        return max(answered, key=lambda d: d.confidence)
    return drafts[-1] if drafts else None
