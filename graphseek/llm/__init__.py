"""The LLM layer: model factory, scripted model for tests, structured calls, accounting, cache.

Nodes ask `model_for(context.llm, role)` for their model (None means "run the offline policy"),
then call `invoke_structured` / `invoke_text`, which retry malformed output and return the
`Usage` of the call. Nodes never import a provider class.
"""

from graphseek.llm.cache import SQLiteResponseCache
from graphseek.llm.factory import (
    ACCEPTED_SPECS,
    OFFLINE,
    clear_model_cache,
    make_chat_model,
    model_for,
    open_cache,
    parse_spec,
    resolve_spec,
)
from graphseek.llm.scripted import ScriptedChatModel, ScriptExhaustedError
from graphseek.llm.structured import (
    ainvoke_structured,
    ainvoke_text,
    invoke_structured,
    invoke_text,
    parse_message,
)
from graphseek.llm.usage import UsageCallback

__all__ = [
    "ACCEPTED_SPECS",
    "OFFLINE",
    "SQLiteResponseCache",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "UsageCallback",
    "ainvoke_structured",
    "ainvoke_text",
    "clear_model_cache",
    "invoke_structured",
    "invoke_text",
    "make_chat_model",
    "model_for",
    "open_cache",
    "parse_message",
    "parse_spec",
    "resolve_spec",
]
