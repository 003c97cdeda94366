"""The Python API: `ask(index, question, topology=..., llm=...) -> Result`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from graphseek.errors import LLMError
from graphseek.graphs import get_workflow
from graphseek.llm.budget import BudgetGuard
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage


class Result(BaseModel):
    """A workflow's answer with the passages that ground it, its trace and its cost."""

    question: str
    topology: str
    answer: str = ""
    abstained: bool = True
    abstain_reason: str = ""
    evidence: list[EvidenceItem] = Field(default_factory=list)
    trace: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    diagnostics: dict[str, Any] = Field(default_factory=dict)
    retrieved_ids: list[str] = Field(default_factory=list)

    def to_public_dict(self) -> dict[str, Any]:
        """The CLI's `--json` object."""
        return {
            "answer": self.answer,
            "abstained": self.abstained,
            "abstain_reason": self.abstain_reason,
            "evidence": [
                {"passage_id": e.passage_id, "title": e.title, "text": e.text}
                for e in self.evidence
            ],
            "trace": self.trace,
            "usage": public_usage(self.usage),
            "diagnostics": self.diagnostics,
        }


def public_usage(usage: Usage) -> dict[str, Any]:
    """The `usage` object of the `--json` output."""
    return {
        "llm_calls": usage.llm_calls,
        "failed_calls": usage.failed_calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "tokens_estimated": usage.tokens_estimated,
        "estimated_calls": usage.estimated_calls,
        "llm_seconds": round(usage.llm_seconds, 3),
        "seconds": round(usage.seconds, 3),
    }


def _as_index(index: Any) -> Any:
    if isinstance(index, (str, Path)):
        from graphseek.knowledge.index import Index

        return Index.open(index)
    return index


def make_context(index: Any = None, llm: Any = None, **settings: Any) -> Context:
    """A `Context` from keyword settings, ignoring those left as None."""
    clean = {k: v for k, v in settings.items() if v is not None}
    return Context(index=_as_index(index) if index is not None else None, llm=llm, **clean)


def ask(
    index: Any,
    question: str,
    topology: str = "dual_agent",
    llm: Any = None,
    *,
    retriever: str | None = None,
    agents: int | None = None,
    mode: str | None = None,
    **settings: Any,
) -> Result:
    """Answer `question` over `index` (an `Index` or its directory) with a named topology.

    `llm` is a model spec ("offline", "openai:gpt-4o-mini"), a mapping role -> spec, a chat model,
    or None (the `GRAPHSEEK_LLM` environment variable, else the offline reasoner). Other keyword
    settings (`top_k`, `max_turns`, `max_llm_calls`, …) go to the runtime `Context`.
    """
    if not isinstance(question, str) or not question.strip():
        raise ValueError("The question is empty; pass a non-empty string.")
    workflow = get_workflow(topology)
    context = make_context(index, llm, retriever=retriever, agents=agents, mode=mode, **settings)
    # every model call of the run reports to the guard, which refuses calls past the budgets
    guard = BudgetGuard(context.max_llm_calls, context.max_tokens)
    start = time.perf_counter()
    try:
        out = workflow.invoke(
            {"question": question.strip()},
            context=context,
            config={"recursion_limit": 200, "callbacks": [guard]},
        )
    except LLMError as exc:  # a model failure no node turned into an abstention
        out = {
            "abstained": True,
            "abstain_reason": f"model call failed: {exc}",
            "diagnostics": {"errors": [f"{exc.kind}: {exc}"]},
        }
    seconds = time.perf_counter() - start
    state_usage = out.get("usage") or Usage()
    # the guard saw every call of the run, failed and parallel ones included
    usage = guard.usage if guard.usage.llm_calls >= state_usage.llm_calls else state_usage
    diagnostics = dict(out.get("diagnostics", {}))
    if guard.refused:
        diagnostics["budget_refusals"] = guard.refused
    return Result(
        question=question,
        topology=topology,
        answer=out.get("answer", ""),
        abstained=bool(out.get("abstained", not out.get("answer"))),
        abstain_reason=out.get("abstain_reason", ""),
        evidence=out.get("evidence", []),
        trace=out.get("trace", []),
        usage=usage.model_copy(update={"seconds": seconds}),
        diagnostics=diagnostics,
        retrieved_ids=out.get("retrieved_ids", []),
    )
