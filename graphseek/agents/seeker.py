"""Seeker role: each turn, ask the Librarian, answer, or abstain (HiGraAgent §5.2, App. Q)."""

from __future__ import annotations

from graphseek.agents.formatting import format_history, format_plan
from graphseek.agents.prompts.seeker import SEEKER_SYSTEM, SEEKER_USER
from graphseek.agents.roles import SeekerView, Step
from graphseek.llm import invoke_structured
from graphseek.state.models import SeekerAction

ACTIONS = ("ask_librarian", "answer", "abstain")


class LLMSeeker:
    def __init__(self, model, max_retries: int = 2) -> None:
        self.model = model
        self.max_retries = max_retries

    def decide(self, view: SeekerView) -> Step[SeekerAction]:
        messages = [
            ("system", SEEKER_SYSTEM),
            (
                "human",
                SEEKER_USER.format(
                    question=view.question,
                    plan=format_plan(view.plan),
                    history=format_history(view.drafts),
                    turn=view.turn + 1,
                    max_turns=view.max_turns,
                ),
            ),
        ]
        out, usage = invoke_structured(
            self.model, SeekerAction, messages, max_retries=self.max_retries
        )
        assert isinstance(out, SeekerAction)
        if out.action not in ACTIONS or (out.action == "ask_librarian" and not out.questions):
            # a well-formed reply with an unusable action: treat as a request to stop
            out = out.model_copy(update={"action": "abstain" if not out.answer else "answer"})
        questions = [q.replace("#", "").strip() for q in out.questions if q.strip()]
        step_ids = list(out.step_ids) + [None] * (len(questions) - len(out.step_ids))
        return Step(
            out.model_copy(update={"questions": questions, "step_ids": step_ids[: len(questions)]}),
            usage,
        )
