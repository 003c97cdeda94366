"""Token and call accounting through a LangChain callback handler.

`UsageCallback` is attached to a model call (``config={"callbacks": [cb]}``) or to a whole graph
run; it sums, across every chat-model call that reports to it:

- ``llm_calls``: requests sent to the model, failed ones included (one per ``on_llm_end`` or
  ``on_llm_error``; ``failed_calls`` counts the failures);
- ``prompt_tokens`` / ``completion_tokens``: from ``AIMessage.usage_metadata`` when the provider
  fills it, else from ``llm_output["token_usage"]`` (the OpenAI-style dict); when the server sends
  neither, or the call failed, they are estimated as characters / 4 (the prompt's, and the
  reply's text plus tool-call arguments) and the call is counted in ``estimated_calls``;
- ``llm_seconds``: summed latency of the calls, from ``on_chat_model_start`` / ``on_llm_start``
  to ``on_llm_end`` / ``on_llm_error`` (parallel calls add up, so this can exceed wall time).

Cache hits are free. LangChain still fires start/end callbacks when a response comes from the cache
(the cached message keeps its original ``usage_metadata``, with ``total_cost`` forced to 0), so a
hit would otherwise be counted as a full call. A hit is recognised by the marker that
`graphseek.llm.cache.SQLiteResponseCache` sets on replayed messages, or by langchain-core's own
``usage_metadata["total_cost"] == 0`` stamp, and is counted in ``cache_hits`` only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult

from graphseek.state.models import Usage

#: response_metadata key set on messages replayed from `SQLiteResponseCache`.
CACHE_HIT_KEY = "graphseek_cache_hit"


def is_cache_hit(message: BaseMessage) -> bool:
    """Whether `message` was replayed from a response cache rather than produced by a model."""
    if message.response_metadata.get(CACHE_HIT_KEY):
        return True
    usage = getattr(message, "usage_metadata", None) or {}
    # langchain-core adds total_cost=0 to usage_metadata only on cache hits; providers don't set it
    return "total_cost" in usage and usage["total_cost"] == 0


class UsageCallback(BaseCallbackHandler):
    """Thread-safe counter of LLM calls, tokens and latency; read the total with `.usage`."""

    raise_error = False
    run_inline = True

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._starts: dict[UUID, tuple[float, int]] = {}
        self._calls = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._seconds = 0.0
        self._estimated = 0
        self.cache_hits = 0
        self.errors = 0

    # -- reading ------------------------------------------------------------------------------

    @property
    def usage(self) -> Usage:
        """A snapshot of everything counted so far."""
        with self._lock:
            return Usage(
                llm_calls=self._calls,
                prompt_tokens=self._prompt_tokens,
                completion_tokens=self._completion_tokens,
                llm_seconds=self._seconds,
                failed_calls=self.errors,
                estimated_calls=self._estimated,
            )

    def reset(self) -> None:
        """Forget everything counted so far (calls in flight are still timed when they end)."""
        with self._lock:
            self._calls = self._prompt_tokens = self._completion_tokens = self._estimated = 0
            self._seconds = 0.0
            self.cache_hits = self.errors = 0

    # -- callbacks ----------------------------------------------------------------------------

    def _start(self, run_id: UUID, prompt_chars: int) -> None:
        with self._lock:
            self._starts[run_id] = (time.perf_counter(), prompt_chars)

    def _elapsed(self, run_id: UUID) -> tuple[float, int]:
        started = self._starts.pop(run_id, None)
        if started is None:
            return 0.0, 0
        return time.perf_counter() - started[0], started[1]

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self._start(run_id, sum(message_chars(m) for batch in messages for m in batch))

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start(run_id, sum(len(p) for p in prompts))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        messages = list(_first_messages(response.generations))
        hit = bool(messages) and all(is_cache_hit(m) for m in messages)
        tokens = (0, 0) if hit else _tokens(response, messages)
        with self._lock:
            seconds, prompt_chars = self._elapsed(run_id)
            self._seconds += seconds
            if hit:
                self.cache_hits += 1
                return
            self._calls += 1
            if tokens is None:  # the server sent no usage: estimate it
                self._estimated += 1
                reply_chars = sum(message_chars(m) for m in messages) or sum(
                    len(g.text) for gens in response.generations for g in gens[:1]
                )
                tokens = (estimate_tokens(prompt_chars), estimate_tokens(reply_chars))
            self._prompt_tokens += tokens[0]
            self._completion_tokens += tokens[1]

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A failed request is still a request: charged as a call, with its prompt's tokens
        estimated (the server may have read it before failing) and no completion."""
        with self._lock:
            seconds, prompt_chars = self._elapsed(run_id)
            self._seconds += seconds
            self.errors += 1
            self._calls += 1
            self._estimated += 1
            self._prompt_tokens += estimate_tokens(prompt_chars)

    def __repr__(self) -> str:
        return f"UsageCallback({self.usage!r}, cache_hits={self.cache_hits})"


def _first_messages(generations: Iterable[list[Any]]) -> Iterable[BaseMessage]:
    """The first chat message of each prompt's generations (with n>1 each copy carries the total)."""
    for gens in generations:
        if gens and isinstance(getattr(gens[0], "message", None), BaseMessage):
            yield gens[0].message


def estimate_tokens(chars: int) -> int:
    """About four characters per token (the usual rule of thumb for English BPE vocabularies)."""
    return (chars + 3) // 4


def message_chars(message: BaseMessage) -> int:
    """Characters of a message: its text content plus its tool calls' names and arguments."""
    content = message.content
    chars = len(content) if isinstance(content, str) else len(json.dumps(content, default=str))
    for call in getattr(message, "tool_calls", None) or []:
        chars += len(call.get("name", "")) + len(json.dumps(call.get("args", {}), default=str))
    return chars


def _tokens(response: LLMResult, messages: list[BaseMessage]) -> tuple[int, int] | None:
    """(prompt, completion) tokens the server reported, or None when it reported none."""
    prompt = completion = 0
    found = False
    for message in messages:
        meta = getattr(message, "usage_metadata", None)
        if meta:
            found = True
            prompt += int(meta.get("input_tokens", 0) or 0)
            completion += int(meta.get("output_tokens", 0) or 0)
    if found:
        return prompt, completion
    token_usage = (response.llm_output or {}).get("token_usage") or {}
    if not token_usage:
        return None
    return (
        int(token_usage.get("prompt_tokens", 0) or 0),
        int(token_usage.get("completion_tokens", 0) or 0),
    )


def error_usage(exc: BaseException) -> Usage:
    """What a failed model call cost (`LLMError.usage`, charged by `graphseek.llm.structured`),
    zero when unknown."""
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, Usage) else Usage()
