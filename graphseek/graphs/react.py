"""`react`: G-RAGent's dynamic retrieval-reasoning loop over the knowledge hypergraph (§2.2).

think (Thought: RETRIEVE with a predicted topic, REASON, or FINISH)
→ act (Action through the hypergraph primitives: retrieve_subgraph(topic), node_feature,
  neighbor_check; or internal reasoning; the Observation is appended to the history)
→ think … until FINISH, the early stop (the thinker judges the context sufficient before the
step budget is spent: `diagnostics.early_stop`), or the budget runs out (`max_turns` steps,
`max_llm_calls`, `max_tokens`) → finalize_answer.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphseek.agents.offline.evidence import answer_occurs, name_coverage, question_names
from graphseek.agents.registry import get_roles
from graphseek.agents.thinker import ThinkerView
from graphseek.errors import LLMError
from graphseek.graphs.common import finalize_answer, to_evidence, to_hits
from graphseek.graphs.graph_context import hypergraph_action, topic_labels
from graphseek.graphs.routing import budget_exhausted, route_thought
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage
from graphseek.state.schema import InputState, OutputState, State
from graphseek.state.verdicts import Thought

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


def think(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Thought: analyse the history and decide RETRIEVE (and on which topic), REASON or FINISH."""
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
        result = get_roles(ctx).thinker.think(view)
    except LLMError as exc:
        usage = exc.usage if isinstance(exc.usage, Usage) else Usage()
        return {
            "next_action": "abstain",
            "abstain_reason": f"thinker failed: {exc}",
            "usage": usage,
            "trace": ["think"],
        }
    thought = result.value
    update: dict[str, Any] = {"thought": thought, "usage": result.usage, "trace": ["think"]}
    if thought.decision != "FINISH":
        return update | {"next_action": thought.decision.lower()}
    record = {"step": step + 1, "decision": "FINISH", "query": thought.query,
              "observation": f"Finish[{thought.answer}]"}  # fmt: skip
    answer = thought.answer.strip()
    if not answer:
        return update | {
            "next_action": "abstain",
            "abstain_reason": thought.reason or "the thinker found no supported answer",
            "history": [record],
            "diagnostics": {"early_stop": False, "turns": step},
        }
    return update | {
        "next_action": "answer",
        "answer": answer,
        "evidence": _grounding(answer, question, passages),
        "history": [record],
        "diagnostics": {"early_stop": thought.sufficient and step < ctx.max_turns, "turns": step},
    }


def _observe(found_lines: list[str], passages: list[EvidenceItem], note: str) -> str:
    parts = ["\n".join(found_lines)] if found_lines else []
    if passages:
        parts.append("Passages: " + "; ".join(f"[{e.passage_id}] {e.title}" for e in passages))
    if note:
        parts.append(f"({note})")
    return "\n".join(parts)[:MAX_OBSERVATION] or "(nothing found)"


def act(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Action and Observation: run the hypergraph primitive (or reason internally) and append
    what it returned to the history."""
    ctx = runtime.context
    thought = state.get("thought") or Thought(decision="RETRIEVE", query=state["question"])
    step = state.get("turn", 0) + 1
    record: dict[str, Any] = {
        "step": step,
        "decision": thought.decision,
        "query": thought.query,
        "topic": thought.topic,
    }
    update: dict[str, Any] = {"turn": step, "trace": ["act"]}
    if thought.decision == "REASON":
        record["observation"] = f"{thought.query or 'sub-question'} -> {thought.answer or '?'}"
        if thought.step_id is not None and thought.answer:
            update["step_answers"] = {str(thought.step_id): thought.answer}
        return update | {"history": [record]}
    query = thought.query or thought.topic or state["question"]
    found = hypergraph_action(
        ctx, thought.primitive, query, thought.topic, thought.entity, thought.attribute
    )
    new = [to_evidence(h) for h in found.hits]
    known = {e.passage_id for e in state.get("passages", [])}
    merged = [*state.get("passages", []), *(e for e in new if e.passage_id not in known)]
    record |= {
        "primitive": thought.primitive,
        "observation": _observe(found.lines, new, found.note),
    }
    update |= {
        "passages": merged,
        "retrieved_ids": [e.passage_id for e in new],
        "query_history": [query],
        "history": [record],
    }
    if found.lines:
        update["graph_context"] = found.lines
    return update


def build_react() -> StateGraph[State, Context, InputState, OutputState]:
    builder = StateGraph(
        State, input_schema=InputState, output_schema=OutputState, context_schema=Context
    )
    builder.add_node(think)
    builder.add_node(act)
    builder.add_node(finalize_answer)
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", route_thought, ["act", "finalize_answer"])
    builder.add_edge("act", "think")
    builder.add_edge("finalize_answer", END)
    return builder


graph = build_react().compile(name="react")
