"""Clarifier role: make sure the question starts with a question word (HiGraAgent App. P.1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM, CLARIFIER_USER
from graphseek.agents.roles import Step
from graphseek.agents.text import starts_with_wh as is_wh_question
from graphseek.llm import invoke_structured
from graphseek.state.bounds import Reasoning, Sentence
from graphseek.state.models import Usage


class ClarifiedQuestion(BaseModel):
    reason: Reasoning = ""
    question: Sentence = Field(description="The question, rewritten to start with a question word.")


class LLMClarifier:
    """Rewrites with the model only when the question does not start with a wh-word."""

    def __init__(
        self,
        model,
        max_retries: int = 2,
        callbacks: Sequence[Any] = (),
    ) -> None:
        self.model = model
        self.callbacks = list(callbacks)
        self.max_retries = max_retries

    def clarify(self, question: str) -> Step[str]:
        if is_wh_question(question):
            return Step(question, Usage())
        messages = [
            ("system", CLARIFIER_SYSTEM),
            ("human", CLARIFIER_USER.format(question=question)),
        ]
        out, usage = invoke_structured(
            self.model,
            ClarifiedQuestion,
            messages,
            max_retries=self.max_retries,
            callbacks=self.callbacks,
        )
        assert isinstance(out, ClarifiedQuestion)
        return Step(out.question.strip() or question, usage)
