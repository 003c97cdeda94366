"""Spec resolution and model construction (offline: building a client must not open a socket)."""

from __future__ import annotations

import pytest
from langchain_core.caches import InMemoryCache
from langchain_openai import ChatOpenAI

from graphseek.errors import ModelSpecError
from graphseek.llm import (
    ScriptedChatModel,
    SQLiteResponseCache,
    clear_model_cache,
    make_chat_model,
    model_for,
    parse_spec,
    resolve_spec,
)

ENV_VARS = (
    "GRAPHSEEK_LLM",
    "GRAPHSEEK_LLM_CACHE",
    "GRAPHSEEK_LLM_TIMEOUT",
    "GRAPHSEEK_LLM_MAX_RETRIES",
    "GRAPHSEEK_BASE_URL",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    clear_model_cache()


# -- resolve_spec -----------------------------------------------------------------------------


def test_instance_is_returned_as_is() -> None:
    model = ScriptedChatModel(responses=["x"])
    assert resolve_spec(model, "seeker") is model
    assert resolve_spec({"seeker": model, "default": "offline"}, "seeker") is model
    bound = model.bind_tools([])
    assert resolve_spec(bound, "seeker") is bound


def test_mapping_uses_role_then_default_then_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = {"seeker": "openai:gpt-4o", "default": "openai:gpt-4o-mini"}
    assert resolve_spec(llm, "seeker") == "openai:gpt-4o"
    assert resolve_spec(llm, "librarian") == "openai:gpt-4o-mini"
    assert resolve_spec({"seeker": "scripted"}, "librarian") == "offline"
    assert resolve_spec({"seeker": "", "default": "scripted"}, "seeker") == "scripted"
    monkeypatch.setenv("GRAPHSEEK_LLM", "openai:env-model")
    assert resolve_spec({"seeker": "scripted"}, "librarian") == "openai:env-model"


def test_none_and_empty_fall_back_to_env_then_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_spec(None, "seeker") == "offline"
    assert resolve_spec("  ", "seeker") == "offline"
    assert resolve_spec({}, "seeker") == "offline"
    monkeypatch.setenv("GRAPHSEEK_LLM", " openai:gpt-4o-mini ")
    assert resolve_spec(None, "seeker") == "openai:gpt-4o-mini"
    assert resolve_spec("", "seeker") == "openai:gpt-4o-mini"
    # an explicit spec wins over the environment
    assert resolve_spec("offline", "seeker") == "offline"


def test_specs_are_normalised() -> None:
    assert resolve_spec("OFFLINE", "x") == "offline"
    assert resolve_spec(" OpenAI:gpt-4o-mini ", "x") == "openai:gpt-4o-mini"
    # the model name is everything after the first colon (Ollama tags have colons)
    assert parse_spec("openai:llama3.1:8b") == ("openai", "llama3.1:8b")


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ("gpt-4o-mini", "did you mean 'openai:gpt-4o-mini'"),
        ("anthropic:claude", "unknown model spec"),
        ("openai:", "names no model"),
        ("openai", "names no model"),
        ("offline:fast", "unknown model spec"),
    ],
)
def test_bad_specs_name_the_accepted_forms(bad: str, needle: str) -> None:
    with pytest.raises(ModelSpecError) as info:
        resolve_spec(bad, "seeker")
    message = str(info.value)
    assert needle in message
    if "unknown" in needle:
        assert "'offline'" in message and "'openai:<model>'" in message and "'scripted'" in message


def test_bad_types_and_bad_env(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelSpecError, match="cannot use int"):
        resolve_spec(3, "seeker")
    with pytest.raises(ModelSpecError, match="mapping"):
        resolve_spec({"default": {"x": "y"}}, "seeker")
    monkeypatch.setenv("GRAPHSEEK_LLM", "nonsense")
    with pytest.raises(ModelSpecError, match="GRAPHSEEK_LLM"):
        resolve_spec(None, "seeker")


# -- make_chat_model --------------------------------------------------------------------------


def test_openai_from_env_with_base_url_and_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("GRAPHSEEK_LLM_TIMEOUT", "12.5")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "5")
    model = make_chat_model("openai:llama3.1:8b")  # sockets are disabled: construction is offline
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "llama3.1:8b"
    assert model.openai_api_base == "http://127.0.0.1:8000/v1"
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "EMPTY"
    assert model.temperature == 0
    assert model.request_timeout == 12.5
    # transport retries are graphseek's own (every attempt charged), not the client's
    assert model.max_retries == 0
    # a local server reads `max_tokens`, sent in the request body
    assert model.extra_body == {"max_tokens": 1024} and model.max_tokens is None


@pytest.mark.parametrize("env", ["GRAPHSEEK_BASE_URL", "OPENAI_API_BASE"])
def test_other_base_url_variables(monkeypatch: pytest.MonkeyPatch, env: str) -> None:
    monkeypatch.setenv(env, "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = make_chat_model("openai:qwen2.5", timeout=3, max_retries=0, temperature=0.3)
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base == "http://localhost:11434/v1"
    assert model.openai_api_key is not None
    assert model.openai_api_key.get_secret_value() == "sk-test"
    assert (model.request_timeout, model.max_retries, model.temperature) == (3.0, 0, 0.3)


def test_openai_with_key_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = make_chat_model("openai:gpt-4o-mini")
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base is None
    assert model.request_timeout == 300.0 and model.max_retries == 0 and model.max_tokens == 1024


def test_openai_without_key_or_url_is_a_clear_error() -> None:
    with pytest.raises(ModelSpecError, match="OPENAI_API_KEY"):
        make_chat_model("openai:gpt-4o-mini")


def test_offline_is_not_a_chat_model() -> None:
    with pytest.raises(ModelSpecError, match="model_for"):
        make_chat_model("offline")


def test_scripted_spec() -> None:
    model = make_chat_model("scripted", responses=["a", "b"])
    assert isinstance(model, ScriptedChatModel)
    assert [model.invoke("q").content for _ in range(2)] == ["a", "b"]


def test_cache_argument_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    model = make_chat_model("scripted", cache=tmp_path / "c.sqlite")
    assert isinstance(model.cache, SQLiteResponseCache)
    assert not (tmp_path / "c.sqlite").exists()  # created on first use
    memory = InMemoryCache()
    assert make_chat_model("scripted", cache=memory).cache is memory
    assert make_chat_model("scripted").cache is None
    monkeypatch.setenv("GRAPHSEEK_LLM_CACHE", str(tmp_path / "env.sqlite"))
    from_env = make_chat_model("scripted")
    assert isinstance(from_env.cache, SQLiteResponseCache)
    assert from_env.cache is make_chat_model("scripted").cache  # one cache object per file
    assert make_chat_model("scripted", cache=False).cache is False
    with pytest.raises(ModelSpecError, match="cache"):
        make_chat_model("scripted", cache=3)


# -- model_for --------------------------------------------------------------------------------


def test_model_for(monkeypatch: pytest.MonkeyPatch) -> None:
    assert model_for(None, "seeker") is None
    assert model_for({"default": "offline"}, "seeker") is None
    instance = ScriptedChatModel(responses=[])
    assert model_for({"seeker": instance}, "seeker") is instance
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    first = model_for("openai:gpt-4o-mini", "seeker")
    assert isinstance(first, ChatOpenAI)
    assert model_for({"default": "openai:gpt-4o-mini"}, "librarian") is first
    assert model_for("openai:gpt-4o", "seeker") is not first
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    rebuilt = model_for("openai:gpt-4o-mini", "seeker")  # the environment changed
    assert rebuilt is not first
    assert isinstance(rebuilt, ChatOpenAI)
    assert rebuilt.openai_api_base == "http://localhost:8000/v1"


def test_building_openai_model_creates_no_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    created: list[tuple[object, ...]] = []

    def record(*args: object, **kwargs: object) -> None:
        created.append(args)
        raise OSError("no sockets in this test")

    monkeypatch.setattr(socket, "socket", record)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    model = make_chat_model("openai:local-model")
    assert isinstance(model, ChatOpenAI)
    assert created == []
