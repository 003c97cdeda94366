"""`react`: G-RAGent's dynamic retrieval-reasoning loop over the knowledge hypergraph (§2.2).

think (Thought: RETRIEVE with a predicted topic, REASON, or FINISH, emitted as tool calls)
→ act (a `ToolNode` running the calls: G-RAGent's primitives retrieve_subgraph(topic),
  node_feature, neighbor_check, and passage search, entity search, neighbours, PPR expansion,
  relational queries; tool errors come back as ToolMessages)
→ observe (the Observation: the tools' passages and graph lines join the context and the
  history)
→ think … until `finish` (FINISH), the early stop (the thinker judges the context sufficient
before the step budget is spent: `diagnostics.early_stop`), or the budget runs out
(`max_turns` steps, `max_llm_calls`, `max_tokens`) → finalize_answer. A REASON step (a sub-answer
derived without retrieval, no tool call) is recorded by `think` itself, which thinks again.

Tools are actions: with a tool-calling model the thinker binds `react_tools()` and its reply's
tool calls are run as they are; the offline thinker and a model without tool calling (the JSON
`Thought` path, noted in `diagnostics.notes`) emit the same `AIMessage.tool_calls`, so the graph,
the `messages` in the state and the trace are the same with or without a model. The tools read
the index from the runtime context, never from the model's arguments.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime

from graphseek.agents.registry import get_roles
from graphseek.agents.text import answer_occurs, name_coverage, question_names
from graphseek.agents.thinker import (
    LLMThinker,
    ThinkerView,
    thought_from_message,
    thought_message,
)
from graphseek.agents.tool_calling import ToolsUnsupportedError
from graphseek.errors import LLMError
from graphseek.graphs.common import error_usage, finalize_answer, to_evidence, to_hits
from graphseek.graphs.graph_context import NO_GRAPH, topic_labels
from graphseek.graphs.routing import budget_exhausted, route_thought
from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage
from graphseek.state.schema import InputState, OutputState, State
from graphseek.state.verdicts import Thought
from graphseek.tools.lc_tools import react_tools
from graphseek.tools.retrievers import resolve_index

#: observation text kept in the history per step
MAX_OBSERVATION = 1500
#: passages cited for a final answer at most
MAX_EVIDENCE = 3


def _grounding(answer: str, question: str, passages: list[EvidenceItem]) -> list[EvidenceItem]:
    """The observed passages that state the answer, else those naming the question's entities."""
    stating = [e for e in passages if answer_occurs(answer, f"{e.title}\n{e.text}")]
    if stating:
        return stating[:MAX_EVIDENCE]
    names = question_names(question)
    naming = [e for e in passages if names and name_coverage(names, [e.text]) > 0]
    return (naming or passages)[:MAX_EVIDENCE]


def _decide(
    view: ThinkerView, messages: list[AnyMessage], runtime: Runtime[Context]
) -> tuple[AIMessage, Thought, Any, list[str]]:
    """The thinker's step as a message with tool calls, the thought it stands for, its usage
    and notes: a tool-calling model replies with tool calls itself; the offline thinker and a
    model that cannot call tools decide a `Thought`, emitted as the same tool calls."""
    thinker = get_roles(runtime.context).thinker
    notes: list[str] = []
    refused = Usage()  # a request the server refused for its tools
    if isinstance(thinker, LLMThinker):
        try:
            reply = thinker.call_tools(view, messages)
        except ToolsUnsupportedError as exc:
            notes.append(f"thinker: {exc}; the JSON thought path is used instead")
            refused = exc.usage
        else:
            message = reply.value
            return message, thought_from_message(message, view.question), reply.usage, notes
    try:
        result = thinker.think(view)
    except LLMError as exc:
        exc.usage = refused + error_usage(exc)
        raise
    thought = result.value
    message = thought_message(thought, view.step + 1, view.question)
    return message, thought, refused + result.usage, notes


def think(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Thought: analyse the history and decide RETRIEVE (tool calls), REASON or FINISH."""
    ctx = runtime.context
    step = state.get("turn", 0)
    exhausted = budget_exhausted(state.get("usage"), step, ctx)
    if exhausted:
        return {
            "next_action": "abstain",
            "abstain_reason": f"{exhausted} before the thinker could finish",
            "trace": ["think"],
            "diagnostics": {"early_stop": False, "turns": step},
        }
    question = " ".join(state["question"].split())
    passages = list(state.get("passages", []))
    view = ThinkerView(
        question=question,
        history=list(state.get("history", [])),
        hits=to_hits(passages),
        topics=topic_labels(ctx),
        step_answers={k: str(v) for k, v in state.get("step_answers", {}).items()},
        step=step,
        max_steps=ctx.max_turns,
    )
    try:
        message, thought, usage, notes = _decide(view, list(state.get("messages", [])), runtime)
    except LLMError as exc:
        return {
            "next_action": "abstain",
            "abstain_reason": f"thinker failed: {exc}",
            "usage": error_usage(exc),
            "trace": ["think"],
        }
    update: dict[str, Any] = {
        "thought": thought,
        "messages": [message],
        "usage": usage,
        "trace": ["think"],
    }
    if notes:
        update["diagnostics"] = {"notes": notes}
    if thought.decision == "RETRIEVE":
        return update | {"next_action": "retrieve"}
    if thought.decision == "REASON":  # internal reasoning: recorded here, no tool to run
        record = {"step": step + 1, "decision": "REASON", "query": thought.query,
                  "topic": thought.topic,
                  "observation": f"{thought.query or 'sub-question'} -> {thought.answer or '?'}"}  # fmt: skip
        update |= {"next_action": "reason", "turn": step + 1, "history": [record]}
        if thought.step_id is not None and thought.answer:
            update["step_answers"] = {str(thought.step_id): thought.answer}
        return update
    record = {"step": step + 1, "decision": "FINISH", "query": thought.query,
              "observation": f"Finish[{thought.answer}]"}  # fmt: skip
    answer = thought.answer.strip()
    diagnostics = {**update.get("diagnostics", {}), "early_stop": False, "turns": step}
    if not answer:
        return update | {
            "next_action": "abstain",
            "abstain_reason": thought.reason or "the thinker found no supported answer",
            "history": [record],
            "diagnostics": diagnostics,
        }
    cited = _cited(message, passages)
    diagnostics["early_stop"] = thought.sufficient and step < ctx.max_turns
    return update | {
        "next_action": "answer",
        "answer": answer,
        "evidence": cited or _grounding(answer, question, passages),
        "history": [record],
        "diagnostics": diagnostics,
    }


def _cited(message: AIMessage, passages: list[EvidenceItem]) -> list[EvidenceItem]:
    """The observed passages a `finish` call cites, in its order."""
    ids: list[str] = []
    for call in message.tool_calls:
        if call["name"] == "finish":
            ids.extend(str(p) for p in (call.get("args") or {}).get("passage_ids") or [])
    by_id = {e.passage_id: e for e in passages}
    return [by_id[p] for p in dict.fromkeys(ids) if p in by_id][:MAX_EVIDENCE]


def _observe(found_lines: list[str], passages: list[EvidenceItem], note: str) -> str:
    parts = ["\n".join(found_lines)] if found_lines else []
    if passages:
        parts.append("Passages: " + "; ".join(f"[{e.passage_id}] {e.title}" for e in passages))
    if note:
        parts.append(f"({note})")
    return "\n".join(parts)[:MAX_OBSERVATION] or "(nothing found)"


def _new_tool_messages(messages: list[AnyMessage]) -> list[ToolMessage]:
    """The tool results after the last model message."""
    out: list[ToolMessage] = []
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            out.append(message)
        elif isinstance(message, AIMessage):
            break
    return out[::-1]


def observe(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Observation: the passages and graph lines the tools returned join the context and the
    history (a tool error is observed as its message)."""
    ctx = runtime.context
    thought = state.get("thought") or Thought(decision="RETRIEVE", query=state["question"])
    step = state.get("turn", 0) + 1
    index = resolve_index(ctx)
    new: list[EvidenceItem] = []
    lines: list[str] = []
    notes: list[str] = []
    tools: list[str] = []
    for message in _new_tool_messages(list(state.get("messages", []))):
        tools.append(message.name or "tool")
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        if message.status == "error" or not artifact:
            notes.append(f"{message.name}: {str(message.content)[:300]}")
            continue
        scores = list(artifact.get("scores") or [])
        for i, pid in enumerate(artifact.get("passage_ids") or []):
            if pid in {e.passage_id for e in new} or pid not in index:
                continue
            score = float(scores[i]) if i < len(scores) else 0.0
            new.append(to_evidence(Hit(passage=index.get(pid), score=score, rank=i + 1)))
        lines.extend(artifact.get("lines") or [])
        if artifact.get("note"):
            notes.append(str(artifact["note"]))
    known = {e.passage_id for e in state.get("passages", [])}
    merged = [*state.get("passages", []), *(e for e in new if e.passage_id not in known)]
    query = thought.query or thought.topic or state["question"]
    record: dict[str, Any] = {
        "step": step,
        "decision": thought.decision,
        "query": thought.query,
        "topic": thought.topic,
        "primitive": tools[0] if len(tools) == 1 else ", ".join(tools),
        "observation": _observe(lines, new, "; ".join(notes)),
    }
    update: dict[str, Any] = {
        "turn": step,
        "trace": ["observe"],
        "passages": merged,
        "retrieved_ids": [e.passage_id for e in new],
        "query_history": [query],
        "history": [record],
    }
    if lines:
        update["graph_context"] = lines
    if NO_GRAPH in notes:
        update["diagnostics"] = {"notes": [NO_GRAPH]}
    return update


def build_react() -> StateGraph[State, Context, InputState, OutputState]:
    builder = StateGraph(
        State, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(think)
    builder.add_node("act", ToolNode(react_tools(), handle_tool_errors=True))
    builder.add_node(observe)
    builder.add_node(finalize_answer)
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", route_thought, ["act", "think", "finalize_answer"])
    builder.add_edge("act", "observe")
    builder.add_edge("observe", "think")
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_react().compile(name="react")
