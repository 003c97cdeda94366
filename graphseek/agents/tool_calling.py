"""What the tool-calling policies share: one step of a tool loop with the tools bound, where a
reply without a tool call is asked again (it is malformed for a tool-calling step), and the
conversion of a model that cannot call tools into `ToolsUnsupportedError` (the caller then takes
its JSON path)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from graphseek.errors import LLMError, LLMOutputError
from graphseek.llm import invoke_message
from graphseek.state.models import Usage

NO_TOOL_CALL_PROMPT = (
    "Your reply called no tool. Call exactly one of the tools offered: a retrieval tool to "
    "gather evidence, or the tool that ends the search (finish(answer, passage_ids) where it "
    "is offered)."
)
"""Sent after a tool-calling reply without a tool call (no placeholders)."""


class ToolsUnsupportedError(Exception):
    """The model cannot call tools (no `bind_tools`); the role's JSON path is used instead."""


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
