"""Every topology against a weak model (`tests/fake_openai.py`'s `WeakModel`, issue 25): a small
window the server enforces, tool calls written as text (several a reply, repeated, an unknown
tool among them) and a `finish` at once with a made-up passage id. Each run gives one result,
runs the text calls, never answers without the evidence stating the answer, and never runs the
same call twice.

Sockets are allowed for this module only, and only to 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import QUESTION, FakeOpenAIServer, WeakModel
from model_env import model_env

from graphseek.agents.text import answer_occurs
from graphseek.api import ask
from graphseek.llm.packing import CUT_MARK, TRIM_CHARS
from graphseek.llm.text_tool_calls import call_key

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

MODEL = "openai:weak"
TOPOLOGIES = [
    "naive",
    "higra_retriever",
    "dual_agent",
    "adaptive",
    "deep_search",
    "react",
    "knowledge_aware",
    "knowledge_aware:competitive",
]
#: the topologies whose agents call tools
TOOL_TOPOLOGIES = ["dual_agent", "react", "knowledge_aware", "knowledge_aware:competitive"]
#: the settings of a topology variant
VARIANTS: dict[str, dict[str, Any]] = {
    "knowledge_aware:competitive": {"agents": 2, "mode": "competitive"},
}
#: results that are not a run of the call (a repeat, a refusal, a finish verdict)
NOT_RUN = ("(already called", "Error:", "finish not accepted", "Answer accepted")


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from model_env(monkeypatch)


def run_weak(
    monkeypatch: pytest.MonkeyPatch, tiny_index: Any, topology: str, model: WeakModel
) -> tuple[Any, FakeOpenAIServer]:
    server = FakeOpenAIServer(model)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    name = topology.split(":", 1)[0]
    with server:
        result = ask(tiny_index, QUESTION, topology=name, llm=MODEL, **VARIANTS.get(topology, {}))
    return result, server


def conversations(server: FakeOpenAIServer) -> list[list[tuple[str, str, str]]]:
    """Per request: (call id, call key, result text) of every tool call with a result."""
    out = []
    for body in server.requests:
        calls: dict[str, str] = {}
        rows = []
        for message in body.get("messages") or []:
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                calls[call["id"]] = call_key(fn["name"], json.loads(fn["arguments"] or "{}"))
            if message.get("role") == "tool" and message.get("tool_call_id") in calls:
                cid = message["tool_call_id"]
                rows.append((cid, calls[cid], str(message.get("content") or "")))
        out.append(rows)
    return out


def assert_grounded(result: Any) -> None:
    if result.abstained:
        assert result.answer == "", result
        return
    assert result.answer, result
    assert any(answer_occurs(result.answer, f"{e.title}\n{e.text}") for e in result.evidence), (
        result.answer,
        [e.passage_id for e in result.evidence],
    )
    assert WeakModel.MADE_UP_ID not in {e.passage_id for e in result.evidence}


def assert_no_call_ran_twice(server: FakeOpenAIServer) -> None:
    for rows in conversations(server):
        ran = [key for _, key, text in rows if not text.startswith(NOT_RUN)]
        assert len(ran) == len(set(ran)), ran


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_every_topology_holds_up_on_a_weak_model(monkeypatch, tiny_index, topology):
    result, server = run_weak(monkeypatch, tiny_index, topology, WeakModel())
    json.dumps(result.model_dump(mode="json"))  # one JSON object
    assert_grounded(result)
    assert_no_call_ran_twice(server)
    assert server.responder.refused == []  # type: ignore[attr-defined]  # none over the window
    if topology in TOOL_TOPOLOGIES:
        # the server never sends structured tool calls: what the tools found, they found for
        # calls written as text; the calls over the cap were left out
        assert result.retrieved_ids, result.diagnostics
        assert result.diagnostics.get("dropped_calls"), result.diagnostics


@pytest.mark.parametrize("topology", ["react", "dual_agent"])
def test_a_made_up_finish_is_refused_then_grounded(monkeypatch, tiny_index, topology):
    result, server = run_weak(monkeypatch, tiny_index, topology, WeakModel())
    texts = [text for rows in conversations(server) for _, _, text in rows]
    # the first finish (nothing read yet) was refused with the reason, the model read it
    assert any(t.startswith("finish not accepted: no tool has returned") for t in texts)
    assert not result.abstained and result.answer == "Missolonghi"
    assert [e.passage_id for e in result.evidence][:1] == ["byron"]
    assert result.diagnostics.get("refused_finishes")


@pytest.mark.parametrize("topology", ["react", "dual_agent"])
def test_an_answer_no_passage_states_is_never_given(monkeypatch, tiny_index, topology):
    result, server = run_weak(monkeypatch, tiny_index, topology, WeakModel(answer="filters"))
    assert result.answer != "filters"
    assert_grounded(result)
    assert_no_call_ran_twice(server)
    texts = [text for rows in conversations(server) for _, _, text in rows]
    assert any("'filters' does not occur in any passage read so far" in t for t in texts)
    if topology == "react":  # a Librarian's conversation ends before a repeat (3 rounds)
        assert any(t.startswith("(already called; result repeated") for t in texts)
    # the calls written as text ran, and the model read their results
    assert any(cid.startswith("text") and not t.startswith(NOT_RUN)
               for rows in conversations(server) for cid, _, t in rows)  # fmt: skip
    # the unknown tool was answered with an error the model read
    assert any(t.startswith("Error: unknown tool 'web_search'") for t in texts)


def test_react_stops_after_two_rounds_without_a_new_passage(monkeypatch, tiny_index):
    result, _ = run_weak(monkeypatch, tiny_index, "react", WeakModel(answer="filters"))
    assert result.abstained and "found no new passage" in result.abstain_reason
    assert (
        result.diagnostics["no_progress_stop"]
        == "2 rounds of tool calls in a row found no new passage"
    )
    assert result.evidence  # the abstention shows what the run read


def test_the_server_reports_its_window(tiny_index):
    import urllib.request

    with FakeOpenAIServer(WeakModel(context_window=4096)) as server:
        root = server.base_url.removesuffix("/v1")
        models = json.load(urllib.request.urlopen(f"{server.base_url}/models"))
        props = json.load(urllib.request.urlopen(f"{root}/props"))
    assert models["data"][0]["max_model_len"] == 4096 and props["n_ctx"] == 4096


def test_knowledge_aware_stops_a_model_repeating_its_calls(monkeypatch, tiny_index):
    result, server = run_weak(monkeypatch, tiny_index, "knowledge_aware", WeakModel())
    assert result.diagnostics["repeated_calls"]  # answered with the earlier results
    assert result.diagnostics["no_progress_stop"].startswith("2 rounds of tool calls in a row")
    assert result.abstained and "(early stop)" in result.abstain_reason
    assert_no_call_ran_twice(server)


def test_the_bounded_tool_loop_runs_under_ainvoke_too(monkeypatch, tiny_index):
    import asyncio

    from graphseek.api import make_context
    from graphseek.graphs import build_workflow

    server = FakeOpenAIServer(WeakModel(answer="filters"))
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    graph = build_workflow("react").compile()
    with server:
        out = asyncio.run(
            graph.ainvoke(
                {"question": QUESTION},
                context=make_context(tiny_index, MODEL),
                config={"recursion_limit": 100},
            )
        )
    assert out["abstained"] and out["answer"] == ""
    assert out["diagnostics"]["repeated_calls"] and out["diagnostics"]["dropped_calls"]
    assert_no_call_ran_twice(server)


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_a_window_too_small_for_the_prompts_ends_in_one_result(monkeypatch, tiny_index, topology):
    model = WeakModel(context_window=3000)
    result, server = run_weak(monkeypatch, tiny_index, topology, model)
    json.dumps(result.model_dump(mode="json"))
    assert_grounded(result)
    assert model.refused == []  # the client learnt the window and sent nothing over it
    assert any(p.endswith(("/models", "/props")) for p in server.probes)


@pytest.mark.parametrize("topology", ["react", "dual_agent"])
def test_pythonic_calls_drive_the_tool_loop(monkeypatch, tiny_index, topology):
    """Llama 3.x writes ``<|python_tag|>[search(query="..."), ...]``: the same loop runs them."""
    result, server = run_weak(monkeypatch, tiny_index, topology, WeakModel(form="pythonic"))
    sent = [m for body in server.requests for m in body.get("messages") or []]
    # the replies went back to the model as tool calls, their text without the calls
    replies = [m for m in sent if m.get("role") == "assistant"]
    assert replies and not any("<|python_tag|>" in (m.get("content") or "") for m in replies)
    assert all(c["id"].startswith("text") for m in replies for c in m.get("tool_calls") or [])
    texts = [text for rows in conversations(server) for _, _, text in rows]
    assert any(t.startswith("finish not accepted: no tool has returned") for t in texts)
    # the second reply's calls ran (three of five, the unknown tool among them, answered with
    # its error) and the finish after them was accepted on the passage a search returned
    assert any("over 3 calls a reply" in d for d in result.diagnostics["dropped_calls"])
    assert not result.abstained and result.answer == "Missolonghi"
    assert [e.passage_id for e in result.evidence][:1] == ["byron"]
    assert_no_call_ran_twice(server)


def test_pythonic_calls_with_an_unknown_tool_get_its_error(monkeypatch, tiny_index):
    result, server = run_weak(
        monkeypatch, tiny_index, "react", WeakModel(answer="filters", form="pythonic")
    )
    texts = [text for rows in conversations(server) for _, _, text in rows]
    assert any(t.startswith("Error: unknown tool 'web_search'") for t in texts)
    assert any(t.startswith("(already called; result repeated") for t in texts)
    assert result.abstained and result.answer == ""
    assert_no_call_ran_twice(server)


def test_a_small_window_reserves_a_reply_sized_to_it() -> None:
    from graphseek.llm.context_window import MIN_REPLY_TOKENS, reply_reserve

    assert reply_reserve(1024, 4096) == 512  # an eighth of a small window
    assert reply_reserve(1024, 2048) == MIN_REPLY_TOKENS  # never below what a reply needs
    assert reply_reserve(1024, 16384) == 1024  # a large window keeps the model's limit
    assert reply_reserve(200, 4096) == 200  # nor above it


@pytest.mark.parametrize("topology", ["react", "dual_agent", "adaptive", "knowledge_aware"])
def test_a_4096_token_window_takes_every_request_with_its_reply_limit(
    monkeypatch, tiny_index, topology
):
    result, server = run_weak(monkeypatch, tiny_index, topology, WeakModel(context_window=4096))
    assert server.responder.refused == []  # type: ignore[attr-defined]
    assert "context overflow" not in result.abstain_reason
    # every request asks for no longer a reply than the window reserves beside its prompt
    limits = {b.get("max_tokens") for b in server.requests}
    assert limits == {512}, limits
    if topology in ("react", "dual_agent"):  # tool results reach the model
        assert any(m.get("role") == "tool" for b in server.requests for m in b["messages"])
    # the tools are offered compact: one sentence each, no argument descriptions
    offered = [t["function"] for b in server.requests for t in b.get("tools") or []]
    assert offered or topology == "adaptive"  # adaptive's roles call no tools
    assert not any(_keys(t.get("parameters", {})) & {"description", "title"} for t in offered)
    assert all(t["description"].count(". ") == 0 for t in offered)


def _keys(schema: Any) -> set[str]:
    """Every key of a JSON schema, at every depth."""
    if isinstance(schema, dict):
        return set(schema) | {k for v in schema.values() for k in _keys(v)}
    if isinstance(schema, list):
        return {k for v in schema for k in _keys(v)}
    return set()


def test_tool_definitions_are_compact_in_a_small_window_only() -> None:
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from graphseek.agents.tool_calling import COMPACT_TOOLS_WINDOW, tool_definitions
    from graphseek.llm.tokens import count_tools
    from graphseek.tools.lc_tools import react_tools

    tools = react_tools()
    assert tool_definitions(tools, None) == tools  # no window known: the tools themselves
    assert tool_definitions(tools, COMPACT_TOOLS_WINDOW * 2) == tools
    full = [convert_to_openai_tool(t) for t in tools]
    small = tool_definitions(tools, 4096)
    # the same tools, names and arguments (with their bounds), about a third fewer tokens
    assert [t["function"]["name"] for t in small] == [t.name for t in tools]
    for f, c in zip(full, small, strict=True):
        f_args = f["function"]["parameters"]["properties"]
        c_args = c["function"]["parameters"]["properties"]
        assert list(c_args) == list(f_args)
        assert c["function"]["parameters"].get("required") == f["function"]["parameters"].get(
            "required"
        )
        assert " ".join(f["function"]["description"].split()).startswith(
            c["function"]["description"]
        )
    finish = small[-1]["function"]["parameters"]["properties"]
    assert finish["answer"]["maxLength"] and finish["passage_ids"]["maxItems"]
    assert count_tools(small) < 0.7 * count_tools(full)


@pytest.fixture(scope="module")
def long_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Any]) -> Any:
    """The tiny corpus with every passage lengthened to about 2,000 characters, so that each
    search's result fills the tool budget (4,000 characters) as real documents do."""
    from graphseek.knowledge.index import Index

    filler = (
        " The archive keeps letters, notes and drafts from these years in bound volumes."
        " Each volume lists its contents by date and by correspondent, with an index of places."
    )
    passages = [p.model_copy(update={"text": p.text + filler * 11}) for p in tiny_passages]
    path = tmp_path_factory.mktemp("long-index") / "index"
    return Index.build(passages, path, show_progress=False)


def _tool_rounds(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m.get("role") == "assistant" and m.get("tool_calls"))


@pytest.mark.parametrize("topology", ["react", "dual_agent", "knowledge_aware"])
def test_a_4096_token_window_holds_three_rounds_of_full_tool_results(
    monkeypatch, long_index, topology
):
    """A patient small model searches three times for each question it is given, each time
    finding passages it had not seen, before it finishes; the newest result fills most of the
    4,000-character tool budget. Every request fits the server's 4,096-token window and the run
    ends grounded: `react`'s fourth request carries all three rounds (the older ones cut to fit,
    the newest whole), each `dual_agent` Librarian searches three times, then drafts from all it
    found. `knowledge_aware`'s planner gets a fresh prompt each turn (what is known so far, not
    the tool results), and stops searching once its knowledge suffices."""
    model = WeakModel(context_window=4096, rounds=3)
    result, server = run_weak(monkeypatch, long_index, topology, model)
    assert model.refused == []
    assert "context overflow" not in result.abstain_reason
    assert not result.abstained, result.abstain_reason
    assert_grounded(result)
    tool_requests = [b for b in server.requests if b.get("tools")]
    assert tool_requests
    if topology == "react":
        last = tool_requests[-1]
        assert _tool_rounds(last) == 3
        results = [str(m.get("content")) for m in last["messages"] if m.get("role") == "tool"]
        assert len(results[-1]) > 2000  # the newest round whole ...
        assert all(
            r.endswith(CUT_MARK) and len(r) <= TRIM_CHARS for r in results[:-1]
        )  # ... older cut
    if topology == "dual_agent":  # every Librarian searched three times
        assert len(model.asked) >= 2 and min(model.asked.values()) >= 3
