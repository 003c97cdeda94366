"""String helpers shared by the graph build (extraction, alignment, linking, the store) and the
tools that read it: name normalisation, acronyms, word counts and name-variant matching."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

_PUNCT_DROP = re.compile(r"[.'\u2019\u2018`\"\u201c\u201d]")
_PUNCT_SPACE = re.compile(r"[^\w\s&+#-]")
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
_PAREN_QUALIFIER = re.compile(r"^(?P<base>.*?)\s*\((?P<qual>[^()]*)\)\s*$")

#: words ignored when forming or checking an acronym ("Bank of America" -> "BOA" or "BA")
ACRONYM_STOPWORDS = frozenset({"of", "the", "and", "for", "a", "an", "in", "on", "at", "de", "&"})


def fold(text: str) -> str:
    """Unicode-fold `text`: NFKD, accents dropped (``"Pelé"`` -> ``"Pele"``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=1 << 17)
def normalize_name(name: str) -> str:
    """The key two names must share to count as the same surface form.

    Lower case, accents folded, dots and quotes dropped (``"U.S."`` -> ``"us"``), other
    punctuation turned into spaces, a leading article and a trailing possessive removed,
    whitespace collapsed. ``"The Golden State Warriors'"`` -> ``"golden state warriors"``.
    Cached: a build asks for the same few names hundreds of thousands of times.
    """
    text = fold(name).lower().strip()
    text = re.sub(r"(?:'s|\u2019s|')$", "", text)
    text = _PUNCT_DROP.sub("", text)
    text = _PUNCT_SPACE.sub(" ", text)
    text = _SPACES.sub(" ", text).strip()
    for article in ("the ", "a ", "an "):
        if text.startswith(article) and len(text) > len(article):
            text = text[len(article) :]
            break
    return text


def normalize_text(text: str) -> str:
    """Lower case with collapsed whitespace: the form the passage matcher searches in."""
    return _SPACES.sub(" ", text.lower())


def split_qualifier(title: str) -> tuple[str, str]:
    """``"Seven Women (1944 film)"`` -> ``("Seven Women", "1944 film")``; no qualifier -> ``""``."""
    match = _PAREN_QUALIFIER.match(title.strip())
    if match and match.group("base"):
        return match.group("base").strip(), match.group("qual").strip()
    return title.strip(), ""


def initials(name: str, *, skip_stopwords: bool = True) -> str:
    """Upper-case initials of the words of `name` (stopwords skipped unless asked)."""
    words = [w for w in re.split(r"[\s\-]+", fold(name)) if w]
    if skip_stopwords:
        words = [w for w in words if w.lower() not in ACRONYM_STOPWORDS]
    return "".join(w[0] for w in words if w[0].isalnum()).upper()


def is_acronym(token: str) -> bool:
    """Whether `token` looks like an acronym: 2-8 letters (dots allowed), mostly upper case."""
    letters = token.replace(".", "")
    if not 2 <= len(letters) <= 8 or not letters.isalpha():
        return False
    upper = sum(c.isupper() for c in letters)
    return upper >= max(2, len(letters) - 1)


def is_acronym_of(short: str, long: str) -> bool:
    """Whether `short` is an acronym of the multi-word `long` (``"NBA"``, ``"National
    Basketball Association"``), with or without stopword initials."""
    letters = _acronym_letters(short)
    return letters is not None and letters in _initials_forms(long)


@lru_cache(maxsize=1 << 16)
def _acronym_letters(name: str) -> str | None:
    """The upper-case letters of `name` when it looks like an acronym, else None."""
    return name.replace(".", "").upper() if is_acronym(name) else None


@lru_cache(maxsize=1 << 16)
def _initials_forms(name: str) -> tuple[str, ...]:
    """The initials `name` can be abbreviated to (none for a single word)."""
    if len(name.split()) < 2:
        return ()
    return initials(name), initials(name, skip_stopwords=False)


def digits_of(text: str) -> tuple[str, ...]:
    """The digit runs of `text`, in order (names with different numbers never match)."""
    return tuple(_DIGITS.findall(text))


def names_match(a: str, b: str) -> bool:
    """High-precision test that two surface names are variants of one name.

    True when the normalised names are equal; or one is an acronym of the other; or, with the
    same digits and word count, every word pairs up with a word that is equal, its plural, a
    near-typo (ratio >= 90 on words of >= 6 letters) or, in multi-word names with at least one
    equal word, a prefix of it (>= 3 letters: ``"Steph Curry"``/``"Stephen Curry"``); or the
    shorter name has >= 2 words, all found in the longer (``"Lothair II"``/``"King Lothair
    II"``). ``"John Smith"``/``"Joan Smith"``, ``"art"``/``"artist"`` and
    ``"Curry"``/``"Stephen Curry"`` do not match.
    """
    na, wa, da = _name_parts(a)
    nb, wb, db = _name_parts(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    if is_acronym_of(a, b) or is_acronym_of(b, a):
        return True
    if da != db:
        return False
    if len(wa) == len(wb):
        exact = 0
        for x, y in zip(wa, wb, strict=True):
            if x == y:
                exact += 1
                continue
            short, long = (x, y) if len(x) <= len(y) else (y, x)
            if long in (short + "s", short + "es"):
                continue
            if len(wa) > 1 and len(short) >= 3 and long.startswith(short):
                continue
            if len(short) >= 6:
                from rapidfuzz import fuzz

                if fuzz.ratio(x, y) >= 90:
                    continue
            return False
        return len(wa) == 1 or exact >= 1
    short_words, long_words = (wa, wb) if len(wa) < len(wb) else (wb, wa)
    return len(short_words) >= 2 and set(short_words) <= set(long_words)


@lru_cache(maxsize=1 << 17)
def _name_parts(name: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """`normalize_name`, its words and its digit runs (`names_match` compares a build's names
    pairwise, each many times)."""
    normal = normalize_name(name)
    return normal, tuple(normal.split()), digits_of(normal)


def clear_name_caches() -> None:
    """Empty the caches of `normalize_name` and `names_match`'s helpers. Each holds up to
    131,072 names with their parts, and large builds fill them; a build that is done
    comparing names (after alignment) gives them back here, so the stages after it fill that
    memory instead of taking more. Results are unchanged: the cached functions are pure, and
    the caches refill when asked again."""
    for cached in (normalize_name, _name_parts, _acronym_letters, _initials_forms):
        cached.cache_clear()


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """Lower-case word (``\\w+``) counts over `texts`."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_WORD.findall(text.lower()))
    return counts


def top_common_words(texts: Iterable[str], k: int) -> frozenset[str]:
    """The `k` most frequent lower-case words of `texts` (ties broken alphabetically)."""
    if k <= 0:
        return frozenset()
    counts = word_counts(texts)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return frozenset(word for word, _ in ranked[:k])


def stable_id(prefix: str, *parts: str, length: int = 12) -> str:
    """``prefix-<sha1 hex>`` of the parts: the same content always gets the same id."""
    digest = hashlib.sha1("\x1f".join(parts).encode()).hexdigest()
    return f"{prefix}-{digest[:length]}"
