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

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graphseek.agents.prompts.thinker import (
    THINKER_SYSTEM,
    THINKER_TOOLS_STEP,
    THINKER_TOOLS_SYSTEM,
    THINKER_TOOLS_USER,
    THINKER_USER,
)
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_history
from graphseek.knowledge.passages import Hit
from graphseek.state.verdicts import Thought
from graphseek.tools.lc_tools import FINISH, react_tools

#: tool-call arguments of G-RAGent's primitives, from a thought
PRIMITIVES = ("retrieve_subgraph", "node_feature", "neighbor_check")


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


def thought_message(thought: Thought, step: int, question: str) -> AIMessage:
    """A thought as the tool call it stands for, so that a JSON or offline thinker drives the
    same `ToolNode` as a tool-calling model: RETRIEVE -> its primitive (with the sub-question
    as ``query``), FINISH -> ``finish``; REASON needs no tool (a plain message). Tool-call ids
    are deterministic (``step<N>-<tool>``)."""
    text = thought.reason or ""
    args: dict[str, Any]
    if thought.decision == "REASON":
        note = f"REASON: {thought.query or 'sub-question'} -> {thought.answer or '?'}"
        return AIMessage(content=f"{text}\n{note}".strip())
    if thought.decision == "FINISH":
        name, args = FINISH, {"answer": thought.answer, "passage_ids": [], "reason": text}
    else:
        query = thought.query or thought.topic or question
        name = thought.primitive if thought.primitive in PRIMITIVES else "retrieve_subgraph"
        if name == "node_feature" and thought.entity:
            args = {"entity": thought.entity, "attr": thought.attribute or "all", "query": query}
        elif name == "neighbor_check" and thought.entity:
            args = {"entity": thought.entity, "relation": thought.attribute or None, "query": query}
        else:
            name, args = "retrieve_subgraph", {"topic": thought.topic, "query": query}
    call = {"name": name, "args": args, "id": f"step{step}-{name}", "type": "tool_call"}
    return AIMessage(content=text, tool_calls=[call])


def thought_from_message(message: AIMessage, question: str) -> Thought:
    """The thought a tool-calling reply stands for: ``finish`` alone -> FINISH, a retrieval tool
    -> RETRIEVE (its query or main argument as the sub-question; a ``finish`` beside it is taken
    after the other calls have run), no tool call -> REASON (the text is the reasoning)."""
    text = str(message.text or "")[:1500]
    finish = next((c for c in message.tool_calls or [] if c["name"] == FINISH), None)
    calls = [c for c in message.tool_calls or [] if c["name"] != FINISH]
    if finish is not None and not calls:
        args = finish.get("args") or {}
        answer = str(args.get("answer") or "").strip()
        return Thought(reason=str(args.get("reason") or text)[:1500], decision="FINISH",
                       query=question, answer=answer[:200], sufficient=bool(answer))  # fmt: skip
    if not calls:
        return Thought(reason=text, decision="REASON", query=question)
    first = calls[0]
    args = first.get("args") or {}
    query = str(args.get("query") or args.get("topic") or args.get("entity") or question)
    primitive = first["name"] if first["name"] in PRIMITIVES else "retrieve_subgraph"
    return Thought(
        reason=text,
        decision="RETRIEVE",
        query=query[:600],
        topic=str(args.get("topic") or "")[:200],
        primitive=primitive,  # type: ignore[arg-type]
        entity=str(args.get("entity") or "")[:200],
        attribute=str(args.get("attr") or args.get("relation") or "")[:200],
    )


class LLMThinker(StructuredRole):
    def call_tools(self, view: ThinkerView, messages: Sequence[BaseMessage]) -> Step[AIMessage]:
        """One step of the tool-calling loop: the model, with the react tools bound, reads the
        question, the topics and the conversation so far (its tool calls and their results)
        and replies with tool calls. Raises `ToolsUnsupportedError` when the model cannot
        bind tools, and the `LLMError`s of the taxonomy when the call fails."""
        user = THINKER_TOOLS_USER.format(
            question=view.question,
            topics="\n".join(f"- {t}" for t in view.topics) or "(no topics: search passages)",
        )
        # the step counter is the last message: what comes before it grows but never changes
        step = THINKER_TOOLS_STEP.format(step=view.step + 1, max_steps=view.max_steps)
        prompt = [
            SystemMessage(THINKER_TOOLS_SYSTEM),
            HumanMessage(user),
            *messages,
            HumanMessage(step),
        ]
        reply, usage = self.ask_tools(react_tools(), prompt)
        return Step(reply, usage)

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
