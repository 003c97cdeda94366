"""Length bounds for everything a model writes: strings and lists in reply schemas.

Each alias puts ``maxLength`` / ``maxItems`` into the JSON schema sent with a structured-output
request (servers with grammar-constrained decoding — llama.cpp, vLLM, Ollama — enforce them, so
a small model cannot run away repeating one list item), and validates leniently on our side: a
longer string is cut, a longer list keeps its first items, instead of failing the reply.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field


def cut_text(limit: int) -> Callable[[Any], Any]:
    """A before-validator keeping the first `limit` characters of a string."""

    def cut(value: Any) -> Any:
        return value[:limit] if isinstance(value, str) else value

    return cut


def first_items(limit: int) -> Callable[[Any], Any]:
    """A before-validator keeping the first `limit` distinct items of a list (a model that runs
    away repeats one item; the copies carry nothing)."""

    def first(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        kept: list[Any] = []
        seen: set[str] = set()
        for item in value:
            key = json.dumps(item, sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
            kept.append(item)
            if len(kept) == limit:
                break
        return kept

    return first


def head_items(limit: int) -> Callable[[Any], Any]:
    """A before-validator keeping the first `limit` items of a list, repeats included (for
    lists aligned with another, e.g. step ids with questions)."""

    def head(value: Any) -> Any:
        return list(value[:limit]) if isinstance(value, list | tuple) else value

    return head


#: an id, a name, a short answer, a query or a topic
NAME_CHARS = 200
#: one sentence: a question, a fact, a quote, a short reason
SENTENCE_CHARS = 600
#: free reasoning before a verdict
REASONING_CHARS = 1500
#: items in a list of ids or sentences
LIST_ITEMS = 10
#: items in a list of structured objects (plan steps, facts, segments)
OBJECT_ITEMS = 8

Name = Annotated[str, BeforeValidator(cut_text(NAME_CHARS)), Field(max_length=NAME_CHARS)]
Sentence = Annotated[
    str, BeforeValidator(cut_text(SENTENCE_CHARS)), Field(max_length=SENTENCE_CHARS)
]
Reasoning = Annotated[
    str, BeforeValidator(cut_text(REASONING_CHARS)), Field(max_length=REASONING_CHARS)
]
Names = Annotated[
    list[Name], BeforeValidator(first_items(LIST_ITEMS)), Field(max_length=LIST_ITEMS)
]
Sentences = Annotated[
    list[Sentence], BeforeValidator(first_items(LIST_ITEMS)), Field(max_length=LIST_ITEMS)
]


def unbounded_fields(schema: dict[str, Any]) -> list[str]:
    """JSON-schema paths of strings without ``maxLength`` and arrays without ``maxItems``
    (enum and const strings are bounded by their values). For tests of reply schemas."""
    defs = schema.get("$defs", {})
    found: list[str] = []

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, dict):
            return
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            walk(defs.get(name, {}), f"{path}<{name}>")
            return
        for key in ("anyOf", "oneOf", "allOf"):
            for i, sub in enumerate(node.get(key, [])):
                walk(sub, f"{path}|{i}")
        kind = node.get("type")
        if kind == "string" and "enum" not in node and "const" not in node:
            if "maxLength" not in node:
                found.append(path or "<root>")
        if kind == "array":
            if "maxItems" not in node:
                found.append(path or "<root>")
            walk(node.get("items", {}), f"{path}[]")
        for name, sub in (node.get("properties") or {}).items():
            walk(sub, f"{path}.{name}")

    walk(schema, "")
    return found
