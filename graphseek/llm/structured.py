"""Calling a chat model for structured (pydantic) or free-text output, with retries and accounting.

`invoke_structured` asks the model for an object of a pydantic schema, validates it, and retries
(tenacity, no wait) when the reply is malformed, appending one short corrective message that names
the validation error. It returns the parsed object and the `Usage` of every attempt. After the last
failed attempt it raises `graphseek.errors.LLMOutputError`; the usage spent so far rides on the
error as ``error.usage``.

How the schema reaches the model:

- ``ChatOpenAI`` (and any ``BaseChatOpenAI``): ``method="json_schema"`` with ``strict=False`` and
  the schema passed as a JSON-schema dict. ``response_format=json_schema`` is what vLLM, Ollama and
  llama.cpp servers implement through grammar-constrained decoding, without needing a tool-call
  parser on the server; the reply lands in ``content``, so the plain-JSON fallback below works
  too. ``strict=False`` because OpenAI's strict mode rejects schemas whose fields have defaults,
  which ours do; pydantic validates on our side instead. Override with
  ``GRAPHSEEK_LLM_STRUCTURED_METHOD=function_calling`` (or ``json_mode``) or ``method=...``.
- Any other chat model: its own ``with_structured_output(schema, include_raw=True)``.
- A runnable without ``with_structured_output`` (or one raising ``NotImplementedError``): a plain
  call with the JSON schema appended as an instruction, and the reply parsed as JSON.

Whatever the route, when the native parser gives nothing (the server ignored the format, or wrapped
the JSON in prose or a ```json fence), the raw reply's text is parsed as JSON and validated.

Every request is first fitted to its model's context window
(`graphseek.llm.context_window.fit_request`: packed when too long, and refused with a
`ContextBudgetError` when it cannot fit, never sent). Each request goes through
`graphseek.llm.errors.call_with_retries`: transport failures (timeout,
connection, 5xx, 429) are retried with backoff, and a call that keeps failing raises the
taxonomy's `LLMTransportError` / `LLMRequestError` (or `BudgetExceededError` when the run's
`graphseek.llm.budget.BudgetGuard`, passed in ``callbacks=``, refuses it), with the usage of
every attempt on ``error.usage``: failed requests are charged too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from functools import partial
from typing import Any, Generic, TypeVar

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, ValidationError
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_none,
)

from graphseek.errors import LLMError, LLMOutputError, redact
from graphseek.llm.context_window import (
    ContextBudgetError,
    fit_call,
    fit_request,
    sized_model,
)
from graphseek.llm.errors import acall_with_retries, call_with_retries
from graphseek.llm.usage import UsageCallback
from graphseek.state.models import Usage

T = TypeVar("T", bound=BaseModel)

#: errors that mean "the reply was malformed", worth another attempt
RETRYABLE_ERRORS: tuple[type[BaseException], ...] = (OutputParserException, ValidationError)

STRUCTURED_METHOD_ENV = "GRAPHSEEK_LLM_STRUCTURED_METHOD"
_OPENAI_METHODS = ("json_schema", "function_calling", "json_mode")

CORRECTION_PROMPT = (
    "Your previous reply could not be used: {error}\n"
    "Reply again with only a JSON object that matches the {schema} schema."
)
"""Appended as a human message on a retry. Placeholders: {error} (the parse or validation
error, shortened), {schema} (the schema's class name)."""

TRUNCATED_NOTE = (
    " The reply was cut off at the token limit: answer briefly, with short strings and few "
    "list items, and never repeat an item."
)
"""Added to the correction when the previous reply stopped at ``max_tokens``."""

JSON_INSTRUCTION_PROMPT = (
    "Reply with only a JSON object (no prose, no code fence) that matches this JSON schema:\n"
    "{json_schema}"
)
"""Appended when the model has no structured-output support. Placeholder: {json_schema}."""

_MAX_ERROR_CHARS = 600


# -- parsing ----------------------------------------------------------------------------------


def parse_message(message: Any, schema: type[BaseModel] | dict[str, Any] | type) -> Any:
    """Parse a model reply into `schema`: a pydantic instance, or a dict for non-pydantic schemas.

    Reads the first tool call's arguments when the reply has tool calls, else the text content
    as JSON (a ```json fence or prose around one JSON object is tolerated; truncated JSON is not).
    Raises ``OutputParserException`` when no JSON object can be read and pydantic's
    ``ValidationError`` when the object does not fit the schema.
    """
    data: Any
    tool_calls = getattr(message, "tool_calls", None) or []
    if tool_calls:
        data = tool_calls[0].get("args", {})
    else:
        text = message_text(message)
        data = _loads_json_object(text)
    if not isinstance(data, dict):
        raise OutputParserException(
            f"expected a JSON object, got {type(data).__name__}", llm_output=str(data)
        )
    if _is_pydantic_class(schema):
        return schema.model_validate(data)  # type: ignore[union-attr]
    return data


def message_text(message: Any) -> str:
    """The text of a reply: ``message.text`` for messages, ``str()`` for anything else."""
    if isinstance(message, BaseMessage):
        return str(message.text)
    return message if isinstance(message, str) else str(message)


def _loads_json_object(text: str) -> Any:
    if not text.strip():
        raise OutputParserException("the reply was empty", llm_output=text)
    try:
        return parse_json_markdown(text, parser=json.loads)
    except ValueError:
        pass
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        try:
            return json.loads(text[start : end + 1])
        except ValueError:
            pass
    raise OutputParserException(
        f"the reply is not valid JSON: {_shorten(text, 120)!r}", llm_output=text
    )


def salvage_truncated(text: str) -> dict[str, Any] | None:
    """The complete part of a JSON object cut off at ``max_tokens``: the text up to its last
    comma outside a string (so every value kept was written whole: a list keeps its finished
    items, an object its finished members, and a half-written string is dropped, never kept as
    a shorter one), with the open brackets closed. None when no object can be read.

    Small models run away in a list ("LZMA2", "LZMA2.1", "LZMA2.2", ...) until the token limit,
    after the fields that matter were written; the reply's schema then says whether what is left
    is enough (its required fields)."""
    start = text.find("{")
    if start < 0:
        return None
    stack: list[str] = []
    cut: tuple[int, list[str]] | None = None
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack:
                return None
            stack.pop()
            if not stack:
                return None  # the object was complete: not a truncated reply
        elif ch == "," and stack:
            cut = (i, list(stack))
    if cut is None:
        return None
    end, still_open = cut
    try:
        data = json.loads(text[start:end] + "".join(reversed(still_open)))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _salvaged(text: str, schema: Any) -> Any:
    """`schema`'s value from the complete part of a truncated reply, None if it does not fit."""
    data = salvage_truncated(text)
    if data is None:
        return None
    try:
        return schema.model_validate(data) if _is_pydantic_class(schema) else data
    except ValidationError:
        return None


def _is_pydantic_class(schema: Any) -> bool:
    return isinstance(schema, type) and issubclass(schema, BaseModel)


def _shorten(text: str, limit: int = _MAX_ERROR_CHARS) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_text(error: BaseException) -> str:
    """A parse or validation error on one short line, secrets taken out before the cut."""
    if isinstance(error, ValidationError):
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in error.errors()
        ]
        return _shorten(f"{error.error_count()} validation error(s): " + "; ".join(parts))
    # langchain appends "For troubleshooting, visit: <url>" to parser errors: noise for a model
    return _shorten(redact(re.sub(r"\s*For troubleshooting, visit: \S+", "", str(error))))


# -- calling ----------------------------------------------------------------------------------


def to_messages(messages: LanguageModelInput) -> list[BaseMessage]:
    """Normalise a model input (a string, a prompt value, message-likes) into a message list."""
    if isinstance(messages, str):
        return [HumanMessage(content=messages)]
    if isinstance(messages, PromptValue):
        return messages.to_messages()
    return convert_to_messages(messages)


def call_config(
    usage: UsageCallback, callbacks: Sequence[BaseCallbackHandler] | None = None
) -> RunnableConfig:
    """The ambient config (a LangGraph node's, when called inside one) plus our callbacks.

    Passing ``config={"callbacks": [...]}`` alone would replace the parent's callback manager and
    cut the call off from tracing and from LangGraph's message streaming; merging keeps both.
    A callback the ambient config already carries (the run's `BudgetGuard`, attached to the whole
    run by `graphseek.ask` and passed to the call by the role's policy) is not added twice.
    """
    config = ensure_config()
    extra: list[BaseCallbackHandler] = [usage]
    for handler in callbacks or []:
        if handler not in extra and not _carries(config, handler):
            extra.append(handler)
    return merge_configs(config, {"callbacks": extra})


def _carries(config: RunnableConfig, handler: BaseCallbackHandler) -> bool:
    """Whether `config`'s callbacks already include `handler` (a guard passed by the caller)."""
    callbacks = config.get("callbacks")
    if isinstance(callbacks, list):
        return handler in callbacks
    return handler in (getattr(callbacks, "handlers", None) or [])


def invoke_text(
    model: Runnable[Any, Any],
    messages: LanguageModelInput,
    *,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
) -> tuple[str, Usage]:
    """Call `model` once for free text; return the reply's text and the call's `Usage`."""
    reply, usage = invoke_message(model, messages, callbacks=callbacks)
    return message_text(reply), usage


async def ainvoke_text(
    model: Runnable[Any, Any],
    messages: LanguageModelInput,
    *,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
) -> tuple[str, Usage]:
    """Async `invoke_text`."""
    reply, usage = await ainvoke_message(model, messages, callbacks=callbacks)
    return message_text(reply), usage


def invoke_message(
    model: Runnable[Any, Any],
    messages: LanguageModelInput,
    *,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
) -> tuple[Any, Usage]:
    """Call `model` (e.g. one with tools bound) with transport retries; return the reply
    message as it is and the `Usage` of every attempt. Failures raise the taxonomy's errors,
    with that usage on ``error.usage``."""
    usage = UsageCallback()
    config = call_config(usage, callbacks)
    sized, prompt = fit_call(model, to_messages(messages))
    try:
        reply = call_with_retries(lambda: sized.invoke(prompt, config=config), _model_name(model))
    except LLMError as exc:
        _charged(exc, usage)
        raise
    return reply, usage.usage


async def ainvoke_message(
    model: Runnable[Any, Any],
    messages: LanguageModelInput,
    *,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
) -> tuple[Any, Usage]:
    """Async `invoke_message`."""
    usage = UsageCallback()
    config = call_config(usage, callbacks)
    sized, prompt = fit_call(model, to_messages(messages))
    try:
        reply = await acall_with_retries(
            lambda: sized.ainvoke(prompt, config=config), _model_name(model)
        )
    except LLMError as exc:
        _charged(exc, usage)
        raise
    return reply, usage.usage


def _charged(exc: LLMError, usage: UsageCallback) -> LLMError:
    """`exc` with the usage spent so far (every attempt of the call) attached; a request the
    context budget refused adds its charge (`ContextBudgetError.charge`)."""
    exc.usage = (
        usage.usage + ContextBudgetError.charge
        if isinstance(exc, ContextBudgetError)
        else usage.usage
    )
    return exc


def invoke_structured(
    model: Runnable[Any, Any],
    schema: type[T],
    messages: LanguageModelInput,
    *,
    max_retries: int = 2,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
    method: str | None = None,
) -> tuple[T, Usage]:
    """Ask `model` for a `schema` object; retry malformed replies up to `max_retries` times.

    Returns the validated object and the `Usage` of all attempts. Raises `LLMOutputError` naming
    the schema and the last error after ``1 + max_retries`` malformed replies, and the other
    `LLMError`s of the taxonomy when a request fails (after its transport retries). `method`
    picks the OpenAI structured-output method (see the module docstring); other models ignore it.
    """
    call = _StructuredCall(model, schema, messages, max_retries, callbacks, method)
    try:
        for attempt in Retrying(**call.retry_options()):
            with attempt:
                prompt = call.prompt()
                try:
                    out = call_with_retries(
                        partial(call.runnable.invoke, prompt, call.config), call.who
                    )
                except Exception as exc:
                    salvaged = call.raise_if_cut(exc)
                    if salvaged is not None:
                        return salvaged
                    raise
                return call.finish(out)
    except RETRYABLE_ERRORS as exc:
        raise call.failure(exc) from exc
    except LLMError as exc:
        _charged(exc, call.usage)
        raise
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


async def ainvoke_structured(
    model: Runnable[Any, Any],
    schema: type[T],
    messages: LanguageModelInput,
    *,
    max_retries: int = 2,
    callbacks: Sequence[BaseCallbackHandler] | None = None,
    method: str | None = None,
) -> tuple[T, Usage]:
    """Async `invoke_structured`."""
    call = _StructuredCall(model, schema, messages, max_retries, callbacks, method)
    try:
        async for attempt in AsyncRetrying(**call.retry_options()):
            with attempt:
                prompt = call.prompt()
                try:
                    out = await acall_with_retries(
                        partial(call.runnable.ainvoke, prompt, call.config), call.who
                    )
                except Exception as exc:
                    salvaged = call.raise_if_cut(exc)
                    if salvaged is not None:
                        return salvaged
                    raise
                return call.finish(out)
    except RETRYABLE_ERRORS as exc:
        raise call.failure(exc) from exc
    except LLMError as exc:
        _charged(exc, call.usage)
        raise
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


class _StructuredCall(Generic[T]):
    """The state of one `invoke_structured` call across its attempts (sync or async)."""

    def __init__(
        self,
        model: Runnable[Any, Any],
        schema: type[T],
        messages: LanguageModelInput,
        max_retries: int,
        callbacks: Sequence[BaseCallbackHandler] | None,
        method: str | None,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.model, self.schema, self.max_retries = model, schema, max_retries
        self.usage = UsageCallback()
        self.config = call_config(self.usage, callbacks)
        self.base = to_messages(messages)
        sized = sized_model(model)  # a small window's reply limit (`reply_reserve`)
        structured, self.instruct = _structured_runnable(sized, schema, method)
        self.native = structured is not None
        self.runnable: Runnable[Any, Any] = structured if structured is not None else sized
        self.attempts = 0
        self.error: BaseException | None = None
        self.truncated = False
        self.who = _model_name(model)

    def retry_options(self) -> dict[str, Any]:
        return {
            "stop": stop_after_attempt(self.max_retries + 1),
            "retry": retry_if_exception_type(RETRYABLE_ERRORS),
            "wait": wait_none(),
            "reraise": True,
        }

    def prompt(self) -> list[BaseMessage]:
        """The messages for the next attempt: the original ones, plus the JSON instruction
        where the model has no structured output, plus one correction after a failure."""
        self.attempts += 1
        prompt = list(self.base)
        if self.instruct:
            json_schema = json.dumps(self.schema.model_json_schema(), sort_keys=True)
            prompt.append(HumanMessage(JSON_INSTRUCTION_PROMPT.format(json_schema=json_schema)))
        if self.error is not None:
            correction = CORRECTION_PROMPT.format(
                error=_error_text(self.error), schema=self.schema.__name__
            )
            prompt.append(HumanMessage(correction + (TRUNCATED_NOTE if self.truncated else "")))
        return fit_request(self.model, prompt)

    def raise_if_cut(self, exc: BaseException) -> tuple[T, Usage] | None:
        """A reply stopped at ``max_tokens`` that the client refused to parse (the OpenAI SDK
        raises ``LengthFinishReasonError`` for structured output): its complete part when that
        fits the schema (`salvage_truncated`), else a malformed reply, raised as one so that it
        is retried with a note asking for a shorter reply. None for any other error."""
        if type(exc).__name__ != "LengthFinishReasonError":
            return None
        completion = getattr(exc, "completion", None)
        choices = getattr(completion, "choices", None) or []
        text = getattr(getattr(choices[0], "message", None), "content", None) if choices else None
        value = _salvaged(text, self.schema) if isinstance(text, str) else None
        if value is not None:
            return value, self.usage.usage
        self.truncated = True
        self.error = OutputParserException("the reply was cut off at max_tokens")
        raise self.error from exc

    def finish(self, out: Any) -> tuple[T, Usage]:
        """Validate one attempt's output; remember the error for the next prompt."""
        try:
            if self.native:
                value = _from_native(out, self.schema)
            else:
                value = _coerce(parse_message(out, self.schema), self.schema)
        except RETRYABLE_ERRORS as exc:
            self.error = exc
            self.truncated = _finish_reason(out) == "length"
            if self.truncated:  # the complete part of a reply cut off at max_tokens may do
                raw = out.get("raw") if isinstance(out, dict) else out
                salvaged = _salvaged(message_text(raw), self.schema)
                if salvaged is not None:
                    return salvaged, self.usage.usage
            raise
        return value, self.usage.usage

    def failure(self, exc: BaseException) -> LLMOutputError:
        cut = " (the reply was cut off at max_tokens)" if self.truncated else ""
        # what the failed attempts cost rides along, for callers that keep a budget
        return LLMOutputError(
            f"malformed reply: {self.who} gave no valid {self.schema.__name__} after "
            f"{self.attempts} attempt(s) (max_retries={self.max_retries}){cut}; "
            f"last error: {_error_text(exc)}",
            usage=self.usage.usage,
            attempts=self.attempts,
        )


def _finish_reason(out: Any) -> str:
    """The finish reason of a raw reply (``include_raw`` dict or message), "" when unknown."""
    raw = out.get("raw") if isinstance(out, dict) else out
    meta = getattr(raw, "response_metadata", None) or {}
    return str(meta.get("finish_reason") or "")


def _from_native(out: Any, schema: type[T]) -> T:
    """Unpack an ``include_raw=True`` result, falling back to parsing the raw reply's JSON.

    When both fail, the error raised is ours (from the raw reply), not the provider parser's:
    it is shorter and names the fields, which is what the corrective message needs.
    """
    if not isinstance(out, dict) or "raw" not in out:
        return _coerce(out, schema)  # a runnable that returned the object directly
    parsed = out.get("parsed")
    if parsed is not None:
        try:
            return _coerce(parsed, schema)
        except ValidationError:
            pass  # re-read the raw reply below; its error names the same fields
    return _coerce(parse_message(out.get("raw"), schema), schema)


def _coerce(value: Any, schema: type[T]) -> T:
    if isinstance(value, schema):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump()
    if not isinstance(value, dict):
        raise OutputParserException(
            f"expected a JSON object for {schema.__name__}, got {type(value).__name__}"
        )
    return schema.model_validate(value)


def _structured_runnable(
    model: Runnable[Any, Any], schema: type[BaseModel], method: str | None
) -> tuple[Runnable[Any, Any] | None, bool]:
    """``model.with_structured_output(..., include_raw=True)`` (None for the plain-JSON route),
    and whether the prompt must carry the JSON schema as an instruction."""
    if not hasattr(model, "with_structured_output"):
        return None, True
    try:
        if _is_openai(model):
            chosen = method or os.environ.get(STRUCTURED_METHOD_ENV, "").strip() or "json_schema"
            if chosen not in _OPENAI_METHODS:
                # the variable is named, its value not repeated (a server's client may read it)
                what = repr(chosen) if method else f"in ${STRUCTURED_METHOD_ENV}"
                raise ValueError(
                    f"unknown structured-output method {what}; use one of {_OPENAI_METHODS}"
                )
            kwargs: dict[str, Any] = {"method": chosen}
            if chosen != "json_mode":
                kwargs["strict"] = False
            target: Any = schema.model_json_schema()
            target.setdefault("title", schema.__name__)
            runnable = model.with_structured_output(target, include_raw=True, **kwargs)
            return runnable, chosen == "json_mode"
        return model.with_structured_output(schema, include_raw=True), False
    except NotImplementedError:
        return None, True


def _is_openai(model: Any) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - langchain-openai is a dependency
        return False
    return isinstance(model, BaseChatOpenAI)


def _model_name(model: Any) -> str:
    for attr in ("model_name", "model"):
        name = getattr(model, attr, None)
        if isinstance(name, str) and name:
            return f"model {name!r}"
    return f"model {type(model).__name__}"


__all__ = [
    "ainvoke_message",
    "ainvoke_structured",
    "ainvoke_text",
    "invoke_message",
    "invoke_structured",
    "invoke_text",
    "message_text",
    "parse_message",
    "to_messages",
]
