"""Decomposer role: a plan of sub-questions with dependencies (HiGraAgent App. P.2)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from graphseek.agents.grammar import question_features
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM, DECOMPOSER_USER
from graphseek.agents.roles import Step
from graphseek.llm import invoke_structured
from graphseek.state.bounds import LIST_ITEMS, OBJECT_ITEMS, Name, Reasoning, Sentence, first_items
from graphseek.state.models import SubQuestion


class PlannedStep(BaseModel):
    id: int
    question: Sentence
    depends_on: Annotated[
        list[int], BeforeValidator(first_items(LIST_ITEMS)), Field(max_length=LIST_ITEMS)
    ] = Field(default_factory=list)

    @field_validator("depends_on", mode="before")
    @classmethod
    def _listify(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, int):
            return [value]
        return value


class Decomposition(BaseModel):
    reason: Reasoning = ""
    question_subject: Name = ""
    sub_questions: Annotated[
        list[PlannedStep],
        BeforeValidator(first_items(OBJECT_ITEMS)),
        Field(max_length=OBJECT_ITEMS),
    ] = Field(min_length=1)


def normalise_plan(steps: list[PlannedStep]) -> list[SubQuestion]:
    """Renumber from 1 in order and drop dependencies on unknown or later steps."""
    mapping = {s.id: i for i, s in enumerate(steps, 1)}
    plan = []
    for i, s in enumerate(steps, 1):
        deps = sorted({mapping[d] for d in s.depends_on if d in mapping and mapping[d] < i})
        text = s.question
        for old, new in sorted(mapping.items(), key=lambda kv: -len(str(kv[0]))):
            if old != new:
                text = text.replace(f"#{old}", f"#{new}")
        plan.append(SubQuestion(id=i, question=text, depends_on=deps))
    return plan


class LLMDecomposer:
    """Feeds spaCy's grammar features to the model and asks for a dependency-aware plan."""

    def __init__(self, model, max_retries: int = 2) -> None:
        self.model = model
        self.max_retries = max_retries

    def decompose(self, question: str) -> Step[list[SubQuestion]]:
        features = question_features(question)
        messages = [
            ("system", DECOMPOSER_SYSTEM),
            (
                "human",
                DECOMPOSER_USER.format(
                    question=question, features=features.model_dump_json(indent=2)
                ),
            ),
        ]
        out, usage = invoke_structured(
            self.model, Decomposition, messages, max_retries=self.max_retries
        )
        assert isinstance(out, Decomposition)
        return Step(normalise_plan(out.sub_questions), usage)
