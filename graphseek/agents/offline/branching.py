"""Branching paths and multiple answers for the offline Seeker (HiGraAgent §5.2, App. G).

`BranchingSeeker` wraps a Seeker policy:

- branching: when the Seeker sends a step whose upstream answer is uncertain (confidence below
  `branch_below`) and the Librarian listed other candidates for it, the same step is also asked
  on up to `max_branches` of those candidates, in the same turn (the questions go out in
  parallel); the downstream draft best supported by the evidence then decides the path;
- multiple answers: when the Seeker answers and the last step was asked on several branches that
  each found a different, well-supported answer (confidence at least `multi_above`, within
  `multi_margin` of the best), the answer lists them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.bridges import bridge_draft, chain_bridges, subjects
from graphseek.agents.profiles import GENERAL, Profile
from graphseek.agents.reading.chains import ChainChooser
from graphseek.agents.roles import Seeker, SeekerView, Step
from graphseek.agents.text import fill_placeholders, normalize
from graphseek.state.models import Draft, SeekerAction, SubQuestion


class BranchingSeeker:
    def __init__(
        self,
        inner: Seeker,
        max_branches: int = 2,
        branch_below: float = 0.5,
        multi_above: float = 0.6,
        multi_margin: float = 0.1,
        chooser: ChainChooser | None = None,
    ) -> None:
        self.inner = inner
        self.chooser = chooser
        self.max_branches = max_branches
        self.branch_below = branch_below
        self.multi_above = multi_above
        self.multi_margin = multi_margin

    def decide(self, view: SeekerView) -> Step[SeekerAction]:
        step = self.inner.decide(view)
        action = step.value
        if action.action == "ask_librarian":
            action = self._branch(view, action)
        else:
            joint = self._joint(view)
            if joint is not None:
                # branches through different bridges are alternatives, not a plural answer
                action = joint
            elif action.action == "answer":
                action = self._multiple(view, action)
        return Step(action, step.usage)

    def _joint(self, view: SeekerView) -> SeekerAction | None:
        """Decide a branched last step by the joint support of bridge and answer
        (`graphseek.agents.reading.chains`); the inner rule stands where the chooser cannot."""
        if self.chooser is None or len(view.plan) < 2:
            return None
        last = view.plan[-1]
        if len(last.depends_on) != 1:
            return None
        dep = last.depends_on[0]
        upstream = [d for d in view.drafts if d.step_id == dep]
        hop = next((s for s in view.plan if s.id == dep), None)
        bridges = chain_bridges(view.question, view.bridges, self._profile)
        if hop is not None and bridges:
            # a sentence bridge is another reading of the hop, as sure as its activation
            own = _best(upstream)
            found = subjects(bridges, hop, own.answer if own else "", self._profile)
            upstream += [bridge_draft(hop, b) for b in found]
        finals = [d for d in view.drafts if d.step_id == last.id]
        choice = self.chooser.choose(last.question, str(dep), upstream, finals)
        if choice is None:
            return None
        others = [
            d.confidence
            for s in view.plan[:-1]
            if s.id != dep
            for d in [_best([x for x in view.drafts if x.step_id == s.id])]
            if d is not None
        ]
        confidence = min([choice.confidence, *others])
        threshold = float(getattr(self.inner, "abstain_threshold", 0.5))
        if confidence < threshold:
            return SeekerAction(
                reason=f"No chain is supported enough: the best, through {choice.bridge!r}, "
                f"answers {choice.draft.answer!r} with confidence {confidence:.2f} < "
                f"{threshold:.2f} ({choice.branches} bridges weighed).",
                action="abstain",
                answer="",
                confidence=0.0,
            )
        bridge = normalize(choice.bridge)
        source = next((d for d in upstream if normalize(d.answer) == bridge), _best(upstream))
        ids: list[str] = []
        for d in [source, choice.draft]:
            for item in d.evidence[:1] if d is not None else []:
                if item.passage_id not in ids:
                    ids.append(item.passage_id)
        return SeekerAction(
            reason=f"Chose the chain through {choice.bridge!r} of {choice.branches} bridges by "
            "the joint support of both hops.",
            action="answer",
            answer=choice.draft.answer,
            evidence=ids,
            confidence=round(confidence, 4),
        )

    def _branch(self, view: SeekerView, action: SeekerAction) -> SeekerAction:
        plan = {s.id: s for s in view.plan}
        asked = {normalize(d.question) for d in view.drafts} | {
            normalize(q) for q in action.questions
        }
        questions = list(action.questions)
        step_ids = list(action.step_ids) + [None] * (len(questions) - len(action.step_ids))
        answers = {k: v for k, v in view.step_answers.items() if v}
        for sid in list(step_ids):
            step = plan.get(sid) if sid is not None else None
            if step is None:
                continue
            for alternative_question in self._alternatives(step, view, answers):
                if normalize(alternative_question) in asked:
                    continue
                asked.add(normalize(alternative_question))
                questions.append(alternative_question)
                step_ids.append(step.id)
        if len(questions) == len(action.questions):
            return action
        extra = len(questions) - len(action.questions)
        return action.model_copy(
            update={
                "questions": questions,
                "step_ids": step_ids,
                "reason": f"{action.reason} Also following {extra} alternative branch(es) "
                "of an uncertain earlier answer.".strip(),
            }
        )

    def _alternatives(
        self, step: SubQuestion, view: SeekerView, answers: dict[str, str]
    ) -> list[str]:
        """The step on the uncertain hop's other candidates, then on its best sentence bridge
        other than its answer (when the run bridges: `SeekerView.bridges`)."""
        out: list[str] = []
        bridges = chain_bridges(view.question, view.bridges, self._profile)
        for dep in step.depends_on:
            upstream = _best([d for d in view.drafts if d.step_id == dep])
            if upstream is None or upstream.confidence >= self.branch_below:
                continue
            alternatives = list(upstream.candidates[: self.max_branches])
            hop = next((s for s in view.plan if s.id == dep), None)
            if hop is not None and bridges:
                taken = {normalize(a) for a in alternatives}
                found = subjects(bridges, hop, upstream.answer, self._profile)
                alternatives += [b.entity for b in found if normalize(b.entity) not in taken][:1]
            for alternative in alternatives:
                out.append(fill_placeholders(step.question, {**answers, str(dep): alternative}))
        return out

    @property
    def _profile(self) -> Profile:
        profile = getattr(self.inner, "profile", None)
        return profile if isinstance(profile, Profile) else GENERAL

    def _multiple(self, view: SeekerView, action: SeekerAction) -> SeekerAction:
        if not view.plan:
            return action
        last = view.plan[-1]
        finals = [d for d in view.drafts if d.step_id == last.id and d.answer]
        if len({normalize(d.question) for d in finals}) < 2:
            return action
        best = max(d.confidence for d in finals)
        supported: list[str] = []
        for d in sorted(finals, key=lambda d: -d.confidence):
            if d.confidence < max(self.multi_above, best - self.multi_margin):
                continue
            if normalize(d.answer) not in {normalize(a) for a in supported}:
                supported.append(d.answer)
        if len(supported) < 2 or normalize(action.answer) not in {normalize(a) for a in supported}:
            return action
        ids = list(action.evidence)
        for d in finals:
            if d.answer in supported:
                ids.extend(e.passage_id for e in d.evidence[:1] if e.passage_id not in ids)
        return action.model_copy(
            update={
                "answer": " and ".join(supported),
                "evidence": ids,
                "reason": f"{action.reason} {len(supported)} branches are each supported.".strip(),
            }
        )


def _best(drafts: Sequence[Draft]) -> Draft | None:
    answered = [d for d in drafts if d.answer]
    return max(answered, key=lambda d: d.confidence) if answered else None
