"""Does a model's answer answer the question? The reader's pass over what a chat model wrote.

A small model often answers with a whole sentence: sometimes one that states the answer ("LZMA2
is the primary filter of the .xz format"), sometimes one copied from a passage that answers
another question ("The version number format of XZ Utils is X.Y.ZS.") or only repeats a name
the question holds. Both occur in the passages, so an occurrence test passes them. Here:

- a **sentence** (a finite verb, at least `SENTENCE_MIN_WORDS` words, not a title) is read as a
  one-sentence passage, under the title of the passage it comes from, by the extractive reader
  (`graphseek.agents.reading.reader`). Given the `evidence` the model read, only spans that
  occur both in the sentence and in that evidence are kept (a made-up example value, a mangled
  name never is): the best of them becomes the answer when the reader's confidence reaches its
  operating point, or when it is the only one; else, when the sentence holds exactly one
  specific token that the evidence holds and the question does not (an option, a suffix, a
  number: `sentences.specific_token_list`), that token; else the sentence does not answer. A
  sentence that says it does not know ("not stated", "unknown") answers nothing;
- a **short answer** that is only a name the question already holds does not answer, except in
  a question that offers a choice ("A or B?");
- a yes/no question's answer that starts with "yes" or "no" is that word.

General English only; nothing depends on a data set. The workflow decides what to do with a
misfit (`graphseek.graphs.common.finalize_answer`: an abstention that shows its evidence).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphseek.agents.reading.literals import asked_token
from graphseek.agents.reading.question import analyse_question, in_question
from graphseek.agents.text import contains, normalize
from graphseek.knowledge.passages import Hit, Passage

#: fewer words than this is a span, never read as a sentence
SENTENCE_MIN_WORDS = 4
_FINITE_TAGS = frozenset({"VBD", "VBZ", "VBP", "MD"})
_YES_NO = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_CHOICE = re.compile(r"\bor\b", re.IGNORECASE)
_DOUBT = re.compile(
    r"\b(?:not|no|unknown|cannot|can't|unclear|unable|neither|nor|none)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Fit:
    """What the reader made of an answer: `answer` (the span read from a sentence, else the
    answer as written), whether it answers the question, and why not."""

    answer: str
    fits: bool
    reason: str = ""
    read_from: str = ""  # the model's sentence when `answer` is a span read from it


def is_sentence(text: str, nlp: Any = None) -> bool:
    """At least `SENTENCE_MIN_WORDS` words, not a title (every word capitalised), and a finite
    verb ("LZMA2 **is** ...", "... **was** proposed by ...")."""
    words = text.split()
    if len(words) < SENTENCE_MIN_WORDS or all(w[:1].isupper() for w in words if w[:1].isalpha()):
        return False
    if nlp is None:
        from graphseek.knowledge.nlp import get_nlp

        nlp = get_nlp()
    doc = nlp(text)
    return any(t.tag_ in _FINITE_TAGS or "Fin" in t.morph.get("VerbForm") for t in doc)


def fit_answer(
    question: str,
    answer: str,
    threshold: float,
    title: str = "",
    reader: Any = None,
    evidence: Sequence[str] = (),
) -> Fit:
    """Read `answer` against `question` (see the module docstring); `threshold` is the reader's
    operating point, the confidence at which its own drafts are answers. `title`: the title of
    the passage the sentence comes from, read with it as a passage's title is ("He died at
    Missolonghi" under "Lord Byron"). `evidence`: the texts the model read; when given, a
    span read from a sentence must occur in one of them."""
    question = " ".join(question.split())
    answer = answer.strip()
    if not answer:
        return Fit(answer, False, "the model gave no answer")
    spec = analyse_question(question)
    if spec.yesno:
        match = _YES_NO.match(answer)
        word = match.group(1).lower() if match else ""
        return Fit(word, True, read_from=answer) if word and word != answer else Fit(answer, True)
    if not is_sentence(answer):
        if in_question(answer, spec) >= 0.99 and not _CHOICE.search(question):
            return Fit(
                answer, False, f"the answer {answer!r} only repeats a name the question holds"
            )
        return Fit(answer, True)
    if reader is None:
        from graphseek.agents.reading.reader import get_reader

        reader = get_reader()
    key = hashlib.sha1(f"{title}\n{answer}".encode()).hexdigest()[:16]
    passage = Passage(id=f"model-answer:{key}", title=title, text=answer)
    hit = Hit(passage=passage, score=1.0, rank=1)
    ranked = reader.rank(question, [hit], spec)
    if evidence:
        ranked = [c for c in ranked if any(contains(t, c.text) for t in evidence)]
    confidence = reader.confidence(ranked) if ranked else 0.0
    doubtful = bool(_DOUBT.search(answer))
    distinct = {normalize(c.text) for c in ranked}
    if ranked and (confidence >= threshold or (len(distinct) == 1 and not doubtful)):
        return Fit(ranked[0].text, True, read_from=answer)
    token = _lone_specific(question, answer, evidence) if evidence and not doubtful else ""
    if token:
        return Fit(token, True, read_from=answer)
    return Fit(
        answer,
        False,
        f"the model's answer {_short(answer)!r} does not state what the question asks (the "
        f"reader ties nothing in it to the question: confidence {confidence:.2f}, below "
        f"{threshold:.2f})",
    )


def _named(token: str) -> str:
    """A token that sets a value (``NAME=true``, ``--level=3``) as the name it sets."""
    name, sep, _ = token.partition("=")
    return name if sep and name else token


def _lone_specific(question: str, answer: str, evidence: Sequence[str]) -> str:
    """The one specific token of `answer` (`specific_token_list`) that some text of `evidence` holds
    and `question` does not; among several, the one of the kind the question asks for by name (an
    environment variable, an option, a suffix, a file, a number), when exactly one is, a token
    that sets a value (``NAME=true``) read as the name it sets; "" else."""
    from graphseek.agents.reading.sentences import known_tokens, specific_token_list

    tokens = specific_token_list(answer, known_tokens(question))
    found = list(dict.fromkeys(t for t in tokens if any(contains(e, t) for e in evidence)))
    if len(found) == 1:
        return found[0]
    asked = asked_token(question)
    if asked is None:
        return ""
    of_kind = list(dict.fromkeys(_named(t) for t in found if asked.search(_named(t))))
    return of_kind[0] if len(of_kind) == 1 else ""


def _short(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"
