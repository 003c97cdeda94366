"""Plain-text renderings of passages, sentences, plans and histories for prompts (budgeted, ids
kept).

A role that reads evidence reads, by default, its best sentences (`format_sentences`): the
sentences of the hits ranked by relevance to the question
(`graphseek.agents.reading.sentences.rank_sentences`), each with a neighbour on each side, under
its passage's id and title so that citations still work. ``read_by="passages"`` shows whole
passages instead (`format_passages`).

Passages are packed best first into a budget of characters and, where the caller knows its
model's room (`with_passages`, `graphseek.llm.context_window.text_room`), of tokens: whole passages while they
fit, then the first one that does not is cut at a sentence boundary (kept only when a sentence of
it fits), and the rest are left out. Their order is their rank, so the same hits always give the
same text (a stable prompt prefix).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage

from graphseek.knowledge.passages import Hit
from graphseek.llm.context_window import text_room
from graphseek.llm.packing import cut_text
from graphseek.llm.tokens import estimate_tokens
from graphseek.state.models import Draft, SentenceBridge, SubQuestion

NO_PASSAGES = "(no passages found)"
#: characters of passages a prompt shows at most (a role may set its own)
PASSAGE_CHARS = 6000
#: a cut passage is kept only with at least this many characters of its text
MIN_CUT_CHARS = 40
#: the best sentences (each with its neighbours) a sentence prompt shows at most
SENTENCES_READ = 4

#: how a role's prompt shows its evidence: the best sentences, or whole passages
ReadBy = Literal["sentences", "passages"]


def _fit_block(
    block: str, head: int, chars: int, tokens: int | None, count: Callable[[str], int]
) -> str:
    """`block` cut at a sentence boundary to `chars` characters and `tokens` tokens, or "" when
    less than `MIN_CUT_CHARS` of its text (after the `head` characters of id and title) fits."""
    cut = cut_text(block, chars)
    for _ in range(8):
        if tokens is None or not cut:
            break
        used = count(cut)
        if used <= tokens:
            break
        cut = cut_text(cut, int(len(cut) * tokens / used * 0.95))
    return cut if len(cut) - head >= MIN_CUT_CHARS else ""


def _pack(
    blocks: Iterable[tuple[str, int]],
    max_chars: int,
    max_tokens: int | None,
    count: Callable[[str], int],
    cut_last: bool,
) -> list[str]:
    """The `(block, head)` pairs, in order, joined by blank lines within `max_chars` characters
    and (when given) `max_tokens` tokens as `count` counts them; at the first block that does
    not fit, the rest are left out, and with `cut_last` that block is cut at a sentence boundary
    after its `head` characters (id and title) when enough of its text fits (`_fit_block`)."""
    out: list[str] = []
    used_chars = used_tokens = 0
    for block, head in blocks:
        sep = 2 if out else 0
        chars = max_chars - used_chars - sep
        tokens = None if max_tokens is None else max_tokens - used_tokens - sep
        size = count(block) if tokens is not None else 0
        if len(block) > chars or (tokens is not None and size > tokens):
            cut = _fit_block(block, head, chars, tokens, count) if cut_last else ""
            if cut:
                out.append(cut)
            break
        out.append(block)
        used_chars += len(block) + sep
        used_tokens += size + sep
    return out


def format_passages(
    hits: Sequence[Hit],
    max_chars: int = PASSAGE_CHARS,
    max_tokens: int | None = None,
    count: Callable[[str], int] = estimate_tokens,
) -> str:
    """`[id] title: text` blocks, best first, packed into `max_chars` characters and (when given)
    `max_tokens` tokens as `count` counts them; the first block that does not fit is cut at a
    sentence boundary and the rest left out (see the module docstring)."""
    blocks = []
    for hit in hits:
        p = hit.passage
        head = f"[{p.id}] {p.title}: " if p.title else f"[{p.id}] "
        blocks.append((head + p.text, len(head)))
    packed = _pack(blocks, max_chars, max_tokens, count, cut_last=True)
    return "\n\n".join(packed) if packed else NO_PASSAGES


def format_sentences(
    question: str,
    hits: Sequence[Hit],
    max_chars: int = PASSAGE_CHARS,
    max_tokens: int | None = None,
    count: Callable[[str], int] = estimate_tokens,
    limit: int = SENTENCES_READ,
) -> str:
    """The `limit` sentences of `hits` most relevant to `question`, each shown with its
    neighbours (`RankedSentence.context`), grouped under ``[id] title:`` in the order of each
    passage's best sentence, packed into `max_chars` characters and `max_tokens` tokens (a group
    that does not fit whole is left out, with the rest). Whole passages (`format_passages`) when
    no sentence ranks (an empty question, passages without sentences)."""
    from graphseek.agents.reading.sentences import rank_sentences, top_sentences

    chosen = top_sentences(rank_sentences(question, hits), limit) if question.strip() else []
    if not chosen:
        return format_passages(hits, max_chars, max_tokens, count)
    groups: dict[str, list[Any]] = {}
    for s in chosen:
        groups.setdefault(s.passage.id, []).append(s)
    blocks = []
    for sentences in groups.values():
        p = sentences[0].passage
        head = f"[{p.id}] {p.title}:" if p.title else f"[{p.id}]"
        lines = [f"- {s.context}" for s in sorted(sentences, key=lambda s: s.index)]
        blocks.append(("\n".join([head, *lines]), len(head)))
    packed = _pack(blocks, max_chars, max_tokens, count, cut_last=False)
    return "\n\n".join(packed) if packed else format_passages(hits, max_chars, max_tokens, count)


def with_evidence(
    model: Any,
    system: str,
    template: str,
    hits: Sequence[Hit],
    max_chars: int,
    read_by: ReadBy = "sentences",
    rank_by: str | None = None,
    **fields: Any,
) -> str:
    """`template` filled with `fields` and ``{passages}``: with ``read_by="sentences"`` the
    best sentences for `rank_by` (default ``fields["question"]``; `format_sentences`), else the
    whole passages (`with_passages`), packed into `max_chars` and the room `model`'s window
    leaves."""
    if read_by != "sentences":
        return with_passages(model, system, template, hits, max_chars, **fields)
    bare = template.format(passages="", **fields)
    room, count = text_room(model, [SystemMessage(system), HumanMessage(bare)])
    asked = rank_by if rank_by is not None else str(fields.get("question", ""))
    text = format_sentences(asked, hits, max_chars, room, count)
    return template.format(passages=text, **fields)


def with_passages(
    model: Any, system: str, template: str, hits: Sequence[Hit], max_chars: int, **fields: Any
) -> str:
    """`template` filled with `fields` and ``{passages}``: the hits packed (`format_passages`)
    into `max_chars` and into the room the system text and the rest of the template leave in
    `model`'s context window (`graphseek.llm.context_window.text_room`)."""
    bare = template.format(passages="", **fields)
    room, count = text_room(model, [SystemMessage(system), HumanMessage(bare)])
    return template.format(passages=format_passages(hits, max_chars, room, count), **fields)


def format_plan(plan: Sequence[SubQuestion]) -> str:
    if not plan:
        return "(no plan)"
    lines = []
    for step in plan:
        deps = (
            f" (depends on {', '.join(f'#{d}' for d in step.depends_on)})"
            if step.depends_on
            else ""
        )
        lines.append(f"{step.id}. {step.question}{deps}")
    return "\n".join(lines)


def format_history(drafts: Sequence[Draft], max_chars: int = 6000) -> str:
    """`Q<i>` / `A<i>` / `Evidence` blocks, oldest first; over `max_chars`, whole blocks are left
    out from the oldest (with a note saying how many), never a block cut in the middle, so the
    text grows at its end from turn to turn (a stable prompt prefix until the first drop)."""
    if not drafts:
        return "(nothing asked yet)"
    blocks = []
    for i, d in enumerate(drafts, 1):
        ev = "; ".join(f"[{e.passage_id}] {e.sentence or e.text[:300]}" for e in d.evidence[:3])
        others = f" (other candidates: {', '.join(d.candidates[:4])})" if d.candidates else ""
        blocks.append(
            f"Q{i}: {d.question}\nA{i}: {d.answer or '(no answer)'}{others}\nEvidence: {ev}"
        )
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):
        if kept and used + len(block) + 2 > max_chars - 60:  # room for the note
            break
        kept.append(block)
        used += len(block) + 2
    dropped = len(blocks) - len(kept)
    note = [f"({dropped} earlier question(s) left out)"] if dropped else []
    return cut_text("\n\n".join([*note, *reversed(kept)]), max_chars)


#: sentence bridges shown to a model Seeker at most, and each sentence's characters at most
MAX_SHOWN_BRIDGES = 3
BRIDGE_SENTENCE_CHARS = 200


def format_bridges(bridges: Sequence[SentenceBridge]) -> str:
    """The candidate bridges block of the Seeker's prompt (`SEEKER_BRIDGES`): one line per
    entity, `- entity (from source) [passage id] "sentence"`; empty when there are none."""
    if not bridges:
        return ""
    lines = [
        f'- {b.entity} (from {b.source}) [{b.passage_id}] "{cut_text(b.sentence, BRIDGE_SENTENCE_CHARS)}"'
        for b in bridges[:MAX_SHOWN_BRIDGES]
    ]
    return "\n".join(lines)
