"""ScriptedChatModel: replay, routing, tools, structured output, usage, streaming, LangGraph."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any

import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ValidationError
from typing_extensions import TypedDict

from graphseek.llm import (
    ScriptedChatModel,
    ScriptExhaustedError,
    UsageCallback,
    invoke_structured,
    model_for,
)
from graphseek.state.context import Context


class Verdict(BaseModel):
    reason: str
    relevant: bool


@tool
def passage_search(query: str) -> str:
    """Search passages."""
    return query


@tool
def entity_search(name: str) -> str:
    """Search entities."""
    return name


def test_replays_strings_dicts_models_and_messages_in_order() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}])
    model = ScriptedChatModel(
        responses=[
            "plain",
            {"reason": "r", "relevant": True},
            Verdict(reason="s", relevant=False),
            call,
        ]
    )
    assert model.invoke("a").content == "plain"
    assert model.invoke("b").content == '{"reason": "r", "relevant": true}'
    assert model.invoke("c").content == '{"reason":"s","relevant":false}'
    reply = model.invoke("d")
    assert reply.tool_calls[0]["args"] == {"x": 1}
    assert reply is not call and call.id is None  # the script is not mutated
    assert model.remaining == 0
    assert [m[-1].content for m in model.calls] == ["a", "b", "c", "d"]


def test_records_full_input_messages() -> None:
    model = ScriptedChatModel(responses=["ok"])
    model.invoke([SystemMessage("be brief"), HumanMessage("hi")])
    assert [type(m).__name__ for m in model.calls[0]] == ["SystemMessage", "HumanMessage"]
    assert model.calls[0][0].content == "be brief"


def test_runs_out_with_a_clear_error() -> None:
    model = ScriptedChatModel(responses=["only"])
    model.invoke("first")
    with pytest.raises(ScriptExhaustedError, match=r"has 1, and call 2 was asked: 'second'"):
        model.invoke("second")


def test_exception_responses_are_raised() -> None:
    model = ScriptedChatModel(responses=[TimeoutError("slow server"), "after"])
    with pytest.raises(TimeoutError, match="slow server"):
        model.invoke("q")
    assert model.invoke("q").content == "after"


def test_callable_script_routes_by_prompt() -> None:
    def route(messages: list[BaseMessage]) -> str:
        return "Paris" if "France" in str(messages[-1].content) else "unknown"

    model = ScriptedChatModel(responses=route)
    assert model.invoke("capital of France?").content == "Paris"
    assert model.invoke("capital of Mars?").content == "unknown"
    assert model.remaining is None
    assert len(model.calls) == 2


def test_usage_metadata_is_deterministic() -> None:
    model = ScriptedChatModel(responses=["x" * 40, "x" * 40])
    first = model.invoke("y" * 100)
    second = model.invoke("y" * 100)
    assert first.usage_metadata == {"input_tokens": 25, "output_tokens": 10, "total_tokens": 35}
    assert second.usage_metadata == first.usage_metadata
    kept = AIMessage(
        content="z", usage_metadata={"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    )
    assert ScriptedChatModel(responses=[kept]).invoke("q").usage_metadata == kept.usage_metadata


def test_bind_tools_records_names_and_replays_the_same_script() -> None:
    call = AIMessage(
        content="", tool_calls=[{"name": "passage_search", "args": {"query": "q"}, "id": "1"}]
    )
    model = ScriptedChatModel(responses=[call, "done"])
    bound = model.bind_tools([passage_search, entity_search], tool_choice="auto")
    assert model.bound_tool_names == ["passage_search", "entity_search"]
    reply = bound.invoke("find it")
    assert reply.tool_calls[0]["name"] == "passage_search"
    assert model.invoke("plain").content == "done"  # one script, shared by the bound runnable
    assert model.call_tools == [["passage_search", "entity_search"], []]


def test_with_structured_output_parses_and_raises_on_malformed() -> None:
    model = ScriptedChatModel(
        responses=[
            {"reason": "mentions it", "relevant": True},
            '```json\n{"reason": "fenced", "relevant": false}\n```',
            "not json at all",
            {"reason": "missing the verdict"},
        ]
    )
    structured = model.with_structured_output(Verdict)
    assert structured.invoke("q") == Verdict(reason="mentions it", relevant=True)
    assert structured.invoke("q") == Verdict(reason="fenced", relevant=False)
    with pytest.raises(OutputParserException):
        structured.invoke("q")
    with pytest.raises(ValidationError):
        structured.invoke("q")


def test_with_structured_output_include_raw_and_dict_schema() -> None:
    model = ScriptedChatModel(responses=["{oops", {"a": 1}])
    raw = model.with_structured_output(Verdict, include_raw=True).invoke("q")
    assert raw["parsed"] is None
    assert isinstance(raw["parsing_error"], OutputParserException)
    assert raw["raw"].content == "{oops"
    schema = {"title": "Thing", "type": "object", "properties": {"a": {"type": "integer"}}}
    assert model.with_structured_output(schema).invoke("q") == {"a": 1}


def test_structured_output_from_tool_call_arguments() -> None:
    call = AIMessage(
        content="",
        tool_calls=[{"name": "Verdict", "args": {"reason": "r", "relevant": True}, "id": "v"}],
    )
    model = ScriptedChatModel(responses=[call])
    assert model.with_structured_output(Verdict).invoke("q") == Verdict(reason="r", relevant=True)


def test_streaming_yields_words_tool_calls_and_usage() -> None:
    call = AIMessage(
        content="let me look",
        tool_calls=[{"name": "passage_search", "args": {"query": "q"}, "id": "t1"}],
    )
    model = ScriptedChatModel(responses=[call])
    chunks = list(model.stream("go"))
    assert [c.content for c in chunks[:-1]] == ["let", " ", "me", " "]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    assert merged.content == "let me look"
    assert merged.tool_calls == [
        {"name": "passage_search", "args": {"query": "q"}, "id": "t1", "type": "tool_call"}
    ]
    assert merged.usage_metadata is not None and merged.usage_metadata["output_tokens"] > 0


def test_ainvoke() -> None:
    model = ScriptedChatModel(responses=["async ok"])
    assert asyncio.run(model.ainvoke("q")).content == "async ok"


# -- through LangGraph ------------------------------------------------------------------------


class State(TypedDict, total=False):
    question: str
    verdicts: Annotated[list[bool], operator.add]
    llm_calls: Annotated[int, operator.add]


def judge(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    model = model_for(runtime.context.llm, "verifier")
    assert model is not None
    verdict, usage = invoke_structured(model, Verdict, state["question"])
    return {"verdicts": [verdict.relevant], "llm_calls": usage.llm_calls}


def build() -> Any:
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("judge", judge)
    graph.add_edge(START, "judge")
    graph.add_edge("judge", END)
    return graph.compile()


def test_drives_a_langgraph_node_sync_stream_and_async() -> None:
    model = ScriptedChatModel(
        responses=[{"reason": "a", "relevant": True}] * 2 + [{"reason": "b", "relevant": False}]
    )
    graph = build()
    context = Context(llm={"verifier": model})
    out = graph.invoke({"question": "is it?"}, context=context)
    assert out == {"question": "is it?", "verdicts": [True], "llm_calls": 1}

    # the node's model call stays attached to the graph's callbacks: a run-level usage counter
    # sees it, and LangGraph's "messages" stream receives the reply
    run_usage = UsageCallback()
    streamed = list(
        graph.stream(
            {"question": "again?"},
            context=context,
            stream_mode="messages",
            config={"callbacks": [run_usage]},
        )
    )
    assert (
        "".join(str(chunk.content) for chunk, _meta in streamed)
        == '{"reason": "a", "relevant": true}'
    )
    assert run_usage.usage.llm_calls == 1

    final = asyncio.run(graph.ainvoke({"question": "async?"}, context=context))
    assert final["verdicts"] == [False]
    assert len(model.calls) == 3


def test_concurrent_calls_consume_each_response_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    model = ScriptedChatModel(responses=[f"r{i}" for i in range(16)])
    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda i: model.invoke(f"q{i}").content, range(16)))
    assert sorted(replies, key=lambda r: int(r[1:])) == [f"r{i}" for i in range(16)]
    assert len(model.calls) == 16 and model.remaining == 0
