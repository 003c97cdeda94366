"""Seeker role: each turn, ask the Librarian, answer, or abstain (HiGraAgent §5.2, App. Q).

The rules that hold over the LLM Seeker's choice (applied by `dual_agent`'s `decide_action`):

- the A2RAG gate: a draft of the question's last hop whose answer its own evidence states
  (`supported_draft`) ends the loop with that answer instead of another Librarian round;
- no repeated round: questions already asked are not sent again (`new_questions`); a round with
  nothing new ends the loop with the best supported draft, or abstains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graphseek.agents.formatting import format_bridges, format_history, format_plan
from graphseek.agents.offline.bridges import asked_through
from graphseek.agents.prompts.seeker import SEEKER_BRIDGES, SEEKER_SYSTEM, SEEKER_USER
from graphseek.agents.roles import SeekerView, Step
from graphseek.agents.structured_role import StructuredRole
from graphseek.agents.text import contains, fill_placeholders, normalize
from graphseek.state.models import Draft, SeekerAction, SubQuestion

ACTIONS = ("ask_librarian", "answer", "abstain")

#: the confidence at which a supported draft of the last hop ends the loop (the A2RAG gate)
GATE_CONFIDENCE = 0.5


def is_supported(draft: Draft) -> bool:
    """The draft's answer occurs, normalised and as whole words, in the text of its evidence."""
    answer = normalize(draft.answer)
    if not answer or draft.error:
        return False
    return any(
        f" {answer} " in f" {normalize(text)} "
        for e in draft.evidence
        for text in (e.text, e.sentence)
        if text
    )


def covers_last_hop(
    draft: Draft,
    question: str,
    plan: Sequence[SubQuestion],
    answers: Mapping[str, str] | None = None,
) -> bool:
    """The draft answers the plan's final step (the question's last hop: by step id, else by its
    text with the `#N` of answered steps filled), or the question itself."""
    if plan and draft.step_id is not None:
        return draft.step_id == plan[-1].id
    asked = normalize(draft.question)
    if asked == normalize(question):
        return True
    return bool(plan) and asked == normalize(fill_placeholders(plan[-1].question, answers or {}))


def supported_draft(
    question: str,
    plan: Sequence[SubQuestion],
    drafts: Sequence[Draft],
    min_confidence: float,
    answers: Mapping[str, str] | None = None,
) -> Draft | None:
    """The most confident draft of the last hop, at `min_confidence` or above, whose answer its
    evidence states; None when there is none."""
    found = [
        d
        for d in drafts
        if d.confidence >= min_confidence
        and covers_last_hop(d, question, plan, answers)
        and is_supported(d)
    ]
    return max(found, key=lambda d: d.confidence) if found else None


def new_questions(
    action: SeekerAction, drafts: Sequence[Draft]
) -> tuple[list[str], list[int | None], list[str]]:
    """The questions of an `ask_librarian` not asked before (normalised, once each), their step
    ids, and the repeated ones."""
    asked = {normalize(d.question) for d in drafts}
    questions: list[str] = []
    step_ids: list[int | None] = []
    repeated: list[str] = []
    step_of = list(action.step_ids) + [None] * (len(action.questions) - len(action.step_ids))
    for question, step_id in zip(action.questions, step_of, strict=False):
        key = normalize(question)
        if key in asked:
            repeated.append(question)
            continue
        asked.add(key)
        questions.append(question)
        step_ids.append(step_id)
    return questions, step_ids, repeated


def followed_bridges(
    questions: Sequence[str],
    step_ids: Sequence[int | None],
    view: SeekerView,
    own_wording: bool = True,
) -> list[str]:
    """A note for each question that asks a step about a sentence bridge (`SeekerView.bridges`):
    the step filled with the bridge instead of its hop's answer, or, with `own_wording` (a
    model's questions), a question naming a bridge that neither the question nor any step's
    answer names."""
    if not view.bridges:
        return []
    steps = {s.id: s for s in view.plan}
    answers = {k: str(v) for k, v in view.step_answers.items() if v}
    known = [view.question, *answers.values()]
    notes: list[str] = []
    for question, sid in zip(questions, step_ids, strict=False):
        step = steps.get(sid) if sid is not None else None
        via = asked_through(question, step, answers, view.bridges) if step else None
        bridge = via[1] if via else None
        if bridge is None and own_wording:
            bridge = next(
                (
                    b
                    for b in view.bridges
                    if contains(question, b.entity)
                    and not any(contains(k, b.entity) for k in known)
                ),
                None,
            )
        if bridge is not None:
            notes.append(
                f"{question!r} asks about {bridge.entity!r}, reached from {bridge.source!r} in "
                f"[{bridge.passage_id}] {bridge.sentence[:120]!r}"
            )
    return notes


class LLMSeeker(StructuredRole):
    def decide(self, view: SeekerView) -> Step[SeekerAction]:
        lines = format_bridges(view.bridges)
        user = SEEKER_USER.format(
            question=view.question,
            plan=format_plan(view.plan),
            history=format_history(view.drafts),
            bridges=SEEKER_BRIDGES.format(lines=lines) if lines else "",
            turn=view.turn + 1,
            max_turns=view.max_turns,
        )
        out, usage = self.ask(SeekerAction, SEEKER_SYSTEM, user)
        if out.action not in ACTIONS or (out.action == "ask_librarian" and not out.questions):
            # a well-formed reply with an unusable action: treat as a request to stop
            out = out.model_copy(update={"action": "abstain" if not out.answer else "answer"})
        questions = [q.replace("#", "").strip() for q in out.questions if q.strip()]
        step_ids = list(out.step_ids) + [None] * (len(questions) - len(out.step_ids))
        return Step(
            out.model_copy(update={"questions": questions, "step_ids": step_ids[: len(questions)]}),
            usage,
        )
