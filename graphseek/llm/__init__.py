"""The LLM layer: model factory, structured calls, accounting, cache.

Nodes ask `model_for_context(context, role)` for their model (None means "run the offline
policy"), then call `invoke_structured` / `invoke_text` / `invoke_message`, which retry transport
failures and malformed output, raise one error taxonomy (`graphseek.errors.LLMError`: transport,
request, malformed, budget; see `graphseek.llm.errors`) and return the `Usage` of the call.
`BudgetGuard` checks a run's budget before every call, and `graphseek.llm.context_window` fits
every request to its model's context window (or refuses it: `ContextBudgetError`). Nodes never import a provider class.
"""

from typing import TYPE_CHECKING, Any

from graphseek.llm.budget import BudgetGuard
from graphseek.llm.cache import SQLiteResponseCache
from graphseek.llm.context_window import ContextBudgetError, window_for
from graphseek.llm.errors import classify
from graphseek.llm.factory import (
    ACCEPTED_SPECS,
    OFFLINE,
    clear_model_cache,
    make_chat_model,
    model_for,
    model_for_context,
    model_options,
    open_cache,
    parse_spec,
    resolve_spec,
)
from graphseek.llm.structured import (
    ainvoke_message,
    ainvoke_structured,
    ainvoke_text,
    invoke_message,
    invoke_structured,
    invoke_text,
    parse_message,
)
from graphseek.llm.usage import UsageCallback

if TYPE_CHECKING:
    from graphseek.testing.scripted import ScriptedChatModel, ScriptExhaustedError

#: the test double, re-exported from `graphseek.testing` for older callers (loaded on first use:
#: `graphseek.testing.scripted` itself imports this package)
_TESTING = frozenset({"ScriptedChatModel", "ScriptExhaustedError"})


def __getattr__(name: str) -> Any:
    if name in _TESTING:
        import graphseek.testing.scripted as scripted

        return getattr(scripted, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ACCEPTED_SPECS",
    "OFFLINE",
    "BudgetGuard",
    "ContextBudgetError",
    "SQLiteResponseCache",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "UsageCallback",
    "ainvoke_message",
    "ainvoke_structured",
    "ainvoke_text",
    "classify",
    "clear_model_cache",
    "invoke_message",
    "invoke_structured",
    "invoke_text",
    "make_chat_model",
    "model_for",
    "model_for_context",
    "model_options",
    "open_cache",
    "parse_message",
    "parse_spec",
    "resolve_spec",
    "window_for",
]
