"""Verifiers, offline policies.

Triple-Check (A2RAG §III-B2): relevance — the evidence names the question's entities or shares
its words; grounding — the answer occurs in the cited sentences or passages; adequacy — the
answer is non-empty, not one of the question's own entities, and of the expected kind (yes/no,
one of the options, a date).

Evidence verification (GraphSearch §3.1.2): accept a logic draft with an answer, no gaps and
enough confidence whose answer occurs in the evidence; otherwise reject, naming the gaps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphseek.agents.offline.answer_types import expected_answer
from graphseek.agents.profiles import GENERAL, Profile, get_profile
from graphseek.agents.roles import Step
from graphseek.agents.text import (
    answer_occurs,
    content_words,
    name_coverage,
    normalize,
    overlap,
    parse_date,
    question_names,
)
from graphseek.state.models import Draft, EvidenceItem
from graphseek.state.verdicts import LogicDraft, Verification

#: share of the question's content words the evidence must hold when it names none of its names
MIN_OVERLAP = 0.3


class OfflineTripleChecker:
    def __init__(self, profile: str | Profile | None = None) -> None:
        self.profile = get_profile(profile)

    def check(
        self, question: str, answer: str, evidence: Sequence[EvidenceItem]
    ) -> Step[Verification]:
        return Step(triple_check(question, answer, evidence, self.profile))


def triple_check(
    question: str,
    answer: str,
    evidence: Sequence[EvidenceItem],
    profile: Profile = GENERAL,
) -> Verification:
    texts = [f"{e.title}\n{e.text}" for e in evidence]
    # relevance
    if not evidence:
        return Verification(passed=False, failure="relevance", reason="No evidence was cited.")
    names = question_names(question)
    found = name_coverage(names, texts)
    words = overlap(content_words(question), "\n".join(texts))
    if (names and found == 0.0) or (not names and words < MIN_OVERLAP):
        return Verification(
            passed=False,
            failure="relevance",
            reason=f"The evidence names none of {', '.join(names) or 'the question words'} "
            f"(word overlap {words:.2f}).",
        )
    qa = expected_answer(question, profile)
    answer = answer.strip()
    # grounding
    if not answer:
        return Verification(passed=False, failure="grounding", reason="There is no answer.")
    if qa.kind != "yesno" and qa.comparison is None:
        cited = [e.sentence for e in evidence if e.sentence] or [e.text for e in evidence]
        if not any(answer_occurs(answer, t) for t in cited) and not any(
            answer_occurs(answer, t) for t in texts
        ):
            return Verification(
                passed=False,
                failure="grounding",
                reason=f"{answer!r} does not occur in the cited evidence.",
            )
    # adequacy
    problem = _inadequate(question, answer, names, profile)
    if problem:
        return Verification(passed=False, failure="adequacy", reason=problem)
    return Verification(passed=True, reason="The evidence is on topic and states the answer.")


def _inadequate(question: str, answer: str, names: Sequence[str], profile: Profile) -> str | None:
    qa = expected_answer(question, profile)
    norm = normalize(answer)
    if qa.kind == "yesno" and qa.comparison is None:
        return None if norm in {"yes", "no"} else f"{answer!r} is not yes or no."
    if qa.comparison is not None:
        if qa.comparison.pick == "same":
            return None if norm in {"yes", "no"} else f"{answer!r} is not yes or no."
        options = [normalize(o) for o in qa.comparison.options]
        if not any(norm == o or norm in o or o in norm for o in options):
            return f"{answer!r} is none of the options {', '.join(qa.comparison.options)}."
        return None
    if any(normalize(n) == norm for n in names):
        return f"{answer!r} only repeats an entity of the question."
    strict = qa.labels == ["DATE"] and parse_date(answer) is None
    if strict or (qa.labels[:1] == ["DATE"] and not re.search(r"\d", answer)):
        # a date or time holds a number ("1824", "3 a.m."); a date relation wants a whole date
        return f"{answer!r} is not a date, and the question asks when."
    return None


class OfflineEvidenceVerifier:
    def __init__(self, threshold: float = 0.35, profile: str | Profile | None = None) -> None:
        self.threshold = threshold
        self.profile = get_profile(profile)

    def verify(
        self, question: str, drafts: Sequence[Draft], logic: LogicDraft
    ) -> Step[Verification]:
        if not logic.answer:
            missing = logic.gaps or [f"an answer to: {question}"]
            return Step(
                Verification(
                    passed=False,
                    failure="reject",
                    reason="The chain reaches no answer.",
                    missing=missing,
                )
            )
        if logic.gaps:
            return Step(
                Verification(
                    passed=False,
                    failure="reject",
                    reason=f"The chain has {len(logic.gaps)} gap(s).",
                    missing=list(logic.gaps),
                )
            )
        if logic.confidence < self.threshold:
            return Step(
                Verification(
                    passed=False,
                    failure="reject",
                    reason=f"The chain is weakly supported (confidence {logic.confidence:.2f}).",
                    missing=[f"stronger evidence for {logic.answer!r}"],
                )
            )
        qa = expected_answer(question, self.profile)
        if qa.kind != "yesno" and qa.comparison is None:
            texts = [e.sentence or e.text for d in drafts for e in d.evidence]
            texts += [e.text for d in drafts for e in d.evidence]
            if not any(answer_occurs(logic.answer, t) for t in texts):
                return Step(
                    Verification(
                        passed=False,
                        failure="reject",
                        reason=f"{logic.answer!r} occurs in none of the evidence.",
                        missing=[f"a passage stating {logic.answer!r}"],
                    )
                )
        return Step(Verification(passed=True, reason="Every step is answered and grounded."))
