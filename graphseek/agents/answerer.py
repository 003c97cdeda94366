"""Answerer role: the final answer from the refined context and What is Known, with the
passage ids that ground it, or an abstention (KAIR §4.1.3, the QA module)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from graphseek.agents.kair import format_context, format_gaps, format_known
from graphseek.agents.prompts.answerer import ANSWERER_SYSTEM, ANSWERER_USER
from graphseek.agents.roles import FinalAnswer, KnowledgeView, Step
from graphseek.llm import invoke_structured
from graphseek.state.bounds import Name, Names, Reasoning


class AnswerReply(BaseModel):
    reasoning: Reasoning = ""
    action: Literal["answer", "abstain"]
    answer: Name = ""
    passage_ids: Names = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class LLMAnswerer:
    def __init__(
        self,
        model,
        max_retries: int = 2,
        max_chars: int = 8000,
        callbacks: Sequence[Any] = (),
    ) -> None:
        self.model = model
        self.callbacks = list(callbacks)
        self.max_retries = max_retries
        self.max_chars = max_chars

    def answer(self, view: KnowledgeView) -> Step[FinalAnswer]:
        messages = [
            ("system", ANSWERER_SYSTEM),
            (
                "human",
                ANSWERER_USER.format(
                    question=view.question,
                    known=format_known(view.known),
                    required=format_gaps(view.required, view.answers),
                    context=format_context(view.refined_context, self.max_chars),
                ),
            ),
        ]
        out, usage = invoke_structured(
            self.model,
            AnswerReply,
            messages,
            max_retries=self.max_retries,
            callbacks=self.callbacks,
        )
        if out.action == "abstain" or not out.answer.strip():
            return Step(
                FinalAnswer(answer="", reason=out.reasoning or "the answerer abstained"), usage
            )
        return Step(
            FinalAnswer(
                answer=out.answer.strip(),
                passage_ids=tuple(out.passage_ids),
                confidence=out.confidence,
                reason=out.reasoning,
            ),
            usage,
        )
