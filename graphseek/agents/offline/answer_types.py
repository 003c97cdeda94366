"""What a question asks for: answer type, relation, focus entity, comparison (offline reasoner).

`expected_answer(question, profile)` reads the wh-word, the question's head noun and the
profile's relation lexicon (`graphseek.agents.profiles`: the `wikipedia` profile has one, the
default `general` profile none), and returns an `AnswerType`:

- `kind`: "entity" (a span of some NER label), "yesno", "choice" (one of the named options) or
  "text" (any noun phrase: a cause of death, an occupation);
- `labels`: accepted spaCy entity labels, best first (`PERSON`, `GPE`, `DATE`, ...);
- `relation`: a key of the profile's relation lexicon when the question names one;
- `focus`: the entity the question is about ("Blood Street" in "Who is the director of film Blood
  Street?") and `category` the type word before it ("film");
- `comparison`: for "Which film came out first, A or B?", "Are A and B from the same country?",
  "Which film has the director who was born later, A or B?": the options, the attribute compared,
  whether the smallest, largest or equal value wins, and the bridge relation ("director").

The general rules read question words, generic answer kinds (a year is a date, a city a place)
and general event verbs (released, published, created). An encyclopedia's grammar comes from
the profile's fields: the biography readings (born / died first, lived longer, older / younger,
same nationality, a bridge through a person: `Profile.comparison_events`, ...), the type words
of works and persons ("film", "husband": `Profile.head_nouns`), the events of its entities
("founded", "premiered": `Profile.date_verbs`) and its question frames ("Who founded X?",
"Where was X detained?": `Profile.focus_frames`, `Profile.focus_verbs`); `general` has none.

Also here, because the Librarian and the Seeker both need them: a parser of dates to sortable
tuples, number parsing, and a country / demonym table to compare nationalities.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field

from graphseek.agents.profiles import GENERAL, Profile
from graphseek.agents.text import AUX_WORDS, WH_WORDS, normalize

AnswerKind = Literal["entity", "yesno", "choice", "text"]
Pick = Literal["min", "max", "same"]

# Head nouns of "which/what N" questions and the labels they expect: English noun classes
# (what kind of thing a noun names), read under every profile; a profile adds its own
# (`Profile.head_nouns`: works, occupations, kinship terms).
GENERAL_HEAD_NOUNS: list[tuple[list[str], str]] = [
    (["DATE"], "year date day month century decade era period time"),
    (
        ["GPE", "LOC", "FAC"],
        "city town country state place village region province county nation capital location "
        "area district municipality island continent neighbourhood neighborhood",
    ),
    (["NORP", "GPE"], "ethnicity"),
    (
        ["ORG"],
        "company team club organization organisation university college school label party "
        "network studio group firm brand agency channel institution academy",
    ),
    (["LANGUAGE"], "language"),
    (["PERSON"], "person man woman player president politician scientist leader"),
    (["FAC", "ORG", "GPE"], "museum castle church building stadium airport bridge station"),
    (["LOC", "GPE"], "mountain river lake sea ocean valley forest"),
    (["EVENT"], "war battle event festival tournament competition election"),
    (["TEXT"], "instrument genre profession occupation job sport religion"),
]


@lru_cache(maxsize=8)
def head_labels(profile: Profile = GENERAL) -> dict[str, list[str]]:
    """Head noun -> the entity labels it expects: the general classes, then the profile's."""
    classes = [*GENERAL_HEAD_NOUNS, *profile.head_nouns]
    return {n: list(labels) for labels, nouns in classes for n in nouns.split()}


class Comparison(BaseModel):
    """A comparison question: which option wins on which attribute, or are both the same."""

    options: list[str]
    attribute: str = Field(
        description="birth_date, death_date, lifespan, date, quantity, country, nationality, "
        "birth_place, death_place or another relation key."
    )
    pick: Pick
    via: str | None = Field(default=None, description="Bridge relation, e.g. 'director'.")
    verb: str = Field(default="", description="Event verb for 'date': released, founded, ...")
    category: str = Field(default="", description="Type word of the options: film, person, ...")
    quantity: str = Field(default="", description="For 'quantity': the adjective (tall, long).")


class AnswerType(BaseModel):
    """The expected answer of a question."""

    kind: AnswerKind
    labels: list[str] = Field(default_factory=list)
    wh: str = ""
    head: str | None = None
    relation: str | None = None
    focus: str = ""
    category: str = ""
    comparison: Comparison | None = None

    @property
    def options(self) -> list[str]:
        return self.comparison.options if self.comparison else []


# --------------------------------------------------------------------------------------------
# text helpers


TITLE_SEPARATOR = " — "


def _clean(q: str) -> str:
    """Whitespace and quotes normalised; a trailing " — <title>" retrieval hint dropped."""
    q = " ".join(q.replace("’", "'").split()).strip()
    if TITLE_SEPARATOR in q:
        q = q.split(TITLE_SEPARATOR, 1)[0].strip()
    return q


def first_word(question: str) -> str:
    words = _clean(question).split()
    return words[0].lower().strip(",") if words else ""


def starts_with_wh(question: str) -> bool:
    q = _clean(question).lower()
    if not q:
        return False
    w = first_word(q)
    if w in WH_WORDS or w in AUX_WORDS:
        return True
    # "In which year ...", "For what reason ..."
    m = re.match(r"^(in|on|at|from|for|to|by|of|with|during|since|after|before)\s+(\w+)", q)
    return bool(m and m.group(2) in WH_WORDS)


# --------------------------------------------------------------------------------------------
# comparisons

_SEP_OR = re.compile(r"\s+or\s+")
_SEP_AND = re.compile(r"\s+and\s+")

# events whose date a comparison compares ("Which was released first?"); a profile adds its
# own (`Profile.date_verbs`)
_DATE_VERBS = (
    r"released|come out|came out|published|established|opened|built|created|launched|written|"
    r"completed|made|started|introduced|discovered|invented|signed|issued|constructed"
)
_FIRST = r"first|earlier|earliest|sooner"
_LATER = r"later|latest|last|more recently|most recently|recently|newer"


def _first(profile: Profile) -> str:
    """Words that pick the earliest value: the general ones, then the profile's "older"."""
    return _alternation(_FIRST, profile.older_words)


def _later(profile: Profile) -> str:
    """Words that pick the latest value: the general ones, then the profile's "younger"."""
    return _alternation(_LATER, profile.younger_words)


_MORE_ADJ = {
    "taller": ("tall", "max"), "higher": ("high", "max"), "longer": ("long", "max"),
    "larger": ("large", "max"), "bigger": ("big", "max"), "heavier": ("heavy", "max"),
    "deeper": ("deep", "max"), "wider": ("wide", "max"), "more populous": ("populous", "max"),
    "shorter": ("short", "min"), "smaller": ("small", "min"), "lighter": ("light", "min"),
    "lower": ("low", "min"), "shallower": ("shallow", "min"), "narrower": ("narrow", "min"),
}  # fmt: skip


_OPTION_NOUNS = (
    r"mountains?|rivers?|islands?|people|persons?|men|women|players?|museums?|places?|cities|"
    r"towns?|villages?|companies"
)


@lru_cache(maxsize=8)
def _option_res(profile: Profile) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """The type words dropped before and after a comparison option, the profile's first."""
    before = _alternation(profile.option_prefixes, _OPTION_NOUNS)
    suffix = re.compile(rf"\s+(?:{profile.option_suffixes})$") if profile.option_suffixes else None
    return re.compile(rf"^(?:both\s+)?(?:the\s+)?(?:{before})\s*,?\s+"), suffix


def _strip_option(text: str, profile: Profile = GENERAL) -> str:
    before, after = _option_res(profile)
    text = text.strip(" ,")
    text = re.sub(r"^(?:both|either)\s+", "", text)
    text = re.sub(r"^the\s+(?=[a-z])", "", text)
    text = before.sub("", text, count=1)
    if after is not None:
        text = after.sub("", text, count=1)
    return text.strip(" ,")


def _split_options(text: str, sep: re.Pattern[str], profile: Profile = GENERAL) -> list[str] | None:
    parts = sep.split(text.strip(" ,"))
    if len(parts) < 2:
        return None
    if len(parts) > 2:
        # more than one connector: prefer the split whose sides both start capitalised
        for k in range(1, len(parts)):
            left, right = " or ".join(parts[:k]), " or ".join(parts[k:])
            if sep is _SEP_AND:
                left, right = " and ".join(parts[:k]), " and ".join(parts[k:])
            if right[:1].isupper() and left[:1].isupper():
                parts = [left, right]
                break
        else:
            parts = [parts[0], " ".join(parts[1:])]
    opts = [_strip_option(p, profile) for p in parts]
    return opts if all(opts) else None


def _comparison_category(prefix: str, profile: Profile) -> str:
    low = prefix.lower()
    for word in profile.category_words:
        if re.search(rf"\b{word}s?\b", low):
            return word
    if re.search(r"\bwho\b|\bperson\b|\bpeople\b", low):
        return "person"
    return ""


def _via(prefix: str, profile: Profile) -> str | None:
    """The bridge relation of a comparison ("the <noun> who ..."): a noun of the profile's
    bridge patterns, mapped to its relation key by the profile's lexicon."""
    low = prefix.lower()
    for pattern in profile.comparison_bridges:
        m = re.search(pattern, low)
        if m:
            return profile.relation_nouns.get(m.group(1), m.group(1))
    return None


def _ordering(
    criterion: str, category: str, via: str | None, profile: Profile
) -> tuple[str, Pick, str, str] | None:
    """(attribute, pick, verb, quantity) for a comparative criterion, or None."""
    c = criterion.lower()
    person_like = category == "person" or via is not None or re.search(r"\bwho\b", c)
    first, later = _first(profile), _later(profile)
    for pattern, attribute, fixed in profile.comparison_events:
        if not re.search(pattern, c):
            continue
        if fixed in ("min", "max"):
            return attribute, fixed, "", ""  # type: ignore[return-value]
        if re.search(rf"\b(?:{later})\b", c):
            return attribute, "max", "", ""
        if re.search(rf"\b(?:{first})\b", c):
            return attribute, "min", "", ""
    age = profile.age_attribute
    m = re.search(rf"\b({_alternation(profile.date_verbs, _DATE_VERBS)})\b", c)
    if m:
        verb = m.group(1).replace("came out", "come out")
        if re.search(rf"\b(?:{later})\b", c):
            return "date", "max", verb, ""
        if re.search(rf"\b(?:{first})\b", c):
            return "date", "min", verb, ""
    if profile.older_words and re.search(rf"\b(?:{profile.older_words})\b", c):
        return (age, "min", "", "") if person_like else ("date", "min", "", "")
    if profile.younger_words and re.search(rf"\b(?:{profile.younger_words})\b", c):
        return (age, "max", "", "") if person_like else ("date", "max", "", "")
    if re.search(r"\b(?:newer|more recent)\b", c):
        return "date", "max", "", ""
    if re.search(r"\bfirst\b|\bearlier\b", c):
        return "date", "min", "", ""
    for word, (adj, pick) in _MORE_ADJ.items():
        if re.search(rf"\b{word}\b", c):
            return "quantity", pick, "", adj  # type: ignore[return-value]
    return None


def general_same_attribute(text: str, category: str, via: str | None) -> str | None:
    """The attribute a "same ..." question compares, by the general rule: the noun after
    "same" (a profile may read more: `Profile.same_attribute`)."""
    low = text.lower()
    if re.search(r"\bsame (?:country|state)\b", low):
        return "country"
    if re.search(r"\bsame (?:year|date|day)\b", low):
        return "date"
    if re.search(r"\bsame (?:genre|occupation|profession|job)\b", low):
        return "genre" if "genre" in low else "occupation"
    return None


def _same_attribute(text: str, category: str, via: str | None, profile: Profile) -> str | None:
    rule = profile.same_attribute or general_same_attribute
    return rule(text, category, via)


def parse_comparison(question: str, profile: Profile = GENERAL) -> Comparison | None:
    """The comparison a question asks for, or None for a non-comparison question."""
    found = _parse_comparison(_clean(question), profile)
    return found.model_copy(deep=True) if found is not None else None


@lru_cache(maxsize=2048)
def _parse_comparison(q: str, profile: Profile) -> Comparison | None:
    q = q[:-1].strip() if q.endswith("?") else q
    low = q.lower()
    w = first_word(q)
    # yes/no: "Are A and B both located in the same country?"
    if w in AUX_WORDS and re.search(r"\bsame\b", low):
        return _parse_same(q, profile)
    # "Was A or B born first?"
    if w in AUX_WORDS and re.search(r"\s+or\s+", q):
        m = re.match(
            r"^(?:was|were|is|are|did|does|do)\s+(?:the\s+)?(.+?)\s+"
            rf"((?:{_event_verbs(profile)})\b.*)$",
            q,
            flags=re.I,
        )
        if m:
            opts = _split_options(m.group(1), _SEP_OR, profile)
            category = _comparison_category(q.split()[0] + " " + m.group(1), profile)
            via = _via(m.group(1), profile)
            persons = bool(profile.person_criterion) and re.search(
                profile.person_criterion, m.group(2)
            )
            order = _ordering(m.group(2), "person" if persons else category, via, profile)
            if opts and order:
                attr, pick, verb, qty = order
                return Comparison(
                    options=opts, attribute=attr, pick=pick, via=via, verb=verb,
                    category=category, quantity=qty,
                )  # fmt: skip
    if w not in {"which", "who", "what", "whose"}:
        return None
    # "Who was born first out of A and B?"
    m = re.match(r"^(.+?)\s*,?\s+(?:out of|between|among)\s+(.+)$", q, flags=re.I)
    if m:
        opts = _split_options(m.group(2), _SEP_AND, profile) or _split_options(
            m.group(2), _SEP_OR, profile
        )
        category = _comparison_category(m.group(1), profile)
        via = _via(m.group(1), profile)
        order = _ordering(m.group(1), category, via, profile)
        if opts and order:
            attr, pick, verb, qty = order
            return Comparison(
                options=opts, attribute=attr, pick=pick, via=via, verb=verb,
                category=category, quantity=qty,
            )  # fmt: skip
    # "Which film came out first, A or B?": the criterion ends at the first comma after the
    # comparative word; the rest is "A or B".
    comp_words = (
        rf"\b(?:{_first(profile)}|{_later(profile)}|longer|shorter|taller|higher|larger|bigger|"
        rf"smaller|heavier|lower|deeper|wider|lighter|more populous|the other)\b"
    )
    cm = re.search(comp_words, low)
    if cm:
        comma = q.find(",", cm.end())
        if comma > 0:
            criterion, rest = q[:comma], q[comma + 1 :]
            opts = _split_options(rest, _SEP_OR, profile)
            category = _comparison_category(criterion, profile)
            via = _via(criterion, profile)
            order = _ordering(criterion, category, via, profile)
            if opts and order:
                attr, pick, verb, qty = order
                return Comparison(
                    options=opts, attribute=attr, pick=pick, via=via, verb=verb,
                    category=category, quantity=qty,
                )  # fmt: skip
    return None


def _event_verbs(profile: Profile) -> str:
    """The verbs of "Was A or B <verb> first?": the profile's, then the general ones."""
    general = r"released|established|published|opened|come out|came out|made|taller|created"
    return "|".join(x for x in (profile.comparison_event_verbs, general) if x)


def _alternation(*parts: str) -> str:
    return "|".join(x for x in parts if x)


def _parse_same(q: str, profile: Profile) -> Comparison | None:
    low = q.lower()
    # "Does A have the same nationality as B?"
    verbs = _alternation(
        profile.same_as_verbs, "have|has|had|share|shares|of|hold|come from|from|located in"
    )
    m = re.match(
        rf"^(?:does|do|did|is|was|are|were)\s+(.+?)\s+(?:{verbs})\s+the\s+same\s+(.+?)\s+as\s+(.+)$",
        q,
        flags=re.I,
    )
    if m:
        opts = [_strip_option(m.group(1), profile), _strip_option(m.group(3), profile)]
        category = _comparison_category(m.group(1), profile)
        attr = _same_attribute(q, category or "person", _via(q, profile), profile)
        if all(opts) and attr:
            return Comparison(options=opts, attribute=attr, pick="same", category=category)
    body = re.sub(r"^(?:are|is|were|was|do|does|did|have|has)\s+", "", q, flags=re.I)
    via = _via(body, profile)
    category = _comparison_category(body.split(" same ")[0], profile)
    verbs = _alternation(
        profile.same_verbs,
        r"located|situated|from|of the same|have|has|share|originate[ds]?|come from|came from|"
        r"in the same|hold|the same|belong|made|released",
    )
    predicate = re.search(rf",?\s+(?:both\s+)?(?:{verbs})\b", body, flags=re.I)
    if not predicate:
        return None
    opts_text = body[: predicate.start()]
    # a bridge noun before the options ("both <noun>s of A and B")
    if profile.bridge_prefix:
        opts_text = re.sub(
            rf"^(?:both\s+)?(?:the\s+)?{profile.bridge_prefix}", "", opts_text, flags=re.I
        )
    split = _split_options(opts_text, _SEP_AND, profile)
    if not split:
        return None
    opts = split
    implied, implied_category = profile.implied_category
    if category == "" and implied and re.search(implied, low):
        category = implied_category
    attr = _same_attribute(body, category, via, profile)
    if attr is None:
        return None
    if (
        via is None
        and category in profile.origin_attributes
        and attr in (profile.nationality_relations)
    ):
        attr = profile.origin_attributes[category]
    return Comparison(options=opts, attribute=attr, pick="same", via=via, category=category)


# --------------------------------------------------------------------------------------------
# relation and focus detection


_FOCUS_VERBS = (
    r"work(?: at| for)?|live|located|situated|based|released|published|established|opened|"
    r"built|created|come out"
)


@lru_cache(maxsize=8)
def _frame_patterns(profile: Profile) -> list[re.Pattern[str]]:
    """Question frames whose group `f` is the focus; the profile's frames before the
    country frames (no question matches both)."""
    verbs = _alternation(profile.focus_verbs, _FOCUS_VERBS)
    frames = [
        r"^(?:who|what|which \w+) (?:is|was|are|were) the (?:[\w\- ]+?) of (?P<f>.+)$",
        r"^(?:what|which \w+) (?:is|was) the (?:[\w\- ]+?) of (?P<f>.+)$",
        rf"^(?:when|where|why|how) (?:was|is|were|are|did|does|do) (?P<f>.+?) (?:{verbs})\b.*$",
        r"^(?:which|what) (?:country|city|state) (?:is|was) (?P<f>.+?) (?:located|situated|from|"
        r"based)(?: in)?$",
        *profile.focus_frames,
        r"^(?:what|which) (?:country) (?:is|was|are|were) (?P<f>.+?)(?: from)?$",
        r"^(?:which|what) \w+ (?P<f>.+?) (?:is|was|are|were) from$",
    ]
    return [re.compile(frame, re.I) for frame in frames]


def _strip_category(focus: str, profile: Profile) -> tuple[str, str]:
    f = focus.strip(" ,?")
    f = re.sub(r"^(?:the|a|an)\s+", "", f)
    for word in sorted(profile.category_words, key=len, reverse=True):
        m = re.match(rf"^{word}s?\s+(.+)$", f, flags=re.I)
        if m and m.group(1)[:1].isupper():
            return m.group(1).strip(), word
    return f, ""


def _capitalised_run(q: str) -> str:
    """Longest run of capitalised words (with name connectors), skipping each sentence's first
    word and the pronoun "I" (before a lower-case word) where it would start a run ("When I run
    strings…"; "Henry I", "World War I" and "I Love Lucy" keep theirs)."""
    tokens = q.rstrip("?").split()
    best: list[str] = []
    cur: list[str] = []
    for i, tok in enumerate(tokens):
        word = tok.strip(",")
        starts = i == 0 or tokens[i - 1][-1:] in ".?!:;"
        cap = word[:1].isupper() or word[:1].isdigit() or word[:1] in "('\"#"
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        pronoun = word in ("I", "I'm", "I've", "I'd") and not after[:1].isupper()
        cap = cap and not (pronoun and not cur)
        conn = word.lower() in {"of", "de", "the", "and", "von", "van", "la", "le", "du", "&", "-"}
        if not starts and (cap or (conn and cur)):
            cur.append(tok)
        else:
            if len(cur) > len(best):
                best = cur
            cur = []
        if i > 0 and tok.endswith(",") and cur and not cap:
            cur = []
    if len(cur) > len(best):
        best = cur
    while best and best[-1].lower().strip(",") in {"of", "de", "the", "and", "&", "-"}:
        best.pop()
    return " ".join(best).strip(" ,")


def find_focus(question: str, profile: Profile = GENERAL) -> tuple[str, str]:
    """(focus entity, category word) of a one-hop question."""
    q = _clean(question).rstrip("?").strip()
    for pattern in _frame_patterns(profile):
        m = pattern.match(q)
        if m:
            focus = m.group("f").strip()
            focus = re.sub(r"'s( \w+)?$", "", focus)
            if focus:
                return _strip_category(focus, profile)
    # "X's <noun>" / "the <noun> of X": the last "of" object or possessor
    m = re.search(r"\bof (?P<f>[A-Z#].+)$", q)
    if m:
        return _strip_category(_strip_tail(m.group("f")), profile)
    run = _capitalised_run(q)
    return _strip_category(run, profile) if run else ("", "")


def _strip_tail(text: str) -> str:
    """Drop a trailing lower-case predicate ("born", "is from") after a capitalised name."""
    words = text.rstrip("?").split()
    j = len(words)
    while j > 0 and words[j - 1][:1].islower():
        j -= 1
    if 0 < j < len(words):
        return " ".join(words[:j])
    return " ".join(words)


def detect_relation(question: str, profile: Profile = GENERAL) -> str | None:
    """The relation key a question asks about in the profile's lexicon (attribute patterns
    first, then person nouns, then verbs); None under a profile without one."""
    q = _clean(question).rstrip("?")
    low = q.lower()
    for pattern, key in profile.attribute_patterns:
        if re.search(pattern, low):
            return key
    # "Who is the director of X", "X's mother", "Who directed X"
    nouns = sorted(profile.relation_nouns, key=len, reverse=True)
    alternation = "|".join(re.escape(n) for n in nouns)
    m = re.search(rf"\bthe ({alternation})s? of\b|'s ({alternation})s?\b", low) if nouns else None
    if m:
        noun = m.group(1) or m.group(2)
        return profile.relation_nouns[noun]
    if re.match(r"^(?:who|whom|which \w+)\b", low):
        for verb, key in profile.relation_verbs.items():
            if re.search(rf"\b{verb}\b", low):
                return key
    return None


@lru_cache(maxsize=2048)
def _expected(question: str, profile: Profile) -> AnswerType:
    q = _clean(question)
    low = q.lower().rstrip("?")
    w = first_word(q)
    comparison = _parse_comparison(q, profile)
    if comparison is not None:
        if comparison.pick == "same":
            return AnswerType(
                kind="yesno",
                labels=["YESNO"],
                wh=w,
                comparison=comparison,
                relation=comparison.attribute,
                category=comparison.category,
            )
        return AnswerType(kind="choice", labels=["CHOICE"], wh=w, comparison=comparison,
                          relation=comparison.attribute, category=comparison.category)  # fmt: skip
    m = re.match(r"^(?:in|on|at|from|for|to|by|of|with|during)\s+(which|what|whom|whose)\b", low)
    if m:
        w = m.group(1)
    relation = detect_relation(q, profile)
    focus, category = find_focus(q, profile)
    if w in AUX_WORDS:
        return AnswerType(kind="yesno", labels=["YESNO"], wh=w, relation=relation, focus=focus,
                          category=category)  # fmt: skip
    head_nouns = head_labels(profile)
    head = _head_noun(low, head_nouns)
    labels: list[str]
    kind: AnswerKind = "entity"
    if relation is not None and relation in profile.relations:
        labels = list(profile.relations[relation].labels)
    elif w in {"who", "whom", "whose"}:
        labels = ["PERSON", "ORG", "NORP"]
    elif w == "where":
        labels = ["GPE", "LOC", "FAC", "ORG"]
    elif w == "when":
        labels = ["DATE", "TIME"]
    elif w == "why":
        labels = ["TEXT"]
    elif w == "how":
        labels = _how_labels(low)
    elif head and head in head_nouns:
        labels = list(head_nouns[head])
    else:
        labels = ["TEXT"]
    if w in {"which", "what"} and head in head_nouns and relation is None:
        labels = list(head_nouns[head])
    if (
        w in {"which", "what"}
        and head == "country"
        and (relation is None or relation in profile.nationality_relations)
    ):
        labels = ["GPE", "NORP"]
    if w in {"who", "whom"} and head is None and relation is None:
        labels = ["PERSON", "ORG", "NORP"]
    if labels == ["TEXT"]:
        kind = "text"
    return AnswerType(kind=kind, labels=labels, wh=w, head=head, relation=relation, focus=focus,
                      category=category)  # fmt: skip


def _how_labels(low: str) -> list[str]:
    if re.match(r"^how (?:many|much)\b", low):
        return ["CARDINAL", "QUANTITY", "MONEY"] if "much" not in low else ["MONEY", "QUANTITY"]
    if re.match(r"^how old\b", low):
        return ["CARDINAL", "DATE", "QUANTITY"]
    if re.match(r"^how long\b", low):
        return ["DATE", "QUANTITY", "CARDINAL", "TIME"]
    if re.match(r"^how (?:tall|high|far|big|large|deep|wide|heavy)\b", low):
        return ["QUANTITY", "CARDINAL"]
    return ["TEXT"]


def _head_noun(low: str, head_nouns: Mapping[str, list[str]]) -> str | None:
    m = re.match(r"^(?:which|what)\s+(?:\w+\s+)?(?:of the\s+)?(\w+)", low)
    if m:
        one = re.match(r"^(?:which|what)\s+(\w+)", low)
        if one and one.group(1) in head_nouns:
            return one.group(1)
        if m.group(1) in head_nouns:
            return m.group(1)
    m = re.match(r"^(?:what|which) (?:is|was|are|were) the (?:name of the )?(\w+)", low)
    if m and m.group(1) in head_nouns:
        return m.group(1)
    m = re.match(r"^(?:in|on|at|from) (?:which|what) (\w+)", low)
    if m and m.group(1) in head_nouns:
        return m.group(1)
    return None


def expected_answer(question: str, profile: Profile = GENERAL) -> AnswerType:
    """The expected answer of `question`: kind, entity labels, relation, focus, comparison.

    The relation comes from the profile's lexicon (`wikipedia`); the `general` profile has none,
    so its answer types come from the wh-word and the question's head noun alone."""
    return _expected(_clean(question), profile).model_copy(deep=True)


# --------------------------------------------------------------------------------------------
# values: dates, numbers, countries

# country -> demonyms and other names (lower-case)
_COUNTRIES: dict[str, list[str]] = {
    "united states": ["american", "us", "usa", "u.s.", "united states of america", "america"],
    "united kingdom": ["british", "uk", "britain", "great britain", "english", "england",
                       "scottish", "scotland", "welsh", "wales", "northern irish"],
    "ireland": ["irish"], "france": ["french"], "germany": ["german", "west german",
                                                             "east german"],
    "italy": ["italian"], "spain": ["spanish"], "portugal": ["portuguese"],
    "netherlands": ["dutch", "holland"], "belgium": ["belgian"], "switzerland": ["swiss"],
    "austria": ["austrian"], "sweden": ["swedish"], "norway": ["norwegian"],
    "denmark": ["danish"], "finland": ["finnish"], "iceland": ["icelandic"],
    "poland": ["polish"], "czech republic": ["czech", "czechia"],
    "czechoslovakia": ["czechoslovak"], "slovakia": ["slovak"], "hungary": ["hungarian"],
    "romania": ["romanian"], "bulgaria": ["bulgarian"], "greece": ["greek"],
    "turkey": ["turkish"], "russia": ["russian"], "soviet union": ["soviet", "ussr"],
    "ukraine": ["ukrainian"], "belarus": ["belarusian"], "estonia": ["estonian"],
    "latvia": ["latvian"], "lithuania": ["lithuanian"], "serbia": ["serbian"],
    "croatia": ["croatian"], "slovenia": ["slovenian", "slovene"], "bosnia": ["bosnian"],
    "yugoslavia": ["yugoslav", "yugoslavian"], "albania": ["albanian"],
    "georgia": ["georgian"], "armenia": ["armenian"], "azerbaijan": ["azerbaijani"],
    "iran": ["iranian", "persian"], "iraq": ["iraqi"], "israel": ["israeli"],
    "egypt": ["egyptian"], "saudi arabia": ["saudi"], "syria": ["syrian"],
    "lebanon": ["lebanese"], "jordan": ["jordanian"], "india": ["indian"],
    "pakistan": ["pakistani"], "bangladesh": ["bangladeshi"], "sri lanka": ["sri lankan"],
    "nepal": ["nepali", "nepalese"], "china": ["chinese"], "japan": ["japanese"],
    "south korea": ["korean", "south korean", "korea"], "north korea": ["north korean"],
    "taiwan": ["taiwanese"], "hong kong": ["hong kong"], "vietnam": ["vietnamese"],
    "thailand": ["thai"], "cambodia": ["cambodian"], "indonesia": ["indonesian"],
    "malaysia": ["malaysian"], "philippines": ["filipino", "philippine"],
    "singapore": ["singaporean"], "myanmar": ["burmese", "burma"], "australia": ["australian"],
    "new zealand": ["new zealander"], "canada": ["canadian"], "mexico": ["mexican"],
    "brazil": ["brazilian"], "argentina": ["argentine", "argentinian"], "chile": ["chilean"],
    "peru": ["peruvian"], "colombia": ["colombian"], "venezuela": ["venezuelan"],
    "cuba": ["cuban"], "uruguay": ["uruguayan"], "bolivia": ["bolivian"],
    "ecuador": ["ecuadorian"], "paraguay": ["paraguayan"], "jamaica": ["jamaican"],
    "trinidad and tobago": ["trinidadian"], "south africa": ["south african"],
    "nigeria": ["nigerian"], "kenya": ["kenyan"], "ghana": ["ghanaian"],
    "ethiopia": ["ethiopian"], "morocco": ["moroccan"], "algeria": ["algerian"],
    "tunisia": ["tunisian"], "senegal": ["senegalese"], "afghanistan": ["afghan"],
    "kazakhstan": ["kazakh"], "uzbekistan": ["uzbek"], "mongolia": ["mongolian"],
    "luxembourg": ["luxembourgish"], "monaco": ["monegasque"], "cyprus": ["cypriot"],
    "malta": ["maltese"], "moldova": ["moldovan"], "north macedonia": ["macedonian"],
    "montenegro": ["montenegrin"], "scotland": [], "england": [], "wales": [],
}  # fmt: skip

_NAME_TO_COUNTRY: dict[str, str] = {}
for _country, _names in _COUNTRIES.items():
    _NAME_TO_COUNTRY[_country] = _country
    for _n in _names:
        _NAME_TO_COUNTRY.setdefault(_n, _country)
for _part in ("england", "scotland", "wales"):
    _NAME_TO_COUNTRY[_part] = "united kingdom"

COUNTRY_NAMES = frozenset(_NAME_TO_COUNTRY)


def country_of(text: str) -> str | None:
    """The country a place name, country name or demonym refers to ("Indian" -> "india")."""
    t = normalize(text).replace("-", " ")
    if t in _NAME_TO_COUNTRY:
        return _NAME_TO_COUNTRY[t]
    # "Isfahan Province, Iran", "Trinidadian-American": the last known name wins
    words = t.split()
    for n in (3, 2, 1):
        for i in range(len(words) - n, -1, -1):
            part = " ".join(words[i : i + n])
            if part in _NAME_TO_COUNTRY:
                return _NAME_TO_COUNTRY[part]
    return None


def countries_in(text: str) -> set[str]:
    """Every country a text names or implies ("American-Argentine" -> united states, argentina)."""
    t = normalize(text).replace("-", " ")
    words = t.split()
    found: set[str] = set()
    i = 0
    while i < len(words):
        for n in (3, 2, 1):
            part = " ".join(words[i : i + n])
            if len(words[i : i + n]) == n and part in _NAME_TO_COUNTRY:
                found.add(_NAME_TO_COUNTRY[part])
                i += n
                break
        else:
            i += 1
    return found


def is_country(text: str) -> bool:
    return normalize(text) in _COUNTRIES or normalize(text) in {"england", "scotland", "wales"}
