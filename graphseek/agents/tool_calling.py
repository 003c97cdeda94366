"""What the tool-calling policies share: one step of a tool loop with the tools bound, where a
reply without a tool call is asked again (it is malformed for a tool-calling step), and the
conversion of a model that cannot call tools into `ToolsUnsupportedError` (the caller then takes
its JSON path). A model cannot call tools when it has no `bind_tools`, or when its server refuses
a request with tools (an HTTP error that names them: vLLM without `--enable-auto-tool-choice`,
a llama.cpp server without `--jinja`, an Ollama model without tool support); such a model is
remembered for the process, so later steps take the JSON path without another refused request.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from graphseek.errors import LLMError, LLMOutputError, LLMRequestError, LLMTransportError
from graphseek.llm import invoke_message
from graphseek.state.models import Usage

NO_TOOL_CALL_PROMPT = (
    "Your reply called no tool. Call exactly one of the tools offered: a retrieval tool to "
    "gather evidence, or the tool that ends the search (finish(answer, passage_ids) where it "
    "is offered)."
)
"""Sent after a tool-calling reply without a tool call (no placeholders)."""


class ToolsUnsupportedError(Exception):
    """The model cannot call tools (no `bind_tools`, or its server refused the tools); the role's
    JSON path is used instead. `usage` is what the refused request cost (charge it)."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if isinstance(usage, Usage) else Usage()


#: an HTTP error that is about the tools of the request, not about the prompt
_TOOLS_REFUSED = re.compile(
    r"\btools?\b|tool[_ ]choice|tool[_ -]call|function[_ ]call|--jinja", re.IGNORECASE
)
#: models whose server refused tool calling in this process (by id; the model is kept alive)
_REFUSED: dict[int, Any] = {}
_REFUSED_LOCK = threading.Lock()


def _refuses_tools(exc: LLMError) -> bool:
    """Whether a failed request says the server cannot take tools (a 4xx, or the 5xx some
    servers answer with) rather than something else (a context overflow, a timeout)."""
    if not isinstance(exc, LLMRequestError | LLMTransportError):
        return False
    if exc.cause in ("context overflow", "timeout", "connection error"):
        return False
    detail = re.sub(r"\(model '[^']*', \d+ attempt\(s\)\)", "", str(exc))  # not the model name
    return bool(_TOOLS_REFUSED.search(detail))


def model_name(model: Any) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return f"model {name!r}" if isinstance(name, str) else f"model {type(model).__name__}"


def call_tools(
    model: Any, tools: Sequence[Any], prompt: Sequence[BaseMessage], max_retries: int
) -> tuple[AIMessage, Usage]:
    """`model` with `tools` bound, called on `prompt` until its reply calls a tool (at most
    ``1 + max_retries`` times, each retry told to call one). Returns the reply and the usage of
    every attempt; raises `ToolsUnsupportedError` when the model cannot bind tools,
    `LLMOutputError` when it never calls one, and the taxonomy's other `LLMError`s."""
    with _REFUSED_LOCK:
        refused = id(model) in _REFUSED
    if refused:
        raise ToolsUnsupportedError(f"the server of {model_name(model)} refused tool calling")
    try:
        bound = model.bind_tools(list(tools))
    except (NotImplementedError, AttributeError) as exc:
        raise ToolsUnsupportedError(f"{type(model).__name__} cannot call tools") from exc
    messages = list(prompt)
    usage = Usage()
    text = ""
    attempts = max_retries + 1
    for _ in range(attempts):
        try:
            reply, spent = invoke_message(bound, messages)
        except LLMError as exc:
            exc.usage = usage + (exc.usage if isinstance(exc.usage, Usage) else Usage())
            if _refuses_tools(exc):
                with _REFUSED_LOCK:
                    _REFUSED[id(model)] = model
                raise ToolsUnsupportedError(
                    f"the server of {model_name(model)} refused tool calling ({exc})",
                    usage=exc.usage,
                ) from exc
            raise
        usage = usage + spent
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=str(getattr(reply, "content", reply)))
        if reply.tool_calls:
            return reply, usage
        text = str(reply.text or "")
        messages = [*messages, reply, HumanMessage(NO_TOOL_CALL_PROMPT)]
    raise LLMOutputError(
        f"malformed reply: {model_name(model)} called no tool after {attempts} attempt(s) "
        f"(max_retries={max_retries}); last reply: {' '.join(text.split())[:160]!r}",
        usage=usage,
        attempts=attempts,
    )
