"""Workflows through langchain-openai against a real socket: an OpenAI-compatible fake server on
127.0.0.1 (`tests/fake_openai.py`) serving scripted completions and faults.

Sockets are allowed for this module only, and only to 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import (
    QUESTION,
    FakeOpenAIServer,
    Faults,
    Reply,
    Request,
    TinyWorld,
)
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from model_env import model_env, serve

from graphseek.api import ask, make_context
from graphseek.graphs import build_workflow, get_workflow
from graphseek.llm import clear_model_cache

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

MODEL = "openai:tiny"
#: a topology name, or "name:mode" for knowledge_aware's suggester modes
ALL_TOPOLOGIES = [
    "naive",
    "higra_retriever",
    "dual_agent",
    "adaptive",
    "deep_search",
    "react",
    "knowledge_aware",
    "knowledge_aware:competitive",
]
#: the topologies run through every fault (all of them)
FAULT_TOPOLOGIES = ALL_TOPOLOGIES
#: the topologies whose agents call tools (react's thinker, dual_agent's Librarians,
#: knowledge_aware's suggesters)
TOOL_TOPOLOGIES = ["react", "dual_agent", "knowledge_aware", "knowledge_aware:competitive"]
#: the settings of a topology variant
VARIANTS: dict[str, dict[str, Any]] = {
    "knowledge_aware:competitive": {"agents": 2, "mode": "competitive"},
}


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from model_env(monkeypatch)


def run(tiny_index: Any, topology: str, **settings: Any) -> Any:
    name = topology.split(":", 1)[0]
    settings = {**VARIANTS.get(topology, {}), **settings}
    return ask(tiny_index, QUESTION, topology=name, llm=MODEL, **settings)


def studio_state(tiny_index: Any, topology: str, **settings: Any) -> dict[str, Any]:
    """Invoke the compiled graph directly (as Studio does, no `ask`) on a thread; its state."""
    name = topology.split(":", 1)[0]
    graph = build_workflow(name).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "studio"}, "recursion_limit": 200}
    context = make_context(tiny_index, MODEL, **{**VARIANTS.get(topology, {}), **settings})
    graph.invoke({"question": QUESTION}, config=config, context=context)
    return dict(graph.get_state(config).values)


def served_tokens(server: FakeOpenAIServer, world: Any) -> tuple[int, int]:
    """Prompt and completion tokens the server reported, recomputed from its requests."""
    from fake_openai import completion

    prompt = done = 0
    for i, body in enumerate(server.requests, 1):
        usage = completion(body, world(Request(body, i)))["usage"]
        prompt += usage["prompt_tokens"]
        done += usage["completion_tokens"]
    return prompt, done


# -- the happy path, every topology -----------------------------------------------------------

EXPECTED_TRACE = {
    # the first search already shows Byron's passage: the model finishes early
    "react": ["think", "observe", "think", "finalize_answer"],
    "naive": ["retrieve_passages", "generate_answer", "finalize_answer"],
    "dual_agent": [
        "clarify_question",
        "decompose_question",
        "ask_librarian",
        "decide_action",
        "ask_librarian",
        "decide_action",
        "finalize_answer",
    ],
    # the ToolNode (retrieve_documents) runs the planner's search_gap calls; the trace lists
    # the workflow's own nodes
    "knowledge_aware": [
        "initialize_caches",
        "plan_query",
        "update_knowledge",
        "filter_context",
        "plan_query",
        "update_knowledge",
        "filter_context",
        "compose_answer",
        "finalize_answer",
    ],
    # two suggesters per round, both search the same gap (private caches): a tie, the lower wins
    "knowledge_aware:competitive": [
        "initialize_caches",
        *["suggest", "suggest", "select_proposal", "filter_context"] * 2,
        "compose_answer",
        "finalize_answer",
    ],
}


@pytest.mark.parametrize("topology", ALL_TOPOLOGIES)
def test_every_topology_answers_through_a_real_server(monkeypatch, tiny_index, topology):
    world = TinyWorld()
    with serve(monkeypatch, world) as server:
        result = run(tiny_index, topology)
    assert not result.abstained, result.abstain_reason
    assert result.answer == "Missolonghi"
    assert {"byron"} <= {e.passage_id for e in result.evidence}
    # every request the server saw is charged, with the tokens it reported
    assert result.usage.llm_calls == len(server.requests) > 0
    assert result.usage.failed_calls == 0 and not result.usage.tokens_estimated
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == served_tokens(
        server, world
    )
    assert result.usage.llm_seconds > 0 and result.usage.seconds > 0
    if not topology.endswith(":competitive"):  # one call at a time: model time within the run's
        assert result.usage.seconds >= result.usage.llm_seconds
    # each request bounds its reply
    assert all(body.get("max_tokens") == 1024 for body in server.requests)
    if topology in EXPECTED_TRACE:
        assert result.trace == EXPECTED_TRACE[topology]
    if topology == "react":  # tools as actions: search, search, finish
        calls = [
            c["function"]["name"]
            for body in server.requests[1:]
            for m in body["messages"]
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
        ]
        assert calls == ["search_passages"]  # then `finish`, which ends the run
        assert all(Request(b, 0).kind == "tools" for b in server.requests)


def test_dual_agent_librarians_call_tools_for_both_hops(monkeypatch, tiny_index):
    with serve(monkeypatch, TinyWorld()) as server:
        result = run(tiny_index, "dual_agent")
    librarian = [Request(b, 0) for b in server.requests if Request(b, 0).kind == "tools"]
    # each Librarian: a search with the configured retrieval, then `finish`
    first_turns = [r for r in librarian if not r.text("tool")]
    assert [r.line("Question") for r in first_turns] == [
        "Who was Ada Lovelace's father?",
        "Where did Lord Byron die?",
    ]
    assert len(librarian) == 4 and all("finish" in r.tool_names for r in librarian)
    assert result.answer == "Missolonghi"


def test_per_role_reply_limits_and_timeout_reach_the_request(monkeypatch, tiny_index):
    with serve(monkeypatch, TinyWorld()) as server:
        result = run(
            tiny_index,
            "naive",
            max_reply_tokens={"librarian": 300, "default": 200},
            llm_timeout=30,
        )
    assert result.answer == "Missolonghi"
    assert [body["max_tokens"] for body in server.requests] == [300]  # naive: one Librarian call


# -- faults --------------------------------------------------------------------------------------

#: fault name -> (the reply, words the abstain reason names, requests per failing call)
FAULTS: dict[str, tuple[Reply, str, int]] = {
    "stall": (Reply(stall=2.0), "timeout", 2),
    "http_500": (Reply(status=500, error="boom"), "HTTP 500", 2),
    "http_429": (Reply(status=429, error="slow down", headers={"retry-after": "0"}), "HTTP 429", 2),
    "context_overflow": (
        Reply(status=400, error="This model's maximum context length is 2048 tokens."),
        "context overflow",
        1,
    ),
    "prose": (Reply(content="The answer is probably Missolonghi, I think."), "malformed", 3),
}


def first_call_of_the_run(topology: str) -> str:
    return {
        "naive": "LibrarianReply",
        "higra_retriever": "LibrarianReply",
        "dual_agent": "Decomposition",
        "adaptive": "CoverageVerdict",
        "deep_search": "Decomposition",
        "react": "tools",
        "knowledge_aware": "InitialRequired",
        "knowledge_aware:competitive": "InitialRequired",
    }[topology]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("topology", FAULT_TOPOLOGIES)
def test_a_failing_server_ends_in_an_abstention_naming_the_cause(
    monkeypatch, tiny_index, topology, fault
):
    reply, cause, per_call = FAULTS[fault]
    with serve(monkeypatch, Faults(TinyWorld(), reply)) as server:
        result = run(tiny_index, topology, llm_timeout=0.5)
    assert result.abstained and result.answer == ""
    assert cause in result.abstain_reason, result.abstain_reason
    # the first model call of the run failed; every attempt of it was sent and charged
    assert [Request(b, 0).kind for b in server.requests] == [
        first_call_of_the_run(topology)
    ] * per_call
    assert result.usage.llm_calls == per_call
    if fault != "prose":  # prose replies are answers, with usage; the others failed
        assert result.usage.failed_calls == per_call and result.usage.tokens_estimated
    assert result.trace[-1] == "finalize_answer"


@pytest.mark.parametrize("topology", FAULT_TOPOLOGIES)
def test_a_transient_fault_is_retried_and_charged(monkeypatch, tiny_index, topology):
    responder = Faults(
        TinyWorld(), Reply(status=503, error="busy", headers={"retry-after": "0"}),
        when=lambda r: r.number == 1,
    )  # fmt: skip
    with serve(monkeypatch, responder) as server:
        result = run(tiny_index, topology)
    assert result.answer == "Missolonghi", result.abstain_reason
    assert result.usage.llm_calls == len(server.requests)
    assert result.usage.failed_calls == 1


@pytest.mark.parametrize("topology", FAULT_TOPOLOGIES)
def test_a_server_without_usage_gets_estimated_tokens(monkeypatch, tiny_index, topology):
    world = TinyWorld()

    def no_usage(request: Request) -> Reply:
        reply = world(request)
        reply.usage = False
        return reply

    with serve(monkeypatch, no_usage) as server:
        result = run(tiny_index, topology)
    assert result.answer == "Missolonghi"
    calls = len(server.requests)
    assert result.usage.llm_calls == calls and result.usage.estimated_calls == calls
    assert result.usage.tokens_estimated
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0


@pytest.mark.parametrize("topology", FAULT_TOPOLOGIES)
def test_a_runaway_list_is_bounded(monkeypatch, tiny_index, topology):
    world = TinyWorld()

    def runaway(request: Request) -> Reply:
        reply = world(request)
        if request.tool_names or not reply.content:
            return reply
        data = json.loads(reply.content)
        for key, value in data.items():
            if isinstance(value, list) and value:
                data[key] = value * 200  # one item repeated, as small models do
        return Reply.json(data)

    with serve(monkeypatch, runaway) as server:
        result = run(tiny_index, topology)
    assert result.answer == "Missolonghi", result.abstain_reason
    assert result.usage.llm_calls == len(server.requests)
    # the schemas sent to the server bound every list
    for body in server.requests:
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        if schema:
            from graphseek.state.bounds import unbounded_fields

            assert unbounded_fields(schema) == []


def test_a_reply_cut_at_max_tokens_is_retried_with_a_note(monkeypatch, tiny_index):
    world = TinyWorld()

    def cut_once(request: Request) -> Reply:
        reply = world(request)
        if request.number == 1:
            return Reply(content=(reply.content or "")[:40], finish_reason="length")
        return reply

    with serve(monkeypatch, cut_once) as server:
        result = run(tiny_index, "naive")
    assert result.answer == "Missolonghi"
    assert len(server.requests) == 2
    retry = Request(server.requests[1], 0).text("user")
    assert "cut off at the token limit" in retry


def test_the_budget_is_checked_before_every_call(monkeypatch, tiny_index):
    with serve(monkeypatch, TinyWorld()) as server:
        result = run(tiny_index, "knowledge_aware", max_llm_calls=3)
    assert result.abstained and "LLM-call budget exhausted" in result.abstain_reason
    assert len(server.requests) == 3 and result.usage.llm_calls == 3


# -- tool-calling agents through the server ------------------------------------------------------

#: the tool calls each topology's agents make against TinyWorld, in order
TOOL_CALLS = {
    "react": ["search_passages", "finish"],
    "dual_agent": ["context_search", "finish", "context_search", "finish"],
    # one search a round, two rounds; with two suggesters, each searches with its retriever
    "knowledge_aware": ["search_gap"] * 2,
    "knowledge_aware:competitive": ["search_gap"] * 4,
}
#: model calls with tools per failing step: react's thinker, dual_agent's first Librarian, both
#: suggesters of knowledge_aware's first round
FAILING_TOOL_STEPS = {
    "react": 1,
    "dual_agent": 1,
    "knowledge_aware": 1,
    "knowledge_aware:competitive": 2,
}


def tool_calls(messages: list[Any]) -> list[str]:
    return [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]


@pytest.mark.parametrize("topology", TOOL_TOPOLOGIES)
def test_tool_calls_show_in_the_state_studio_reads(monkeypatch, tiny_index, topology):
    with serve(monkeypatch, TinyWorld()) as server:
        state = studio_state(tiny_index, topology)
    assert state["answer"] == "Missolonghi", state.get("abstain_reason")
    messages = state["messages"]
    assert tool_calls(messages) == TOOL_CALLS[topology]
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert len(results) == sum(name != "finish" for name in TOOL_CALLS[topology])
    assert all(r.status == "success" and r.artifact["passage_ids"] for r in results)
    # each model message with tool calls is one request with the tools bound
    asked = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert len(asked) == [Request(b, 0).kind for b in server.requests].count("tools")
    if topology == "knowledge_aware:competitive":  # each suggester its own retriever
        assert sorted({r.artifact["retriever"] for r in results}) == ["bm25", "hybrid"]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("topology", TOOL_TOPOLOGIES)
def test_a_failing_tool_call_ends_in_an_abstention_naming_the_cause(
    monkeypatch, tiny_index, topology, fault
):
    reply, cause, per_call = FAULTS[fault]
    responder = Faults(TinyWorld(), reply, when=lambda r: r.kind == "tools")
    with serve(monkeypatch, responder) as server:
        result = run(tiny_index, topology, llm_timeout=0.5)
    assert result.abstained and result.answer == ""
    assert cause in result.abstain_reason, result.abstain_reason
    failing = [Request(b, 0).kind for b in server.requests].count("tools")
    assert failing == per_call * FAILING_TOOL_STEPS[topology]
    # every request, failed or not, is charged
    assert result.usage.llm_calls == len(server.requests)
    if fault != "prose":
        assert result.usage.failed_calls == failing and result.usage.tokens_estimated
    assert result.trace[-1] == "finalize_answer"


@pytest.mark.parametrize("topology", TOOL_TOPOLOGIES)
def test_runaway_lists_in_tool_arguments_are_bounded(monkeypatch, tiny_index, topology):
    world = TinyWorld()

    def runaway(request: Request) -> Reply:
        reply = world(request)
        for call in reply.tool_calls:
            for key, value in call["args"].items():
                if isinstance(value, list) and value:
                    call["args"][key] = value * 200  # one item repeated, as small models do
        return reply

    with serve(monkeypatch, runaway) as server:
        result = run(tiny_index, topology)
    assert result.answer == "Missolonghi", result.abstain_reason
    assert result.usage.llm_calls == len(server.requests)
    shown = [(e.passage_id, e.sentence) for e in result.evidence]
    assert len(shown) == len(set(shown)) <= 3


#: servers that cannot take tools: Ollama with a model without tool support (400), a llama.cpp
#: server started without --jinja (500, retried as a server error)
NO_TOOLS = {
    "ollama": (
        Reply(status=400, error="registry.ollama.ai/library/tiny does not support tools"),
        1,
    ),
    "llama.cpp": (Reply(status=500, error="tools param requires --jinja flag"), 2),
}


@pytest.mark.parametrize("server_kind", list(NO_TOOLS))
@pytest.mark.parametrize("topology", TOOL_TOPOLOGIES)
def test_a_server_refusing_tools_falls_back_to_the_json_path(
    monkeypatch, tiny_index, topology, server_kind
):
    reply, per_call = NO_TOOLS[server_kind]
    responder = Faults(TinyWorld(), reply, when=lambda r: r.kind == "tools")
    with serve(monkeypatch, responder) as server:
        result = run(tiny_index, topology)
    assert result.answer == "Missolonghi", result.abstain_reason
    notes = result.diagnostics["notes"]
    assert any("refused tool calling" in n and "JSON" in n for n in notes), notes
    # the model is remembered: later steps take the JSON path without asking again (parallel
    # suggesters may each have asked once before the first refusal came back)
    refused = [Request(b, 0).kind for b in server.requests].count("tools")
    agents = VARIANTS.get(topology, {}).get("agents", 1)
    assert per_call <= refused <= per_call * agents
    # the refused requests are charged with the others
    assert result.usage.llm_calls == len(server.requests)
    assert result.usage.failed_calls == refused


#: topology -> the LLM-call budget that stops it before its answer
TIGHT_BUDGETS = {
    "react": 1,
    "dual_agent": 2,
    "knowledge_aware": 2,
    "knowledge_aware:competitive": 2,
}


@pytest.mark.parametrize("topology", TOOL_TOPOLOGIES)
def test_the_budget_holds_when_the_graph_is_invoked_directly(monkeypatch, tiny_index, topology):
    """No `ask`, no callbacks: the run's guard comes from the runtime context, and is checked
    before every request, inside tool loops and parallel suggesters too."""
    calls = TIGHT_BUDGETS[topology]
    with serve(monkeypatch, TinyWorld()) as server:
        state = studio_state(tiny_index, topology, max_llm_calls=calls)
    assert state["abstained"], state.get("answer")
    assert f"LLM-call budget exhausted ({calls}/{calls} calls)" in state["abstain_reason"]
    assert len(server.requests) == calls and state["usage"].llm_calls == calls


def test_the_token_budget_holds_inside_a_suggester_round(monkeypatch, tiny_index):
    with serve(monkeypatch, TinyWorld()) as server:
        result = run(tiny_index, "knowledge_aware:competitive", max_tokens=1200)
    assert result.abstained and "token budget exhausted" in result.abstain_reason
    assert result.usage.llm_calls == len(server.requests) < 12  # the whole run takes 12
    assert result.diagnostics["budget_refusals"] >= 1


def test_direct_invocation_of_the_module_graph_is_guarded(monkeypatch, tiny_index):
    """The module-level graph Studio loads, invoked with a fresh context per run."""
    with serve(monkeypatch, TinyWorld()) as server:
        for _ in range(2):  # a second run with its own context has its own budget
            context = make_context(tiny_index, MODEL, max_llm_calls=1)
            out = get_workflow("react").invoke({"question": QUESTION}, context=context)
            assert out["abstained"] and "LLM-call budget" in out["abstain_reason"]
    assert len(server.requests) == 2


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("fault", list(FAULTS))
def test_cli_json_prints_one_object_for_every_fault(monkeypatch, capsys, tiny_index, fault):
    from graphseek.cli import main

    reply, cause, per_call = FAULTS[fault]
    monkeypatch.setenv("GRAPHSEEK_LLM_TIMEOUT", "0.5")
    with serve(monkeypatch, Faults(TinyWorld(), reply)):
        code = main(["ask", str(tiny_index.path), QUESTION, "--llm", "openai:tiny", "--json"])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 0 and len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["abstained"] is True and cause in obj["abstain_reason"]
    assert obj["usage"]["llm_calls"] == per_call
    assert "diagnostics" in obj and "llm_seconds" in obj["usage"]


def test_cli_json_prints_one_object_when_the_server_is_down(monkeypatch, capsys, tiny_index):
    from graphseek.cli import main

    with serve(monkeypatch, TinyWorld()) as server:
        url = server.base_url
    monkeypatch.setenv("OPENAI_BASE_URL", url)  # nothing listens there any more
    clear_model_cache()
    code = main(["ask", str(tiny_index.path), QUESTION, "--llm", "openai:tiny", "--json"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 0 and len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["abstained"] and "connection error" in obj["abstain_reason"]
    assert obj["usage"]["llm_calls"] == 2 and obj["usage"]["failed_calls"] == 2


@pytest.mark.parametrize("fault", list(FAULTS))
def test_cli_json_prints_one_object_when_a_suggesters_tool_call_fails(
    monkeypatch, capsys, tiny_index, fault
):
    from graphseek.cli import main

    reply, cause, per_call = FAULTS[fault]
    responder = Faults(TinyWorld(), reply, when=lambda r: r.kind == "tools")
    args = ["ask", str(tiny_index.path), QUESTION, "--llm", "openai:tiny", "--json",
            "-t", "knowledge_aware", "--mode", "competitive", "--agents", "2",
            "--llm-timeout", "0.5"]  # fmt: skip
    with serve(monkeypatch, responder):
        code = main(args)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 0 and len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["abstained"] is True and cause in obj["abstain_reason"]
    assert obj["usage"]["llm_calls"] == 1 + 2 * per_call  # Required, then both suggesters
    assert any(cause in e for e in obj["diagnostics"]["errors"])


def test_cli_json_names_the_budget(monkeypatch, capsys, tiny_index):
    from graphseek.cli import main

    args = ["ask", str(tiny_index.path), QUESTION, "--llm", "openai:tiny", "--json",
            "-t", "knowledge_aware", "--mode", "competitive", "--agents", "2",
            "--max-llm-calls", "2"]  # fmt: skip
    with serve(monkeypatch, TinyWorld()) as server:
        code = main(args)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 0 and len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["abstained"] and "LLM-call budget exhausted (2/2 calls)" in obj["abstain_reason"]
    assert obj["usage"]["llm_calls"] == len(server.requests) == 2
    assert obj["diagnostics"]["budget_refusals"] >= 1


@pytest.mark.parametrize("case", ["no_usage", "runaway"])
def test_cli_json_answers_through_replies_without_usage_or_with_runaway_lists(
    monkeypatch, capsys, tiny_index, case
):
    from graphseek.cli import main

    world = TinyWorld()

    def responder(request: Request) -> Reply:
        reply = world(request)
        if case == "no_usage":
            reply.usage = False
        elif reply.content and not request.tool_names:
            data = json.loads(reply.content)
            data = {k: v * 200 if isinstance(v, list) and v else v for k, v in data.items()}
            reply = Reply.json(data)
        return reply

    with serve(monkeypatch, responder) as server:
        code = main(["ask", str(tiny_index.path), QUESTION, "--llm", "openai:tiny", "--json"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert code == 0 and len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["answer"] == "Missolonghi" and obj["abstain_reason"] == ""
    assert obj["usage"]["llm_calls"] == len(server.requests)
    assert obj["usage"]["tokens_estimated"] is (case == "no_usage")


def test_the_cli_process_prints_one_json_object_for_a_stalled_server(tiny_index):
    """The real command (`python -m graphseek.cli`) in a child process: logs and warnings go
    to stderr, stdout is exactly one JSON object."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    responder = Faults(TinyWorld(), Reply(stall=3.0), when=lambda r: r.kind == "tools")
    with FakeOpenAIServer(responder) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test",
               "GRAPHSEEK_LLM_BACKOFF": "0", "GRAPHSEEK_LLM_MAX_RETRIES": "1",
               "HF_HUB_OFFLINE": "1"}  # fmt: skip
        env.pop("GRAPHSEEK_LLM_CACHE", None)
        done = subprocess.run(
            [sys.executable, "-m", "graphseek.cli", "ask", str(tiny_index.path), QUESTION,
             "--llm", "openai:tiny", "--json", "-t", "react", "--llm-timeout", "0.5"],
            cwd=root, env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, done.stdout
    obj = json.loads(lines[0])
    assert obj["abstained"] and "timeout" in obj["abstain_reason"]
    assert obj["usage"]["llm_calls"] == obj["usage"]["failed_calls"] == 2
    assert "diagnostics" in obj
