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

from graphseek.api import ask
from graphseek.llm import clear_model_cache

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

MODEL = "openai:tiny"
ALL_TOPOLOGIES = [
    "naive",
    "higra_retriever",
    "dual_agent",
    "adaptive",
    "deep_search",
    "react",
    "knowledge_aware",
]
#: the topologies run through every fault
FAULT_TOPOLOGIES = ["naive", "dual_agent", "react", "knowledge_aware"]


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No backoff and one transport retry, so faults are quick; no response cache; fresh
    clients (the model cache is keyed by the base URL, which changes per server)."""
    for name in ("GRAPHSEEK_LLM", "GRAPHSEEK_LLM_CACHE", "OPENAI_API_KEY", "GRAPHSEEK_BASE_URL",
                 "OPENAI_API_BASE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "1")
    clear_model_cache()
    yield
    clear_model_cache()


def serve(monkeypatch: pytest.MonkeyPatch, responder: Any) -> FakeOpenAIServer:
    server = FakeOpenAIServer(responder)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


def run(tiny_index: Any, topology: str, **settings: Any) -> Any:
    return ask(tiny_index, QUESTION, topology=topology, llm=MODEL, **settings)


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
    "knowledge_aware": [
        "initialize_caches",
        "plan_query",
        "retrieve_documents",
        "update_knowledge",
        "filter_context",
        "plan_query",
        "retrieve_documents",
        "update_knowledge",
        "filter_context",
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
    assert result.usage.llm_seconds > 0 and result.usage.seconds >= result.usage.llm_seconds
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
        "dual_agent": "Decomposition",
        "react": "tools",
        "knowledge_aware": "InitialRequired",
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
