"""What a question asks for, read from general English: the wh-word, the head noun, the words that
must be matched in the evidence, and the names it mentions.

`analyse_question("Who is credited as the original author of libpng?")` gives an `AnswerSpec`
whose `kinds` say which kinds of span may answer it, best first, with a weight each:
`(("person", 1.0), ("org", 0.8), ...)`. The kinds are coarse and language-level, not a data
set's relations: `person`, `org`, `group`, `place`, `date`, `number`, `name` (a proper name or an
identifier the NER left unlabelled: "LZMA2", "ShellDetectionFailure"), `thing` (a common noun
phrase), `yesno` and `document`.

The noun classes below are plain English vocabulary (an "author" is a person, a "company" an
organisation, a "year" a date, a "father" a person); nothing here is tuned to one corpus. The
occupations of films and music, two-hop kinship terms and the relations of a biography
("screenwriter", "grandfather", "nationality") are an encyclopedia's vocabulary: the
`wikipedia` profile holds them (`graphseek.agents.profiles`), and `tests/test_profiles.py`
keeps them out of here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from graphseek.agents.reading.literals import asked_kinds, named_kinds
from graphseek.agents.text import STOPWORDS, content_words, normalize, question_names

Kinds = tuple[tuple[str, float], ...]

PERSON_NOUNS = frozenset(
    "author person people developer creator founder cofounder co-founder inventor maintainer "
    "contributor programmer engineer scientist researcher player president leader man woman "
    "professor student philosopher mathematician physicist chemist economist politician "
    "successor predecessor owner manager chairman ceo teacher coach journalist critic "
    "translator illustrator photographer explorer officer soldier general judge lawyer doctor "
    "physician nurse hacker administrator "
    # a relative is a person: "Where did Ada Lovelace's father die?" asks for one first
    "father mother parent husband wife spouse son daughter child brother sister sibling".split()
)
ORG_NOUNS = frozenset(
    "company organization organisation corporation firm institute institution university "
    "college school foundation agency club party label studio department government "
    "body association society committee consortium vendor business manufacturer "
    "team group project community distributor startup enterprise ministry "
    "network broadcaster".split()
)
PLACE_NOUNS = frozenset(
    "city town country state region place location village county province continent island "
    "river mountain capital area district site street nation territory municipality "
    "neighbourhood neighborhood suburb lake sea ocean valley residence".split()
)
DATE_NOUNS = frozenset("year date day month decade century time era period season".split())
NUMBER_NOUNS = frozenset(
    "number amount count size length age percentage percent population total quantity port "
    "height width depth weight distance duration price cost score rank".split()
)
GROUP_NOUNS = frozenset("ethnicity religion language".split())
# technical documentation: what names a literal of code or configuration, a version, a licence
CODE_NOUNS = frozenset(
    "option flag switch variable setting parameter argument keyword kwarg attribute property "
    "field key value command subcommand function method class exception error warning module "
    "submodule package extra entry endpoint operator hook decorator directive macro header "
    "constant enum type environment rfc pep standard algorithm codec format encoding "
    "backend driver plugin extension".split()
)
LIBRARY_NOUNS = frozenset(
    "library framework tool toolkit program application app utility server client daemon "
    "binding bindings implementation dependency parser compiler engine database runtime sdk "
    "api interface protocol language filter package distribution wheel variant".split()
)
VERSION_NOUNS = frozenset("version release".split())
LICENCE_NOUNS = frozenset("licence license".split())
DOCUMENT_NOUNS = frozenset(
    "document file page article readme passage section chapter manual paper".split()
)

_WH = ("what", "which", "who", "whom", "whose", "when", "where", "why", "how")
_AUX = frozenset(
    "is are was were do does did has have had can could will would should shall may might must "
    "be been being".split()
)
_PREP_WH = re.compile(
    r"^(?:in|on|at|from|for|to|by|of|with|within|during|under|after|before|since|through|into|"
    r"onto|upon|among|across|against|between|via|per|over|besides|about|behind|inside)\s+"
    r"(which|what|whom|whose)\b"
)
#: the kinds a head noun leaves open, which a named literal narrows ("which item" -> a key)
_OPEN_KINDS = frozenset({"code", "name", "thing", "document"})
_GENERIC_HEADS = frozenset("kind type sort name one form part thing".split())


@lru_cache(maxsize=65536)
def term_weight(stem: str) -> float:
    """How much a question word says about where its answer is: rare words ("tmux", "zlib",
    "deflate") weigh up to 1, common ones ("version", "released") little. From English word
    frequencies (`wordfreq`, Zipf scale 0..8), so the weight is general, not a corpus's."""
    from wordfreq import zipf_frequency

    zipf = zipf_frequency(stem, "en")
    return max(0.1, min(1.0, (6.0 - zipf) / 4.0))


def split_identifier(text: str) -> str:
    """ "ShellDetectionFailure" -> "Shell Detection Failure", "detect_shell" -> "detect shell"."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text)
    return re.sub(r"[_]+", " ", text)


@dataclass(frozen=True)
class AnswerSpec:
    """The expected answer of a question (see the module docstring)."""

    question: str
    wh: str
    kinds: Kinds
    head: str = ""
    names: tuple[str, ...] = ()
    words: frozenset[str] = field(default_factory=frozenset)  # content stems of the question
    relation_words: frozenset[str] = field(default_factory=frozenset)  # minus the names' words
    head_words: frozenset[str] = field(default_factory=frozenset)
    wants_document: bool = False

    def weight(self, kind: str) -> float:
        for k, w in self.kinds:
            if k == kind:
                return w
        return 0.0

    @property
    def primary(self) -> str:
        return self.kinds[0][0] if self.kinds else "thing"

    @property
    def yesno(self) -> bool:
        return self.primary == "yesno"


_SINGULAR_CLASSES = (
    PERSON_NOUNS | ORG_NOUNS | PLACE_NOUNS | DATE_NOUNS | CODE_NOUNS | LIBRARY_NOUNS
    | VERSION_NOUNS | LICENCE_NOUNS
)  # fmt: skip


def _kinds_for_noun(noun: str) -> Kinds | None:
    n = noun.lower()
    if n.endswith("s") and n[:-1] in _SINGULAR_CLASSES:
        n = n[:-1]
    if n in DATE_NOUNS:
        return (("date", 1.0), ("number", 0.6))
    if n in NUMBER_NOUNS:
        return (("number", 1.0), ("name", 0.3))
    if n in PERSON_NOUNS:
        return (("person", 1.0), ("org", 0.7), ("name", 0.4), ("group", 0.2))
    if n in ORG_NOUNS:
        return (("org", 1.0), ("name", 0.7), ("person", 0.5), ("place", 0.3))
    if n in PLACE_NOUNS:
        return (("place", 1.0), ("name", 0.5), ("org", 0.4))
    if n in GROUP_NOUNS:
        return (("group", 1.0), ("place", 0.6), ("name", 0.5))
    if n in DOCUMENT_NOUNS:
        return (("document", 1.0), ("name", 0.7), ("thing", 0.5))
    if n in VERSION_NOUNS:
        return (("version", 1.0), ("number", 0.5), ("code", 0.3))
    if n in LICENCE_NOUNS:
        return (("licence", 1.0), ("name", 0.4))
    if n in CODE_NOUNS:
        return (("code", 1.0), ("name", 0.8), ("thing", 0.4), ("number", 0.3))
    if n in LIBRARY_NOUNS:
        return (("name", 1.0), ("code", 0.9), ("org", 0.6), ("thing", 0.5))
    return None


# an open-class head ("Which library", "What exception"): a name first, else a noun phrase
_NAMED_THING: Kinds = (("name", 1.0), ("org", 0.75), ("code", 0.7), ("thing", 0.6), ("person", 0.4))
_FREE_TEXT: Kinds = (("thing", 1.0), ("name", 0.85), ("org", 0.6), ("person", 0.6), ("place", 0.6),
                     ("number", 0.5), ("date", 0.5), ("group", 0.5), ("code", 0.5))  # fmt: skip


def _clean(question: str) -> str:
    q = " ".join(question.replace("’", "'").split()).strip()
    return q


def _head_noun(low: str) -> str:
    """The noun after "which"/"what" (skipping one adjective, "kind of", "name of the")."""
    m = re.match(
        r"^(?:which|what)\s+(?:(?:kind|type|sort|form|name)\s+of\s+(?:the\s+|a\s+)?)?"
        r"((?:[\w-]+\s+){0,2}?[\w-]+)\s+(?:is|was|are|were|do|does|did|has|have|had|can|could|"
        r"will|would|should|may|might|must|of|from|in|on|at|for|to|by|with|that|which|who|"
        r"whose|besides|[a-z]+ed\b|[a-z]+s\b)",
        low,
    )
    if m:
        words = [w for w in m.group(1).split() if w not in STOPWORDS]
        # the noun that names a class ("Which gzip release first ..." -> "release"), else the last
        for w in reversed(words):
            if _kinds_for_noun(w) is not None:
                return w
        if words:
            return words[-1]
    # "What is the default port of X?" -> "port", "What is the latest psutil version that ...?"
    # -> "version": the last word of the noun group after "the" (adjectives and names before it)
    m = re.match(
        r"^(?:what|which)\s+(?:is|was|are|were)\s+the\s+(?:name of the\s+)?"
        r"((?:[\w.-]+\s+){0,2}?[\w-]+)(?:\s+(?:of|that|which|for|in|on|used|does|do|did|is|are|"
        r"was|were|to|by|with|from|when|where|who)\b|$)",
        low,
    )
    if m:
        return m.group(1).split()[-1]
    m = re.match(r"^(?:which|what)\s+([\w-]+)", low)
    if m and m.group(1) not in _AUX:
        return m.group(1)
    return ""


def _who_head(low: str) -> str:
    """ "Who is the principal author of X?" -> "author"."""
    m = re.match(
        r"^(?:who|whom)\s+(?:is|was|are|were)\s+(?:the|a|an)\s+(?:[\w-]+\s+)?([\w-]+)\s+of\b", low
    )
    return m.group(1) if m else ""


_ASKS = r"(?:which|what|who|whom|whose|when|where|how|why)"
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`$'\"(])")
_LEAD_CLAUSE = re.compile(rf"[,;]\s+({_ASKS}\b.*)$", re.I)


def asking_clause(question: str) -> str:
    """The clause that asks: the last sentence that ends with "?" (else the last that holds a
    wh-word), after a leading clause that sets the scene ("I switched my editor ... . Where does
    it write its log?" -> "Where does it write its log?"; "When adduser creates a home
    directory, which directory does it copy ...?" -> "which directory does it copy ...?")."""
    q = _clean(question)
    sentences = [s for s in _SENTENCE_BREAK.split(q) if s.strip()] or [q]
    asking = [s for s in sentences if s.rstrip().endswith("?")] or [
        s for s in sentences if re.search(rf"\b{_ASKS}\b", s, re.I)
    ]
    clause = (asking or sentences)[-1].strip()
    words = clause.lower().split()
    first = words[0] if words else ""
    # "When I run strings ..., how do I ...?": a "when" or "where" with no verb after it opens a
    # subordinate clause, not the question
    scene = first in ("when", "where") and len(words) > 1 and words[1] not in _AUX
    if scene or (first not in _WH and first not in _AUX and not _PREP_WH.match(clause.lower())):
        m = _LEAD_CLAUSE.search(clause)
        if m:
            clause = m.group(1)
    return clause


@lru_cache(maxsize=4096)
def analyse_question(question: str) -> AnswerSpec:
    """The `AnswerSpec` of `question` (pure; cached). Its kinds are read from the clause that
    asks (`asking_clause`); its words and names from the whole question."""
    q = _clean(question)
    low = asking_clause(q).lower().rstrip("?").strip()
    m = _PREP_WH.match(low)
    wh = m.group(1) if m else (low.split()[0] if low.split() else "")
    body = low[m.start(1) :] if m else low
    if wh not in _WH and wh not in _AUX:
        # the wh-word stands inside the question ("Starting with which spaCy version ...?",
        # "Besides X, layers defined in which framework ...?"): read from there
        inner = re.search(r"\b(which|what)\s+\w", low)
        if inner:
            wh, body = inner.group(1), low[inner.start(1) :]
    names = tuple(question_names(q))
    words = frozenset(content_words(q) | content_words(split_identifier(q)))
    name_words: set[str] = set()
    for name in names:
        name_words |= content_words(name)
    head = ""
    kinds: Kinds
    wants_document = False
    if wh in _AUX:
        kinds = (("yesno", 1.0),)
    elif wh in ("who", "whom"):
        head = _who_head(body)
        kinds = (_kinds_for_noun(head) if head else None) or ()
        if not kinds or kinds[0][0] not in ("person", "org", "group"):
            kinds = (("person", 1.0), ("org", 0.8), ("name", 0.35), ("group", 0.2))
    elif wh == "whose":
        kinds = (("person", 1.0), ("org", 0.8), ("name", 0.6), ("group", 0.4))
    elif wh == "when":
        kinds = (("date", 1.0), ("number", 0.4))
    elif wh == "where":
        # a place, or in documentation a file or directory ("Where does it write its log?")
        kinds = (("place", 1.0), ("path", 0.95), ("org", 0.85), ("name", 0.6), ("thing", 0.5))
    elif wh == "why":
        kinds = (("thing", 1.0),)
    elif wh == "how":
        if re.match(r"^how (?:many|much)\b", body):
            kinds = (("number", 1.0),)
        elif re.match(r"^how (?:old|long|tall|high|far|big|large|deep|wide|heavy|fast)\b", body):
            kinds = (("number", 1.0), ("date", 0.7))
        else:
            kinds = _FREE_TEXT
    elif wh in ("which", "what"):
        head = _head_noun(body)
        by_noun = _kinds_for_noun(head) if head else None
        if re.match(r"^(?:what|which)\s+(?:kind|type|sort|form)s?\s+of\b", body) and (
            by_noun is None or by_noun[0][0] in ("code", "name", "thing")
        ):
            kinds = _FREE_TEXT  # "What kind of module ...?": a description, not a name
        elif by_noun is not None:
            kinds = by_noun
            wants_document = by_noun[0][0] == "document"
        elif (
            head
            and head not in _GENERIC_HEADS
            and not re.match(r"^(?:what|which)\s+(?:is|was|are|were|do|does|did)\b", body)
        ):
            kinds = _NAMED_THING
        else:
            kinds = _FREE_TEXT
    else:
        kinds = _FREE_TEXT
    # the literal the head noun phrase names ("which environment variable", "what exit code"),
    # or a how-to ("how do I make it ...")
    at = re.search(rf"\b{re.escape(head)}\b", body) if head else None
    literal = asked_kinds(body[: at.end()] if at else body) if at or wh == "how" else None
    if literal is None and head in ("one", "ones"):
        # "It checks two variables; which one does it read first?": the noun said before
        literal = named_kinds(q)
    if literal is not None and wh in ("which", "what", "how") and kinds[0][0] in _OPEN_KINDS:
        kinds = literal  # a literal named where the head says only "a name" or "a thing"
    head_words = frozenset(content_words(head)) if head else frozenset()
    relation_words = frozenset(w for w in words if w not in name_words)
    return AnswerSpec(
        question=q,
        wh=wh,
        kinds=kinds,
        head=head,
        names=names,
        words=words,
        relation_words=relation_words,
        head_words=head_words,
        wants_document=wants_document
        or bool(re.search(r"\b(?:which|what) (?:file|document|page|readme)\b", low)),
    )


def in_question(candidate: str, spec: AnswerSpec) -> float:
    """Share of the candidate's content words that the question already holds, not counting the
    head noun ("Which DEC Private Mode ...?" may be answered "DEC Private Mode 2027")."""
    if _acronym_of_question(candidate, spec.question):
        return 1.0
    cw = content_words(split_identifier(candidate))
    if not cw:
        return 1.0 if normalize(candidate) in normalize(spec.question).split() else 0.0
    inside = {w for w in cw if w in spec.words and w not in spec.head_words}
    extra = cw - spec.words
    if not extra:
        return 1.0
    return len(inside) / len(cw)


def _acronym_of_question(candidate: str, question: str) -> bool:
    """An all-capitals token of two to five letters spelt by the initials of consecutive words
    (no stop word among them) of the question ("SC" for "... a structured concurrency ..."):
    the question names it."""
    text = candidate.strip()
    if not (2 <= len(text) <= 5 and text.isalpha() and text.isupper()):
        return False
    words = re.findall(r"[A-Za-z][\w'-]*", question)
    return any(
        "".join(w[0] for w in window).upper() == text
        and not any(w.lower() in STOPWORDS for w in window)
        for window in _windows(words, len(text))
    )


def _windows(words: list[str], n: int) -> list[list[str]]:
    return [words[i : i + n] for i in range(len(words) - n + 1)]
