"""The one place chat models are made: spec strings -> LangChain chat models.

Accepted specs:

- ``"offline"``: no chat model; each role runs its deterministic offline policy.
- ``"openai:<model>"``: ``langchain_openai.ChatOpenAI``, against OpenAI or any OpenAI-compatible
  server (vLLM, Ollama, a llama.cpp server). The model name is everything after the first colon,
  so ``"openai:llama3.1:8b"`` names the Ollama model ``llama3.1:8b``.
- ``"scripted"``: `graphseek.testing.ScriptedChatModel`, a test double replaying
  ``responses=[...]`` (for tests only).

Environment:

- ``GRAPHSEEK_LLM``: the spec used when a run names none (default ``"offline"``).
- ``OPENAI_API_KEY``; the base URL from ``GRAPHSEEK_BASE_URL``, ``OPENAI_BASE_URL`` or
  ``OPENAI_API_BASE`` (first set wins). With a base URL and no key, the key is ``"EMPTY"``, which
  local servers accept.
- ``GRAPHSEEK_LLM_TIMEOUT``: seconds one request may take (default 300, fit for a small model on
  a CPU; ``Context.llm_timeout`` overrides it per run). Transport retries are ours, not the
  client's (``GRAPHSEEK_LLM_MAX_RETRIES``, see `graphseek.llm.errors`), so each attempt is
  charged and traced.
- ``GRAPHSEEK_LLM_MAX_TOKENS``: the longest reply (default 1024 tokens; ``Context.max_reply_tokens``
  sets it per run and per role). Sent as ``max_completion_tokens`` to OpenAI and as ``max_tokens``
  (what llama.cpp, vLLM and Ollama read) to any other base URL.
- ``GRAPHSEEK_LLM_CACHE``: path of a `SQLiteResponseCache` attached to every model made here.

Nothing here opens a socket: ``ChatOpenAI`` builds its HTTP client without connecting, and is given
``http_socket_options=()`` so that it does not probe a throwaway socket for TCP keepalive options
(the request timeout bounds a silent server instead).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from graphseek.errors import ModelSpecError
from graphseek.llm.cache import SQLiteResponseCache
from graphseek.llm.context_window import clear_context_windows, set_context_window
from graphseek.llm.errors import env_number

OFFLINE = "offline"
ACCEPTED_SPECS = "'offline', 'openai:<model>' (e.g. 'openai:gpt-4o-mini'), 'scripted'"

LLM_ENV = "GRAPHSEEK_LLM"
CACHE_ENV = "GRAPHSEEK_LLM_CACHE"
TIMEOUT_ENV = "GRAPHSEEK_LLM_TIMEOUT"
MAX_TOKENS_ENV = "GRAPHSEEK_LLM_MAX_TOKENS"
BASE_URL_ENVS = ("GRAPHSEEK_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_BASE")
API_KEY_ENV = "OPENAI_API_KEY"

DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_TOKENS = 1024

#: environment variables whose values change what `make_chat_model` builds (see `model_for`)
_MODEL_ENVS = (*BASE_URL_ENVS, API_KEY_ENV, TIMEOUT_ENV, MAX_TOKENS_ENV, CACHE_ENV)


# -- specs ------------------------------------------------------------------------------------


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a spec into ``(provider, model)``: ``("offline", "")``, ``("openai", name)``,
    ``("scripted", "")``. Raises `ModelSpecError` naming the accepted forms."""
    if not isinstance(spec, str):
        raise ModelSpecError(
            f"a model spec must be a string, got {type(spec).__name__}; use {ACCEPTED_SPECS}"
        )
    text = spec.strip()
    provider, sep, model = text.partition(":")
    provider, model = provider.strip().lower(), model.strip()
    if provider in (OFFLINE, "scripted") and not model:
        return provider, ""
    if provider == "openai":
        if not model:
            raise ModelSpecError(
                f"model spec {spec!r} names no model: write 'openai:<model>', "
                "e.g. 'openai:gpt-4o-mini'"
            )
        return provider, model
    hint = f" (did you mean 'openai:{text}'?)" if text and not sep else ""
    raise ModelSpecError(f"unknown model spec {spec!r}{hint}; use one of {ACCEPTED_SPECS}")


def _normalise(spec: str) -> str:
    provider, model = parse_spec(spec)
    return f"{provider}:{model}" if model else provider


def _default_spec() -> str:
    value = os.environ.get(LLM_ENV, "").strip()
    if not value:
        return OFFLINE
    try:
        return _normalise(value)
    except ModelSpecError:  # named, not repeated: a server's client may read the message
        raise ModelSpecError(
            f"environment variable {LLM_ENV} is not a model spec; use one of {ACCEPTED_SPECS}"
        ) from None


def resolve_spec(llm: Any, role: str) -> str | BaseChatModel:
    """The model for `role` given ``Context.llm``: an instance (returned as is) or a spec string.

    - a chat model (or any runnable, e.g. a model with tools bound) is returned unchanged;
    - a mapping uses ``llm[role]``, else ``llm["default"]``, else the fallback;
    - a spec string is validated and normalised;
    - None or an empty string falls back to ``$GRAPHSEEK_LLM``, then ``"offline"``.

    Returns ``"offline"`` when the role should run its offline policy.
    """
    if llm is None:
        return _default_spec()
    if isinstance(llm, str):
        return _normalise(llm) if llm.strip() else _default_spec()
    if isinstance(llm, Mapping):
        for key in (role, "default"):
            value = llm.get(key)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            if isinstance(value, Mapping):
                raise ModelSpecError(
                    f"llm[{key!r}] is a mapping; each role takes a spec string or a chat model"
                )
            return resolve_spec(value, role)
        return _default_spec()
    if isinstance(llm, Runnable):
        return llm  # type: ignore[return-value]
    raise ModelSpecError(
        f"cannot use {type(llm).__name__} as a model: give a spec ({ACCEPTED_SPECS}), "
        "a mapping role -> spec with a 'default' key, or a chat model instance"
    )


# -- models -----------------------------------------------------------------------------------


def make_chat_model(spec: str, **kwargs: Any) -> BaseChatModel:
    """Build the chat model a spec names (see the module docstring for specs and environment).

    Keyword arguments:

    - ``cache``: a path (`SQLiteResponseCache`), a ``BaseCache``, or ``False`` for no caching
      at all; by default ``$GRAPHSEEK_LLM_CACHE`` if set, else LangChain's global cache if any.
    - for ``openai:``: ``base_url``, ``api_key``, ``temperature`` (default 0; None leaves it
      to the server, for models that reject it), ``timeout`` (seconds per request),
      ``max_tokens`` (longest reply), ``max_retries`` (the client's own retries, default 0: see
      `graphseek.llm.errors`); anything else goes to ``ChatOpenAI`` unchanged.
    - for ``scripted``: ``responses`` (a list or a callable) and ``model_name``.
    """
    provider, name = parse_spec(spec)
    cache = _resolve_cache(kwargs.pop("cache", None))
    model: BaseChatModel
    if provider == OFFLINE:
        raise ModelSpecError(
            "'offline' selects each role's offline policy, not a chat model; "
            "use graphseek.llm.model_for(llm, role), which returns None for it"
        )
    if provider == "scripted":
        from graphseek.testing.scripted import ScriptedChatModel  # the test double

        extra = {k: v for k, v in kwargs.items() if k == "model_name"}
        model = ScriptedChatModel(responses=kwargs.get("responses", []), **extra)
    else:
        model = _make_openai(name, kwargs)
    if cache is not None:
        # set after construction: a constructor kwarg would end up in the cache key itself
        model.cache = cache
    return model


def _make_openai(name: str, kwargs: dict[str, Any]) -> BaseChatModel:
    from langchain_openai import ChatOpenAI  # deferred: importing the client stack is slow

    base_url = kwargs.pop("base_url", None) or _first_env(BASE_URL_ENVS)
    api_key = kwargs.pop("api_key", None) or os.environ.get(API_KEY_ENV) or None
    if api_key is None:
        if not base_url:
            raise ModelSpecError(
                f"model spec 'openai:{name}' needs {API_KEY_ENV}, or an OpenAI-compatible server "
                f"URL in one of {', '.join(BASE_URL_ENVS)}; or run with llm='offline'"
            )
        api_key = "EMPTY"  # vLLM, Ollama and llama.cpp servers accept any key
    options: dict[str, Any] = {
        "model": name,
        "api_key": api_key,
        "timeout": _number(kwargs.pop("timeout", None), TIMEOUT_ENV, DEFAULT_TIMEOUT, float),
        # our retries (graphseek.llm.errors) charge and trace every attempt; the client's would not
        "max_retries": int(kwargs.pop("max_retries", 0)),
    }
    max_tokens = _number(kwargs.pop("max_tokens", None), MAX_TOKENS_ENV, DEFAULT_MAX_TOKENS, int)
    if max_tokens and max_tokens > 0:
        if base_url and "api.openai.com" not in base_url:
            # local servers read `max_tokens`; ChatOpenAI would send `max_completion_tokens`
            extra_body = dict(kwargs.pop("extra_body", None) or {})
            extra_body.setdefault("max_tokens", max_tokens)
            options["extra_body"] = extra_body
        else:
            options["max_tokens"] = max_tokens
    temperature = kwargs.pop("temperature", 0.0)
    if temperature is not None:
        options["temperature"] = temperature
    if base_url:
        options["base_url"] = base_url
    # `None` (langchain-openai's default) probes a throwaway socket at construction to pick TCP
    # keepalive options; `()` skips the probe and keeps httpx's proxy auto-detection. Silent
    # peers are bounded by the request timeout instead. Pass `http_socket_options=None` to opt in.
    options["http_socket_options"] = kwargs.pop("http_socket_options", ())
    return ChatOpenAI(**options, **kwargs)


def _first_env(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def _number(value: Any, env: str, default: Any, kind: type) -> Any:
    """`value` as `kind`, else environment variable `env`'s number (named, not repeated, when
    it is not one: `graphseek.llm.errors.env_number`), else `default`."""
    if value is not None:
        return kind(value)
    return kind(env_number(env, default, whole=kind is int))


# -- caches -----------------------------------------------------------------------------------

_caches: dict[Path, SQLiteResponseCache] = {}
_caches_lock = threading.Lock()


def open_cache(path: str | os.PathLike[str]) -> SQLiteResponseCache:
    """The process-wide `SQLiteResponseCache` for `path` (one connection per file)."""
    key = Path(path).expanduser().resolve()
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = SQLiteResponseCache(key)
        return cache


def _resolve_cache(cache: Any) -> BaseCache | bool | None:
    if cache is False:
        return False
    if cache is None or cache is True:
        env = os.environ.get(CACHE_ENV, "").strip()
        if env:
            return open_cache(env)
        if cache is True:
            raise ModelSpecError(f"cache=True needs a path: pass cache=<path> or set {CACHE_ENV}")
        return None
    if isinstance(cache, BaseCache):
        return cache
    if isinstance(cache, str | os.PathLike):
        return open_cache(cache)
    raise ModelSpecError(
        f"cache must be a path, a langchain BaseCache or False, got {type(cache).__name__}"
    )


# -- per-role lookup --------------------------------------------------------------------------

_models_lock = threading.Lock()


def model_for(
    llm: Any,
    role: str,
    *,
    timeout: float | None = None,
    max_tokens: int | None = None,
    context_window: int | None = None,
) -> BaseChatModel | None:
    """The chat model `role` should use, or None for its offline policy.

    `timeout` (seconds per request) and `max_tokens` (longest reply) shape models built from
    spec strings (see `model_options`); a chat-model instance is returned as it is. Models built
    from spec strings are cached per spec, settings and the environment variables that shape
    them, so repeated calls, across nodes and runs, reuse one client and its connections.
    `context_window` (tokens) is registered on the model returned
    (`graphseek.llm.context_window.set_context_window`; for an instance shared by roles, the
    last role's setting holds).
    """
    spec = resolve_spec(llm, role)
    if not isinstance(spec, str):
        if context_window:
            set_context_window(spec, context_window)
        return spec
    if spec == OFFLINE:
        return None
    options: dict[str, Any] = {}
    if spec.startswith("openai:"):
        if timeout is not None:
            options["timeout"] = float(timeout)
        if max_tokens is not None:
            options["max_tokens"] = int(max_tokens)
    key = (
        spec,
        tuple(sorted(options.items())),
        context_window or 0,
        tuple(os.environ.get(name) for name in _MODEL_ENVS),
    )
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = make_chat_model(spec, **options)
            if context_window:
                set_context_window(model, context_window)
        return model


def model_options(context: Any, role: str) -> dict[str, Any]:
    """`model_for` settings from a run's `Context`: ``llm_timeout``, the role's reply limit
    (``max_reply_tokens``) and its ``context_window``, each one number for every role or a
    mapping role -> number with an optional ``"default"``. Unset values leave the defaults."""
    options: dict[str, Any] = {}
    timeout = getattr(context, "llm_timeout", None)
    if timeout:  # 0 / None: the environment's default
        options["timeout"] = float(timeout)
    limit = getattr(context, "max_reply_tokens", None)
    if isinstance(limit, Mapping):
        limit = limit.get(role, limit.get("default"))
    if limit:  # 0 / None: the environment's default
        options["max_tokens"] = int(limit)
    window = getattr(context, "context_window", None)
    if isinstance(window, Mapping):
        window = window.get(role, window.get("default"))
    if window:  # 0 / None: the server's, else the model family's
        options["context_window"] = int(window)
    return options


def model_for_context(context: Any, role: str) -> BaseChatModel | None:
    """`model_for(context.llm, role)` with the run's timeout and the role's reply limit."""
    return model_for(getattr(context, "llm", None), role, **model_options(context, role))


_models: dict[tuple[Any, ...], BaseChatModel] = {}


def clear_model_cache() -> None:
    """Forget the models `model_for` has built (their clients close when collected)."""
    with _models_lock:
        _models.clear()
    clear_context_windows()
