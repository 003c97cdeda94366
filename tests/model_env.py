"""What the tests that talk to a fake OpenAI-compatible server (`fake_openai.py`) share: a model
environment that nothing outside the test configures, and a server the model factory points at.

An autouse fixture of such a module is ``yield from model_env(monkeypatch)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer

from graphseek.llm.factory import clear_model_cache

#: variables that would configure a model, a cache or an endpoint from outside the test
LLM_VARIABLES = (
    "GRAPHSEEK_LLM",
    "GRAPHSEEK_LLM_CACHE",
    "OPENAI_API_KEY",
    "GRAPHSEEK_BASE_URL",
    "OPENAI_API_BASE",
)


def model_env(monkeypatch: pytest.MonkeyPatch, **settings: str) -> Iterator[None]:
    """No model, cache or endpoint configured from outside; no backoff and one transport retry,
    so faults are quick; `settings` as environment variables; fresh clients before and after
    (the model cache is keyed by the base URL, which changes per server)."""
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "1")
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    clear_model_cache()
    yield
    clear_model_cache()


def serve(monkeypatch: pytest.MonkeyPatch, responder: Any) -> FakeOpenAIServer:
    """A fake server answering with `responder`, which the model factory's clients call
    (`OPENAI_BASE_URL`); start it with ``with``."""
    server = FakeOpenAIServer(responder)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server
