"""One error taxonomy for model calls, and the transport retries that go with it.

Every failure of a chat-model call is mapped onto `graphseek.errors.LLMError`:

- `LLMTransportError` — the server did not answer in time, could not be reached, failed with an
  HTTP 5xx, or rate-limited us (HTTP 429). These are retried with exponential backoff (jittered);
  a 429 (or 503) that carries ``Retry-After`` waits that long instead, when it is no longer than
  ``$GRAPHSEEK_LLM_MAX_WAIT`` seconds (default 60; a longer wait gives up at once).
- `LLMRequestError` — an HTTP 4xx the server would give again: context overflow, bad request,
  authentication, unknown model. Never retried.
- `LLMOutputError` — the reply could not be parsed or validated (see `graphseek.llm.structured`,
  which retries with a corrective message).
- `BudgetExceededError` — the run's budget was spent before the call (`graphseek.llm.budget`).

Retries are a setting of the process: ``$GRAPHSEEK_LLM_MAX_RETRIES`` transport retries per call
(default 2) and ``$GRAPHSEEK_LLM_BACKOFF`` seconds for the first backoff (default 1.0, doubling,
at most 30 s). The OpenAI client's own retries are switched off by the factory so that every
attempt is a separate call: it is charged, timed and visible in traces. A bad value of any
setting variable is named, not repeated (`env_number`).

The provider's message goes into the error with its secrets taken out
(`graphseek.errors.redact`): a 401's echo of the key, masked or not, is not in the message that
a run's abstention, a warning or a server's client shows. (The provider's own exception stays
chained as ``__cause__``, for a debugger; nothing of graphseek prints that chain.)
"""

from __future__ import annotations

import email.utils
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    wait_exponential,
    wait_random,
)

from graphseek.errors import (
    LLMError,
    LLMRequestError,
    LLMTransportError,
    redact,
)

R = TypeVar("R")

MAX_RETRIES_ENV = "GRAPHSEEK_LLM_MAX_RETRIES"
BACKOFF_ENV = "GRAPHSEEK_LLM_BACKOFF"
MAX_WAIT_ENV = "GRAPHSEEK_LLM_MAX_WAIT"
DEFAULT_TRANSPORT_RETRIES = 2
DEFAULT_BACKOFF = 1.0
DEFAULT_MAX_WAIT = 60.0
MAX_BACKOFF = 30.0

_OVERFLOW = re.compile(
    r"context(?:[ _-](?:length|size|window))|maximum context|too many tokens|prompt is too long"
    r"|exceeds? the (?:available )?context|context_length_exceeded",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RetrySettings:
    """Transport retries per call, the first backoff and the longest Retry-After honoured."""

    retries: int = DEFAULT_TRANSPORT_RETRIES
    backoff: float = DEFAULT_BACKOFF
    max_wait: float = DEFAULT_MAX_WAIT

    @classmethod
    def from_env(cls) -> RetrySettings:
        return cls(
            retries=max(0, int(env_number(MAX_RETRIES_ENV, DEFAULT_TRANSPORT_RETRIES))),
            backoff=max(0.0, env_number(BACKOFF_ENV, DEFAULT_BACKOFF)),
            max_wait=max(0.0, env_number(MAX_WAIT_ENV, DEFAULT_MAX_WAIT)),
        )


def env_number(
    name: str, default: float, *, whole: bool = False, minimum: float | None = None
) -> float:
    """The number environment variable `name` holds (`default` when unset or blank; a whole
    number when `whole`; at least `minimum` when given). A bad value raises `ModelSpecError`
    naming the variable, never its value (a server's client may read the message; issue 56)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    from graphseek.errors import ModelSpecError

    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        kind = "a whole number" if whole else "a number"
        raise ModelSpecError(f"environment variable {name} is not {kind}") from None
    if minimum is not None and value < minimum:
        raise ModelSpecError(f"environment variable {name} must be at least {minimum:g}")
    return value


# -- classification -------------------------------------------------------------------------------


def status_code(exc: BaseException) -> int | None:
    """The HTTP status of a provider error, if it has one."""
    for owner in (exc, getattr(exc, "response", None)):
        code = getattr(owner, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (``Retry-After`` / ``retry-after-ms``), if any."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


def _message(exc: BaseException) -> str:
    """The provider's message on one line, its secrets taken out before it is cut to 300
    characters (a key cut in two would no longer be recognised)."""
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return redact(" ".join(str(text).split()))[:300]


def _lc(name: str) -> tuple[type, ...]:
    """langchain-core's provider-neutral model error `name` (recent versions), or ()."""
    from langchain_core import exceptions

    found = getattr(exceptions, name, None)
    return (found,) if isinstance(found, type) else ()


def classify(exc: BaseException) -> LLMError | None:
    """The taxonomy error for a failed call (without usage), or None when `exc` is not a
    model-call failure (a bug, a script running out) and should propagate as it is."""
    if isinstance(exc, LLMError):
        return exc
    try:
        import httpx
        import openai
    except ImportError:  # pragma: no cover - both are dependencies (langchain-openai's)
        return None
    detail = _message(exc)
    if isinstance(exc, (openai.APITimeoutError, httpx.TimeoutException, *_lc("ModelTimeoutError"))):
        return LLMTransportError(f"timeout: {detail}", cause="timeout")
    if isinstance(exc, TimeoutError):
        return LLMTransportError(f"timeout: {detail}", cause="timeout")
    if isinstance(
        exc,
        (openai.APIConnectionError, httpx.TransportError, ConnectionError,
         *_lc("ModelConnectionError")),
    ):  # fmt: skip
        return LLMTransportError(f"connection error: {detail}", cause="connection error")
    code = status_code(exc)
    if isinstance(exc, _lc("ContextOverflowError")) or (
        code is not None and 400 <= code < 500 and _OVERFLOW.search(detail)
    ):
        return LLMRequestError(
            f"context overflow (HTTP {code or 400}): {detail}", cause="context overflow"
        )
    if code == 429 or isinstance(exc, (openai.RateLimitError, *_lc("ModelRateLimitError"))):
        return LLMTransportError(f"HTTP 429 (rate limited): {detail}", cause="HTTP 429")
    if code in (408, 409) or (code is not None and code >= 500):
        return LLMTransportError(f"HTTP {code} (server error): {detail}", cause=f"HTTP {code}")
    if isinstance(exc, (openai.InternalServerError, *_lc("ModelAPIError"))):
        return LLMTransportError(f"server error: {detail}", cause="server error")
    if code is not None and 400 <= code < 500:
        return LLMRequestError(f"HTTP {code} (request refused): {detail}", cause=f"HTTP {code}")
    if isinstance(exc, (openai.APIError, *_lc("ModelError"))):
        return LLMRequestError(f"request refused: {detail}", cause="request refused")
    return None


def is_retryable(exc: BaseException) -> bool:
    """Worth another attempt: transport failures (not budget, request or parse errors)."""
    error = classify(exc)
    return isinstance(error, LLMTransportError)


# -- retrying -------------------------------------------------------------------------------------


class _Policy:
    """tenacity options for one call under `RetrySettings`."""

    def __init__(self, settings: RetrySettings) -> None:
        self.settings = settings
        self._backoff = wait_exponential(
            multiplier=settings.backoff, max=MAX_BACKOFF
        ) + wait_random(0, settings.backoff / 2)
        self.gave_up_early = False

    def wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after(exc) if exc is not None else None
        if after is not None:
            return after
        return self._backoff(state) if self.settings.backoff > 0 else 0.0

    def stop(self, state: RetryCallState) -> bool:
        if state.attempt_number >= 1 + self.settings.retries:
            return True
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after(exc) if exc is not None else None
        if after is not None and after > self.settings.max_wait:
            self.gave_up_early = True
            return True
        return False

    def options(self) -> dict[str, Any]:
        return {
            "stop": self.stop,
            "wait": self.wait,
            "retry": retry_if_exception(is_retryable),
            "reraise": True,
        }


def _failure(exc: BaseException, attempts: int, who: str, policy: _Policy) -> BaseException:
    error = classify(exc)
    if error is None:
        return exc
    if error is exc:  # already ours (budget, a nested call's error)
        return exc
    message = f"{error} ({who}, {attempts} attempt(s))"
    after = retry_after(exc)
    if policy.gave_up_early and after is not None:
        message += f"; the server asked to retry after {after:.0f} s, over the {policy.settings.max_wait:.0f} s limit"
    out = type(error)(message, cause=error.cause, attempts=attempts)
    return out


def call_with_retries(call: Callable[[], R], who: str = "the model") -> R:
    """Run `call` (one model request), retrying transport failures; raise the taxonomy error
    (chained to the provider's) when it keeps failing. `who` names the model in messages."""
    policy = _Policy(RetrySettings.from_env())
    attempts = 0
    try:
        for attempt in Retrying(**policy.options()):
            with attempt:
                attempts += 1
                return call()
    except Exception as exc:
        failure = _failure(exc, attempts, who, policy)
        if failure is exc:
            raise
        raise failure from exc
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


async def acall_with_retries(call: Callable[[], Awaitable[R]], who: str = "the model") -> R:
    """Async `call_with_retries`."""
    policy = _Policy(RetrySettings.from_env())
    attempts = 0
    try:
        async for attempt in AsyncRetrying(**policy.options()):
            with attempt:
                attempts += 1
                return await call()
    except Exception as exc:
        failure = _failure(exc, attempts, who, policy)
        if failure is exc:
            raise
        raise failure from exc
    raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


__all__ = [
    "RetrySettings",
    "acall_with_retries",
    "call_with_retries",
    "classify",
    "env_number",
    "is_retryable",
    "retry_after",
    "status_code",
]
