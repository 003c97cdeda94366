"""Query expansion, offline policy (GraphSearch §3.1.2).

For each plan step left without a well-supported answer (and whose inputs are known), a new
query for the same step: a rephrasing of it, the step built on an upstream alternative answer
(a branch), or its names aligned to the evidence titles; the first one not asked before.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.answer_types import parse_comparison
from graphseek.agents.offline.seeker import rephrase
from graphseek.agents.profiles import Profile, get_profile
from graphseek.agents.roles import Step
from graphseek.agents.text import align_names, best_draft, fill_placeholders, normalize
from graphseek.state.models import Draft, SubQuestion
from graphseek.state.verdicts import LogicDraft, Verification

#: a step answered below this confidence is searched again
RETRY_BELOW = 0.35


class OfflineExpander:
    def __init__(
        self, retry_below: float = RETRY_BELOW, profile: str | Profile | None = None
    ) -> None:
        self.retry_below = retry_below
        self.profile = get_profile(profile)

    def expand(
        self,
        question: str,
        plan: Sequence[SubQuestion],
        drafts: Sequence[Draft],
        logic: LogicDraft,
        verification: Verification,
        asked: Sequence[str],
    ) -> Step[list[SubQuestion]]:
        seen = {normalize(q) for q in asked}
        best = {s.id: best_draft([d for d in drafts if d.step_id == s.id]) for s in plan}
        answers = {str(k): d.answer for k, d in best.items() if d is not None and d.answer}
        titles = [e.title for d in drafts for e in d.evidence if e.title]
        comparison = parse_comparison(question, self.profile)
        out: list[SubQuestion] = []
        for step in plan:
            if comparison is not None and step is plan[-1] and step.depends_on:
                continue
            draft = best.get(step.id)
            if draft is not None and draft.answer and draft.confidence >= self.retry_below:
                continue
            if not all(str(d) in answers for d in step.depends_on):
                continue
            filled = fill_placeholders(step.question, answers)
            options = [filled, rephrase(filled, self.profile), align_names(filled, titles)]
            for dep in step.depends_on:
                upstream = best.get(dep)
                for alternative in upstream.candidates[:2] if upstream is not None else []:
                    options.append(
                        fill_placeholders(step.question, {**answers, str(dep): alternative})
                    )
            for option in options:
                if option and normalize(option) not in seen:
                    seen.add(normalize(option))
                    out.append(SubQuestion(id=step.id, question=option))
                    break
        return Step(out)
