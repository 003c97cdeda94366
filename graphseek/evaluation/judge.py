"""LLM-as-judge answer accuracy, with a deterministic offline rule.

With a chat model the judge asks it, through `graphseek.llm.invoke_structured`, for a
`JudgeVerdict` (a `reason`, then `correct`), using the prompt in
`graphseek.agents.prompts.judge`. Without one (no spec, "rule", or an offline spec for which
`model_for` returns None) it applies the rule

    correct  <=>  SubEM(prediction, gold) == 1  or  token F1(prediction, gold) >= 0.8

and reports `judge="rule"`. An abstention or an empty prediction is wrong in both modes and costs
no LLM call. A model whose replies stay malformed after the retries also falls back to the rule
for that question (`judge="rule"`, the reason says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from graphseek.agents.prompts.judge import JUDGE_SYSTEM, JUDGE_USER
from graphseek.errors import GraphseekError
from graphseek.evaluation.metrics import sub_exact_match, token_f1

__all__ = ["RULE_F1_THRESHOLD", "Judge", "JudgeVerdict", "Judgement", "rule_judgement"]

RULE_F1_THRESHOLD = 0.8
RULE_DESCRIPTION = f"rule: SubEM or token F1 >= {RULE_F1_THRESHOLD}"
_NO_MODEL_SPECS = {"", "rule", "none", "off", "offline"}


class JudgeVerdict(BaseModel):
    """The judge's structured output: the reason first, then the verdict."""

    reason: str = Field(description="One or two sentences comparing prediction and references.")
    correct: bool = Field(description="True when the prediction matches a reference answer.")


@dataclass(frozen=True)
class Judgement:
    correct: bool
    reason: str
    judge: Literal["llm", "rule"]
    usage: dict[str, Any] = field(default_factory=dict)


def rule_judgement(prediction: str | None, answers: Sequence[str]) -> Judgement:
    """The offline rule: SubEM, or token F1 at least `RULE_F1_THRESHOLD`."""
    if not prediction:
        return Judgement(False, "no answer given", "rule")
    subem = sub_exact_match(prediction, answers)
    f1 = token_f1(prediction, answers)
    correct = bool(subem) or f1 >= RULE_F1_THRESHOLD
    return Judgement(correct, f"{RULE_DESCRIPTION} (SubEM={subem:.0f}, F1={f1:.2f})", "rule")


def _usage_dict(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    if hasattr(usage, "model_dump"):
        return dict(usage.model_dump())
    if isinstance(usage, dict):
        return dict(usage)
    return {
        k: getattr(usage, k)
        for k in ("llm_calls", "prompt_tokens", "completion_tokens", "seconds")
        if hasattr(usage, k)
    }


class Judge:
    """Grades a prediction against gold answers.

    `llm` is None / "rule" (the offline rule), a model spec string or mapping understood by
    `graphseek.llm`, or a chat model instance (tests pass a `ScriptedChatModel`). `cache` is an
    optional path of the SQLite response cache used when a spec string has to be turned into a
    model.
    """

    def __init__(self, llm: Any = None, *, cache: str | None = None, max_retries: int = 2) -> None:
        self.max_retries = max_retries
        self.model = self._resolve(llm, cache)

    @staticmethod
    def _resolve(llm: Any, cache: str | None) -> Any:
        if llm is None or (isinstance(llm, str) and llm.strip().lower() in _NO_MODEL_SPECS):
            return None
        from graphseek.llm import model_for  # the LLM layer; imported only when a model is used

        if isinstance(llm, str) and cache is not None:
            from graphseek.llm import make_chat_model

            llm = make_chat_model(llm, cache=cache)
        return model_for(llm, "judge")

    @property
    def kind(self) -> Literal["llm", "rule"]:
        return "rule" if self.model is None else "llm"

    def __call__(self, question: str, answers: Sequence[str], prediction: str | None) -> Judgement:
        if not prediction or self.model is None:
            return rule_judgement(prediction, answers)
        from langchain_core.messages import HumanMessage, SystemMessage

        from graphseek.llm import invoke_structured

        messages = [
            SystemMessage(JUDGE_SYSTEM),
            HumanMessage(
                JUDGE_USER.format(
                    question=question,
                    gold_answers="\n".join(f"- {a}" for a in answers),
                    prediction=prediction,
                )
            ),
        ]
        try:
            verdict, usage = invoke_structured(
                self.model, JudgeVerdict, messages, max_retries=self.max_retries
            )
        except GraphseekError as exc:  # malformed output after retries, budget, ...
            fallback = rule_judgement(prediction, answers)
            return Judgement(
                fallback.correct, f"LLM judge failed ({exc}); {fallback.reason}", "rule"
            )
        return Judgement(bool(verdict.correct), verdict.reason, "llm", _usage_dict(usage))
