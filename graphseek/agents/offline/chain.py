"""Resolve a question's decomposition step by step over a fixed set of passages (offline).

The offline sufficiency check, rewriter and ReAct thinker share it: the grammar-based plan is
answered in order by the offline Librarian, each step's `#N` filled with the answers before it,
until a step cannot be answered with enough confidence. Comparison and yes/no questions are
drafted whole (the offline Librarian resolves their options itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from graphseek.agents.offline.answer_types import expected_answer
from graphseek.agents.offline.decomposer import decompose_question
from graphseek.agents.profiles import Profile, get_profile
from graphseek.agents.roles import Librarian
from graphseek.agents.text import fill_placeholders
from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft, SubQuestion

#: the offline Librarian's confidence from which a step counts as answered
ANSWERED = 0.5


@dataclass
class Chain:
    """How far a question's plan resolves over some passages."""

    plan: list[SubQuestion]
    answers: dict[str, str] = field(default_factory=dict)
    drafts: dict[int, Draft] = field(default_factory=dict)
    filled: dict[int, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    whole: bool = False  # drafted as one question (comparison, yes/no)

    @property
    def resolved(self) -> bool:
        return not self.missing and bool(self.plan) and str(self.plan[-1].id) in self.answers

    @property
    def final(self) -> Draft | None:
        return self.drafts.get(self.plan[-1].id) if self.plan else None

    def remaining_hop(self) -> str | None:
        """The last step with every earlier answer filled in, when all earlier steps resolved
        (the question with its satisfied constraints dropped)."""
        if self.whole or len(self.plan) < 2:
            return None
        last = self.plan[-1]
        if not all(str(d) in self.answers for d in last.depends_on):
            return None
        if any(str(s.id) not in self.answers for s in self.plan[:-1]):
            return None
        return fill_placeholders(last.question, self.answers)


def profile_of(librarian: Any) -> Profile:
    """The reading profile of an offline Librarian (`general` for any other Librarian)."""
    return get_profile(getattr(librarian, "profile", None))


def plan_for(question: str, profile: str | Profile | None = None) -> tuple[list[SubQuestion], bool]:
    """The offline plan of a question, and whether it is drafted whole."""
    profile = get_profile(profile)
    qa = expected_answer(question, profile)
    if qa.comparison is not None or qa.kind in ("yesno", "choice"):
        return [SubQuestion(id=1, question=question)], True
    plan = decompose_question(question, profile) or [SubQuestion(id=1, question=question)]
    return plan, False


def resolve_chain(
    librarian: Librarian, question: str, hits: Sequence[Hit], threshold: float = ANSWERED
) -> Chain:
    """Answer the plan of `question` in order over `hits`, stopping at the first weak step."""
    plan, whole = plan_for(question, profile_of(librarian))
    chain = Chain(plan=plan, whole=whole)
    if not hits:
        chain.missing.append(plan[0].question)
        return chain
    for step in plan:
        if not all(str(d) in chain.answers for d in step.depends_on):
            chain.missing.append(step.question)
            break
        text = fill_placeholders(step.question, chain.answers)
        draft = librarian.draft(text, hits).value
        chain.filled[step.id] = text
        chain.drafts[step.id] = draft
        if draft.answer and draft.confidence >= threshold:
            chain.answers[str(step.id)] = draft.answer
        else:
            chain.missing.append(text)
            break
    return chain
