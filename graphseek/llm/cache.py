"""An on-disk LLM response cache in SQLite, so re-runs of the same prompts are free and repeatable.

Written here rather than taken from ``langchain_community.cache.SQLiteCache`` because
langchain-community is not a dependency of graphseek (it is large, and only this class would be
used). It implements ``langchain_core.caches.BaseCache``; attach it to one model with
``make_chat_model(spec, cache=path)`` (or ``GRAPHSEEK_LLM_CACHE=path``), or to every model with
``langchain_core.globals.set_llm_cache``.

Entries are keyed by the prompt (the serialised messages) and the ``llm_string``, which names the
model class, the model and its sampling parameters, bound tools and stop words. Transport-only
settings (``max_retries``, ``request_timeout``) are dropped from the key, so changing a timeout
keeps the cache warm.

Values are stored as plain JSON (``message_to_dict``), never with ``langchain_core.load``, so
reading a cache file instantiates nothing but message objects. Message ids are not stored: a
replayed message gets a fresh id downstream, and carries ``response_metadata["graphseek_cache_hit"]
= True`` so `graphseek.llm.usage.UsageCallback` counts it as free.

The database and its parent folder are created on first use; the connection runs in WAL mode with
a busy timeout, is shared by threads behind a lock, and is reopened after a fork.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.messages import message_to_dict, messages_from_dict
from langchain_core.outputs import ChatGeneration, Generation

from graphseek.llm.usage import CACHE_HIT_KEY

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_responses (
    key TEXT PRIMARY KEY,
    llm_string TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""

#: constructor kwargs that change how a request travels, not what the model answers
_TRANSPORT_PARAMS = frozenset({"max_retries", "request_timeout", "timeout"})


class SQLiteResponseCache(BaseCache):
    """LangChain response cache in one SQLite file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def __repr__(self) -> str:
        return f"SQLiteResponseCache({str(self.path)!r})"

    # -- connection ---------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        """The open connection (caller holds the lock); created lazily, reopened after fork."""
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            conn.commit()
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def close(self) -> None:
        """Close the connection; the next lookup or update reopens it."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __len__(self) -> int:
        with self._lock:
            row = self._connection().execute("SELECT COUNT(*) FROM llm_responses").fetchone()
        return int(row[0])

    # -- BaseCache ----------------------------------------------------------------------------

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        key = _key(prompt, llm_string)
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT response FROM llm_responses WHERE key = ?", (key,))
                .fetchone()
            )
        if row is None:
            return None
        return _load_generations(row[0])

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        key = _key(prompt, llm_string)
        payload = _dump_generations(return_val)
        with self._lock:
            conn = self._connection()
            conn.execute(
                "INSERT OR REPLACE INTO llm_responses (key, llm_string, prompt, response, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, llm_string, prompt, payload, time.time()),
            )
            conn.commit()

    def clear(self, **kwargs: Any) -> None:
        with self._lock:
            conn = self._connection()
            conn.execute("DELETE FROM llm_responses")
            conn.commit()


def normalise_llm_string(llm_string: str) -> str:
    """`llm_string` without transport-only constructor kwargs (see `_TRANSPORT_PARAMS`).

    LangChain builds it as ``json(serialised model) + "---" + str(call params)`` for serialisable
    models; anything else is returned unchanged.
    """
    head, sep, tail = llm_string.partition("---")
    if not sep:
        return llm_string
    try:
        manifest = json.loads(head)
    except ValueError:
        return llm_string
    kwargs = manifest.get("kwargs") if isinstance(manifest, dict) else None
    if not isinstance(kwargs, dict):
        return llm_string
    manifest["kwargs"] = {k: v for k, v in kwargs.items() if k not in _TRANSPORT_PARAMS}
    return json.dumps(manifest, sort_keys=True) + sep + tail


def _key(prompt: str, llm_string: str) -> str:
    digest = hashlib.sha256()
    digest.update(normalise_llm_string(llm_string).encode())
    digest.update(b"\x00")
    digest.update(prompt.encode())
    return digest.hexdigest()


def _dump_generations(generations: Sequence[Generation]) -> str:
    rows: list[dict[str, Any]] = []
    for gen in generations:
        if isinstance(gen, ChatGeneration):
            message = gen.message.model_copy(update={"id": None})
            message.response_metadata = {
                k: v for k, v in message.response_metadata.items() if k != CACHE_HIT_KEY
            }
            rows.append(
                {
                    "kind": "chat",
                    "message": message_to_dict(message),
                    "info": gen.generation_info,
                }
            )
        else:
            rows.append({"kind": "text", "text": gen.text, "info": gen.generation_info})
    return json.dumps(rows, default=str)


def _load_generations(payload: str) -> list[Generation] | None:
    try:
        rows = json.loads(payload)
        generations: list[Generation] = []
        for row in rows:
            if row["kind"] == "chat":
                (message,) = messages_from_dict([row["message"]])
                message.response_metadata = {**message.response_metadata, CACHE_HIT_KEY: True}
                generations.append(ChatGeneration(message=message, generation_info=row["info"]))
            else:
                generations.append(Generation(text=row["text"], generation_info=row["info"]))
    except (ValueError, KeyError, TypeError):
        return None  # an unreadable entry is a miss; the fresh reply overwrites it
    return generations
