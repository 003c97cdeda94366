"""Clarifier role: make sure the question starts with a question word (HiGraAgent App. P.1)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM, CLARIFIER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole
from graphseek.agents.text import starts_with_wh as is_wh_question
from graphseek.state.bounds import Reasoning, Sentence
from graphseek.state.models import Usage


class ClarifiedQuestion(BaseModel):
    reason: Reasoning = ""
    question: Sentence = Field(description="The question, rewritten to start with a question word.")


class LLMClarifier(StructuredRole):
    """Rewrites with the model only when the question does not start with a wh-word."""

    def clarify(self, question: str) -> Step[str]:
        if is_wh_question(question):
            return Step(question, Usage())
        user = CLARIFIER_USER.format(question=question)
        out, usage = self.ask(ClarifiedQuestion, CLARIFIER_SYSTEM, user)
        return Step(out.question.strip() or question, usage)
