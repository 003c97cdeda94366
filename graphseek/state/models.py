"""Pydantic models that cross node, tool and LLM boundaries: plan, facts, gaps, evidence, usage."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SubQuestion(BaseModel):
    """One step of a decomposition plan. `#N` in the text refers to the answer of step N."""

    id: int
    question: str
    depends_on: list[int] = Field(default_factory=list)


class EvidenceItem(BaseModel):
    """A grounding passage (and optionally the sentence inside it) for an answer."""

    model_config = ConfigDict(frozen=True)

    passage_id: str
    title: str = ""
    text: str = ""
    sentence: str = ""
    score: float = 0.0


class Draft(BaseModel):
    """The Librarian's answer to one sub-question, with the evidence that supports it."""

    question: str
    answer: str
    step_id: int | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    confidence: float = 0.0
    candidates: list[str] = Field(
        default_factory=list, description="Other plausible answers, best first (multiple answers)."
    )
    bridges: list[str] = Field(
        default_factory=list,
        description="Names in the evidence that may link the question to its answer, best first: "
        "a follow-up query adds one to reach the next hop.",
    )


class Fact(BaseModel):
    """A Known fact: a short statement with the passages that support it."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    passage_ids: list[str] = Field(default_factory=list)
    source: str = ""


class Gap(BaseModel):
    """A Required gap: information still missing to answer the question."""

    model_config = ConfigDict(frozen=True)

    id: str
    description: str
    resolved: bool = False


class Usage(BaseModel):
    """Cost of a run: LLM calls, tokens and wall-clock seconds."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            llm_calls=self.llm_calls + other.llm_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            seconds=self.seconds + other.seconds,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class SeekerAction(BaseModel):
    """The Seeker's move for one turn: ask the Librarian more questions, answer, or abstain."""

    reason: str = Field(default="", description="Why this action, in one or two sentences.")
    action: Literal["ask_librarian", "answer", "abstain"] = Field(
        description="ask_librarian, answer or abstain."
    )
    questions: list[str] = Field(
        default_factory=list, description="For ask_librarian: self-contained questions, no '#N'."
    )
    step_ids: list[int | None] = Field(
        default_factory=list,
        description="For ask_librarian: the plan step each question answers (None if none).",
    )
    answer: str = Field(default="", description="For answer: the final answer, exact wording.")
    evidence: list[str] = Field(
        default_factory=list, description="For answer: passage ids that support the answer."
    )
    confidence: float = 1.0
