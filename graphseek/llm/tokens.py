"""Counting the tokens of a request before it is sent.

With the model's own tokenizer where one is available offline, else a conservative estimate.

- OpenAI model names (``gpt-*``, ``o1``/``o3``/``o4``, ``chatgpt-*``): tiktoken, but only when
  the encoding's BPE file is already in tiktoken's cache (``$TIKTOKEN_CACHE_DIR``,
  ``$DATA_GYM_CACHE_DIR`` or ``<tmp>/data-gym-cache``). tiktoken downloads that file on first use,
  and nothing may download at run time, so with an empty cache the estimate below is used.
- Any other model: `estimate_tokens`, which counts the pieces a byte-pair vocabulary splits text
  into rather than characters: one token per digit (Qwen splits numbers into digits), per pair of
  punctuation marks or symbols, per non-ASCII character and per line break, and ``1 + len // 6``
  per run of ASCII letters (a common word is one token, a long name two or three); then `SAFETY`
  more. Why not characters / 4: a tool-loop request is mostly JSON, ids, digits and names,
  which a small model's vocabulary splits far finer than prose, so the character rule counts
  such a request well under what the server counts, and the server refuses it. The estimate
  is meant to stay above a real tokenizer's count for prose, tool definitions and whole
  requests (docs/performance.md gives its ratio to Qwen2.5's tokenizer). The margin is kept on
  purpose: vocabularies of 32K tokens (Mistral, Phi-3) cut English finer than Qwen's, and a
  count that comes out low sends a request the server refuses.
- Every message costs `MESSAGE_OVERHEAD` more (the chat template's role markers), every tool
  call in a reply `CALL_OVERHEAD`, and tool definitions are counted as their JSON plus
  `TOOLS_OVERHEAD` (the template's tool preamble).

A reply schema sent as ``response_format`` is not counted: servers turn it into a decoding
grammar, not prompt tokens (a schema written into the prompt is counted as text).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

#: the estimate is multiplied by this (rounding and the pieces a vocabulary splits further)
SAFETY = 1.1
#: tokens of a message's role markers (``<|im_start|>role\n ... <|im_end|>\n``)
MESSAGE_OVERHEAD = 6
#: tokens around one tool call in a reply (its id and wrapper)
CALL_OVERHEAD = 10
#: tokens of the chat template's preamble for tool definitions
TOOLS_OVERHEAD = 150

_PIECES = re.compile(
    r"[A-Za-z]+|[0-9]|[^\x00-\x7f]|[ \t]*\n\s*|[ \t]{2,}|[^\sA-Za-z0-9\x80-\U0010ffff]{1,2}"
)


def estimate_tokens(text: str) -> int:
    """A conservative token count of `text` for an unknown tokenizer (see the module doc)."""
    if not text:
        return 0
    pieces = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        pieces += 1 + len(piece) // 6 if piece[0].isascii() and piece[0].isalpha() else 1
    return math.ceil(pieces * SAFETY)


# -- tiktoken, when its files are on disk ------------------------------------------------------

_OPENAI_NAME = re.compile(r"^(?:gpt-|o[1-9](?:$|-)|chatgpt-|text-embedding-)", re.IGNORECASE)
_ENCODINGS: dict[str, Any] = {}
_ENCODINGS_LOCK = threading.Lock()


def _cache_dir() -> Path | None:
    """tiktoken's cache directory, as tiktoken finds it (None: caching switched off)."""
    for env in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if env in os.environ:
            return Path(os.environ[env]) if os.environ[env] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _offline(encoding: str) -> bool:
    """Whether tiktoken's BPE file for `encoding` is cached with the right hash, so that loading
    it downloads nothing (tiktoken re-fetches a missing or corrupt file)."""
    try:
        from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS
    except ImportError:
        return False
    constructor = ENCODING_CONSTRUCTORS.get(encoding)
    cache = _cache_dir()
    if constructor is None or cache is None:
        return False
    consts = [v for v in (constructor.__code__.co_consts or ()) if isinstance(v, str)]
    urls = [u for u in consts if u.startswith("http")]
    hashes = {h for h in consts if re.fullmatch(r"[0-9a-f]{64}", h)}
    if not urls:
        return False
    for url in urls:
        path = cache / hashlib.sha1(url.encode()).hexdigest()
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() not in hashes:
            return False
    return True


def openai_encoding(model_name: str) -> Any | None:
    """tiktoken's encoding for an OpenAI model name when its files are on disk, else None."""
    name = model_name.strip()
    if not name or not _OPENAI_NAME.match(name):
        return None
    with _ENCODINGS_LOCK:
        if name in _ENCODINGS:
            return _ENCODINGS[name]
        encoding = None
        try:
            import tiktoken

            try:
                encoding_name = tiktoken.encoding_name_for_model(name)
            except KeyError:
                encoding_name = "o200k_base"
            if _offline(encoding_name):
                encoding = tiktoken.get_encoding(encoding_name)
        except Exception:  # not installed, or a cache file that will not load: estimate
            encoding = None
        _ENCODINGS[name] = encoding
        return encoding


def count_text(text: str, model_name: str = "") -> int:
    """Tokens of `text` for `model_name`: its tokenizer where available, else the estimate."""
    encoding = openai_encoding(model_name)
    if encoding is not None:
        return len(encoding.encode(text, disallowed_special=()))
    return estimate_tokens(text)


# -- requests ----------------------------------------------------------------------------------


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(json.dumps(block, default=str))
        return "\n".join(parts)
    return json.dumps(content, default=str)


def count_message(message: BaseMessage, model_name: str = "") -> int:
    """Tokens of one message: its text, its tool calls' names and arguments, its role markers."""
    tokens = MESSAGE_OVERHEAD + count_text(_content_text(message.content), model_name)
    for call in getattr(message, "tool_calls", None) or []:
        args = json.dumps(call.get("args", {}), ensure_ascii=False, default=str)
        tokens += CALL_OVERHEAD + count_text(f"{call.get('name', '')} {args}", model_name)
    return tokens


def count_tools(tools: Iterable[Any], model_name: str = "") -> int:
    """Tokens of tool definitions (OpenAI-format dicts or anything JSON can write)."""
    listed = list(tools)
    if not listed:
        return 0
    text = json.dumps(listed, ensure_ascii=False, default=str)
    return TOOLS_OVERHEAD + count_text(text, model_name)


def count_messages(
    messages: Iterable[BaseMessage], model_name: str = "", tools: Iterable[Any] = ()
) -> int:
    """Tokens of a request: its messages and its tool definitions."""
    return sum(count_message(m, model_name) for m in messages) + count_tools(tools, model_name)


__all__ = [
    "count_message",
    "count_messages",
    "count_text",
    "count_tools",
    "estimate_tokens",
    "openai_encoding",
]
