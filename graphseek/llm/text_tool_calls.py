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
  "..."}}`` and ``{"tool_calls": [...]}``;
- Llama 3.x's pythonic form: a list of Python calls with keyword arguments,
  ``[search_entities(query="Bergen", k=5), retrieve_subgraph(entity="X")]``, or one call
  without the brackets, after ``<|python_tag|>``, in a ``python`` fence or on its own line.

The text is scanned with `json.JSONDecoder.raw_decode` at every ``{`` and ``[`` (tags, fences
and prose in between are skipped), so no pattern has to match the JSON itself. An object is a
call when it has a string ``name`` and either arguments or a name among the tools offered; an
object that is not a call is searched for calls inside it. Identical calls in one reply are kept
once. Arguments are checked against the tools' schemas (`check_call`); a call with an unknown
name or invalid arguments is still returned, with its `error`, so that the caller can tell the
model why it was not run. Pure: no LangChain import.

A pythonic call is read with `ast` and never evaluated: each keyword's value goes through
`ast.literal_eval` (strings, numbers, lists, dicts, True/False/None); a positional argument or a
value that is not a literal makes the call an error call. It is taken as a call only where a
call is plausible: its name is an offered tool, or it stands on its own line (after a tag or a
fence mark, with at most ``;`` or ``,`` after it); ``Bergen (Norway)`` or ``f(x)`` in a
sentence are prose.
"""

from __future__ import annotations

import ast
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
    for start, end, written in _python_calls(text, schemas):
        if any(a <= start < b or a < end <= b for a, b in spans):
            continue
        spans.append((start, end))
        for call in written:
            key = call_key(call.name, call.args) + call.error  # refused calls kept apart
            if key in seen:
                continue
            seen.add(key)
            calls.append(call)
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


# -- the pythonic form -----------------------------------------------------------------------------

#: where a pythonic call may start: a list's bracket, or a (dotted) name right before "("
_PY_START = re.compile(r"\[\s*[A-Za-z_][\w.]*\(|(?<![\w.])[A-Za-z_][\w.]*\(")
#: what may stand beside a call on its own line: space, tags, fence marks, separators
_PY_BESIDE = re.compile(
    r"(?:\s|[\[\],;]|<\|python_tag\|>|<\|eom_id\|>|<\|eot_id\|>|<\|im_end\|>|```[a-zA-Z]*)*"
)
#: how far (characters) a call's closing bracket is looked for
_PY_MAX_CHARS = 8000


def _python_calls(
    text: str, schemas: Mapping[str, Schema]
) -> Iterator[tuple[int, int, list[TextCall]]]:
    """The pythonic calls of `text` (start, end, calls), left to right (see the module
    docstring)."""
    i = 0
    while True:
        match = _PY_START.search(text, i)
        if match is None:
            return
        start = match.start()
        parsed = _python_expression(text, start)
        if parsed is None:
            i = start + 1
            continue
        end, nodes = parsed
        found = [_python_call(n, schemas) for n in nodes]
        # in a sentence only a clean call of an offered tool is taken; on its own line, any
        plausible = _on_own_line(text, start, end) or all(not c.error for c in found)
        if not plausible:
            i = start + 1
            continue
        yield start, end, found
        i = end


def _python_expression(text: str, start: int) -> tuple[int, list[ast.Call]] | None:
    """The end and the calls of the bracketed Python expression at `start` when it is a call
    or a list (or tuple) of calls, each of a plain or dotted name."""
    end = _closing(text, start)
    if end is None:
        return None
    try:
        tree = ast.parse(text[start:end], mode="eval").body
    except (SyntaxError, ValueError):  # ValueError: a null byte
        return None
    nodes = tree.elts if isinstance(tree, ast.List | ast.Tuple) else [tree]
    calls = [n for n in nodes if isinstance(n, ast.Call) and _call_name(n)]
    return (end, calls) if calls and len(calls) == len(nodes) else None


def _closing(text: str, start: int) -> int | None:
    """The end of the bracket group that opens first at or after `start` (string literals
    skipped), within `_PY_MAX_CHARS` characters; None when it does not close."""
    depth = 0
    quote = ""
    i = start
    stop = min(len(text), start + _PY_MAX_CHARS)
    while i < stop:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif text.startswith(quote, i):
                i += len(quote) - 1
                quote = ""
        elif ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote) - 1
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth <= 0:
                return i + 1 if depth == 0 else None
        i += 1
    return None


def _call_name(node: ast.AST) -> str:
    """``search`` for ``search(...)``, ``functions.search`` for a dotted name; "" otherwise."""
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        head = _call_name(func.value)
        return f"{head}.{func.attr}" if head else ""
    return ""


def _on_own_line(text: str, start: int, end: int) -> bool:
    """Whether nothing but space, tags, fence marks and separators stands beside the call on
    its line(s)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = text[line_start:start]
    after = text[end : len(text) if line_end < 0 else line_end]
    return bool(_PY_BESIDE.fullmatch(before) and _PY_BESIDE.fullmatch(after))


def _python_call(node: ast.Call, schemas: Mapping[str, Schema]) -> TextCall:
    """One pythonic call as a `TextCall`: its keyword arguments' literal values; positional
    arguments, ``**`` and values that are not literals make it an error call."""
    name = _call_name(node)
    if name not in schemas and name.rsplit(".", 1)[-1] in schemas:
        name = name.rsplit(".", 1)[-1]  # functions.search(...)
    args: dict[str, Any] = {}
    problems: list[str] = []
    if node.args:
        problems.append(
            f"{len(node.args)} positional argument(s); write each argument as name=value"
        )
    for keyword in node.keywords:
        if keyword.arg is None:
            problems.append("** arguments; write each argument as name=value")
            continue
        try:
            args[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            problems.append(f"{keyword.arg}: not a literal value (a string, number, list, dict)")
    error = check_call(name, args, schemas)
    if problems and not error.startswith("unknown tool"):
        error = f"invalid arguments for {name!r}: {'; '.join(problems)}"
    return TextCall(name, args, error)


def _first_json_error(text: str) -> str:
    """What is wrong with the first attempted call (for the model's retry)."""
    tagged = re.search(r"<\|python_tag\|>\s*\[?\s*[A-Za-z_][\w.]*\(", text)
    if tagged and not re.search(r"<\|python_tag\|>\s*\{", text):
        snippet = " ".join(text[tagged.start() : tagged.start() + 80].split())
        return f"the tool call is not a valid Python call ({snippet!r})"
    for match in re.finditer(r"[{\[]", text):
        try:
            _DECODER.raw_decode(text, match.start())
        except json.JSONDecodeError as exc:
            snippet = " ".join(text[match.start() : match.start() + 80].split())
            return f"the tool call is not valid JSON ({exc.msg} at {snippet!r})"
        else:
            continue
    return "a tool call was attempted but no JSON object with a name and arguments was found"
