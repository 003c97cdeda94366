"""`react`: G-RAGent's dynamic retrieval-reasoning loop over the knowledge hypergraph (§2.2).

think (Thought: RETRIEVE with a predicted topic, REASON, or FINISH, emitted as tool calls)
→ act (a `ToolNode` running the calls: G-RAGent's primitives retrieve_subgraph(topic),
  node_feature, neighbor_check, and passage search, entity search, neighbours, PPR expansion,
  relational queries; tool errors come back as ToolMessages; `graphseek.graphs.tool_loop`: at
  most `max_tool_calls_per_reply` calls a reply, a repeated call answered with its earlier
  result, a `finish` beside other calls taken after them and checked against what they found)
→ observe (the Observation: the tools' passages and graph lines join the context and the
  history)
→ think … until `finish` (FINISH), the early stop (the thinker judges the context sufficient
before the step budget is spent: `diagnostics.early_stop`), two rounds of a model's tool calls
in a row that found no new passage (`diagnostics.no_progress_stop`), or the budget runs out
(`max_turns` steps, `max_llm_calls`, `max_tokens`) → finalize_answer. A REASON step (a sub-answer
derived without retrieval, no tool call) is recorded by `think` itself, which thinks again.

A model's `finish` is grounded: accepted only when its answer occurs in passages a tool
returned this run (the ones it cites, else any read; `check_finish`). A refused `finish` is
answered with the reason (a tool result the model reads) and the loop goes on; at the end of
the budget the run abstains, showing the passages it read.

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
from langgraph.runtime import Runtime

from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles, thresholds
from graphseek.agents.structured_role import offline_policy
from graphseek.agents.text import answer_occurs, name_coverage, question_names
from graphseek.agents.thinker import (
    LLMThinker,
    ThinkerView,
    thought_from_message,
    thought_message,
)
from graphseek.agents.tool_calling import (
    FinishVerdict,
    ToolsUnsupportedError,
    accepted_finish,
    check_finish,
    rounds_without_new_passages,
)
from graphseek.errors import LLMError
from graphseek.graphs.common import (
    add_finalize_answer,
    add_read_observed,
    confident_reading,
    error_usage,
    to_hits,
)
from graphseek.graphs.entry import check_entry
from graphseek.graphs.graph_context import NO_GRAPH, topic_labels
from graphseek.graphs.routing import budget_exhausted, escalating, route_thought
from graphseek.graphs.tool_loop import GuardedToolNode
from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage
from graphseek.state.schema import Diagnostics, InputState, OutputState, ReactState, ReactUpdate
from graphseek.state.verdicts import Thought
from graphseek.tools.lc_tools import FINISH, react_tools
from graphseek.tools.retrievers import resolve_index

#: observation text kept in the history per step
MAX_OBSERVATION = 1500
#: passages cited for a final answer at most
MAX_EVIDENCE = 3
#: rounds of tool calls in a row without a new passage that end the loop
NO_PROGRESS_ROUNDS = 2


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
        except LLMError as exc:  # with on_model_failure="offline": the offline thought
            offline = offline_policy(thinker, exc)
            if offline is None:
                raise
            refused, thinker = error_usage(exc), offline
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


def think(state: ReactState, runtime: Runtime[Context]) -> ReactUpdate:
    """Thought: analyse the history and decide RETRIEVE (tool calls), REASON or FINISH."""
    check_entry(state, runtime)
    ctx = runtime.context
    step = state.get("turn", 0)
    messages = list(state.get("messages", []))
    verdict = accepted_finish(messages)
    if verdict is not None:  # a finish taken after the other calls of its reply, accepted
        return _finished(state, verdict, step)
    model = isinstance(get_roles(ctx).thinker, LLMThinker)
    exhausted = budget_exhausted(state.get("usage"), step, ctx)
    if exhausted:
        ended: ReactUpdate = {
            "next_action": "abstain",
            "abstain_reason": f"{exhausted} before the thinker could finish",
            "trace": ["think"],
            "diagnostics": {"early_stop": False, "turns": step},
        }
        return _last_word(state, runtime, exhausted, ended) if model else ended
    # a model repeating itself is stopped; the offline thinker decides its own end
    stale = rounds_without_new_passages(messages) if model else 0
    if stale >= NO_PROGRESS_ROUNDS:
        why = f"{stale} rounds of tool calls in a row found no new passage"
        stopped: ReactUpdate = {
            "next_action": "abstain",
            "abstain_reason": f"{why} (early stop) before the thinker could finish",
            "trace": ["think"],
            "diagnostics": {"early_stop": True, "no_progress_stop": why, "turns": step},
        }
        return _last_word(state, runtime, why, stopped)
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
        message, thought, usage, notes = _decide(view, messages, runtime)
    except LLMError as exc:
        return {
            "next_action": "abstain",
            "abstain_reason": f"thinker failed: {exc}",
            "usage": error_usage(exc),
            "trace": ["think"],
        }
    update: ReactUpdate = {
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
    diagnostics: Diagnostics = {**update.get("diagnostics", {}), "early_stop": False, "turns": step}
    if not answer:
        return update | {
            "next_action": "abstain",
            "abstain_reason": thought.reason or "the thinker found no supported answer",
            "history": [record],
            "diagnostics": diagnostics,
        }
    diagnostics["early_stop"] = thought.sufficient and step < ctx.max_turns
    if isinstance(get_roles(ctx).thinker, LLMThinker):  # a model's finish: grounded or refused
        observed = {e.passage_id: f"{e.title}\n{e.text}" for e in passages}
        verdict = check_finish(answer, _cited_ids(message), observed)
        if not verdict.accepted:
            return update | _refused(message, thought, verdict, record, step)
        by_id = {e.passage_id: e for e in passages}
        evidence = [by_id[p] for p in verdict.passage_ids if p in by_id]
    else:
        evidence = _cited(message, passages) or _grounding(answer, question, passages)
    return update | {
        "next_action": "answer",
        "answer": answer,
        "evidence": evidence,
        "history": [record],
        "diagnostics": diagnostics,
    }


def _last_word(
    state: ReactState, runtime: Runtime[Context], why: str, abstention: ReactUpdate
) -> ReactUpdate:
    """A model's loop that ends unfinished (`why`: its turn budget spent, or rounds with nothing
    new) answers from what it observed when the offline reader of the run's profile is sure
    enough: its draft over the observed passages at the reader's operating point (the
    confidence at which the offline workflows answer), noted in `diagnostics.notes`; else the
    `abstention` stands. Nothing is asked of the model: its budget is spent or it repeats."""
    passages = list(state.get("passages", []))
    question = " ".join(state["question"].split())
    draft = confident_reading(question, passages, runtime.context)
    if draft is None:
        return abstention
    point = thresholds(runtime.context)[0]
    note = (
        f"the thinker had not finished when {why}: the reader answered from the "
        f"{len(passages)} passage(s) observed (confidence {draft.confidence:.2f} >= {point:.2f})"
    )
    diagnostics: Diagnostics = {**abstention.get("diagnostics", {}), "notes": [note]}
    return {
        "next_action": "answer",
        "answer": draft.answer,
        "evidence": draft.evidence,
        "trace": ["think"],
        "diagnostics": diagnostics,
    }


def _refused(
    message: AIMessage, thought: Thought, verdict: FinishVerdict, record: dict[str, Any], step: int
) -> ReactUpdate:
    """A refused `finish`: the model reads why (the call's result) and thinks again."""
    call = next((c for c in message.tool_calls if c["name"] == FINISH), None)
    result = [] if call is None else [
        ToolMessage(verdict.reason, name=FINISH, tool_call_id=str(call["id"]), status="error")
    ]  # fmt: skip
    record = record | {"observation": f"Finish[{thought.answer}] refused: {verdict.reason}"}
    return {
        "messages": [message, *result],
        "thought": thought.model_copy(update={"decision": "REASON"}),
        "next_action": "reason",
        "turn": step + 1,
        "history": [record],
        "diagnostics": {"refused_finishes": [verdict.reason[:300]]},
    }


def _finished(state: ReactState, verdict: FinishVerdict, step: int) -> ReactUpdate:
    """The run's end on a `finish` accepted where the calls ran (`act`)."""
    thought = Thought(reason="finish accepted", decision="FINISH", query=state["question"],
                      answer=verdict.answer[:200], sufficient=bool(verdict.answer))  # fmt: skip
    record = {"step": step, "decision": "FINISH", "query": state["question"],
              "observation": f"Finish[{verdict.answer}]"}  # fmt: skip
    update: ReactUpdate = {"thought": thought, "trace": ["think"], "history": [record],
                           "diagnostics": {"early_stop": False, "turns": step}}  # fmt: skip
    if not verdict.answer:
        return update | {"next_action": "abstain",
                         "abstain_reason": "the thinker found no supported answer"}  # fmt: skip
    by_id = {e.passage_id: e for e in state.get("passages", [])}
    evidence = [by_id[p] for p in verdict.passage_ids if p in by_id]
    return update | {"next_action": "answer", "answer": verdict.answer, "evidence": evidence}


def _cited_ids(message: AIMessage) -> list[str]:
    """The passage ids the `finish` calls of a reply cite, in order."""
    ids: list[str] = []
    for call in message.tool_calls:
        if call["name"] == FINISH:
            cited = (call.get("args") or {}).get("passage_ids") or []
            ids.extend(str(p) for p in (cited if isinstance(cited, list) else [cited]))
    return ids


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


def observe(state: ReactState, runtime: Runtime[Context]) -> ReactUpdate:
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
    update: ReactUpdate = {
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


def build_react() -> StateGraph[ReactState, Context, InputState, OutputState]:
    builder = StateGraph(
        ReactState, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(think)
    builder.add_node("act", GuardedToolNode(react_tools(), finish=[FINISH]))
    builder.add_node(observe)
    add_read_observed(builder)
    add_finalize_answer(builder)
    builder.add_edge(START, "think")
    builder.add_conditional_edges(
        "think", escalating(route_thought), ["act", "think", "read_observed", "finalize_answer"]
    )
    builder.add_edge("act", "observe")
    builder.add_edge("observe", "think")
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_react().compile(name="react")
