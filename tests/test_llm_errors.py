"""The error taxonomy of model calls and the transport retries (no sockets: provider errors are
built from httpx responses)."""

from __future__ import annotations

import httpx
import openai
import pytest

from graphseek.errors import (
    BudgetExceededError,
    LLMError,
    LLMOutputError,
    LLMRequestError,
    LLMTransportError,
)
from graphseek.llm.errors import call_with_retries, classify, retry_after

REQUEST = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")


def status_error(cls: type, code: int, message: str, **headers: str) -> Exception:
    response = httpx.Response(code, headers=headers, request=REQUEST)
    return cls(message, response=response, body=None)


@pytest.mark.parametrize(
    ("error", "kind", "cause"),
    [
        (openai.APITimeoutError(request=REQUEST), LLMTransportError, "timeout"),
        (openai.APIConnectionError(request=REQUEST), LLMTransportError, "connection error"),
        (httpx.ReadTimeout("slow", request=REQUEST), LLMTransportError, "timeout"),
        (status_error(openai.RateLimitError, 429, "slow down"), LLMTransportError, "HTTP 429"),
        (status_error(openai.InternalServerError, 502, "bad gw"), LLMTransportError, "HTTP 502"),
        (
            status_error(
                openai.BadRequestError, 400, "the request exceeds the available context size"
            ),
            LLMRequestError,
            "context overflow",
        ),
        (
            status_error(
                openai.BadRequestError, 400, "This model's maximum context length is 4096"
            ),
            LLMRequestError,
            "context overflow",
        ),
        (status_error(openai.NotFoundError, 404, "no such model"), LLMRequestError, "HTTP 404"),
        (status_error(openai.AuthenticationError, 401, "bad key"), LLMRequestError, "HTTP 401"),
    ],
)
def test_provider_errors_map_onto_the_taxonomy(error, kind, cause):
    mapped = classify(error)
    assert isinstance(mapped, kind) and isinstance(mapped, LLMError)
    assert mapped.cause == cause and str(mapped).startswith(cause)


def test_bugs_are_not_model_failures():
    assert classify(KeyError("x")) is None
    assert classify(RuntimeError("boom")) is None


def test_every_kind_is_an_llm_error():
    assert {c.kind for c in (LLMTransportError, LLMRequestError, LLMOutputError)} == {
        "transport",
        "request",
        "malformed",
    }
    assert issubclass(BudgetExceededError, LLMError) and BudgetExceededError.kind == "budget"


def test_retry_after_reads_seconds_and_milliseconds():
    assert retry_after(status_error(openai.RateLimitError, 429, "x", **{"retry-after": "7"})) == 7
    headers = {"retry-after-ms": "1500"}
    assert retry_after(status_error(openai.RateLimitError, 429, "x", **headers)) == 1.5
    assert retry_after(status_error(openai.RateLimitError, 429, "x")) is None


def test_transport_failures_are_retried_with_the_servers_wait(monkeypatch):
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "2")
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    waits: list[float] = []
    monkeypatch.setattr("tenacity.nap.time.sleep", waits.append)
    attempts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise status_error(openai.RateLimitError, 429, "later", **{"retry-after": "0.25"})
        return "ok"

    assert call_with_retries(flaky) == "ok"
    assert len(attempts) == 3 and waits == [0.25, 0.25]


def test_a_retry_after_over_the_limit_gives_up_at_once(monkeypatch):
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_WAIT", "5")
    attempts: list[int] = []

    def limited() -> str:
        attempts.append(1)
        raise status_error(openai.RateLimitError, 429, "quota", **{"retry-after": "3600"})

    with pytest.raises(LLMTransportError, match="over the 5 s limit") as info:
        call_with_retries(limited, "model 'm'")
    assert len(attempts) == 1 and info.value.attempts == 1
    assert isinstance(info.value.__cause__, openai.RateLimitError)


def test_request_errors_are_not_retried(monkeypatch):
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    attempts: list[int] = []

    def overflow() -> str:
        attempts.append(1)
        raise status_error(openai.BadRequestError, 400, "context_length_exceeded")

    with pytest.raises(LLMRequestError, match="context overflow"):
        call_with_retries(overflow)
    assert len(attempts) == 1
