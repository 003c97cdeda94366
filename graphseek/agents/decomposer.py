"""Decomposer role: a plan of sub-questions with dependencies (HiGraAgent App. P.2).

The LLM policy's plan must keep every hop of the question: its last step has to ask for what the
question asks for (`dropped_hop`: the answer type, the relation of a person question, the last
relation the grammar decomposition finds). A plan that dropped a hop ("Where was the director of
X born?" planned as only "Who directed X?") is repaired (`repair_plan`): by the offline grammar
decomposition when it splits the question, else by asking the question itself as a last step
that depends on the model's steps; the repair is noted in the step's `notes`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, field_validator

from graphseek.agents.grammar import question_features
from graphseek.agents.offline.answer_types import parse_comparison
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM, DECOMPOSER_USER
from graphseek.agents.reading.question import AnswerSpec, analyse_question
from graphseek.agents.roles import Decomposer, Step
from graphseek.agents.structured_role import StructuredRole
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


# -- keeping every hop -------------------------------------------------------------------------

#: answer kinds that say what a question asks for (a "name" or "thing" says little)
_TELLING_KINDS = frozenset({"person", "org", "group", "place", "date", "number", "yesno"})
#: person heads that name a type of answer, not a relation to follow
_TYPE_HEADS = frozenset({"person", "people", "man", "woman"})
_PLACEHOLDER = re.compile(r"#\d+")


def _spec(text: str) -> AnswerSpec:
    return analyse_question(_PLACEHOLDER.sub(" ", text))


def _kinds_agree(want: AnswerSpec, got: AnswerSpec) -> bool:
    if want.primary not in _TELLING_KINDS or got.primary not in _TELLING_KINDS:
        return True
    return got.weight(want.primary) >= 0.5 or want.weight(got.primary) >= 0.5


def dropped_hop(
    question: str, plan: Sequence[SubQuestion], reference: Sequence[SubQuestion] = ()
) -> str:
    """Why the last step of `plan` does not ask for what `question` asks for ("" when it does).

    - the answer types differ ("Where ...?" planned to end on "Who ...?");
    - a person question's relation ("Who is the mother of ...?") is not in the last step;
    - the grammar decomposition `reference` has more steps and its last step's relation words
      are not in the plan's last step.
    """
    if not plan:
        return ""
    want, last = _spec(question), _spec(plan[-1].question)
    if not _kinds_agree(want, last):
        return f"its last step asks for a {last.primary}, the question for a {want.primary}"
    if (
        want.primary == "person"
        and want.head_words
        and want.head not in _TYPE_HEADS
        and not want.head_words & last.words
        and parse_comparison(question) is None
    ):
        return f"its last step does not ask for the {want.head}"
    if len(reference) > len(plan):
        ref = _spec(reference[-1].question).relation_words
        if ref and not ref & last.relation_words:
            return f"its last step does not ask about {', '.join(sorted(ref))}"
    return ""


def repair_plan(
    question: str, plan: Sequence[SubQuestion], reference: Sequence[SubQuestion]
) -> list[SubQuestion]:
    """A plan that keeps the question's last hop: the grammar decomposition `reference` when it
    splits the question and keeps the hop, else `plan` followed by the question itself,
    depending on every step of `plan`."""
    if len(reference) > 1 and not dropped_hop(question, reference):
        return list(reference)
    steps = list(plan)
    return [
        *steps,
        SubQuestion(id=len(steps) + 1, question=question, depends_on=[s.id for s in steps]),
    ]


class LLMDecomposer(StructuredRole):
    """Feeds spaCy's grammar features to the model and asks for a dependency-aware plan; a plan
    that dropped a hop is repaired with the offline decomposition `repair` (see the module
    docstring)."""

    def __init__(
        self,
        model: Any,
        max_retries: int = 2,
        callbacks: Sequence[Any] = (),
        *,
        repair: Decomposer | None = None,
    ) -> None:
        super().__init__(model, max_retries, callbacks)
        self.repair = repair

    def decompose(self, question: str) -> Step[list[SubQuestion]]:
        features = question_features(question)
        user = DECOMPOSER_USER.format(
            question=question, features=features.model_dump_json(indent=2)
        )
        out, usage = self.ask(Decomposition, DECOMPOSER_SYSTEM, user)
        plan = normalise_plan(out.sub_questions)
        reference = self._reference(question)
        why = dropped_hop(question, plan, reference)
        if not why:
            return Step(plan, usage)
        repaired = repair_plan(question, plan, reference)
        how = "the grammar decomposition" if repaired == reference else "the question as last step"
        note = f"decomposer: the plan dropped a hop ({why}); repaired with {how}"
        return Step(repaired, usage, notes=(note,))

    def _reference(self, question: str) -> list[SubQuestion]:
        if self.repair is None:
            from graphseek.agents.offline.decomposer import OfflineDecomposer

            self.repair = OfflineDecomposer()
        return list(self.repair.decompose(question).value)
