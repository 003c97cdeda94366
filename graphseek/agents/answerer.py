"""Answerer role: the final answer from the refined context and What is Known, with the
passage ids that ground it, or an abstention (KAIR §4.1.3, the QA module)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from graphseek.agents.kair import format_context, format_gaps, format_known
from graphseek.agents.prompts.answerer import ANSWERER_SYSTEM, ANSWERER_USER
from graphseek.agents.roles import FinalAnswer, KnowledgeView, Step
from graphseek.agents.structured_role import PassageRole
from graphseek.state.bounds import Name, Names, Reasoning


class AnswerReply(BaseModel):
    reasoning: Reasoning = ""
    action: Literal["answer", "abstain"]
    answer: Name = ""
    passage_ids: Names = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class LLMAnswerer(PassageRole):
    max_chars = 8000

    def answer(self, view: KnowledgeView) -> Step[FinalAnswer]:
        user = ANSWERER_USER.format(
            question=view.question,
            known=format_known(view.known),
            required=format_gaps(view.required, view.answers),
            context=format_context(view.refined_context, self.max_chars),
        )
        out, usage = self.ask(AnswerReply, ANSWERER_SYSTEM, user)
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
