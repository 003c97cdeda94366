"""A scripted chat model: a test double, not a model to run on. It replays given responses,
deterministically, and records calls; workflows take it like any chat model (``Context(llm=...)``,
or the model spec ``"scripted"``, kept for tests), so a test drives a whole run offline.

``ScriptedChatModel(responses=[...])`` answers the n-th call with the n-th response. A response
may be:

- a ``str``: the reply's text;
- a ``dict`` / ``list`` or a pydantic model: serialised to JSON text (what structured output reads);
- an ``AIMessage``: replayed as is (a copy), e.g. with ``tool_calls``;
- an ``Exception`` instance: raised, to test error handling.

``responses`` may instead be a callable ``fn(messages) -> response``, to route by prompt content
(the robust choice when parallel branches call the model in an order that is not fixed).

Every call's input messages are kept in ``.calls`` (and the tool names offered, in
``.call_tools``). Replies carry deterministic ``usage_metadata``: input tokens = characters of the
prompt // 4, output tokens = characters of the reply (text plus tool-call arguments) // 4, unless
the scripted ``AIMessage`` already has usage. When a list script runs out the model raises
`ScriptExhaustedError`, naming the call and its last message.

It subclasses ``GenericFakeChatModel`` (as the style guide asks) but replaces ``_generate`` and
``_stream``: the parent reads a bare iterator, which can neither route by prompt, record calls, nor
stream tool calls and usage.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, PrivateAttr

from graphseek.llm.structured import parse_message

#: what one scripted reply may be (see the module docstring)
Response = str | dict[str, Any] | list[Any] | BaseModel | AIMessage | BaseException


class ScriptExhaustedError(RuntimeError):
    """A `ScriptedChatModel` was called more times than its script has responses."""


class ScriptedChatModel(GenericFakeChatModel):
    """Replays a script of responses (see the module docstring)."""

    responses: list[Any] | Callable[[list[BaseMessage]], Any] = Field(default_factory=list)
    """The script: a list of responses, or ``fn(messages) -> response``."""
    model_name: str = "scripted"
    """Part of the cache key; give two scripted "models" different names to keep them apart."""
    messages: Iterator[AIMessage | str] = Field(default_factory=lambda: iter(()), exclude=True)
    """Unused (the parent's iterator); the script lives in `responses`."""

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _position: int = PrivateAttr(default=0)
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _call_tools: list[list[str]] = PrivateAttr(default_factory=list)
    _bound_tool_names: list[str] = PrivateAttr(default_factory=list)

    # -- inspection ---------------------------------------------------------------------------

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The input messages of every call so far, in call order."""
        return self._calls

    @property
    def call_tools(self) -> list[list[str]]:
        """For every call, the names of the tools offered to it ([] when none)."""
        return self._call_tools

    @property
    def bound_tool_names(self) -> list[str]:
        """Tool names of the most recent `bind_tools`."""
        return self._bound_tool_names

    @property
    def remaining(self) -> int | None:
        """Responses left in a list script (None for a callable script)."""
        if callable(self.responses):
            return None
        return len(self.responses) - self._position

    @property
    def _llm_type(self) -> str:
        return "graphseek-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    # -- generation ---------------------------------------------------------------------------

    def _next_response(self, messages: list[BaseMessage], tools: list[str]) -> Any:
        with self._lock:
            self._calls.append(list(messages))
            self._call_tools.append(tools)
            number = len(self._calls)
            if callable(self.responses):
                script: Callable[[list[BaseMessage]], Any] | None = self.responses
            else:
                script = None
                if self._position >= len(self.responses):
                    last = _shorten(_content_text(messages[-1])) if messages else "(no messages)"
                    raise ScriptExhaustedError(
                        f"ScriptedChatModel ran out of responses: the script has "
                        f"{len(self.responses)}, and call {number} was asked: {last!r}"
                    )
                response = self.responses[self._position]
                self._position += 1
        if script is not None:
            response = script(list(messages))
            if response is None:
                raise TypeError(f"the script function returned None for call {number}")
        return response

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tools = [t["function"]["name"] for t in kwargs.get("tools") or [] if "function" in t]
        message = _to_message(self._next_response(messages, tools))
        if message.usage_metadata is None:
            prompt_chars = sum(_message_chars(m) for m in messages)
            reply_chars = _message_chars(message)
            message.usage_metadata = UsageMetadata(
                input_tokens=prompt_chars // 4,
                output_tokens=reply_chars // 4,
                total_tokens=prompt_chars // 4 + reply_chars // 4,
            )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """Yield the reply word by word; the last chunk carries tool calls and usage."""
        message = self._generate(messages, stop=stop, **kwargs).generations[0].message
        if not isinstance(message, AIMessage):  # pragma: no cover - _generate makes AIMessages
            raise TypeError(f"expected an AIMessage, got {type(message).__name__}")
        content = message.content
        pieces: list[Any] = (
            [p for p in re.split(r"(\s)", content) if p] if isinstance(content, str) else [content]
        )
        for piece in pieces[:-1]:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
        last = pieces[-1] if pieces else ""
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content=last,
                id=message.id,
                additional_kwargs=message.additional_kwargs,
                response_metadata=message.response_metadata,
                usage_metadata=message.usage_metadata,
                tool_call_chunks=[
                    tool_call_chunk(
                        name=call["name"],
                        args=json.dumps(call["args"]),
                        id=call.get("id"),
                        index=index,
                    )
                    for index, call in enumerate(message.tool_calls)
                ],
                chunk_position="last",
            )
        )

    # -- tools and structured output ----------------------------------------------------------

    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Offer `tools` to the model; the script decides whether the reply calls them.

        Tools are converted to OpenAI tool dicts (as real providers do), so the cache key and the
        recorded names are deterministic.
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        with self._lock:
            self._bound_tool_names = [t["function"]["name"] for t in formatted]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, Any]:
        """Parse the next reply into `schema` (pydantic class -> instance; else a dict).

        Malformed replies raise ``OutputParserException`` (not JSON) or pydantic's
        ``ValidationError`` (wrong fields); with ``include_raw=True`` the error is returned in
        ``parsing_error`` instead, as LangChain's own models do. Other kwargs (``method``,
        ``strict``) are accepted and ignored.
        """
        parser = RunnableLambda(
            lambda message: parse_message(message, schema), name="ScriptedOutputParser"
        )
        if not include_raw:
            return self | parser
        parse_raw = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        )
        on_error = RunnablePassthrough.assign(parsed=lambda _: None)
        return RunnableMap(raw=self) | parse_raw.with_fallbacks(
            [on_error], exception_key="parsing_error"
        )


def _to_message(response: Any) -> AIMessage:
    if isinstance(response, BaseException):
        raise response
    if isinstance(response, AIMessage):
        return response.model_copy(deep=True)  # LangChain sets ids on the message it returns
    if isinstance(response, str):
        return AIMessage(content=response)
    if isinstance(response, BaseModel):
        return AIMessage(content=response.model_dump_json())
    if isinstance(response, dict | list):
        return AIMessage(content=json.dumps(response, ensure_ascii=False))
    raise TypeError(
        "a scripted response must be a str, dict, list, pydantic model, AIMessage or exception; "
        f"got {type(response).__name__}"
    )


def _content_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return json.dumps(content, sort_keys=True, default=str)


def _message_chars(message: BaseMessage) -> int:
    chars = len(_content_text(message))
    for call in getattr(message, "tool_calls", None) or []:
        chars += len(call["name"]) + len(json.dumps(call["args"], sort_keys=True, default=str))
    return chars


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
