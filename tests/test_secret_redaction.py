"""No error message carries a secret or the text of an environment variable (issue 56 item 2).

A provider's message goes into graphseek's errors; an OpenAI 401 echoes the key masked to its
last 4 characters (``sk-proj-****Qz7X``), a careless server echoes it whole. Every error graphseek
raises is redacted (`graphseek.errors.redact`): keys in OpenAI's shape, masked keys, bearer
credentials, URL passwords and the literal values of secret-looking environment variables. A
setting variable with a bad value is named, never repeated.

Model, rerank and embedding requests go to fake servers on 127.0.0.1 only (`tests/fake_openai.py`,
`tests/test_remote_embedder.py`): sockets are allowed for this module, to that address only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from fake_openai import QUESTION, FakeOpenAIServer, Faults, Reply, TinyWorld
from test_remote_embedder import FakeModelServer

from graphseek.errors import REDACTED, LLMRequestError, ModelSpecError, redact
from graphseek.knowledge import embedders, rerank
from graphseek.llm import clear_model_cache
from graphseek.llm.errors import classify

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

#: one key in OpenAI's shape, one a local server's (no recognisable shape: found by its value)
KEYS = ["sk-proj-Abc123def456ghi789jkl012Qz7X", "vllm-local-key-0123456789Wv8Y"]


def masked(key: str) -> str:
    """The key as OpenAI's 401 shows it: its first characters, stars, its last 4."""
    return key[:8] + "*" * 30 + key[-4:]


def unauthorised(key: str) -> str:
    """A 401 message that echoes `key` masked (as OpenAI does) and whole (as a careless server
    might)."""
    return (
        f"Incorrect API key provided: {masked(key)}. You can find your API key at "
        f"https://platform.openai.com/account/api-keys. (received Authorization: Bearer {key})"
    )


def assert_no_key(text: str, key: str) -> None:
    assert key not in text and key[-4:] not in text and key[:12] not in text, text


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("GRAPHSEEK_LLM", "GRAPHSEEK_LLM_CACHE", "OPENAI_API_KEY", "GRAPHSEEK_BASE_URL",
                 "OPENAI_API_BASE", "OPENAI_BASE_URL", "GRAPHSEEK_RERANK_API_KEY",
                 "GRAPHSEEK_EMBED_API_KEY", "GRAPHSEEK_EMBED_BASE_URL"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "1")
    clear_model_cache()
    rerank.clear_rerankers()
    embedders.clear_embedders()
    yield
    clear_model_cache()
    rerank.clear_rerankers()
    embedders.clear_embedders()


# -- a 401 that echoes the key ----------------------------------------------------------------


@pytest.mark.parametrize("key", KEYS)
def test_a_chat_401_echoing_the_key_gives_an_error_without_it(
    monkeypatch: pytest.MonkeyPatch, tiny_index: Any, key: str
) -> None:
    from graphseek.api import ask
    from graphseek.llm import make_chat_model
    from graphseek.llm.structured import invoke_text

    monkeypatch.setenv("OPENAI_API_KEY", key)
    with FakeOpenAIServer(Faults(TinyWorld(), Reply(status=401, error=unauthorised(key)))) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        with pytest.raises(LLMRequestError) as err:
            invoke_text(make_chat_model("openai:tiny"), "Who?")
        result = ask(tiny_index, QUESTION, topology="naive", llm="openai:tiny")
    message = str(err.value)
    assert message.startswith(
        "HTTP 401 (request refused): Error code: 401 - Incorrect API key provided: "
        f"{REDACTED}. You can find your API key at https://platform.openai.com/account/api-keys. "
        f"(received Authorization: Bearer {REDACTED}) (model 'tiny', 1 attempt(s))"
    )
    assert_no_key(message, key)
    assert result.abstained and "HTTP 401" in result.abstain_reason
    assert_no_key(result.model_dump_json(), key)


@pytest.mark.parametrize("key", KEYS)
def test_a_reranker_401_echoing_the_key_gives_an_error_and_a_warning_without_it(
    monkeypatch: pytest.MonkeyPatch,
    tiny_index: Any,
    caplog: pytest.LogCaptureFixture,
    key: str,
) -> None:
    from graphseek.tools.retrievers import retrieve

    monkeypatch.setenv("GRAPHSEEK_RERANK_API_KEY", key)
    with FakeModelServer() as server:
        spec = f"http:{server.base_url}"
        server.faults = [(401, unauthorised(key), {})]
        hits = tiny_index.search("Lord Byron", k=3, method="bm25")
        with pytest.raises(LLMRequestError) as err:
            rerank.rerank_hits(hits, "Lord Byron", rerank.reranker_for(spec), k=2)
        server.faults = [(401, unauthorised(key), {})]
        with caplog.at_level(logging.WARNING, logger="graphseek.tools.retrievers"):
            assert retrieve(tiny_index, "Lord Byron", 2, "bm25", reranker=spec)
    assert "HTTP 401" in str(err.value) and "HTTP 401" in caplog.text
    assert_no_key(str(err.value), key)
    assert_no_key(caplog.text, key)


@pytest.mark.parametrize("key", KEYS)
def test_an_embedder_401_echoing_the_key_gives_an_error_without_it(
    monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    monkeypatch.setenv("GRAPHSEEK_EMBED_API_KEY", key)
    with FakeModelServer() as server:
        server.faults = [(401, unauthorised(key), {})]
        encoder = embedders.embedder_for(f"openai:tiny-embed@{server.base_url}", dim=8)
        with pytest.raises(LLMRequestError) as err:
            encoder.encode(["a question"])
    assert "HTTP 401" in str(err.value)
    assert_no_key(str(err.value), key)


def test_a_key_cut_by_the_length_limit_is_taken_out_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider's message is cut to 300 characters after redaction: a key straddling the
    cut would otherwise leave its first characters, no longer recognisable."""
    key = KEYS[1]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    response = httpx.Response(401, request=request)
    text = "x" * 290 + f" key {key} rejected"
    error = classify(openai.AuthenticationError(text, response=response, body=None))
    assert error is not None and key[:6] not in str(error)


# -- redaction itself ---------------------------------------------------------------------------


def test_redact_takes_out_secrets_and_keeps_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789-abcdef")
    monkeypatch.setenv("DB_PASSWORD", "correct-horse-battery")
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # too short to be looked for
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_TOKENS", "123456789")  # a count, not a secret
    cases = {
        "HTTP 401: Bearer abc.def-ghi rejected": f"HTTP 401: Bearer {REDACTED} rejected",
        "key sk-abcdefghijklmnop was refused": f"key {REDACTED} was refused",
        "key gsk_ab****wxyz was refused": f"key {REDACTED} was refused",
        "postgresql://me:pw-123@db/x": f"postgresql://me:{REDACTED}@db/x",
        "GET https://h/v1?api_key=abc123&x=1": f"GET https://h/v1?api_key={REDACTED}&x=1",
        "token tok-0123456789-abcdef and correct-horse-battery": (
            f"token {REDACTED} and {REDACTED}"
        ),
    }
    for text, expected in cases.items():
        assert redact(text) == expected
    plain = (
        "HTTP 429 (rate limited): slow down (model 'gpt-4o-mini', 2 attempt(s)); the sk-learn "
        "desk-top false 123456789 tokens http://127.0.0.1:8080/v1/rerank"
    )
    assert redact(plain) == plain
    # every error graphseek raises goes through it
    assert str(ModelSpecError("got correct-horse-battery")) == f"got {REDACTED}"


# -- a setting variable with a bad value is named, not repeated --------------------------------

BAD = "12-not-a-number-SECRET-Rt5K"


def _chat() -> Any:
    from graphseek.llm import make_chat_model

    return make_chat_model("openai:tiny", base_url="http://127.0.0.1:9/v1")


def _structured() -> Any:
    from pydantic import BaseModel

    from graphseek.llm.structured import _structured_runnable

    class Verdict(BaseModel):
        ok: bool

    return _structured_runnable(_chat(), Verdict, None)


def _retry_settings() -> Any:
    from graphseek.llm.errors import RetrySettings

    return RetrySettings.from_env()


def _default_llm() -> Any:
    from graphseek.llm.factory import resolve_spec

    return resolve_spec(None, "seeker")


def _embedder_backend() -> Any:
    from graphseek.knowledge.embedder import Embedder

    return Embedder()


SETTINGS: dict[str, Callable[[], Any]] = {
    "GRAPHSEEK_LLM_MAX_RETRIES": _retry_settings,
    "GRAPHSEEK_LLM_BACKOFF": _retry_settings,
    "GRAPHSEEK_LLM_MAX_WAIT": _retry_settings,
    "GRAPHSEEK_LLM_TIMEOUT": _chat,
    "GRAPHSEEK_LLM_MAX_TOKENS": _chat,
    "GRAPHSEEK_LLM": _default_llm,
    "GRAPHSEEK_LLM_STRUCTURED_METHOD": _structured,
    "GRAPHSEEK_EMBED_BATCH": lambda: embedders.OpenAIEmbedder("m", base_url="http://127.0.0.1:9"),
    "GRAPHSEEK_EMBED_TIMEOUT": lambda: embedders.OpenAIEmbedder("m", base_url="http://127.0.0.1:9"),
    "GRAPHSEEK_RERANK_TIMEOUT": lambda: rerank.HttpReranker("http://127.0.0.1:9"),
    "GRAPHSEEK_EMBEDDER": _embedder_backend,
}


@pytest.mark.parametrize("name", list(SETTINGS))
def test_a_bad_setting_variable_is_named_without_its_value(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, BAD)
    with pytest.raises(ValueError) as err:  # ModelSpecError is a ValueError
        SETTINGS[name]()
    message = str(err.value)
    assert name in message, message
    assert BAD not in message and "SECRET" not in message and "Rt5K" not in message, message


def test_a_batch_below_one_is_named_without_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHSEEK_EMBED_BATCH", "-73")
    with pytest.raises(ModelSpecError) as err:
        embedders.OpenAIEmbedder("m", base_url="http://127.0.0.1:9")
    assert str(err.value) == "environment variable GRAPHSEEK_EMBED_BATCH must be at least 1"
