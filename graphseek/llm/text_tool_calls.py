"""Tool calls written as text: a model (or a server without a tool-call parser) that answers a
tool-calling request with its calls in the reply's text instead of ``tool_calls``.

The common forms are read, in any mix and any number per reply:

- bare JSON objects, one per line or run together: ``{"name": "search", "arguments": {...}}``
  (``parameters``, ``args`` or ``input`` for the arguments; the arguments may be a JSON string);
- Hermes / Qwen tags: ``<tool_call>{...}</tool_call>`` (the closing tag may be missing);
- Llama 3: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (several joined by ``;``), and
  its custom-tool form ``<function=name>{...}</function>``;
- JSON in a Markdown code fence, and a JSON list of calls;
- the OpenAI shape written out: ``{"type": "function", "function": {"name": ..., "arguments":
  "..."}}`` and ``{"tool_calls": [...]}``.

The text is scanned with `json.JSONDecoder.raw_decode` at every ``{`` and ``[`` (tags, fences
and prose in between are skipped), so no pattern has to match the JSON itself. An object is a
call when it has a string ``name`` and either arguments or a name among the tools offered; an
object that is not a call is searched for calls inside it. Identical calls in one reply are kept
once. Arguments are checked against the tools' schemas (`check_call`); a call with an unknown
name or invalid arguments is still returned, with its `error`, so that the caller can tell the
model why it was not run. Pure: no LangChain import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

#: where a call's arguments may be, in order of preference
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
#: the tags and markers that surround calls in the text forms (removed from the remaining text)
_MARKERS = re.compile(
    r"</?tool_call>|<\|python_tag\|>|<\|eom_id\|>|<\|eot_id\|>|<\|im_end\|>|```[a-zA-Z]*"
    r"|</function>",
)
#: Llama 3's custom-tool form: the name in the tag, the arguments object after it
_FUNCTION_TAG = re.compile(r"<function=([\w.-]+)>\s*")
#: text that shows a call was attempted, though none could be read
_ATTEMPT = re.compile(
    r"<tool_call>|<\|python_tag\|>|<function=|\"(?:arguments|parameters)\"\s*:", re.IGNORECASE
)

#: a tool's arguments schema: a pydantic model, a JSON schema, or None (anything goes)
Schema = type[BaseModel] | Mapping[str, Any] | None


@dataclass(frozen=True)
class TextCall:
    """One call read from the text: the tool's name, its arguments, and why it cannot run
    (empty when it can)."""

    name: str
    args: dict[str, Any]
    error: str = ""


@dataclass(frozen=True)
class ParsedText:
    """The calls a reply's text holds, the text left once they are taken out, and the problems
    met (a call that was attempted but could not be read)."""

    calls: list[TextCall] = field(default_factory=list)
    text: str = ""
    problems: list[str] = field(default_factory=list)


def parse_tool_calls(text: str, schemas: Mapping[str, Schema]) -> ParsedText:
    """The tool calls written in `text`, for the tools `schemas` names (see the module
    docstring)."""
    calls: list[TextCall] = []
    seen: set[str] = set()
    spans: list[tuple[int, int]] = []
    for start, end, value in _tagged_functions(text):
        key = call_key(value["name"], value["arguments"])
        if key not in seen:
            seen.add(key)
            calls.append(TextCall(value["name"], value["arguments"],
                                  check_call(value["name"], value["arguments"], schemas)))  # fmt: skip
        spans.append((start, end))
    for start, end, value in _json_values(text):
        if any(a <= start < b for a, b in spans):
            continue
        found = list(_calls_in(value, schemas))
        if not found:
            continue
        spans.append((start, end))
        for name, args in found:
            key = call_key(name, args)
            if key in seen:
                continue
            seen.add(key)
            calls.append(TextCall(name, args, check_call(name, args, schemas)))
    rest = _without(text, sorted(spans)) if calls else text
    problems: list[str] = []
    if not calls and _ATTEMPT.search(text):
        problems.append(_first_json_error(text))
    return ParsedText(calls=calls, text=rest, problems=problems)


def check_call(name: str, args: Mapping[str, Any], schemas: Mapping[str, Schema]) -> str:
    """Why the call cannot run (empty when it can): an unknown tool (naming those offered), or
    arguments its schema refuses (naming the fields and what is wrong)."""
    if name not in schemas:
        offered = ", ".join(sorted(schemas)) or "none"
        return f"unknown tool {name!r}; the tools are: {offered}"
    schema = schemas[name]
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(dict(args))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()[:4]
            )
            return f"invalid arguments for {name!r}: {problems}"
    elif isinstance(schema, Mapping):
        required = [str(r) for r in schema.get("required") or []]
        missing = [r for r in required if r not in args]
        if missing:
            return f"invalid arguments for {name!r}: missing {', '.join(missing)}"
    return ""


def normalise_args(value: Any) -> Any:
    """Arguments as compared for repeats: strings lower-cased with their whitespace collapsed,
    keys sorted, None values left out."""
    if isinstance(value, str):
        return " ".join(value.lower().split())
    if isinstance(value, Mapping):
        return {str(k): normalise_args(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, list | tuple):
        return [normalise_args(v) for v in value]
    return value


def call_key(name: str, args: Mapping[str, Any]) -> str:
    """One string per distinct call: the name and the normalised arguments."""
    return json.dumps([name, normalise_args(dict(args))], sort_keys=True, default=str)


# -- scanning -----------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()


def _json_values(text: str) -> Iterator[tuple[int, int, Any]]:
    """Every JSON object or list in `text` (start, end, value), outermost first; the inside of
    a value that holds no call is scanned too (the caller skips values without calls)."""
    i = 0
    n = len(text)
    while i < n:
        j = _next_open(text, i)
        if j < 0:
            return
        try:
            value, end = _DECODER.raw_decode(text, j)
        except json.JSONDecodeError:
            i = j + 1
            continue
        yield j, end, value
        i = end if _has_call_shape(value) else j + 1


def _tagged_functions(text: str) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """The ``<function=name>{arguments}`` calls of `text` (start, end, call)."""
    for match in _FUNCTION_TAG.finditer(text):
        try:
            args, end = _DECODER.raw_decode(text, match.end())
        except json.JSONDecodeError:
            continue
        if isinstance(args, dict):
            yield match.start(), end, {"name": match.group(1), "arguments": args}


def _next_open(text: str, start: int) -> int:
    a, b = text.find("{", start), text.find("[", start)
    if a < 0:
        return b
    return a if b < 0 else min(a, b)


def _has_call_shape(value: Any) -> bool:
    """Whether a value is (or lists) something call-like, so its inside need not be scanned."""
    if isinstance(value, dict):
        return isinstance(value.get("name"), str) or "function" in value or "tool_calls" in value
    if isinstance(value, list):
        return any(_has_call_shape(v) for v in value)
    return False


def _calls_in(value: Any, schemas: Mapping[str, Schema]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (name, arguments) of the calls a JSON value stands for."""
    if isinstance(value, list):
        for item in value:
            yield from _calls_in(item, schemas)
        return
    if not isinstance(value, dict):
        return
    if isinstance(value.get("tool_calls"), list):
        yield from _calls_in(value["tool_calls"], schemas)
        return
    if isinstance(value.get("function"), dict):  # the OpenAI shape written out
        yield from _calls_in(value["function"], schemas)
        return
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return
    key = next((k for k in ARGUMENT_KEYS if k in value), None)
    if key is None and name not in schemas:
        return  # an object with a name field, not a call
    raw = value.get(key) if key else {}
    args = _arguments(raw)
    if args is None:
        return
    yield name.strip(), args


def _arguments(raw: Any) -> dict[str, Any] | None:
    """A call's arguments as a dict (a JSON string decoded; null as no arguments)."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return None
    return dict(raw) if isinstance(raw, dict) else None


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the calls' spans and the tags around them."""
    parts, last = [], 0
    for start, end in spans:
        parts.append(text[last:start])
        last = end
    parts.append(text[last:])
    rest = _MARKERS.sub(" ", "".join(parts))
    rest = re.sub(r"[ \t]*;[ \t]*(?=\n|$)", "", rest)  # the separators of Llama 3's calls
    return "\n".join(line.strip() for line in rest.splitlines() if line.strip())


def _first_json_error(text: str) -> str:
    """What is wrong with the first attempted call (for the model's retry)."""
    for match in re.finditer(r"[{\[]", text):
        try:
            _DECODER.raw_decode(text, match.start())
        except json.JSONDecodeError as exc:
            snippet = " ".join(text[match.start() : match.start() + 80].split())
            return f"the tool call is not valid JSON ({exc.msg} at {snippet!r})"
        else:
            continue
    return "a tool call was attempted but no JSON object with a name and arguments was found"
