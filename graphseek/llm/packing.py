"""Making a request fit a token budget: text cut at sentence boundaries, tool results trimmed,
older tool rounds summarised; the system text, the tool definitions and the question are kept.

`pack_messages(messages, room, count)` returns the messages (unchanged when they fit) or None when
even the packed request would not fit. What it keeps, in order of priority:

1. the leading system message(s) and the first human message (the question, and whatever the
   role put beside it), untouched;
2. the newest round (the last model message with its tool results, and any message after it);
3. older rounds, with their tool results cut to `TRIM_CHARS` characters, then dropped oldest
   first and replaced by one human message listing the calls they made (so the model still
   knows what it searched);
4. finally the newest round's tool results, cut to `MIN_TRIM_CHARS`.

Changing a prompt defeats a server's prefix cache for what follows the change, so nothing is
changed while the request fits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

#: characters an older tool result is cut to first
TRIM_CHARS = 600
#: characters any tool result is cut to at last
MIN_TRIM_CHARS = 160
#: marks text cut short
CUT_MARK = " [...]"
#: characters of one line of the dropped-rounds summary
SUMMARY_LINE_CHARS = 160

DROPPED_PROMPT = "Earlier steps, dropped to fit the context window (do not repeat these calls):"
"""Heads the summary of dropped tool rounds (no placeholders)."""

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


def cut_text(text: str, max_chars: int, mark: str = CUT_MARK) -> str:
    """`text` cut to at most `max_chars` characters (mark included) at the last sentence or
    line boundary that fits, else at a word boundary; unchanged when it fits."""
    if len(text) <= max_chars:
        return text
    limit = max(0, max_chars - len(mark))
    ends = [m.start() for m in _SENTENCE_END.finditer(text) if 0 < m.start() <= limit]
    if ends:
        return text[: ends[-1]].rstrip() + mark
    head = text[:limit]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip() + mark if head.strip() else ""


def _head_end(messages: Sequence[BaseMessage]) -> int:
    """Index after the protected head: the leading system messages and the first human one."""
    i = 0
    while i < len(messages) and isinstance(messages[i], SystemMessage):
        i += 1
    if i < len(messages) and isinstance(messages[i], HumanMessage):
        i += 1
    return i


def _rounds(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Messages grouped so that a model message and its tool results stay together."""
    groups: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, AIMessage) or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups


def _trim_tools(group: Sequence[BaseMessage], max_chars: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for message in group:
        if isinstance(message, ToolMessage) and isinstance(message.content, str):
            cut = cut_text(message.content, max_chars)
            if cut != message.content:
                message = message.model_copy(update={"content": cut or CUT_MARK.strip()})
        out.append(message)
    return out


def _summary_lines(group: Sequence[BaseMessage]) -> list[str]:
    results = {
        m.tool_call_id: " ".join(str(m.content).split())
        for m in group
        if isinstance(m, ToolMessage)
    }
    lines = []
    for message in group:
        for call in getattr(message, "tool_calls", None) or []:
            args = json.dumps(call.get("args", {}), ensure_ascii=False, default=str)
            found = results.get(str(call.get("id")), "")
            line = f"- {call.get('name', '')}({args})" + (f" -> {found}" if found else "")
            lines.append(cut_text(line, SUMMARY_LINE_CHARS))
    return lines


def pack_messages(
    messages: Sequence[BaseMessage], room: int, count: Callable[[BaseMessage], int]
) -> list[BaseMessage] | None:
    """`messages` packed into `room` tokens as `count` counts them, or None when they cannot
    be (see the module docstring for what is kept)."""
    msgs = list(messages)

    def size(ms: Sequence[BaseMessage]) -> int:
        return sum(count(m) for m in ms)

    if size(msgs) <= room:
        return msgs
    cut = _head_end(msgs)
    head, rounds = msgs[:cut], _rounds(msgs[cut:])
    if not rounds:
        return None  # nothing but the system text and the question: they are not cut here
    older, newest = rounds[:-1], rounds[-1]
    older = [_trim_tools(g, TRIM_CHARS) for g in older]
    dropped: list[str] = []
    while True:
        summary = [HumanMessage("\n".join([DROPPED_PROMPT, *dropped]))] if dropped else []
        packed = [*head, *summary, *(m for g in older for m in g), *newest]
        if size(packed) <= room:
            return packed
        if not older:
            break
        dropped.extend(_summary_lines(older.pop(0)))
        while (
            len(dropped) > 1
            and size([HumanMessage("\n".join([DROPPED_PROMPT, *dropped]))]) > room // 4
        ):
            dropped.pop(0)  # a long summary keeps its newest lines
    packed = [*head, *summary, *_trim_tools(newest, MIN_TRIM_CHARS)]
    if size(packed) <= room:
        return packed
    packed = [*head, *_trim_tools(newest, MIN_TRIM_CHARS)]
    return packed if size(packed) <= room else None


__all__ = ["cut_text", "pack_messages"]
