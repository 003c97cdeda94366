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
from graphseek.agents.reading.chains import ChainChooser, JointChooser
from graphseek.agents.roles import Librarian
from graphseek.agents.text import fill_placeholders
from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft, SubQuestion

#: the offline Librarian's confidence from which a step counts as answered
ANSWERED = 0.5
_JOINT = JointChooser()


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


#: below this step-1 confidence a two-step chain is followed through several bridges
JOINT_BELOW = 0.8


def resolve_chain(
    librarian: Librarian,
    question: str,
    hits: Sequence[Hit],
    threshold: float = ANSWERED,
    chooser: ChainChooser | None = _JOINT,
) -> Chain:
    """Answer the plan of `question` in order over `hits`, stopping at the first weak step.
    A two-step plan whose bridge is uncertain is read through its best bridges and decided by
    `chooser` (`graphseek.agents.reading.chains`) where the Librarian reports per-candidate
    confidences."""
    plan, whole = plan_for(question, profile_of(librarian))
    chain = Chain(plan=plan, whole=whole)
    if not hits:
        chain.missing.append(plan[0].question)
        return chain
    first: Draft | None = None  # step 1's draft when the joint reading declined
    if chooser is not None and not whole:
        decided, first = _joint(librarian, chain, hits, threshold, chooser)
        if decided:
            return chain
    for step in plan:
        if not all(str(d) in chain.answers for d in step.depends_on):
            chain.missing.append(step.question)
            break
        text = fill_placeholders(step.question, chain.answers)
        if first is not None and step is plan[0]:
            draft = first
        else:
            draft = librarian.draft(text, hits).value
        chain.filled[step.id] = text
        chain.drafts[step.id] = draft
        if draft.answer and draft.confidence >= threshold:
            chain.answers[str(step.id)] = draft.answer
        else:
            chain.missing.append(text)
            break
    return chain


def _joint(
    librarian: Librarian,
    chain: Chain,
    hits: Sequence[Hit],
    threshold: float,
    chooser: ChainChooser,
    branches: int = 3,
) -> tuple[bool, Draft | None]:
    """Resolve a two-step chain through its `branches` best bridges: (decided, step 1's
    draft, which the step-by-step reading reuses when the chain was not decided here)."""
    plan = chain.plan
    if len(plan) != 2 or plan[1].depends_on != [plan[0].id]:
        return False, None
    first, last = plan
    upstream = librarian.draft(first.question, hits).value
    if not upstream.answer or upstream.confidence >= JOINT_BELOW or not upstream.candidates:
        return False, upstream
    if len(upstream.candidate_confidences) != len(upstream.candidates):
        return False, upstream
    key = str(first.id)
    finals = [
        librarian.draft(fill_placeholders(last.question, {key: bridge}), hits).value
        for bridge in [upstream.answer, *upstream.candidates][:branches]
    ]
    choice = chooser.choose(last.question, key, [upstream], finals)
    if choice is None or choice.confidence < threshold:
        return False, upstream  # no chain is supported enough: the step-by-step reading decides
    chain.filled[first.id] = first.question
    chain.drafts[first.id] = upstream.model_copy(
        update={"answer": choice.bridge, "confidence": choice.confidence}
    )
    chain.filled[last.id] = fill_placeholders(last.question, {key: choice.bridge})
    chain.drafts[last.id] = choice.draft.model_copy(update={"confidence": choice.confidence})
    chain.answers[key] = choice.bridge
    chain.answers[str(last.id)] = choice.draft.answer
    return True, upstream
