"""The context budget: each model's window (from its server, a setting, or its family), token
counts, packing prompts to fit, and no request sent that the budget says will not fit.

Window discovery runs against a small HTTP server on 127.0.0.1 started by the tests (its own
handler, below: vLLM, llama.cpp and Ollama shapes); sockets are allowed for this module only,
and only to 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from graphseek.agents.formatting import format_passages, with_passages
from graphseek.agents.librarian import LLMLibrarian
from graphseek.knowledge.passages import Hit, Passage
from graphseek.llm import ScriptedChatModel, clear_model_cache, invoke_message, invoke_structured
from graphseek.llm.context_window import (
    ContextBudgetError,
    default_window,
    fit_request,
    forget_windows,
    reply_reserve,
    server_window,
    set_context_window,
    window_for,
)
from graphseek.llm.factory import make_chat_model, model_for_context
from graphseek.llm.packing import DROPPED_PROMPT, cut_text, pack_messages
from graphseek.llm.tokens import count_message, count_messages, estimate_tokens, openai_encoding
from graphseek.state.context import Context

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

PROSE = (
    "The xz format is a container for compressed streams. Its primary filter is LZMA2, which "
    "compresses well. Other filters can be chained before it. The format was designed in 2009."
)
TOOL_JSON = json.dumps(
    {"name": "search_entities", "arguments": {"query": "xz format primary filter", "k": 10}}
)


# -- a server that says (or does not say) its window -------------------------------------------


class WindowServer:
    """GET/POST routes -> JSON bodies; every request's path is recorded. A chat completion is
    answered with a fixed reply."""

    def __init__(self, routes: dict[str, Any]) -> None:
        self.routes = routes
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                owner.paths.append(f"{method} {self.path}")
                body = owner.routes.get(f"{method} {self.path}")
                status = 200 if body is not None else 404
                data = json.dumps(body if body is not None else {"error": "not found"}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._answer("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._answer("POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def __enter__(self) -> WindowServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "tiny",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Paris"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}

VLLM = {"GET /v1/models": {"data": [{"id": "tiny", "max_model_len": 4096}]}}
LLAMA_CPP = {
    "GET /v1/models": {"data": [{"id": "tiny.gguf", "meta": {"n_ctx_train": 32768}}]},
    "GET /props": {"default_generation_settings": {"n_ctx": 16384}},
}
OLLAMA = {
    "GET /v1/models": {"data": [{"id": "tiny"}, {"id": "other"}]},
    "GET /api/version": {"version": "0.5.7"},
    "POST /api/show": {"model_info": {"qwen2.context_length": 32768}, "parameters": "num_ctx 8192"},
}


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    forget_windows()
    clear_model_cache()
    yield
    forget_windows()
    clear_model_cache()


@pytest.mark.parametrize(
    ("routes", "model", "expected"),
    [
        (VLLM, "tiny", 4096),
        (LLAMA_CPP, "tiny", 16384),  # /props's n_ctx, not the model's training window
        (OLLAMA, "tiny", 8192),  # num_ctx set for the model wins over its context_length
        ({**OLLAMA, "POST /api/show": {"model_info": {"llama.context_length": 131072}}}, "tiny",
         131072),
        ({}, "tiny", None),  # no endpoint says anything: not an error
    ],
)  # fmt: skip
def test_server_window_from_each_server_kind(
    routes: dict[str, Any], model: str, expected: int | None
) -> None:
    with WindowServer(routes) as server:
        assert server_window(server.base_url, model) == expected


def test_server_window_is_probed_once_per_base_url_and_model() -> None:
    with WindowServer(LLAMA_CPP) as server:
        assert server_window(server.base_url, "tiny") == 16384
        assert server_window(server.base_url, "tiny") == 16384
        assert server.paths == ["GET /v1/models", "GET /props"]
        server_window(server.base_url, "other")
        assert len(server.paths) == 4


def test_unreachable_server_says_nothing() -> None:
    with WindowServer({}) as server:
        base = server.base_url
    assert server_window(base, "tiny", timeout=0.5) is None  # closed: connection refused


def test_window_order_server_setting_defaults() -> None:
    with WindowServer(VLLM) as server:
        model = make_chat_model("openai:tiny", base_url=server.base_url, cache=False)
        window = window_for(model)
        assert window is not None
        assert (window.tokens, window.source) == (4096, "server")
        # the factory's reply limit is 1024; a 4,096-token window reserves an eighth of itself
        assert window.reply == 512 and window.prompt == 3584
        set_context_window(model, 2048)  # smaller than the server's: it holds
        assert window_for(model).tokens == 2048  # type: ignore[union-attr]
        set_context_window(model, 10_000)  # larger: the server's limit holds
        assert window_for(model).tokens == 4096  # type: ignore[union-attr]
    with WindowServer({}) as server:  # a server that does not say: the setting, else defaults
        model = make_chat_model("openai:gpt-4o-mini", base_url=server.base_url, cache=False)
        assert window_for(model).tokens == 128_000  # type: ignore[union-attr]
        unknown = make_chat_model("openai:my-model", base_url=server.base_url, cache=False)
        assert (window_for(unknown).tokens, window_for(unknown).source) == (8192, "default")  # type: ignore[union-attr]
        set_context_window(unknown, 3000)
        assert (window_for(unknown).tokens, window_for(unknown).source) == (3000, "setting")  # type: ignore[union-attr]
    scripted = ScriptedChatModel(responses=["x"])
    assert window_for(scripted) is None  # test doubles: no window unless set
    set_context_window(scripted, 500)
    assert window_for(scripted.bind_tools([])).tokens == 500  # type: ignore[union-attr]


def test_default_windows_by_family() -> None:
    assert default_window("gpt-4o-mini") == 128_000
    assert default_window("gpt-4") == 8_192
    assert default_window("Qwen/Qwen2.5-Coder-0.5B-Instruct") == 32_768
    assert default_window("llama3.1:8b") == 131_072
    assert default_window("o3-mini") == 200_000
    assert default_window("something-else") is None


def test_context_setting_reaches_the_model_per_role() -> None:
    scripted = ScriptedChatModel(responses=[])
    context = Context(llm=scripted, context_window={"seeker": 900, "default": 2000})
    assert window_for(model_for_context(context, "seeker")).tokens == 900  # type: ignore[union-attr]
    assert window_for(model_for_context(context, "librarian")).tokens == 2000  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="context_window must be tokens >= 0"):
        Context(context_window=-5)


# -- counting -------------------------------------------------------------------------------------


def test_estimate_is_conservative_for_json_and_not_wasteful_for_prose() -> None:
    # the real counts, measured with Qwen2.5's tokenizer (its GGUF vocabulary): PROSE 43 tokens
    # (177 characters), TOOL_JSON 26 (88 characters: characters / 4 gives 22, too few)
    assert 26 * 1.1 <= estimate_tokens(TOOL_JSON) <= 26 * 1.6
    assert 43 * 1.1 <= estimate_tokens(PROSE) <= 43 * 1.6
    assert estimate_tokens("1234567890") >= 10  # digits are tokens of their own
    assert estimate_tokens("") == 0
    message = HumanMessage(PROSE)
    assert count_message(message) > estimate_tokens(PROSE)  # the role markers
    call = AIMessage("", tool_calls=[{"name": "search", "args": {"query": "xz"}, "id": "1"}])
    assert count_message(call) > count_message(AIMessage(""))
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    assert count_messages([message], tools=tools) > count_messages([message])


def test_tiktoken_is_not_used_without_its_files_on_disk(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import tiktoken

    from graphseek.llm import tokens

    def no_download(name: str) -> Any:
        raise AssertionError(f"tiktoken would download {name}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken, "get_encoding", no_download)
    monkeypatch.setattr(tokens, "_ENCODINGS", {})
    assert openai_encoding("gpt-4o") is None
    assert openai_encoding("qwen2.5") is None  # not an OpenAI name at all


# -- packing --------------------------------------------------------------------------------------


def _hit(pid: str, text: str, score: float = 1.0) -> Hit:
    return Hit(passage=Passage(id=pid, title=pid.title(), text=text), score=score, rank=1)


def test_cut_text_at_sentence_boundaries() -> None:
    cut = cut_text(PROSE, 110)
    assert len(cut) <= 110 and cut.endswith("LZMA2, which compresses well. [...]")
    assert cut_text(PROSE, 1000) == PROSE
    assert cut_text("oneverylongwordwithoutanyspace" * 5, 40).endswith("[...]")


def test_format_passages_packs_best_first_and_cuts_at_a_sentence() -> None:
    hits = [_hit("a", PROSE), _hit("b", PROSE.replace("xz", "zip")), _hit("c", "Unused.")]
    budget = estimate_tokens(f"[a] A: {PROSE}") + 30
    text = format_passages(hits, max_chars=10_000, max_tokens=budget)
    assert estimate_tokens(text) <= budget
    assert text.startswith(f"[a] A: {PROSE}\n\n[b] B: The zip format")
    assert re.search(r"\. \[\.\.\.\]$", text)  # b cut after a whole sentence
    assert "[c]" not in text
    assert format_passages(hits, max_chars=10_000, max_tokens=3) == "(no passages found)"


def test_with_passages_keeps_the_question_and_fits_the_window() -> None:
    model = ScriptedChatModel(responses=[])
    set_context_window(model, 1024 + 320 + 260)  # reply + reserve + a little room
    hits = [_hit(f"p{i}", PROSE) for i in range(20)]
    template = "Question: {question}\n\nPassages:\n{passages}"
    user = with_passages(model, "Answer.", template, hits, 50_000, question="What is LZMA2?")
    assert user.startswith("Question: What is LZMA2?\n\nPassages:\n[p0] P0:")
    assert 0 < user.count("[p") < 20
    messages = [SystemMessage("Answer."), HumanMessage(user)]
    assert fit_request(model, messages) == messages  # fits as it is: nothing changed


def test_format_history_leaves_out_whole_old_blocks() -> None:
    from graphseek.agents.formatting import format_history
    from graphseek.state.models import Draft

    drafts = [Draft(question=f"Question {i}?", answer=f"answer {i}") for i in range(1, 40)]
    text = format_history(drafts, max_chars=400)
    assert len(text) <= 400
    assert text.startswith("(") and "earlier question(s) left out)" in text.splitlines()[0]
    assert text.endswith("A39: answer 39\nEvidence: ")
    shown = [int(n) for n in re.findall(r"^Q(\d+):", text, re.M)]
    assert shown == list(range(40 - len(shown), 40)) and len(shown) > 3  # the newest, whole
    assert format_history(drafts[:2], max_chars=400).startswith("Q1: Question 1?")


def _loop(rounds: int, result: str) -> list[Any]:
    messages: list[Any] = [SystemMessage("You search."), HumanMessage("Question: Who?")]
    for i in range(rounds):
        call = {"name": "search", "args": {"query": f"q{i}"}, "id": f"c{i}"}
        messages += [AIMessage("", tool_calls=[call]), ToolMessage(result, tool_call_id=f"c{i}")]
    return [*messages, HumanMessage("Step 9 of 9: call a tool.")]


def test_pack_messages_trims_results_then_drops_old_rounds_keeping_head_and_tail() -> None:
    messages = _loop(6, PROSE * 8)
    total = sum(count_message(m) for m in messages)
    assert pack_messages(messages, total, count_message) == messages  # fits: unchanged
    room = total // 3
    packed = pack_messages(messages, room, count_message)
    assert packed is not None
    assert sum(count_message(m) for m in packed) <= room
    assert packed[:2] == messages[:2] and packed[-1] == messages[-1]
    assert packed[-2].content == messages[-2].content  # the newest result is whole
    tool_ids = [m.tool_call_id for m in packed if isinstance(m, ToolMessage)]
    calls = [c["id"] for m in packed if isinstance(m, AIMessage) for c in m.tool_calls]
    assert tool_ids == calls  # every kept call keeps its result, in order
    dropped = [m for m in packed if isinstance(m, HumanMessage) and DROPPED_PROMPT in m.text]
    assert len(dropped) == 1
    first_kept = int(calls[0][1:])
    assert first_kept > 0 and f'search({{"query": "q{first_kept - 1}"}})' in dropped[0].text
    # nothing but the system text and the question over the room: cannot be packed
    assert pack_messages(messages[:2], 5, count_message) is None


# -- never sent over budget ------------------------------------------------------------------------


def test_over_budget_request_is_refused_before_sending_and_charged() -> None:
    model = ScriptedChatModel(responses=["never"])
    set_context_window(model, 1100)  # 384 of it for the reply (`reply_reserve`)
    with pytest.raises(ContextBudgetError, match=r"context overflow \(request not sent\)") as err:
        invoke_message(model, [("system", "Answer."), ("human", PROSE * 40)])
    assert model.calls == []
    assert err.value.cause == "context overflow" and err.value.kind == "request"
    assert (err.value.usage.llm_calls, err.value.usage.failed_calls) == (1, 1)
    assert err.value.usage.prompt_tokens == 0  # nothing was sent
    with pytest.raises(ContextBudgetError):
        invoke_structured(model, Passage, [("system", "Answer."), ("human", PROSE * 40)])
    assert model.calls == []


def test_over_long_tool_loop_is_packed_and_sent() -> None:
    model = ScriptedChatModel(responses=[AIMessage("done")])
    messages = _loop(6, PROSE * 8)
    window = sum(count_message(m) for m in messages) // 2 + 1024
    set_context_window(model, window)
    room = window - reply_reserve(1024, window)
    reply, _ = invoke_message(model, messages)
    assert reply.text == "done"
    sent = model.calls[0]
    assert sum(count_message(m) for m in sent) <= room
    assert sent[:2] == messages[:2] and sent[-1] == messages[-1]


def test_nothing_over_the_servers_window_reaches_the_server() -> None:
    routes = {**VLLM, "POST /v1/chat/completions": CHAT}
    routes["GET /v1/models"] = {"data": [{"id": "tiny", "max_model_len": 1400}]}
    with WindowServer(routes) as server:
        model = make_chat_model("openai:tiny", base_url=server.base_url, cache=False)
        reply, _ = invoke_message(model, [("human", "Capital of France?")])
        assert reply.text == "Paris"
        with pytest.raises(ContextBudgetError, match="1400-token window of model 'tiny'"):
            invoke_message(model, [("human", PROSE * 30)])
        posts = [p for p in server.paths if p.startswith("POST /v1/chat")]
        assert posts == ["POST /v1/chat/completions"]  # only the request that fits


def test_librarian_prompt_fits_a_small_window() -> None:
    reply = {"reasoning": "", "answer": "LZMA2", "passage_ids": ["p0"], "confidence": 0.9}
    model = ScriptedChatModel(responses=[reply])
    set_context_window(model, 1024 + 320 + 700)
    hits = [_hit(f"p{i}", PROSE) for i in range(30)]
    step = LLMLibrarian(model, max_retries=0, max_chars=50_000).draft("What filter?", hits)
    assert step.value.answer == "LZMA2"
    (sent,) = model.calls
    assert "What filter?" in sent[-1].text and "[p0]" in sent[-1].text
    assert "[p29]" not in sent[-1].text
    assert count_messages(sent) <= 2048 - 1024


# -- the CLI flag ----------------------------------------------------------------------------------


def test_llm_context_flag_on_ask_and_eval() -> None:
    import argparse

    from graphseek.cli import _ask_kwargs, build_parser
    from graphseek.evaluation.cli import add_eval_arguments

    args = build_parser().parse_args(["ask", "idx", "Who?", "--llm-context", "16384"])
    assert _ask_kwargs(args)["context_window"] == 16384
    assert _ask_kwargs(build_parser().parse_args(["ask", "idx", "Who?"]))["context_window"] is None
    parsed = add_eval_arguments(argparse.ArgumentParser()).parse_args(["--llm-context", "4096"])
    assert parsed.llm_context == 4096


# -- whole workflows through a real client and a small window ---------------------------------------


def _body_tokens(body: dict[str, Any]) -> int:
    """The budget's count of a request as the server received it (messages and tools)."""
    from graphseek.llm.tokens import CALL_OVERHEAD, MESSAGE_OVERHEAD, count_tools

    total = count_tools(body.get("tools") or [])
    for m in body.get("messages") or []:
        total += MESSAGE_OVERHEAD + estimate_tokens(str(m.get("content") or ""))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            args = json.dumps(json.loads(fn.get("arguments") or "{}"), ensure_ascii=False)
            total += CALL_OVERHEAD + estimate_tokens(f"{fn.get('name', '')} {args}")
    return total


@pytest.mark.parametrize("topology", ["react", "dual_agent", "knowledge_aware"])
@pytest.mark.parametrize("window", [2048, 4096, 6144])
def test_workflows_in_a_small_window_send_nothing_over_it(
    tiny_index: Any, monkeypatch: pytest.MonkeyPatch, topology: str, window: int
) -> None:
    from fake_openai import QUESTION as TINY_QUESTION
    from fake_openai import FakeOpenAIServer, TinyWorld

    from graphseek.api import ask

    for name in ("GRAPHSEEK_LLM", "GRAPHSEEK_LLM_CACHE", "OPENAI_API_KEY", "GRAPHSEEK_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    with FakeOpenAIServer(TinyWorld()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = ask(tiny_index, TINY_QUESTION, topology=topology, llm="openai:tiny",
                     context_window=window)  # fmt: skip
    sizes = [_body_tokens(body) for body in server.requests]
    # the reply reserved: the factory's 1024, an eighth of a small window (`reply_reserve`)
    assert max(sizes, default=0) <= (window - reply_reserve(1024, window)) * 1.02
    if result.abstained:  # with a reason: the budget's, when a request could not be sent
        assert result.abstain_reason
        assert sizes or "context overflow (request not sent)" in result.abstain_reason
    else:
        assert result.answer == "Missolonghi"
    print(f"\n{topology} {window}: {result.answer or result.abstain_reason!r} "
          f"{len(sizes)} requests, largest {max(sizes, default=0)}")  # fmt: skip
