"""Each model's context window, and the check every request passes before it is sent.

The window of a model, in order:

1. what its server says, probed once per (base URL, model) and kept for the process:
   ``GET {base_url}/models`` (vLLM: ``max_model_len`` of the model's entry; also
   ``context_length`` / ``context_window`` where a server gives one), then llama.cpp's
   ``GET /props`` (``default_generation_settings.n_ctx``, else ``n_ctx``), then Ollama
   (``GET /api/version`` answers, then ``POST /api/show``: ``num_ctx`` in its ``parameters``,
   else ``model_info["<arch>.context_length"]``). Each probe has a short timeout
   (`PROBE_TIMEOUT`); a missing endpoint or an unreachable server is not an error, it just says
   nothing. OpenAI's own API (no base URL, or api.openai.com) is not probed: it does not say;
2. the run's ``context_window`` setting for the role (`graphseek.state.Context`, CLI
   ``--llm-context``), registered on the model by `graphseek.llm.factory.model_for`; with a
   window from the server too, the smaller one holds (a server cannot take more than it says);
3. `DEFAULT_WINDOWS`, by model-name family, and `UNKNOWN_WINDOW` for an OpenAI-compatible model
   of no known family. Test doubles (`ScriptedChatModel`, langchain's fake models) have no
   window unless one is set, so nothing is checked for them by default.

`fit_request(model, messages)` is called by `graphseek.llm.structured` for every request: it
reserves the model's reply limit (``max_tokens``), counts the prompt and the bound tool
definitions (`graphseek.llm.tokens`), packs the messages when they do not fit
(`graphseek.llm.packing`), and raises `ContextBudgetError` instead of sending a request that would
still not fit. That error is a context overflow of the taxonomy (`LLMRequestError`, never
retried), charged as one failed call with no tokens, so a loop that keeps building over-long
prompts spends its call budget and ends.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage

from graphseek.errors import LLMRequestError
from graphseek.llm.packing import pack_messages
from graphseek.llm.tokens import count_message, count_messages, count_text, count_tools
from graphseek.state.models import Usage

#: seconds one probe of a server may take
PROBE_TIMEOUT = 2.0
#: the reply reserved when a model names no ``max_tokens`` (the factory's default)
DEFAULT_REPLY_TOKENS = 1024
#: the window of an OpenAI-compatible model of no known family
UNKNOWN_WINDOW = 8192
#: in a small window the reply reserved is at most this share of it (1/8: 512 of 4,096 tokens) ...
REPLY_SHARE = 8
#: ... but never less than this, nor more than the model's reply limit: what a role's reply needs
#: (a tool call, a JSON draft with its reasoning)
MIN_REPLY_TOKENS = 384

#: context windows by model-name family: the first pattern found in the lower-cased name wins
DEFAULT_WINDOWS: tuple[tuple[str, int], ...] = (
    (r"gpt-4o|chatgpt-4o|gpt-4-turbo|gpt-4-(?:1106|0125)", 128_000),
    (r"gpt-4\.1", 1_047_576),
    (r"gpt-5", 272_000),  # the input limit (400K with the reply)
    (r"gpt-4-32k", 32_768),
    (r"gpt-4(?![.\w])|gpt-4-0[36]", 8_192),
    (r"gpt-3\.5-turbo", 16_385),
    (r"(?:^|/)o1-mini", 128_000),
    (r"(?:^|/)o[1-9](?:$|-)", 200_000),
    (r"claude", 200_000),
    (r"llama-?3\.[1-3]|llama-?4", 131_072),
    (r"llama-?3", 8_192),
    (r"llama-?2", 4_096),
    (r"qwen", 32_768),
    (r"mixtral|mistral|ministral", 32_768),
    (r"gemma-?3", 32_768),
    (r"gemma", 8_192),
    (r"phi-?3\.5|phi-?4", 16_384),
    (r"phi", 4_096),
    (r"deepseek", 65_536),
)


def default_window(model_name: str) -> int | None:
    """The window of a known model-name family (`DEFAULT_WINDOWS`), else None."""
    name = model_name.strip().lower()
    for pattern, tokens in DEFAULT_WINDOWS:
        if re.search(pattern, name):
            return tokens
    return None


# -- probing servers ---------------------------------------------------------------------------

_PROBED: dict[tuple[str, str], int | None] = {}
_PROBE_LOCK = threading.Lock()


def server_window(
    base_url: str, model: str, api_key: str | None = None, timeout: float = PROBE_TIMEOUT
) -> int | None:
    """The window the server at `base_url` reports for `model`, or None when it says nothing
    (probed once per base URL and model in a process; see the module docstring)."""
    key = (base_url.rstrip("/"), model)
    with _PROBE_LOCK:
        if key not in _PROBED:
            _PROBED[key] = _probe(key[0], model, api_key, timeout)
        return _PROBED[key]


def forget_windows() -> None:
    """Forget the windows probed so far (tests; a server restarted with another window)."""
    with _PROBE_LOCK:
        _PROBED.clear()


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value) or None
    return None


def _from_models(payload: Any, model: str) -> int | None:
    entries = payload.get("data") if isinstance(payload, Mapping) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, Mapping)]
    named = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in named:
        for field in ("max_model_len", "context_length", "context_window"):
            found = _positive(entry.get(field))
            if found:
                return found
    return None


def _from_props(payload: Any) -> int | None:
    if not isinstance(payload, Mapping):
        return None
    settings = payload.get("default_generation_settings")
    if isinstance(settings, Mapping) and _positive(settings.get("n_ctx")):
        return _positive(settings.get("n_ctx"))
    return _positive(payload.get("n_ctx"))


def _from_ollama(payload: Any) -> int | None:
    if not isinstance(payload, Mapping):
        return None
    params = payload.get("parameters")
    if isinstance(params, str):
        match = re.search(r"^\s*num_ctx\s+(\d+)", params, re.MULTILINE)
        if match:
            return _positive(match.group(1))
    info = payload.get("model_info")
    if isinstance(info, Mapping):
        for key, value in info.items():
            if str(key).endswith(".context_length") and _positive(value):
                return _positive(value)
    return None


def _probe(base: str, model: str, api_key: str | None, timeout: float) -> int | None:
    try:
        import httpx
    except ImportError:  # pragma: no cover - a dependency of openai
        return None
    root = re.sub(r"/v1$", "", base)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def get_json(client: httpx.Client, method: str, url: str, **kwargs: Any) -> Any:
        response = client.request(method, url, **kwargs)
        if response.status_code != 200:
            return None
        try:
            return response.json()
        except ValueError:
            return None

    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            found = _from_models(get_json(client, "GET", f"{base}/models"), model)
            if found:
                return found
            found = _from_props(get_json(client, "GET", f"{root}/props"))
            if found:
                return found
            version = get_json(client, "GET", f"{root}/api/version")
            if isinstance(version, Mapping) and "version" in version:
                return _from_ollama(get_json(client, "POST", f"{root}/api/show",
                                             json={"model": model}))  # fmt: skip
    except Exception:  # unreachable, refused, a proxy, a socket guard: the server says nothing
        return None
    return None


# -- settings registered on models ---------------------------------------------------------------

#: id(model) -> (model, tokens): the model is held so that its id is not reused while listed
_SETTINGS: OrderedDict[int, tuple[Any, int]] = OrderedDict()
_SETTINGS_LOCK = threading.Lock()
_MAX_SETTINGS = 256


def set_context_window(model: Any, tokens: int | None) -> None:
    """Record the ``context_window`` setting for `model` (None or 0: none). For a chat-model
    instance shared by several roles, the setting of the role that asked last holds."""
    key = id(model)
    with _SETTINGS_LOCK:
        if not tokens or tokens <= 0:
            _SETTINGS.pop(key, None)
            return
        _SETTINGS[key] = (model, int(tokens))
        _SETTINGS.move_to_end(key)
        while len(_SETTINGS) > _MAX_SETTINGS:
            _SETTINGS.popitem(last=False)


def context_window_setting(model: Any) -> int | None:
    with _SETTINGS_LOCK:
        entry = _SETTINGS.get(id(model))
        return entry[1] if entry is not None and entry[0] is model else None


def clear_context_windows() -> None:
    """Forget the registered settings (with `graphseek.llm.clear_model_cache`)."""
    with _SETTINGS_LOCK:
        _SETTINGS.clear()


# -- a model's window -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """A model's context window, the reply reserved in it, and where the window came from
    ("server", "setting", "server+setting" or "default")."""

    tokens: int
    reply: int
    source: str
    model_name: str = ""

    @property
    def prompt(self) -> int:
        """Tokens left for the prompt (messages and tool definitions)."""
        return max(0, self.tokens - self.reply)


def chat_model(runnable: Any) -> Any:
    """The chat model under bindings (``bind_tools``, ``bind``)."""
    for _ in range(8):
        inner = getattr(runnable, "bound", None)
        if inner is None:
            break
        runnable = inner
    return runnable


def bound_tools(runnable: Any) -> list[Any]:
    """The tool definitions bound to `runnable` (``bind_tools``), in the request's format."""
    tools: list[Any] = []
    for _ in range(8):
        kwargs = getattr(runnable, "kwargs", None)
        if isinstance(kwargs, Mapping) and isinstance(kwargs.get("tools"), list):
            tools.extend(kwargs["tools"])
        inner = getattr(runnable, "bound", None)
        if inner is None:
            break
        runnable = inner
    return tools


def model_name(model: Any) -> str:
    for attr in ("model_name", "model"):
        name = getattr(model, attr, None)
        if isinstance(name, str) and name:
            return name
    return ""


def _is_openai(model: Any) -> bool:
    try:
        from langchain_openai.chat_models.base import BaseChatOpenAI
    except ImportError:  # pragma: no cover - a dependency
        return False
    return isinstance(model, BaseChatOpenAI)


def _is_test_double(model: Any) -> bool:
    try:
        from langchain_core.language_models.fake_chat_models import (
            FakeListChatModel,
            GenericFakeChatModel,
        )
    except ImportError:  # pragma: no cover
        return False
    return isinstance(model, GenericFakeChatModel | FakeListChatModel)


def reply_tokens(model: Any) -> int:
    """The reply limit the model sends (``max_tokens``), else `DEFAULT_REPLY_TOKENS`."""
    for value in (
        getattr(model, "max_tokens", None),
        (getattr(model, "extra_body", None) or {}).get("max_tokens"),
        (getattr(model, "model_kwargs", None) or {}).get("max_tokens"),
    ):
        found = _positive(value)
        if found:
            return found
    return DEFAULT_REPLY_TOKENS


def _server_of(model: Any) -> tuple[str, str | None] | None:
    """(base URL, API key) of an OpenAI-compatible server worth probing, else None."""
    if not _is_openai(model):
        return None
    base = getattr(model, "openai_api_base", None)
    if not isinstance(base, str) or not base.strip() or "api.openai.com" in base:
        return None
    key: Any = getattr(model, "openai_api_key", None)
    secret = key.get_secret_value() if hasattr(key, "get_secret_value") else key
    return base.strip(), secret if isinstance(secret, str) and secret else None


def window_for(runnable: Any) -> Window | None:
    """The window of the model behind `runnable`, or None when none is known (see the module
    docstring for the order: server, setting, defaults)."""
    model = chat_model(runnable)
    name = model_name(model)
    setting = context_window_setting(model) or context_window_setting(runnable)
    server = _server_of(model)
    probed = server_window(server[0], name, server[1]) if server and name else None
    limit = reply_tokens(model)
    if probed and setting:
        tokens = min(probed, setting)
        return Window(tokens, reply_reserve(limit, tokens), "server+setting", name)
    if probed:
        return Window(probed, reply_reserve(limit, probed), "server", name)
    if setting:
        return Window(setting, reply_reserve(limit, setting), "setting", name)
    if _is_test_double(model):
        return None
    table = default_window(name)
    if table is None and not _is_openai(model):
        return None  # a provider class we know nothing about: its own client will say
    tokens = table or UNKNOWN_WINDOW
    return Window(tokens, reply_reserve(limit, tokens), "default", name)


def reply_reserve(limit: int, window: int) -> int:
    """The reply reserved in a `window`-token context: the model's reply `limit`, capped in a
    small window at `1/REPLY_SHARE` of it (at least `MIN_REPLY_TOKENS`), so that a 4,096-token
    window keeps 3,584 tokens for instructions, tools and results instead of 3,072. The request
    then asks for no longer a reply (`fit_call`)."""
    return min(limit, max(MIN_REPLY_TOKENS, window // REPLY_SHARE))


def sized_model(runnable: Any) -> Any:
    """`runnable` asking for no longer a reply than its window reserves (`reply_reserve`: a
    small window's reply is capped below the model's limit), so that a server that counts the
    reply into the window (vLLM) takes the request too: a binding gets the lower limit bound, a
    chat model is copied with it; unchanged when the reserve is the model's own limit."""
    window = window_for(runnable)
    model = chat_model(runnable)
    if window is None or window.reply >= reply_tokens(model) or not hasattr(model, "model_copy"):
        return runnable
    extra = getattr(model, "extra_body", None)
    if isinstance(extra, Mapping) and "max_tokens" in extra:
        update: dict[str, Any] = {"extra_body": {**extra, "max_tokens": window.reply}}
    else:
        update = {"max_tokens": window.reply}
    if runnable is not model:  # a binding (tools bound): bind the limit on top
        return runnable.bind(**update)
    # requests are fitted to the original's window (`fit_request`); the copy only sends them
    return model.model_copy(update=update)


def fit_call(
    runnable: Any, messages: Sequence[BaseMessage], tools: Sequence[Any] | None = None
) -> tuple[Any, list[BaseMessage]]:
    """`sized_model(runnable)` and `fit_request`'s messages for it."""
    return sized_model(runnable), fit_request(runnable, messages, tools)


#: tokens a role leaves free when it fills the prompt up to its model's room: a corrective
#: message on a malformed reply, the JSON-schema instruction of a model without structured output
ROOM_RESERVE = 320


def text_room(
    runnable: Any, messages: Sequence[BaseMessage]
) -> tuple[int | None, Callable[[str], int]]:
    """Tokens that text added to `messages` may take in `runnable`'s window (None: no window
    known, no limit), less `ROOM_RESERVE`; and the function that counts them for this model."""
    window = window_for(runnable)
    name = window.model_name if window is not None else ""

    def count(text: str) -> int:
        return count_text(text, name)

    if window is None:
        return None, count
    used = count_messages(messages, name, bound_tools(runnable))
    return max(0, window.prompt - used - ROOM_RESERVE), count


# -- the check before a request --------------------------------------------------------------------


class ContextBudgetError(LLMRequestError):
    """A request the context budget says will not fit its model's window: not sent."""

    cause = "context overflow"
    #: what a refused request is charged: one failed call, no tokens (nothing was sent)
    charge = Usage(llm_calls=1, failed_calls=1)


def fit_request(
    runnable: Any, messages: Sequence[BaseMessage], tools: Sequence[Any] | None = None
) -> list[BaseMessage]:
    """`messages` as they fit `runnable`'s window beside its reply limit and bound tools:
    unchanged when they fit, packed when they do not (`graphseek.llm.packing`). Raises
    `ContextBudgetError` when even the packed request would not fit."""
    window = window_for(runnable)
    msgs = list(messages)
    if window is None:
        return msgs
    name = window.model_name
    tools = bound_tools(runnable) if tools is None else list(tools)
    room = window.prompt - count_tools(tools, name)
    packed = pack_messages(msgs, room, lambda m: count_message(m, name)) if room > 0 else None
    if packed is not None:
        return packed
    need = count_messages(msgs, name, tools)
    raise ContextBudgetError(
        f"context overflow (request not sent): the prompt needs about {need} tokens and the "
        f"reply up to {window.reply}, over the {window.tokens}-token window of model "
        f"{name or type(chat_model(runnable)).__name__!r} ({window.source}), even with older "
        "steps dropped and results cut",
        cause="context overflow",
        usage=ContextBudgetError.charge,
    )


__all__ = [
    "DEFAULT_WINDOWS",
    "UNKNOWN_WINDOW",
    "ContextBudgetError",
    "Window",
    "bound_tools",
    "clear_context_windows",
    "context_window_setting",
    "default_window",
    "fit_call",
    "sized_model",
    "fit_request",
    "forget_windows",
    "server_window",
    "set_context_window",
    "text_room",
    "window_for",
]
