"""The run's LLM budget, checked before every model call.

`BudgetGuard` is a callback handler that counts model requests like `UsageCallback` (failed
requests and estimated tokens included) and, before a request is sent, raises
`BudgetExceededError` when the run has already spent ``max_llm_calls`` calls or ``max_tokens``
tokens. The error belongs to the `LLMError` taxonomy, so the node that made the call abstains
with the budget as its reason. Checking and counting a request is one atomic step, so parallel
branches (``Send``) cannot overshoot the call budget together.

Every run has one guard, kept in the run's scope (`graphseek.state.run_scope`): `guard_for(context)`
builds it from the context's ``max_llm_calls`` and ``max_tokens`` on the run's first call and
returns the same guard after. The LLM layer does not look for a run: whoever calls a model passes
the guard in (`graphseek.agents.registry` hands it to every LLM policy of the run, which passes
it as ``callbacks=`` to `graphseek.llm.invoke_structured` and the other calls; `graphseek.ask`
also attaches it to the whole run). So the budget holds whoever invokes the compiled graph
(`ask`, the CLI, Studio, a Python caller), inside tool loops, parallel branches and subgraphs
alike. A `Context` object stands for one run: give each run its own `Context`.

A guard can also be attached to any run by hand (``config={"callbacks": [guard]}``).
"""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

from langchain_core.messages import BaseMessage

from graphseek.errors import BudgetExceededError
from graphseek.llm.usage import UsageCallback
from graphseek.state.run_scope import run_scope


class BudgetGuard(UsageCallback):
    """Counts a run's model calls and refuses the next one once a budget is spent."""

    raise_error = True  # the refusal must reach the caller

    def __init__(self, max_llm_calls: int | None = None, max_tokens: int | None = None) -> None:
        super().__init__()
        self.max_llm_calls = max_llm_calls
        self.max_tokens = max_tokens
        self.refused = 0
        self._in_flight: set[UUID] = set()

    def _why(self) -> str | None:
        """The spent budget, in words (the lock held): requests in flight count as calls."""
        calls = self._calls + len(self._in_flight)
        tokens = self._prompt_tokens + self._completion_tokens
        if self.max_llm_calls is not None and calls >= self.max_llm_calls:
            return f"LLM-call budget exhausted ({calls}/{self.max_llm_calls} calls)"
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"token budget exhausted ({tokens}/{self.max_tokens} tokens)"
        return None

    def exhausted(self) -> str | None:
        """Which budget is spent, in words, or None."""
        with self._lock:
            return self._why()

    def check(self, run_id: UUID | None = None) -> None:
        """Raise `BudgetExceededError` when a budget is spent; otherwise reserve a call for
        `run_id` (a request about to be sent), in the same step."""
        with self._lock:
            why = self._why()
            if why is None:
                if run_id is not None:
                    self._in_flight.add(run_id)
                return
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
        self.check(run_id)
        super().on_chat_model_start(serialized, messages, run_id=run_id, **kwargs)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.check(run_id)
        super().on_llm_start(serialized, prompts, run_id=run_id, **kwargs)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        super().on_llm_end(response, run_id=run_id, **kwargs)
        with self._lock:
            self._in_flight.discard(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        super().on_llm_error(error, run_id=run_id, **kwargs)
        with self._lock:
            self._in_flight.discard(run_id)


def budget_guard(max_llm_calls: int | None, max_tokens: int | None) -> BudgetGuard | None:
    """A fresh guard for these budgets, or None when neither is set."""
    if max_llm_calls is None and max_tokens is None:
        return None
    return BudgetGuard(max_llm_calls, max_tokens)


def guard_for(context: Any) -> BudgetGuard | None:
    """The guard of the run whose settings are `context` (built on the run's first call from its
    ``max_llm_calls`` and ``max_tokens`` and kept in its `RunScope`), or None when `context` sets
    no budget."""
    if context is None:
        return None
    calls = getattr(context, "max_llm_calls", None)
    tokens = getattr(context, "max_tokens", None)
    return run_scope(context).get("guard", lambda: budget_guard(calls, tokens))


def run_callbacks(context: Any) -> list[BudgetGuard]:
    """The callbacks every model call of the run `context` passes (``callbacks=``): its guard."""
    guard = guard_for(context)
    return [guard] if guard is not None else []


__all__ = ["BudgetGuard", "budget_guard", "guard_for", "run_callbacks"]


class _QuietRefusals(logging.Filter):
    """langchain-core logs every exception a callback raises as a warning; a budget refusal
    is expected (the workflow abstains with it), so it is not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "BudgetExceededError" not in record.getMessage()


logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietRefusals())
