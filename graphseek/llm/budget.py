"""The run's LLM budget, checked before every model call.

`BudgetGuard` is a callback handler attached to a whole workflow run
(``graph.invoke(..., config={"callbacks": [guard]})``; `graphseek.ask` does it). LangGraph hands
a run's callbacks down to every node and every model call inside them, parallel branches
included, so the guard sees each request: it counts them like `UsageCallback` (failed requests
and estimated tokens included) and, before a request is sent, raises `BudgetExceededError` when
the run has already spent ``max_llm_calls`` calls or ``max_tokens`` tokens. The error belongs to
the `LLMError` taxonomy, so the node that made the call abstains with the budget as its reason.

Without a guard (a graph invoked directly, e.g. from Studio), the nodes' own checks of the
state's usage (`graphseek.graphs.routing.budget_exhausted`) still bound the run, once per node.
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from langchain_core.messages import BaseMessage

from graphseek.errors import BudgetExceededError
from graphseek.llm.usage import UsageCallback


class BudgetGuard(UsageCallback):
    """Counts a run's model calls and refuses the next one once a budget is spent."""

    raise_error = True  # the refusal must reach the caller

    def __init__(self, max_llm_calls: int | None = None, max_tokens: int | None = None) -> None:
        super().__init__()
        self.max_llm_calls = max_llm_calls
        self.max_tokens = max_tokens
        self.refused = 0

    def exhausted(self) -> str | None:
        """Which budget is spent, in words, or None."""
        usage = self.usage
        if self.max_llm_calls is not None and usage.llm_calls >= self.max_llm_calls:
            return f"LLM-call budget exhausted ({usage.llm_calls}/{self.max_llm_calls} calls)"
        if self.max_tokens is not None and usage.total_tokens >= self.max_tokens:
            return f"token budget exhausted ({usage.total_tokens}/{self.max_tokens} tokens)"
        return None

    def check(self) -> None:
        """Raise `BudgetExceededError` when a budget is spent."""
        why = self.exhausted()
        if why is not None:
            with self._lock:
                self.refused += 1
            raise BudgetExceededError(f"budget: {why}", cause=why)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.check()
        super().on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.check()
        super().on_llm_start(serialized, prompts, run_id=run_id, **kwargs)


__all__ = ["BudgetGuard"]


class _QuietRefusals(logging.Filter):
    """langchain-core logs every exception a callback raises as a warning; a budget refusal
    is expected (the workflow abstains with it), so it is not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "BudgetExceededError" not in record.getMessage()


logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietRefusals())
