"""What every LLM policy of the checking and searching roles shares: one structured call with
the role's system prompt, and plain-text renderings of evidence for the prompts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from graphseek.agents.text import summary
from graphseek.knowledge.passages import Hit
from graphseek.llm import invoke_structured
from graphseek.state.models import Draft, EvidenceItem, Usage

M = TypeVar("M", bound=BaseModel)


class StructuredRole:
    """Base of an LLM policy: `ask(schema, system, user)` -> (validated reply, usage)."""

    def __init__(self, model: Any, max_retries: int = 2) -> None:
        self.model = model
        self.max_retries = max_retries

    def ask(self, schema: type[M], system: str, user: str) -> tuple[M, Usage]:
        out, usage = invoke_structured(
            self.model, schema, [("system", system), ("human", user)], max_retries=self.max_retries
        )
        assert isinstance(out, schema)
        return out, usage


def render_summaries(hits: Sequence[Hit]) -> str:
    """`[id] title: first sentence (similarity s)` per passage."""
    if not hits:
        return "(no documents)"
    return "\n".join(
        f"[{h.passage.id}] {h.passage.title}: {summary(h.passage.text)} (similarity {h.score:.2f})"
        for h in hits
    )


def render_evidence(items: Sequence[EvidenceItem], max_chars: int = 4000) -> str:
    """`[id] title: sentence or text` blocks, cut to a character budget."""
    if not items:
        return "(no evidence)"
    blocks: list[str] = []
    used = 0
    for e in items:
        body = e.sentence or e.text
        block = f"[{e.passage_id}] {e.title}: {body}" if e.title else f"[{e.passage_id}] {body}"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block)
        used += len(block)
    return "\n\n".join(blocks)


def render_lines(lines: Sequence[str], max_lines: int = 40, empty: str = "(none)") -> str:
    """Graph lines (triples, hyperedges), one per line, at most `max_lines`."""
    return "\n".join(lines[:max_lines]) if lines else empty


def render_steps(drafts: Sequence[Draft], max_chars: int = 6000) -> str:
    """The searched sub-queries: question, answer, evidence sentences with passage ids."""
    if not drafts:
        return "(nothing searched yet)"
    blocks = []
    for i, d in enumerate(drafts, 1):
        step = f" (plan step {d.step_id})" if d.step_id is not None else ""
        ev = "; ".join(f"[{e.passage_id}] {e.sentence or e.text[:300]}" for e in d.evidence[:3])
        blocks.append(
            f"{i}. {d.question}{step}\n   answer: {d.answer or '(none)'} "
            f"(confidence {d.confidence:.2f})\n   evidence: {ev or '(none)'}"
        )
    return "\n".join(blocks)[-max_chars:]


def render_history(history: Sequence[Mapping[str, Any]], max_chars: int = 6000) -> str:
    """ReAct history: one block per step with the thought's decision and the observation."""
    if not history:
        return "(no steps yet)"
    blocks = []
    for h in history:
        head = f"Step {h.get('step', '?')}: {h.get('decision', '')}"
        if h.get("query"):
            head += f" | query: {h['query']}"
        if h.get("topic"):
            head += f" | topic: {h['topic']}"
        blocks.append(f"{head}\nObservation: {h.get('observation', '')}")
    return "\n\n".join(blocks)[-max_chars:]
