"""Name text for graph lookups: tokens, lookup keys, stems and label similarity (pure text)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from graphseek.knowledge.sparse import STOPWORDS
from graphseek.knowledge.text import fold
from graphseek.tools.run_settings import run_setting

#: words never taken as a mention on their own (a reading profile adds its own words:
#: `register_profile_words`)
QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how name named did does do was were is are "
    "first last earlier later".split()
)
_NONE: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
#: profile name -> (type nouns, event verbs) never taken as a mention on their own
_PROFILE_WORDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def register_profile_words(
    profile: str, nouns: Iterable[str] = (), verbs: Iterable[str] = ()
) -> None:
    """Declare reading profile `profile`'s own words that are never a mention on their own:
    `nouns` (type words; never relation seeds either) and `verbs` (event verbs, which stay
    relation seeds). The profiles register theirs (`graphseek.agents.profiles`), so this layer
    holds no data-set vocabulary."""
    _PROFILE_WORDS[profile] = (frozenset(nouns), frozenset(verbs))


def run_profile() -> str:
    """``Context.profile`` of the LangGraph run this call is part of, else "" (general)."""
    return run_setting("profile")


def mention_stopwords(profile: str | None = None) -> frozenset[str]:
    """Words never taken as a mention on their own under `profile` (None: the current run's)."""
    nouns, verbs = _PROFILE_WORDS.get(run_profile() if profile is None else profile, _NONE)
    return QUESTION_WORDS | nouns | verbs


def seed_stopwords(profile: str | None = None) -> frozenset[str]:
    """Words never taken as a relation seed under `profile` (None: the current run's): the
    question words and the profile's type nouns."""
    nouns, _ = _PROFILE_WORDS.get(run_profile() if profile is None else profile, _NONE)
    return QUESTION_WORDS | nouns


_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_ARTICLES = ("the", "a", "an")
MAX_NAME_TOKENS = 10


# -- text helpers ---------------------------------------------------------------------------------


def name_tokens(text: str) -> list[str]:
    """Lower-case, accent-folded word tokens with possessives cut (``"Ii's"`` -> ``"ii"``)."""
    return [_POSSESSIVE.sub("", t) for t in _WORD.findall(fold(text).lower())]


def name_key(text: str) -> str:
    """The lookup key of a name: its `name_tokens` joined, without a leading article."""
    tokens = name_tokens(text)
    if len(tokens) > 1 and tokens[0] in _ARTICLES:
        tokens = tokens[1:]
    return " ".join(tokens)


def stem_match(a: str, b: str) -> bool:
    """Whether two lower-case words share a stem: equal, one a prefix (>= 3 letters) of the
    other ("die"/"died"), or the same first 5 letters ("directed"/"director")."""
    if a == b:
        return True
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return (len(short) >= 3 and long.startswith(short)) or (
        len(short) >= 5 and long[:5] == short[:5]
    )


def content_words(text: str) -> list[str]:
    """`name_tokens` without stopwords and one- or two-letter words."""
    return [w for w in name_tokens(text) if w not in STOPWORDS and len(w) >= 3]


def label_similarity(phrase: str, label: str) -> float:
    """Share of the phrase's content words that share a stem with a word of the label."""
    words, tokens = content_words(phrase), content_words(label)
    if not words or not tokens:
        return 0.0
    return sum(any(stem_match(w, t) for t in tokens) for w in words) / len(words)


def _cased_tokens(text: str) -> list[tuple[str, bool]]:
    """(lower-case token, starts with a capital or digit) for each word of `text`."""
    out = []
    for raw in _WORD.findall(fold(text)):
        out.append((_POSSESSIVE.sub("", raw.lower()), raw[0].isupper() or raw[0].isdigit()))
    return out
