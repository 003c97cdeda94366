"""Token and call accounting through a LangChain callback handler.

`UsageCallback` is attached to a model call (``config={"callbacks": [cb]}``) or to a whole graph
run; it sums, across every chat-model call that reports to it:

- ``llm_calls``: calls answered by the model (one per ``on_llm_end``);
- ``prompt_tokens`` / ``completion_tokens``: from ``AIMessage.usage_metadata`` when the provider
  fills it, else from ``llm_output["token_usage"]`` (the OpenAI-style dict);
- ``seconds``: summed latency of the calls, from ``on_chat_model_start`` / ``on_llm_start`` to
  ``on_llm_end`` / ``on_llm_error`` (parallel calls add up, so this can exceed wall time).

Cache hits are free. LangChain still fires start/end callbacks when a response comes from the cache
(the cached message keeps its original ``usage_metadata``, with ``total_cost`` forced to 0), so a
hit would otherwise be counted as a full call. A hit is recognised by the marker that
`graphseek.llm.cache.SQLiteResponseCache` sets on replayed messages, or by langchain-core's own
``usage_metadata["total_cost"] == 0`` stamp, and is counted in ``cache_hits`` only.
"""

from __future__ import annotations

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
        self._starts: dict[UUID, float] = {}
        self._calls = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._seconds = 0.0
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
                seconds=self._seconds,
            )

    def reset(self) -> None:
        """Forget everything counted so far (calls in flight are still timed when they end)."""
        with self._lock:
            self._calls = self._prompt_tokens = self._completion_tokens = 0
            self._seconds = 0.0
            self.cache_hits = self.errors = 0

    # -- callbacks ----------------------------------------------------------------------------

    def _start(self, run_id: UUID) -> None:
        with self._lock:
            self._starts[run_id] = time.perf_counter()

    def _elapsed(self, run_id: UUID) -> float:
        started = self._starts.pop(run_id, None)
        return 0.0 if started is None else time.perf_counter() - started

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self._start(run_id)

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        self._start(run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        messages = list(_first_messages(response.generations))
        hit = bool(messages) and all(is_cache_hit(m) for m in messages)
        prompt, completion = (0, 0) if hit else _tokens(response, messages)
        with self._lock:
            self._seconds += self._elapsed(run_id)
            if hit:
                self.cache_hits += 1
                return
            self._calls += 1
            self._prompt_tokens += prompt
            self._completion_tokens += completion

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._seconds += self._elapsed(run_id)
            self.errors += 1

    def __repr__(self) -> str:
        return f"UsageCallback({self.usage!r}, cache_hits={self.cache_hits})"


def _first_messages(generations: Iterable[list[Any]]) -> Iterable[BaseMessage]:
    """The first chat message of each prompt's generations (with n>1 each copy carries the total)."""
    for gens in generations:
        if gens and isinstance(getattr(gens[0], "message", None), BaseMessage):
            yield gens[0].message


def _tokens(response: LLMResult, messages: list[BaseMessage]) -> tuple[int, int]:
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
    return (
        int(token_usage.get("prompt_tokens", 0) or 0),
        int(token_usage.get("completion_tokens", 0) or 0),
    )
