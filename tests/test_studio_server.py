"""The LangGraph server as Studio uses it: `langgraph dev --no-browser` on 127.0.0.1, driven by the
official `langgraph_sdk` client over the tiny index.

Marked `studio_server` (it starts a server process that loads the models: a minute or two), so the
default `pytest -q` leaves it out; `.ci/run` runs it as its own step:

    python -m pytest -q -m studio_server tests/test_studio_server.py
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import langgraph_sdk
import pytest

from graphseek.graphs import topology_names

pytestmark = [
    pytest.mark.studio_server,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
]

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Where did Ada Lovelace's father die?"
START_TIMEOUT_S = 300


@dataclass
class Server:
    url: str
    log: Path
    index_name: str
    client: Any

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1)
    pytest.fail(f"langgraph dev did not start in {START_TIMEOUT_S}s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="module")
def server(tiny_index: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`langgraph dev` from the repository root, with `$GRAPHSEEK_INDEX_DIR` set to the directory
    holding the tiny index (so the context names it by a relative path, as a user would)."""
    index_dir = Path(tiny_index.path)
    log = tmp_path_factory.mktemp("langgraph-dev") / "server.log"
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        # the checkout under test, not another installed copy of graphseek
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "GRAPHSEEK_INDEX_DIR": str(index_dir.parent),
        "GRAPHSEEK_LLM": "offline",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
    }
    command = [
        sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
        "--host", "127.0.0.1", "--port", str(port), "--config", str(ROOT / "langgraph.json"),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_until_up(url, proc, log)
        client = langgraph_sdk.get_sync_client(url=url, timeout=300)
        yield Server(url=url, log=log, index_name=index_dir.name, client=client)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


WIKI = {"profile": "wikipedia"}


def _run(server: Server, graph: str, context: dict[str, Any]) -> tuple[str, list[Any]]:
    """Stream one run on a new thread with updates + messages; the thread id and the events."""
    thread = server.client.threads.create()
    events = list(
        server.client.runs.stream(
            thread["thread_id"],
            graph,
            input={"question": QUESTION},
            context=context,
            stream_mode=["updates", "messages"],
        )
    )
    return thread["thread_id"], events


def test_every_graph_has_a_question_form_and_a_described_context(server: Server) -> None:
    assistants = server.client.assistants.search(limit=50)
    by_graph = {a["graph_id"]: a for a in assistants}
    assert set(topology_names()) <= set(by_graph)
    for name in topology_names():
        schemas = server.client.assistants.get_schemas(by_graph[name]["assistant_id"])
        assert schemas["input_schema"] is not None, name
        assert "question" in schemas["input_schema"]["properties"], name
        assert (
            schemas["output_schema"] is not None
            and "answer" in (schemas["output_schema"]["properties"])
        ), name
        context = schemas["context_schema"]["properties"]
        assert {
            "index_path",
            "llm",
            "retriever",
            "top_k",
            "max_llm_calls",
            "agents",
            "mode",
        } <= set(context)
        assert "index" not in context and "extra" not in context
        assert all(p.get("description") for p in context.values()), name


def test_dual_agent_run_streams_progress_and_stores_its_thread(server: Server) -> None:
    # the tiny corpus is encyclopedia articles: its kinship question needs the wikipedia profile
    thread_id, events = _run(server, "dual_agent", {"index_path": server.index_name, **WIKI})
    kinds = [e.event for e in events]
    assert "error" not in kinds, [e.data for e in events if e.event == "error"]
    nodes = [node for e in events if e.event == "updates" for node in e.data]
    assert nodes[:3] == ["clarify_question", "decompose_question", "ask_librarian"]
    assert nodes[-1] == "finalize_answer"
    state = server.client.threads.get_state(thread_id)
    assert state["values"]["answer"] == "Missolonghi" and not state["values"]["abstained"]
    assert "byron" in [e["passage_id"] for e in state["values"]["evidence"]]
    # each Librarian's tool call (the configured retrieval) and its result, as Studio shows
    messages = state["values"]["messages"]
    calls = [c["name"] for m in messages if m["type"] == "ai" for c in m.get("tool_calls", [])]
    assert calls and set(calls) == {"context_search"}
    assert sum(m["type"] == "tool" for m in messages) == len(calls)
    history = server.client.threads.get_history(thread_id, limit=100)
    assert len(history) >= len(nodes)
    assert history[-1]["next"] == ["__start__"] and history[0]["next"] == []


def test_knowledge_aware_competitive_run_with_two_agents(server: Server) -> None:
    context = {"index_path": server.index_name, "agents": 2, "mode": "competitive", **WIKI}
    thread_id, events = _run(server, "knowledge_aware", context)
    assert "error" not in [e.event for e in events], [e.data for e in events]
    nodes = [node for e in events if e.event == "updates" for node in e.data]
    assert nodes.count("suggest") >= 2 and nodes[-1] == "finalize_answer"
    values = server.client.threads.get_state(thread_id)["values"]
    assert values["answer"] == "Missolonghi" and not values["abstained"]
    assert values["diagnostics"]["suggester_winners"]
    assert len(server.client.threads.get_history(thread_id, limit=200)) >= len(nodes)
    # the suggesters' tool calls and their results are in the state Studio shows
    calls = [c for m in values["messages"] if m["type"] == "ai" for c in m.get("tool_calls", [])]
    results = [m for m in values["messages"] if m["type"] == "tool"]
    assert calls and {c["name"] for c in calls} == {"search_gap"}
    assert len(results) == len(calls) == nodes.count("suggest")


def test_a_bad_index_path_ends_the_run_with_a_readable_error(server: Server) -> None:
    thread_id, events = _run(server, "dual_agent", {"index_path": "no-such-index"})
    errors = [e.data for e in events if e.event == "error"]
    assert len(errors) == 1, [e.event for e in events]
    assert errors[0]["error"] == "ContextError"
    message = errors[0]["message"]
    assert message.startswith("index_path 'no-such-index': no index directory of that name")
    assert server.client.threads.get(thread_id)["status"] == "error"


def test_a_served_index_path_out_of_the_root_is_refused(server: Server) -> None:
    """The server serves `graphseek.graphs.served`: an index outside $GRAPHSEEK_INDEX_DIR, named
    by its absolute path or by '..', is refused in one line that names no path of the server."""
    from graphseek.state.validation import PATH_REFUSED

    for index_path in ["/etc", str(ROOT), f"../{Path(server.log).parent.name}/no-such"]:
        _, events = _run(server, "naive", {"index_path": index_path})
        errors = [e.data for e in events if e.event == "error"]
        assert errors == [{"error": "ContextError", "message": PATH_REFUSED}], index_path


def test_a_thread_steps_through_the_seeker_with_interrupts(server: Server) -> None:
    """What Studio does with an interrupt before `decide_action`: the run pauses there, and each
    continuation of the thread (input None) runs to the next Seeker decision."""
    thread_id = server.client.threads.create()["thread_id"]
    context = {"index_path": server.index_name, **WIKI}
    server.client.runs.wait(
        thread_id,
        "dual_agent",
        input={"question": QUESTION},
        context=context,
        interrupt_before=["decide_action"],
    )
    state = server.client.threads.get_state(thread_id)
    assert state["next"] == ["decide_action"]
    assert state["values"]["drafts"] and "answer" not in state["values"]
    for _ in range(10):
        server.client.runs.wait(
            thread_id, "dual_agent", input=None, context=context, interrupt_before=["decide_action"]
        )
        state = server.client.threads.get_state(thread_id)
        if not state["next"]:
            break
    assert state["values"]["answer"] == "Missolonghi"
    assert "Application started up" in server.log_text()


# the checks every entry makes (graphseek.state.validation): a bad request through the server ends
# the run with one error event naming the field, before any node does work
BAD_RUNS: list[tuple[Any, dict[str, Any], str, str]] = [
    ({"question": ""}, {}, "InvalidRequestError", "The question is empty"),
    ({}, {}, "InvalidRequestError", 'The input has no "question"'),
    ({"question": "Who? " * 12_000}, {}, "InvalidRequestError", "the limit is 2,000"),
    ({"question": QUESTION}, {"retriever": "nope"}, "InvalidRequestError", "retriever 'nope'"),
    ({"question": QUESTION}, {"retriever": "hybird"}, "InvalidRequestError", "'hybrid'?"),
    ({"question": QUESTION}, {"profile": "wiki"}, "ContextError", "did you mean 'wikipedia'?"),
    ({"question": QUESTION}, {"mode": "swarm"}, "ContextError", "knowledge_aware mode 'swarm'"),
    ({"question": QUESTION}, {"top_k": 0}, "ContextError", "top_k must be an integer >= 1"),
    ({"question": QUESTION}, {"max_turns": 0}, "ContextError", "max_turns must be an integer"),
]


@pytest.mark.parametrize("graph", ["naive", "dual_agent", "knowledge_aware"])
def test_bad_requests_end_the_run_with_an_error_naming_the_field(
    server: Server, graph: str
) -> None:
    for inp, context, error, message in BAD_RUNS:
        thread_id = server.client.threads.create()["thread_id"]
        events = list(
            server.client.runs.stream(
                thread_id,
                graph,
                input=inp,
                context={"index_path": server.index_name, **context},
                stream_mode=["updates"],
            )
        )
        errors = [e.data for e in events if e.event == "error"]
        assert len(errors) == 1, (inp, context, [e.event for e in events])
        assert errors[0]["error"] == error and message in errors[0]["message"], errors[0]
        assert "\n" not in errors[0]["message"]
        assert not [e for e in events if e.event == "updates"]  # no node's work was streamed
        assert server.client.threads.get(thread_id)["status"] == "error"
