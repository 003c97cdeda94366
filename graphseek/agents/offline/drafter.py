"""Logic drafting, offline policy (GraphSearch §3.1.2).

The chain lists each plan step with its best intermediate answer and passage; the answer is what
the offline Seeker concludes from the same drafts (last step of the chain, or the comparison of
the options' values); the gaps are the steps left without an answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.answer_types import parse_comparison
from graphseek.agents.offline.seeker import OfflineSeeker
from graphseek.agents.profiles import Profile
from graphseek.agents.roles import SeekerView, Step
from graphseek.agents.text import best_draft
from graphseek.state.models import Draft, SubQuestion
from graphseek.state.verdicts import LogicDraft


class OfflineDrafter:
    def __init__(
        self, abstain_threshold: float = 0.15, profile: str | Profile | None = None
    ) -> None:
        self.seeker = OfflineSeeker(abstain_threshold=abstain_threshold, profile=profile)
        self.profile = self.seeker.profile

    def draft(
        self, question: str, plan: Sequence[SubQuestion], drafts: Sequence[Draft]
    ) -> Step[LogicDraft]:
        plan = list(plan) or [SubQuestion(id=1, question=question)]
        comparison = parse_comparison(question, self.profile)
        chain: list[str] = []
        gaps: list[str] = []
        for step in plan:
            if comparison is not None and step is plan[-1] and step.depends_on:
                chain.append(f"#{step.id} compare: {step.question}")
                continue
            best = best_draft([d for d in drafts if d.step_id == step.id])
            if best is None or not best.answer:
                asked = best.question if best is not None else step.question
                chain.append(f"#{step.id} {asked} -> (no answer)")
                gaps.append(f"no answer to step {step.id}: {asked}")
                continue
            source = f" [{best.evidence[0].passage_id}]" if best.evidence else ""
            chain.append(f"#{step.id} {best.question} -> {best.answer}{source}")
        view = SeekerView(
            question=question, plan=plan, drafts=list(drafts), step_answers={}, turn=0, max_turns=1
        )
        action = self.seeker.decide(view).value
        if action.action != "answer":
            if not gaps:
                gaps.append(action.reason)
            return Step(LogicDraft(chain=chain, gaps=gaps, answer="", confidence=0.0))
        return Step(
            LogicDraft(
                chain=chain,
                answer=action.answer,
                evidence=list(action.evidence),
                gaps=gaps,
                confidence=action.confidence,
            )
        )
