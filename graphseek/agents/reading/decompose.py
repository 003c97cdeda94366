"""Splitting a multi-hop question at the description of its bridge entity, from general English.

A two-hop question names its bridge by a description instead of a name: "Who defined the deflate
format used by **the compression library that libpng relies on**?". The description becomes the
first step ("Which compression library libpng relies on?") and the rest of the question the
second, with `#1` where the description stood ("Who defined the deflate format used by #1?").
The Seeker fills `#1` with the first step's answer before asking the second.

Three English structures are split, innermost first, each found from spaCy's tags and parse
with surface checks where the small model's parse is unreliable:

- a definite noun phrase with a relative clause: "the X that/which/who/whom/whose/where ...";
- a context sentence that introduces an entity by an indefinite noun phrase and a question that
  refers back to it: "GnuTLS requires a low-level cryptographic library to build. On which
  library does that library's support ... depend?";
- a possessive whose head noun names an entity rather than an attribute: "prompt_toolkit's only
  dependency besides Pygments" (but not "XZ Utils's licence": "licence" is no kind of entity).

Nothing here is tuned to one data set; the word lists are closed English classes (relative
pronouns, determiners, complement-taking nouns). A question with none of the structures is one
step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphseek.agents.reading.question import _kinds_for_noun
from graphseek.knowledge.nlp import get_nlp

_RELATIVE = frozenset({"that", "which", "who", "whom", "whose", "where"})
_DEFINITE = frozenset({"the", "that", "this", "these", "those"})
_INDEFINITE = frozenset({"a", "an", "another", "one", "some"})
# nouns whose "that" opens a complement, not a relative clause ("the fact that ...")
_COMPLEMENT_NOUNS = frozenset(
    "fact idea claim belief notion possibility news evidence assumption hope view sense "
    "statement argument proof rule condition requirement guarantee chance".split()
)
_NP_INNER_TAGS = frozenset(
    {"JJ", "JJR", "JJS", "NN", "NNS", "NNP", "NNPS", "HYPH", "CD", "VBN", "VBG", "POS"}
)
_FINITE = frozenset({"VBZ", "VBD", "VBP", "MD"})
_DO_SUPPORT = frozenset("do does did can could may might will would should shall must".split())
_MAX_STEPS = 4


@dataclass(frozen=True)
class _Split:
    step: str  # the sub-question that names the bridge
    before: str  # the question before the description ...
    after: str  # ... and after it

    def rest(self, placeholder: str) -> str:
        return f"{self.before}{placeholder}{self.after}"


def plan_steps(question: str) -> list[str]:
    """Sub-questions, innermost first; later ones refer to earlier answers as `#N`."""
    q = " ".join(question.replace("’", "'").split()).strip()
    if not q:
        return []
    if not q.endswith("?"):
        q += "?"
    return list(_plan(q))


@lru_cache(maxsize=2048)
def _plan(question: str) -> tuple[str, ...]:
    steps: list[str] = []
    final = _reduce(question, steps, depth=0)
    if not steps:
        return (question,)
    if not _trivial(final, len(steps)):
        steps.append(final)
    return tuple(steps)


def _reduce(question: str, steps: list[str], depth: int) -> str:
    q = question
    while len(steps) < _MAX_STEPS and depth < 3:
        doc = get_nlp()(q)  # one parse serves the three structures
        split = _context_sentence(doc) or _relative_clause(doc) or _possessive(doc)
        if split is None:
            break
        inner = _reduce(split.step, steps, depth + 1)
        if len(steps) >= _MAX_STEPS:
            break
        steps.append(inner)
        q = split.rest(f"#{len(steps)}")
    return q


def _trivial(text: str, last: int) -> bool:
    """ "Who is #2?" asks nothing the last step did not."""
    return bool(re.fullmatch(rf"(?:who|what|which \w+) (?:is|was|are|were) #{last}\?", text, re.I))


# -- relative clauses -------------------------------------------------------------------------


def _relative_clause(doc: Any) -> _Split | None:
    q = doc.text
    found: list[tuple[int, _Split]] = []
    for noun_i, marker, first, prep in _clause_openings(doc):
        start = _np_start(doc, noun_i)
        if start is None:
            continue
        end = _clause_end(doc, first - 1, _aux_before(doc, start))
        if end <= first:
            continue
        if marker == "" and not _contact_clause(doc, first, end):
            continue
        clause = doc[first:end].text
        np_words = doc[start + 1 : noun_i + 1].text
        if marker == "who" and _starts_with_verb(doc, first):
            step = f"Who {clause}?"
        elif marker == "whose":
            step = f"Which {np_words} whose {clause}?"
        else:
            step = f"Which {np_words} {clause}{' ' + prep if prep else ''}?"
        span_start = doc[start].idx
        span_end = doc[end - 1].idx + len(doc[end - 1].text)
        if span_end - span_start > 0.85 * len(q.rstrip("?")):
            continue  # the description is the whole question: nothing is left to ask after it
        found.append((span_end - span_start, _Split(step, q[:span_start], q[span_end:])))
    if not found:
        return None
    # innermost first: the shortest description contains no other
    return min(found, key=lambda pair: pair[0])[1]


def _clause_openings(doc: Any) -> list[tuple[int, str, int, str]]:
    """(head noun, relative word or "", first token of the clause, stranded preposition) for
    every place a relative clause may open after a noun."""
    out: list[tuple[int, str, int, str]] = []
    for tok in doc:
        i, low = tok.i, tok.lower_
        if i == 0:
            continue
        if low in _RELATIVE and _common_or_name(doc[i - 1]):
            out.append((i - 1, low, i + 1, ""))  # "the library that libpng relies on"
        elif (
            low in {"which", "whom"}
            and i >= 2
            and doc[i - 1].pos_ == "ADP"
            and _common_or_name(doc[i - 2])
        ):
            out.append((i - 2, low, i + 1, doc[i - 1].lower_))  # "the county in which X lies"
        elif tok.pos_ == "PROPN" and doc[i - 1].tag_ in {"NN", "NNS"} and doc[i - 1].is_lower:
            out.append((i - 1, "", i, ""))  # a contact clause: "the country Signmark is from"
    return out


def _common_or_name(tok: Any) -> bool:
    return bool(tok.tag_ in {"NN", "NNS", "NNP", "NNPS"} and tok.lower_ not in _COMPLEMENT_NOUNS)


def _contact_clause(doc: Any, first: int, end: int) -> bool:
    """A clause with no relative word is taken only when it has a finite verb and ends on a
    stranded preposition or a participle ("... Signmark is from", "... X is located")."""
    span = doc[first:end]
    finite = any(t.tag_ in _FINITE or t.pos_ == "AUX" for t in span)
    return finite and span[-1].pos_ in {"ADP"} | ({"VERB"} if span[-1].tag_ == "VBN" else set())


def _np_start(doc: Any, head: int) -> int | None:
    """Index of the definite determiner that opens the noun phrase ending at `head`."""
    i = head - 1
    while i >= 0 and doc[i].tag_ in _NP_INNER_TAGS and doc[i].lower_ not in _DEFINITE:
        i -= 1
    if i >= 0 and doc[i].lower_ in _DEFINITE and doc[i].tag_ in {"DT", "WDT"}:
        if i > 0 and doc[i - 1].lower_ in {"which", "what"}:
            return None
        return i
    return None


def _aux_before(doc: Any, before: int) -> bool:
    """Whether the main clause opened with an auxiliary before the description ("Where does the
    library that X uses advise ...", "When was the country that produced X taken ..."): then a
    bare verb or participle after the clause is the main verb."""
    return any(t.lower_ in _DO_SUPPORT or t.lemma_ == "be" for t in doc[:before])


def _starts_with_verb(doc: Any, i: int) -> bool:
    return i < len(doc) and doc[i].pos_ in {"VERB", "AUX"}


def _clause_end(doc: Any, rel: int, aux_before: bool) -> int:
    """End (exclusive) of the relative clause whose first word is token `rel` + 1."""
    verb = next((t.i for t in doc[rel + 1 :] if t.pos_ in {"VERB", "AUX"}), None)
    if verb is None:  # the tagger missed the clause's verb ("flag uses" as two nouns)
        i = rel + 1
        while i < len(doc) and not _stop(doc, i):
            i += 1
        return i
    if verb == rel + 1 and verb + 1 < len(doc) and doc[verb + 1].tag_ in {"VBZ", "VBD"}:
        verb += 1  # "that yq requires": the tagger read the clause's subject as its verb
    i = verb + 1
    while i < len(doc) and (
        doc[i].pos_ == "AUX"
        or doc[i].tag_ in {"RP", "RB"}
        or (doc[i].tag_ in {"VBN", "VBG"} and doc[i - 1].pos_ in {"AUX", "ADV"})
    ):
        i += 1  # the clause's own verb group ("is based", "was released")
    while i < len(doc):
        t = doc[i]
        if _stop(doc, i):
            break
        prev = doc[i - 1]
        if prev.lower_ in {"to", "not"} or prev.pos_ == "PRON" or prev.lower_ in {"when", "where"}:
            i += 1  # an infinitive or an embedded clause's verb ("when he died")
            continue
        if t.tag_ in _FINITE:
            break  # the main clause's verb ("... that Typer uses ... fails to detect it")
        if aux_before and t.pos_ == "VERB" and t.tag_ in {"VB", "VBN"}:
            break  # "Where does the library that Pango depends on *advise* ..."
        i += 1
    return i


def _stop(doc: Any, i: int) -> bool:
    """Punctuation that ends a clause (a comma inside a name, "Johnnycake, West Virginia", does
    not)."""
    t = doc[i]
    if t.text in {"?", ";", ".", "!"}:
        return True
    if t.text == ",":
        inside_name = (
            0 < i < len(doc) - 1 and doc[i - 1].pos_ == "PROPN" and doc[i + 1].pos_ == "PROPN"
        )
        return not inside_name
    return False


# -- a context sentence and an anaphor ---------------------------------------------------------


_ANAPHOR = re.compile(
    r"\b(?:that|this|the said)\s+(?:other\s+)?([A-Za-z][\w-]*)\b(?!\s+(?:that|which|who|whom|whose|where)\b)"
)


def _context_sentence(doc: Any) -> _Split | None:
    sents = list(doc.sents)
    if len(sents) < 2:
        return None
    last = sents[-1]
    context = doc[sents[0].start : last.start]
    question_text = last.text
    anaphors = list(_ANAPHOR.finditer(question_text))
    for m in reversed(anaphors):
        noun = m.group(1).lower()
        intro = _introduced(context, noun)
        if intro is None:
            continue
        start, end = intro
        described = doc[start + 1 : end].text  # without the indefinite determiner
        rest = (doc[context.start : start].text + " " + doc[end : context.end].text).strip()
        rest = rest.rstrip(" .;:")
        step = f"Which {described} {rest}?"
        # the context sentence is said by the first step; the question keeps its own sentence
        return _Split(step, question_text[: m.start()], question_text[m.end() :])
    return None


def _introduced(context: Any, noun: str) -> tuple[int, int] | None:
    """Token span [start, end) of the indefinite noun phrase with head `noun` in `context`."""
    for tok in context:
        if tok.lower_ != noun and tok.lemma_.lower() != noun:
            continue
        i = tok.i - 1
        while i >= context.start and context.doc[i].tag_ in _NP_INNER_TAGS:
            i -= 1
        if i >= context.start and context.doc[i].lower_ in _INDEFINITE:
            return i, tok.i + 1
    return None


# -- possessives -------------------------------------------------------------------------------


def _possessive(doc: Any) -> _Split | None:
    q = doc.text
    copular = len(doc) > 2 and doc[0].lower_ in {"what", "who"} and doc[1].lemma_ == "be"
    for tok in doc:
        if tok.tag_ != "POS" or tok.i == 0:
            continue
        owner_end = tok.i
        owner_start = owner_end - 1
        while owner_start > 0 and doc[owner_start - 1].tag_ in {"NNP", "NNPS"}:
            owner_start -= 1
        if doc[owner_start].pos_ not in {"PROPN", "NOUN", "X"}:
            continue
        if copular and owner_start <= 3:
            continue  # "What is X's Y?" asks for the possessed thing itself: one step
        head = doc[owner_end - 1].head.i  # the possessed noun, from the parse
        if head <= tok.i or doc[head].tag_ not in {"NN", "NNS"}:
            continue
        if any(t.tag_ not in _NP_INNER_TAGS for t in doc[tok.i + 1 : head]):
            continue
        if head + 1 < len(doc) and doc[head + 1].tag_ in {"NN", "NNS", "NNP", "NNPS", "SYM"}:
            continue
        kinds = _kinds_for_noun(doc[head].lower_)
        entity_noun = kinds is not None and kinds[0][0] in {"person", "org", "place"}
        if not entity_noun and not _open_entity_noun(doc[head].lower_):
            continue
        end = head + 1
        if end < len(doc) and doc[end].lower_ in {"besides", "except", "other"}:
            end += 1
            while end < len(doc) and doc[end].tag_ in {"NNP", "NNPS"}:
                end += 1
        if any(
            t.lower_ in {"what", "which", "who", "whom", "how", "when", "where"}
            for t in doc[owner_start:end]
        ):
            continue
        start_char = doc[owner_start].idx
        end_char = doc[end - 1].idx + len(doc[end - 1].text)
        return _Split(f"What is {q[start_char:end_char]}?", q[:start_char], q[end_char:])
    return None


# nouns that name a thing one can look up by name, beyond the person/organisation/place classes
_ENTITY_NOUNS = frozenset(
    "dependency library package module framework tool toolkit program application engine "
    "backend frontend successor predecessor fork parent child sibling author creator "
    "language protocol format standard system server client database product".split()
)


def _open_entity_noun(noun: str) -> bool:
    return noun in _ENTITY_NOUNS or (noun.endswith("s") and noun[:-1] in _ENTITY_NOUNS)
