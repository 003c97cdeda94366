"""Rule-based question clarification (offline policy of the Clarifier role, HiGraAgent App. P.1).

A question that starts with a wh-word or an auxiliary is kept as it is. Otherwise it is
rewritten into an explicit interrogative from its dependency parse:

- "Brendon Urie wrote new perspective after firing which bassist?" (the wh-phrase is the object
  of a gerund after "after"/"before"/"while") -> "Which bassist did Brendon Urie fire after
  writing new perspective?";
- a trailing wh-object of the main verb -> do-support: "X founded which company?" -> "Which
  company did X found?"; with an auxiliary -> inversion: "X has won which award?" -> "Which
  award has X won?";
- a trailing prepositional wh-phrase -> "X was born in which city?" -> "In which city was X
  born?";
- an imperative or a bare noun phrase -> "Name the director of X" -> "Who is the director of X?",
  "the director of X" -> "What is the director of X?";
- anything else: the trailing "which/what N" phrase is moved to the front.
"""

from __future__ import annotations

import re
from typing import Any

from graphseek.agents.offline.answer_types import starts_with_wh
from graphseek.agents.reading.question import PERSON_NOUNS
from graphseek.agents.roles import Step
from graphseek.knowledge.nlp import get_nlp

_WH = {"which", "what", "who", "whom", "whose", "when", "where", "why", "how"}
_AUX = {"is", "are", "was", "were", "has", "have", "had", "will", "would", "can", "could",
        "should", "may", "might", "must", "shall", "does", "do", "did"}  # fmt: skip
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:tell me|name|give me|find|identify|list|state|say|show me|what's)\s+",
    re.I,
)


def is_wh_question(question: str) -> bool:
    """True when the question starts with a wh-word, an auxiliary or a preposition + wh-word."""
    return starts_with_wh(question)


class OfflineClarifier:
    """Clarifier role, offline policy: keep wh-questions, rewrite the rest by rules."""

    def clarify(self, question: str) -> Step[str]:
        return Step(clarify_question(question))


def clarify_question(question: str) -> str:
    q = " ".join(question.split()).strip()
    if not q or is_wh_question(q):
        return q
    body = q.rstrip("?.! ")
    rewritten = _imperative(body) or _from_parse(body) or _move_wh_front(body)
    if not rewritten:
        return q
    rewritten = rewritten[0].upper() + rewritten[1:]
    return rewritten if rewritten.endswith("?") else rewritten + "?"


def _imperative(body: str) -> str | None:
    m = _IMPERATIVE.match(body)
    if not m:
        bare = re.match(r"^(?:the|a|an)\s+\w+", body, re.I)
        if bare and not re.search(r"\b(?:which|what|who|whom|is|was|are|were)\b", body, re.I):
            return f"{_wh_for(body)} is {body[0].lower() + body[1:]}"
        return None
    rest = body[m.end() :]
    if re.match(r"^(?:which|what|who|when|where|how)\b", rest, re.I):
        return rest
    return f"{_wh_for(rest)} is {rest}"


def _wh_for(noun_phrase: str) -> str:
    noun = re.match(r"^(?:the|a|an)\s+([\w-]+)", noun_phrase, re.I)
    return "Who" if noun and noun.group(1).lower() in PERSON_NOUNS else "What"


def _wh_phrase(doc: Any) -> tuple[int, int] | None:
    """Token span [start, end) of a wh-phrase that ends the question."""
    last = len(doc)
    while last > 0 and doc[last - 1].is_punct:
        last -= 1
    for tok in reversed(list(doc[:last])):
        if tok.lower_ in _WH and tok.i > 0:
            end = tok.i + 1
            if tok.lower_ in {"which", "what", "whose"}:
                while end < last and doc[end].pos_ in {"NOUN", "PROPN", "ADJ", "NUM"}:
                    end += 1
            return (tok.i, end) if end == last else None
    return None


def _ing(verb: Any) -> str:
    lemma = verb.lemma_.lower()
    if lemma.endswith("ie"):
        return lemma[:-2] + "ying"
    if lemma.endswith("e") and not lemma.endswith(("ee", "ye", "oe")):
        return lemma[:-1] + "ing"
    if re.match(r".*[^aeiou][aeiou][bdgmnprt]$", lemma) and len(lemma) <= 4:
        return lemma + lemma[-1] + "ing"
    return lemma + "ing"


def _lower_first(text: str) -> str:
    first = text.split(" ", 1)[0]
    if first.lower() in {"the", "a", "an", "this", "that", "his", "her", "their", "its"}:
        return text[0].lower() + text[1:]
    return text


def _from_parse(body: str) -> str | None:
    doc = get_nlp()(body)
    found = _wh_phrase(doc)
    if found is None:
        return None
    start, end = found
    wh_text = doc[start:end].text
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or root.i >= start:
        return None
    subj = [t for t in root.children if t.dep_ in {"nsubj", "nsubjpass", "csubj"}]
    if not subj:
        return None
    subject = _lower_first(doc[subj[0].left_edge.i : subj[0].right_edge.i + 1].text)
    before = doc[start - 1]
    # "X wrote Y after firing which bassist?"
    if before.tag_ == "VBG" and before.head.lower_ in {"after", "before", "while", "since"}:
        prep = before.head
        main_obj = [t for t in root.children if t.dep_ in {"dobj", "attr"}]
        obj = doc[main_obj[0].left_edge.i : main_obj[0].right_edge.i + 1].text if main_obj else ""
        rest = f"{_ing(root)} {obj}".strip()
        return f"{_cap(wh_text)} did {subject} {before.lemma_} {prep.lower_} {rest}"
    tail_start = start
    if before.tag_ == "IN" and before.lower_ != "that":
        wh_text = f"{before.text} {wh_text}"
        tail_start = start - 1
    wh_text = _cap(wh_text)
    auxes = [t for t in root.children if t.dep_ in {"aux", "auxpass"} and t.i < root.i]
    if auxes:
        rest = doc[auxes[0].i + 1 : tail_start].text
        return f"{wh_text} {auxes[0].text} {subject} {rest}".strip()
    if root.lemma_ == "be":
        rest = doc[root.i + 1 : tail_start].text
        return f"{wh_text} {root.text} {subject} {rest}".strip()
    if root.tag_ in {"VBD", "VBZ", "VBP"}:
        do = "did" if root.tag_ == "VBD" else ("does" if root.tag_ == "VBZ" else "do")
        rest = doc[root.i + 1 : tail_start].text
        return f"{wh_text} {do} {subject} {root.lemma_} {rest}".strip()
    return None


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] if text else text


def _move_wh_front(body: str) -> str | None:
    m = re.search(r"\b((?:which|what)\s+[\w-]+|who|whom|when|where)\s*$", body, re.I)
    if not m:
        return None
    rest = body[: m.start()].strip(" ,")
    return f"{m.group(1)} {rest}" if rest else None
