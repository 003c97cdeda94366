"""The readers of an escalation cascade (`Context.readers`), and the rule that decides whether a
reader's answer stands or passes the question on to the next reader.

A reader drafts one (sub-)question from the evidence a run found, as the Librarian does:
``offline`` is the offline Librarian of the run's profile (no model call); ``openai:<model>`` is
the Librarian's model policy on that model, reading the best sentences
(`graphseek.agents.formatting.with_evidence`). Each has an operating point: the offline
reader's is its profile's calibrated point; a model's is its entry in `reader_points.json`
(written by ``benchmarks/calibrate.py --readers``), else `DEFAULT_MODEL_POINT`, a conservative
default for a model never calibrated.

`judge` is the rule (`graphseek.graphs.cascade` runs it between readers, as a conditional
edge): an answer stands when it is an answer (not empty, not "unknown"), the reader's
grounding check finds it stated in the evidence read (for a model: the span read from its
sentence, `graphseek.agents.reading.answer_fit.fit_answer`, that occurs in a passage read) and
its confidence is at or above the reader's point. Otherwise the next reader reads the question.
A model's confidence is its stated one where its answer agrees with an earlier reader's guess
(the offline reader's answer below its point, say), else that scaled by `DISAGREEING`: on the
0.5B model's first cascade run, the 2 answers that agreed with the offline guess were right, and
2 of the 3 that differed were wrong, all stated at 0.9.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Any

from graphseek.agents.text import answer_occurs
from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft

OFFLINE_READER = "offline"
#: the point of a model reader with no calibrated entry: its stated confidence must be high
DEFAULT_MODEL_POINT = 0.8
#: a model's stated confidence, scaled when its answer differs from every earlier reader's guess
#: for the question (a small model states 0.9 whether right or wrong; agreeing with the offline
#: reader's guess, even one below its point, is the better sign)
DISAGREEING = 0.5
POINTS_FILE = "reader_points.json"

#: replies that say the evidence does not answer
_UNKNOWN = frozenset(
    {
        "unknown",
        "none",
        "n/a",
        "na",
        "no answer",
        "not stated",
        "not mentioned",
        "not found",
        "not given",
        "not specified",
        "not provided",
        "cannot be determined",
        "insufficient information",
    }
)


@dataclass(frozen=True)
class Reader:
    """One reader of a cascade: its spec, its drafting policy (`draft(question, hits,
    relations)`, a `GraphLibrarian`), and its operating point."""

    name: str
    policy: Any
    point: float

    @property
    def is_model(self) -> bool:
        return self.name != OFFLINE_READER


@lru_cache(maxsize=1)
def _points() -> dict[str, float]:
    try:
        data = json.loads(files("graphseek.agents").joinpath(POINTS_FILE).read_text())
        return {str(k): float(v) for k, v in data.get("models", {}).items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def model_point(spec: str) -> float:
    """The calibrated operating point of the model reader `spec` (``openai:<model>``, matched
    on the model name), else `DEFAULT_MODEL_POINT`."""
    name = spec.partition(":")[2].strip() or spec.strip()
    return _points().get(name, DEFAULT_MODEL_POINT)


def says_unknown(answer: str) -> bool:
    """Whether `answer` says the evidence does not answer ("unknown", "not stated", …)."""
    text = " ".join(answer.lower().strip(" .!").split())
    return not text or text in _UNKNOWN or text.startswith(("unknown", "i don't know"))


def judge(
    reader: Reader,
    question: str,
    draft: Draft,
    hits: Sequence[Hit],
    reader_point: float,
    earlier: Sequence[str] = (),
) -> tuple[Draft, str]:
    """`draft` as it stands (a model's sentence read down to its span, evidence flagged, its
    confidence scaled by `DISAGREEING` when `earlier` readers guessed and none guessed its
    answer) and the reason it passes the question on, "" when it stands. `reader_point`: the
    offline reader's operating point, which `fit_answer` reads a model's sentence at."""
    from graphseek.agents.reading.answer_fit import fit_answer
    from graphseek.agents.reading.evidence import mark_support
    from graphseek.agents.reading.reader import same_answer

    if draft.error:
        return draft, f"its model call failed: {draft.error}"
    answer = draft.answer.strip()
    if says_unknown(answer):
        return draft, "it found no answer" if not answer else f"it answered {answer!r}"
    read = [f"{h.passage.title} {h.passage.text}" for h in hits]
    if reader.is_model:
        source = next((e for e in draft.evidence if answer_occurs(answer, e.text)), None)
        title = source.title if source else (draft.evidence[0].title if draft.evidence else "")
        fit = fit_answer(question, answer, reader_point, title, evidence=read)
        if not fit.fits:
            return draft, fit.reason
        if fit.answer != answer:
            answer = fit.answer
            draft = draft.model_copy(update={"answer": answer})
        if fit.answer not in ("yes", "no") and not any(answer_occurs(answer, t) for t in read):
            return draft, f"its answer {answer!r} is stated in none of the passages read"
        draft = draft.model_copy(update={"evidence": mark_support(draft.evidence, answer)})
        guesses = [g for g in earlier if g.strip()]
        if guesses and not any(same_answer(answer, g) for g in guesses):
            draft = draft.model_copy(update={"confidence": draft.confidence * DISAGREEING})
    elif not draft.evidence:
        return draft, "its answer has no evidence"
    if draft.confidence < reader.point:
        return draft, f"its confidence {draft.confidence:.2f} is below its point {reader.point:.2f}"
    return draft, ""
