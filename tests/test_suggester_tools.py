"""knowledge_aware suggesters as tool-calling agents (the `suggest` subgraph), and the run's
budget guard when a compiled graph is invoked directly (no `ask`, no callbacks passed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from test_knowledge_aware import (
    DEATH_FACT,
    FATHER_FACT,
    Q_DEATH,
    Q_FATHER,
    QUESTION,
    keep_known_sentences,
    query_reply,
    scripted,
)

from graphseek.agents.prompts.planner import PLANNER_SYSTEM, PLANNER_TOOLS_SYSTEM
from graphseek.graphs import get_workflow
from graphseek.graphs.knowledge_aware import build_knowledge_aware
from graphseek.graphs.suggester_agent import (
    build_suggester_agent,
    route_results,
    route_suggester,
)
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context

SNAPSHOT = Path(__file__).parent / "snapshots" / "suggester_agent.mmd"


def compiled() -> Any:
    return build_knowledge_aware().compile(checkpointer=InMemorySaver())


def run_thread(context: Context, thread: str = "t") -> tuple[dict[str, Any], list[Any]]:
    """Run knowledge_aware on a thread; the output and the `messages` Studio shows."""
    graph = compiled()
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 100}
    out = graph.invoke({"question": QUESTION}, config=config, context=context)
    return out, list(graph.get_state(config).values.get("messages", []))


def tool_calls(messages: list[Any]) -> list[dict[str, Any]]:
    return [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


class NoToolsModel(ScriptedChatModel):
    """A chat model without tool calling."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


# -- tool calls -------------------------------------------------------------------------------


def test_competitive_suggesters_call_search_gap_and_show_in_the_state(tiny_index):
    keyword = "Ada Lovelace father place of death"
    model = scripted(
        lambda human: query_reply([Q_FATHER, keyword][int("suggester 2" in human)]),
        {Q_FATHER: [FATHER_FACT], keyword: [FATHER_FACT, DEATH_FACT]},
        keep_known_sentences,
    )
    ctx = Context(
        index=tiny_index, llm=model, retriever="bm25", top_k=8, agents=2, mode="competitive"
    )
    out, messages = run_thread(ctx)
    assert out["answer"] == "Missolonghi"
    calls = tool_calls(messages)
    assert sorted(c["args"]["query"] for c in calls) == sorted([Q_FATHER, keyword])
    assert {c["name"] for c in calls} == {"search_gap"}
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(results) == 2 and all(r.status == "success" for r in results)
    # each suggester searched with its own retriever, which its result names
    assert sorted(r.artifact["retriever"] for r in results) == ["bm25", "dense"]
    # the model was offered the graph tools with the gap search
    planner_turns = [t for t in model.call_tools if "search_gap" in t]
    assert len(planner_turns) == 2
    assert set(planner_turns[0]) >= {
        "search_gap",
        "search_entities",
        "ppr_search",
        "stop_searching",
    }


def test_a_repeated_query_is_a_tool_error_the_suggester_reacts_to(tiny_index):
    """The second round's suggester repeats the first query: `search_gap` refuses it as a
    ToolMessage, the model sees it and stops the round (`stop_searching`)."""
    model = scripted(
        lambda human: query_reply(Q_FATHER),
        {Q_FATHER: [FATHER_FACT]},
        keep_known_sentences,
    )
    ctx = Context(
        index=tiny_index,
        llm=model,
        retriever="bm25",
        agents=1,
        mode="collaborative",
        max_turns=2,
    )
    out, messages = run_thread(ctx)
    errors = [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == 1 and "already searched" in str(errors[0].content)
    names = [c["name"] for c in tool_calls(messages)]
    assert names == ["search_gap", "search_gap", "stop_searching"]
    # the refused call's error was in the prompt of the model's next turn
    last_planner = [m for m in model.calls if m[0].content == PLANNER_TOOLS_SYSTEM][-1]
    assert any(isinstance(m, ToolMessage) and "already searched" in m.text for m in last_planner)
    assert out["abstained"] and "no suggester could plan a new query" in out["abstain_reason"]


def test_a_model_without_tool_calling_takes_the_json_path_with_the_same_calls(tiny_index):
    base = scripted(
        lambda human: query_reply([Q_FATHER, Q_DEATH]["(resolved: Lord Byron)" in human], "1"),
        {Q_FATHER: [FATHER_FACT], Q_DEATH: [DEATH_FACT]},
        keep_known_sentences,
    )
    model = NoToolsModel(responses=base.responses)
    ctx = Context(index=tiny_index, llm=model, retriever="bm25", agents=1, mode="collaborative")
    out, messages = run_thread(ctx)
    assert out["answer"] == "Missolonghi"
    assert [c["args"]["query"] for c in tool_calls(messages)] == [Q_FATHER, Q_DEATH]
    assert any("JSON path" in n for n in out["diagnostics"]["notes"])
    assert not any(m[0].content == PLANNER_TOOLS_SYSTEM for m in model.calls)
    assert any(m[0].content == PLANNER_SYSTEM for m in model.calls)


def test_offline_suggesters_emit_the_same_tool_calls(tiny_index):
    pytest.importorskip("graphseek.agents.offline.librarian", reason="no offline Librarian")
    ctx = Context(
        index=tiny_index, llm="offline", agents=3, mode="competitive", profile="wikipedia"
    )
    out, messages = run_thread(ctx)
    assert out["answer"] == "Missolonghi" and not out["abstained"]
    calls = tool_calls(messages)
    assert calls and {c["name"] for c in calls} == {"search_gap"}
    assert all(c["id"].startswith("suggester") for c in calls)
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(results) == len(calls) == out["trace"].count("suggest")
    # the same run again gives the same calls (deterministic ids)
    _, again = run_thread(ctx, thread="u")
    assert [c["id"] for c in tool_calls(again)] == [c["id"] for c in calls]


def test_a_search_that_finds_nothing_is_still_a_search(tiny_index):
    """An empty result is recorded (the query joins the history, the planner reformulates the
    next round), as a retrieval with no hits always was."""
    from graphseek.graphs.kair_steps import read_results

    call = {"name": "search_gap", "args": {"query": "zzz", "gap_ids": ["1"]}, "id": "c1",
            "type": "tool_call"}  # fmt: skip
    empty = ToolMessage(
        "(nothing found)",
        tool_call_id="c1",
        name="search_gap",
        artifact={"passage_ids": [], "scores": [], "query": "zzz", "gap_ids": ["1"]},
    )
    found = read_results([AIMessage("", tool_calls=[call]), empty], Context(index=tiny_index))
    assert found.queries == ["zzz"] and found.gap_ids == ["1"] and found.hits == []


def test_routers_follow_the_tool_calls():
    call = {"name": "search_gap", "args": {"query": "q"}, "id": "1", "type": "tool_call"}
    stop = {"name": "stop_searching", "args": {}, "id": "2", "type": "tool_call"}
    assert route_suggester({"messages": [AIMessage("", tool_calls=[call])]}) == "act"
    assert route_suggester({"messages": [AIMessage("", tool_calls=[stop])]}) == "update_caches"
    assert route_suggester({"messages": [AIMessage("no new query")]}) == "update_caches"
    assert route_suggester({}) == "update_caches"
    failed = ToolMessage("already searched", tool_call_id="1", status="error")
    done = ToolMessage("[ada] ...", tool_call_id="1")
    ai = AIMessage("", tool_calls=[call])
    assert route_results({"messages": [ai, failed], "searches": 1}) == "plan_search"
    assert route_results({"messages": [ai, failed], "searches": 3}) == "update_caches"
    assert route_results({"messages": [ai, done], "searches": 1}) == "update_caches"


def test_suggester_graph_shape_matches_snapshot():
    drawn = build_suggester_agent().compile().get_graph().draw_mermaid()
    if not SNAPSHOT.exists():  # first run writes the snapshot; review it in the diff
        SNAPSHOT.write_text(drawn)
    assert drawn == SNAPSHOT.read_text()


# -- the budget holds when the compiled graph is invoked directly ---------------------------------


@pytest.mark.parametrize("mode", ["single", "competitive"])
def test_direct_invocation_obeys_the_call_budget(tiny_index, mode):
    counter = iter(range(1000))
    model = scripted(lambda human: query_reply(f"Ada Lovelace family, attempt {next(counter)}"), {})
    ctx = Context(
        index=tiny_index, llm=model, retriever="bm25", max_llm_calls=5, agents=2, mode=mode
    )
    out = get_workflow("knowledge_aware").invoke({"question": QUESTION}, context=ctx)
    assert out["abstained"] and "LLM-call budget exhausted" in out["abstain_reason"]
    # no call past the budget was sent; every call made is charged
    assert len(model.calls) == 5 and out["usage"].llm_calls == 5


def test_direct_invocation_obeys_the_token_budget(tiny_index):
    counter = iter(range(1000))
    model = scripted(lambda human: query_reply(f"Ada Lovelace family, attempt {next(counter)}"), {})
    ctx = Context(index=tiny_index, llm=model, retriever="bm25", max_tokens=1500)
    out = get_workflow("knowledge_aware").invoke({"question": QUESTION}, context=ctx)
    assert out["abstained"] and "token budget exhausted" in out["abstain_reason"]
    assert out["usage"].llm_calls == len(model.calls)
    assert out["usage"].total_tokens >= 1500


def test_direct_invocation_budget_inside_the_react_tool_loop(tiny_index):
    def respond(messages: list[Any]) -> AIMessage:
        n = sum(isinstance(m, AIMessage) for m in messages)
        args = {"query": f"Ada Lovelace search {n}"}
        return AIMessage("", tool_calls=[{"name": "search_passages", "args": args, "id": f"c{n}"}])

    model = ScriptedChatModel(responses=respond)
    ctx = Context(index=tiny_index, llm=model, max_llm_calls=2, max_turns=10)
    out = get_workflow("react").invoke({"question": QUESTION}, context=ctx)
    assert out["abstained"] and "LLM-call budget exhausted (2/2 calls)" in out["abstain_reason"]
    assert len(model.calls) == 2 and out["usage"].llm_calls == 2
