"""Plain-text renderings of passages, plans and histories for prompts (budgeted, ids kept)."""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft, SubQuestion


def format_passages(hits: Sequence[Hit], max_chars: int = 6000) -> str:
    """`[id] title: text` blocks, best first, cut to a character budget."""
    blocks: list[str] = []
    used = 0
    for hit in hits:
        p = hit.passage
        block = f"[{p.id}] {p.title}: {p.text}" if p.title else f"[{p.id}] {p.text}"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block[: max(0, max_chars - used)] if not blocks else block)
        used += len(block)
    return "\n\n".join(blocks) if blocks else "(no passages found)"


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
    if not drafts:
        return "(nothing asked yet)"
    blocks = []
    for i, d in enumerate(drafts, 1):
        ev = "; ".join(f"[{e.passage_id}] {e.sentence or e.text[:300]}" for e in d.evidence[:3])
        others = f" (other candidates: {', '.join(d.candidates[:4])})" if d.candidates else ""
        blocks.append(
            f"Q{i}: {d.question}\nA{i}: {d.answer or '(no answer)'}{others}\nEvidence: {ev}"
        )
    text = "\n\n".join(blocks)
    return text[-max_chars:]
