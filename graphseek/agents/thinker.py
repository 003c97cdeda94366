"""Thinker role: the Thought of G-RAGent's ReAct loop (§2.2).

Each step the thinker reads the question, the history of actions and observations and the
topics of the knowledge hypergraph, and decides RETRIEVE (with a predicted topic and the
sub-question it serves), REASON (a sub-answer derived without retrieval) or FINISH (the final
answer; early stopping as soon as the context suffices).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from graphseek.agents.prompts.thinker import THINKER_SYSTEM, THINKER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_history
from graphseek.knowledge.passages import Hit
from graphseek.state.verdicts import Thought


@dataclass(frozen=True)
class ThinkerView:
    """What the thinker sees on a step."""

    question: str
    history: Sequence[Mapping[str, Any]]
    hits: Sequence[Hit]  # every passage observed so far, best first
    topics: Sequence[str]
    step_answers: Mapping[str, str] = field(default_factory=dict)
    step: int = 0
    max_steps: int = 6


class Thinker(Protocol):
    def think(self, view: ThinkerView) -> Step[Thought]: ...


class LLMThinker(StructuredRole):
    def think(self, view: ThinkerView) -> Step[Thought]:
        user = THINKER_USER.format(
            question=view.question,
            topics="\n".join(f"- {t}" for t in view.topics) or "(no topics: search passages)",
            history=render_history(view.history),
            step=view.step + 1,
            max_steps=view.max_steps,
        )
        out, usage = self.ask(Thought, THINKER_SYSTEM, user)
        if out.decision == "RETRIEVE" and not (out.query.strip() or out.topic.strip()):
            out = out.model_copy(update={"query": view.question})
        return Step(out, usage)
