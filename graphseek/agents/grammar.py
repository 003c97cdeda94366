"""Linguistic features of a question that guide its decomposition (HiGraAgent Appendix P.2, Fig. 6).

`question_features(question)` parses the question with the packaged spaCy model and returns the
four structures the paper names: full relative clauses ("the city where the band was formed"),
reduced relative clauses ("the man known as Elvis"), "of"-structures ("the performer of X") and
possessive 's structures ("Lothair II's mother"). The result is a pydantic model, so the LLM
decomposer can put `features.model_dump_json()` into its prompt and the offline decomposer can
read the same spans.

Dependency parses of questions that embed titles are often wrong (a song title parsed as a
clause); the extractors repair the common cases: proper-name runs are kept whole, parentheses are
balanced, and a relative clause whose verb the parser took for the root is extended to it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, Field

from graphseek.knowledge.nlp import get_nlp

_RELATIVE_WORDS = {"who", "whom", "whose", "which", "that", "where", "when", "why"}
_NAME_CONNECTORS = {"of", "de", "the", "and", "la", "le", "von", "van", "der", "du", "&", "-"}
_STOP_LEFT = {"which", "what", "who", "whom", "whose", "when", "where", "how", "why"}


class QuestionFeatures(BaseModel):
    """Grammar features of one question; every field is a list of surface spans."""

    full_relative_clauses: list[str] = Field(
        default_factory=list, description="Noun phrases modified by a clause with who/which/where."
    )
    reduced_relative_clauses: list[str] = Field(
        default_factory=list, description="Noun phrases modified by a participle clause."
    )
    of_structures: list[str] = Field(default_factory=list, description='"the X of Y" noun phrases.')
    possessive_s_structures: list[str] = Field(
        default_factory=list, description='"Y\'s X" noun phrases.'
    )

    @property
    def is_empty(self) -> bool:
        return not (
            self.full_relative_clauses
            or self.reduced_relative_clauses
            or self.of_structures
            or self.possessive_s_structures
        )


def question_features(question: str) -> QuestionFeatures:
    """Relative clauses, of-structures and possessives found in `question`'s dependency parse."""
    return _features(" ".join(question.split())).model_copy(deep=True)


@lru_cache(maxsize=512)
def _features(question: str) -> QuestionFeatures:
    if not question:
        return QuestionFeatures()
    doc = get_nlp()(question)
    return QuestionFeatures(
        full_relative_clauses=_dedupe(_full_relatives(doc)),
        reduced_relative_clauses=_dedupe(_reduced_relatives(doc)),
        of_structures=_dedupe(_of_structures(doc)),
        possessive_s_structures=_dedupe(_possessives(doc)),
    )


def _dedupe(spans: list[str]) -> list[str]:
    seen: list[str] = []
    for span in spans:
        span = span.strip(" ,")
        if span and span not in seen:
            seen.append(span)
    return seen


def _text(doc: Any, start: int, end: int) -> str:
    """Surface text of tokens [start, end), balanced for parentheses."""
    start, end = _balance(doc, start, end)
    return doc[start:end].text


def _balance(doc: Any, start: int, end: int) -> tuple[int, int]:
    opened = sum(1 for t in doc[start:end] if t.text == "(") - sum(
        1 for t in doc[start:end] if t.text == ")"
    )
    while opened > 0 and end < len(doc):
        if doc[end].text == ")":
            opened -= 1
        end += 1
    while opened < 0 and start > 0:
        start -= 1
        if doc[start].text == "(":
            opened += 1
    return start, end


def _np_start(token: Any) -> int:
    """Index where the noun phrase headed by `token` starts (determiners, modifiers, names)."""
    start = token.i
    for child in token.lefts:
        if child.dep_ in {"det", "amod", "compound", "nummod", "poss", "nmod", "quantmod"}:
            start = min(start, child.left_edge.i)
    return _name_run_start(token.doc, start)


def _name_run_start(doc: Any, i: int) -> int:
    """Extend a proper-name start leftwards over capitalised words and name connectors."""
    start = i
    j = i - 1
    while j >= 0:
        tok = doc[j]
        low = tok.lower_
        if low in _STOP_LEFT or tok.is_sent_start and low in _STOP_LEFT:
            break
        is_name = tok.text[:1].isupper() and tok.tag_ in {"NNP", "NNPS", "CD"}
        is_paren = tok.text in {"(", ")"} or tok.like_num or tok.tag_ == "CD"
        is_conn = (
            (low in _NAME_CONNECTORS or tok.text in {",", "'", "’"})
            and j > 0
            and doc[j - 1].text[:1].isupper()
        )
        if (is_name or is_paren or is_conn) and j > 0 or (is_name and j == 0):
            if tok.i == 0 and low in _STOP_LEFT:
                break
            start = j
            j -= 1
            continue
        break
    # never start on a connector or punctuation
    while start < i and (doc[start].lower_ in _NAME_CONNECTORS or doc[start].is_punct):
        start += 1
    return start


def _clause_end(clause_root: Any) -> int:
    """End (exclusive) of a relative clause, repairing verbs the parser attached to the root."""
    doc = clause_root.doc
    end = clause_root.right_edge.i + 1
    root = clause_root.sent.root
    if root.i >= end and root.pos_ in {"VERB", "AUX"}:
        trailing = doc[end : root.i + 1]
        early_aux = [c for c in root.children if c.dep_ in {"aux", "auxpass"} and c.i < end]
        if all(t.dep_ in {"aux", "auxpass", "neg", "advmod"} or t.i == root.i for t in trailing):
            if early_aux and len(trailing) <= 3:
                end = root.i + 1
    if end < len(doc) and doc[end - 1].pos_ in {"VERB", "AUX"}:
        if not any(c.dep_ in {"dobj", "attr", "pobj"} for c in doc[end - 1].children):
            end = _name_run_end(doc, end)
    while end > 0 and doc[end - 1].is_punct and doc[end - 1].text not in {")", "'", "’"}:
        end -= 1
    return end


def _name_run_end(doc: Any, end: int) -> int:
    """Extend an end index rightwards over a proper name: capitalised words, "Of", commas, 's."""
    j = end
    while j < len(doc):
        tok = doc[j]
        nxt = doc[j + 1] if j + 1 < len(doc) else None
        cap_next = nxt is not None and nxt.text[:1].isupper()
        if tok.text[:1].isupper() and not tok.is_punct and tok.lower_ not in _STOP_LEFT:
            j += 1
        elif tok.text in {"(", ")"} or (tok.like_num and j > end):
            j += 1
        elif (tok.lower_ in _NAME_CONNECTORS or tok.text == ",") and cap_next and j > end:
            j += 1
        else:
            break
    return _balance(doc, 0, j)[1] if j > end else end


def _full_relatives(doc: Any) -> list[str]:
    spans: list[str] = []
    for tok in doc:
        if tok.dep_ != "relcl":
            continue
        rel_words = [t for t in tok.subtree if t.lower_ in _RELATIVE_WORDS and t.i < tok.i]
        if not rel_words:
            continue
        noun = tok.head
        spans.append(_text(doc, _np_start(noun), _clause_end(tok)))
    return spans


def _reduced_relatives(doc: Any) -> list[str]:
    spans: list[str] = []
    for tok in doc:
        if tok.dep_ == "acl" and tok.tag_ in {"VBN", "VBG"} and tok.head.pos_ in {"NOUN", "PROPN"}:
            noun = tok.head
            spans.append(_text(doc, _np_start(noun), _clause_end(tok)))
    return spans


def _pobj_end(pobj: Any) -> int:
    """End of the object of "of": the object with its names and appositions, no clauses."""
    end = pobj.i + 1
    for child in pobj.rights:
        if child.dep_ in {"appos", "compound", "nummod", "flat", "punct"}:
            end = max(end, child.right_edge.i + 1)
        elif child.dep_ in {"prep", "relcl", "acl", "cc", "conj"}:
            break
    doc = pobj.doc
    if pobj.text[:1].isupper() or end > pobj.i + 1:
        end = _name_run_end(doc, end)
        if end < len(doc) - 1 and doc[end].tag_ == "POS":
            nouns = [t for t in doc[end + 1 :] if t.pos_ in {"NOUN", "PROPN"}]
            if nouns and nouns[0].i <= end + 3:
                end = nouns[0].i + 1
    while end > pobj.i + 1 and doc[end - 1].is_punct and doc[end - 1].text != ")":
        end -= 1
    return end


def _of_structures(doc: Any) -> list[str]:
    spans: list[str] = []
    for tok in doc:
        if tok.lower_ != "of" or tok.dep_ != "prep" or tok.head.pos_ not in {"NOUN", "PROPN"}:
            continue
        if tok.text == "Of":  # "Prince Of Orange": part of a name, not a structure
            continue
        head = tok.head
        pobjs = [c for c in tok.children if c.dep_ == "pobj"]
        if not pobjs:
            continue
        pobj = pobjs[0]
        pobj_start = min(pobj.i, _np_start(pobj))
        if pobj_start <= tok.i:
            pobj_start = tok.i + 1
        start = _np_start(head)
        if start > head.i:
            start = head.i
        spans.append(_text(doc, start, max(_pobj_end(pobj), pobj_start + 1)))
    return spans


def _possessives(doc: Any) -> list[str]:
    spans: list[str] = []
    for tok in doc:
        if tok.tag_ != "POS":
            continue
        owner = tok.head if tok.dep_ == "case" else doc[tok.i - 1] if tok.i > 0 else tok
        possessed = owner.head if owner.dep_ == "poss" else None
        if possessed is None or possessed.i <= tok.i:
            # the parser lost the link: take the next noun
            nxt = [t for t in doc[tok.i + 1 :] if t.pos_ in {"NOUN", "PROPN"}]
            if not nxt:
                continue
            possessed = nxt[0]
        start = _name_run_start(doc, min(owner.left_edge.i, owner.i))
        end = possessed.i + 1
        spans.append(_text(doc, start, end))
    return spans
