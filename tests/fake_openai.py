"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

`FakeOpenAIServer(responder)` serves ``POST /v1/chat/completions`` from a thread (stdlib
``http.server``). For every request it calls ``responder(request) -> Reply`` with the parsed
JSON body (a `Request`), and records the body in ``server.requests``. A `Reply` is a scripted
completion (text or tool calls, with or without ``usage``) or a fault: an HTTP error status with
its message and headers (``Retry-After``), or a stall (the server sleeps before answering, so a
client with a shorter timeout gives up).

`TinyWorld` is a responder that plays every graphseek role for the test corpus of
``tests/conftest.py`` on the question "Where did Ada Lovelace's father die?" (Ada Lovelace ->
Lord Byron -> Missolonghi): it reads which reply schema (``response_format``) or which tools a
request asks for, and the question lines of the prompt. Faults wrap it (`Faults`).

`WeakModel` plays a small local model behind a server without a tool-call parser (issue 25): a
small context window, which the server reports (``GET /v1/models`` with vLLM's
``max_model_len``, ``GET /props`` with llama.cpp's ``n_ctx``) and enforces (a longer request gets
HTTP 400 "the request exceeds the available context size"); tool calls written as text (bare
JSON lines, or with ``form="pythonic"`` Llama 3.x's ``<|python_tag|>[name(key=value), ...]``;
several a reply, the same ones every reply, an unknown tool among them); and a
``finish`` at once, with a made-up passage id. Its structured replies are `TinyWorld`'s.

Run ``python tests/fake_openai.py [PORT]`` to serve `TinyWorld` until interrupted (the benchmark
``benchmarks/llm_path.py`` can then point ``OPENAI_BASE_URL`` at it).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

QUESTION = "Where did Ada Lovelace's father die?"
HOP1 = "Who was Ada Lovelace's father?"
HOP2 = "Where did Lord Byron die?"
ADA_QUOTE = "She was the only legitimate child of the poet Lord Byron and Annabella Milbanke."
BYRON_QUOTE = (
    "He was born in London in 1788 and died of a fever at Missolonghi in 1824 while fighting "
    "in the Greek War of Independence."
)


@dataclass
class Request:
    """One chat-completions request: its JSON body, and helpers to read it."""

    body: dict[str, Any]
    number: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def schema_name(self) -> str:
        """The reply schema asked for (``response_format.json_schema.name``), or ""."""
        fmt = self.body.get("response_format") or {}
        return str((fmt.get("json_schema") or {}).get("name") or "")

    @property
    def kind(self) -> str:
        """What the request asks for: its reply schema's name, or "tools" for a tool call."""
        return self.schema_name or ("tools" if self.tool_names else "text")

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools") or [] if "function" in t]

    def text(self, role: str | None = None) -> str:
        parts = []
        for m in self.messages:
            if role is not None and m.get("role") != role:
                continue
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
            parts.append(str(content or ""))
        return "\n".join(parts)

    @property
    def first_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[0].get("content") or "") if users else ""

    def line(self, label: str) -> str:
        """The value of the first ``Label: value`` line of the first user message."""
        match = re.search(rf"^{re.escape(label)}:\s*(.*)$", self.first_user, re.MULTILINE)
        return match.group(1).strip() if match else ""


@dataclass
class Reply:
    """A scripted reply or fault (see the module docstring)."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0
    usage: bool = True
    finish_reason: str = ""

    @classmethod
    def json(cls, value: Any, **kwargs: Any) -> Reply:
        return cls(content=json.dumps(value), **kwargs)

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any]], content: str = "") -> Reply:
        return cls(content=content, tool_calls=[{"name": n, "args": a} for n, a in calls])


Responder = Callable[[Request], Reply]


class FakeOpenAIServer:
    """``with FakeOpenAIServer(responder) as server:`` -> ``server.base_url`` (``.../v1``)."""

    def __init__(self, responder: Responder, port: int = 0) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.probes: list[str] = []  # the GET paths asked for (model metadata)
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with owner._lock:
                    owner.probes.append(self.path)
                window = getattr(owner.responder, "context_window", None)
                path = self.path.split("?", 1)[0].rstrip("/")
                payload: dict[str, Any] | None = None
                if window and path.endswith("/models"):
                    model = {"id": "weak", "object": "model", "max_model_len": window}
                    payload = {"object": "list", "data": [model]}
                elif window and path.endswith("/props"):
                    settings = {"n_ctx": window}
                    payload = {"n_ctx": window, "default_generation_settings": settings}
                status = 200 if payload is not None else 404
                data = json.dumps(payload or {"error": {"message": "not found"}}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    owner.requests.append(body)
                    number = len(owner.requests)
                try:
                    reply = owner.responder(Request(body, number))
                except Exception as exc:  # a responder bug: say so in a 500
                    reply = Reply(status=500, error=f"responder failed: {exc!r}")
                if reply.stall:
                    time.sleep(reply.stall)
                if reply.status != 200:
                    payload = {"error": {"message": reply.error or "error", "type": "error",
                                         "code": reply.status}}  # fmt: skip
                else:
                    payload = completion(body, reply)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def requests_for(self, schema: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if Request(r, 0).schema_name == schema]

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


def completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    """An OpenAI ``chat.completion`` object for `reply` (usage: characters / 4 of what the
    request sends, messages, tool definitions and reply schema, like `ScriptedChatModel`, unless
    ``reply.usage`` is False)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}_{abs(hash(json.dumps(c['args'], sort_keys=True))) % 10**8}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    out: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if reply.usage:
        # a real server reads the tool definitions and the reply schema too
        read = [body.get(k) for k in ("messages", "tools", "response_format") if body.get(k)]
        prompt = len(json.dumps(read)) // 4
        done = len(reply.content or "") // 4 + len(json.dumps(reply.tool_calls)) // 4
        out["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": done,
            "total_tokens": prompt + done,
        }
    return out


# -- the tiny world: every role, for the question of the test corpus -------------------------


def _about_death(text: str) -> bool:
    return bool(re.search(r"\bdie|\bdied|\bdeath", text, re.IGNORECASE))


def _about_father(text: str) -> bool:
    return "father" in text.lower()


class TinyWorld:
    """Plays every role for "Where did Ada Lovelace's father die?" (see the module docstring).

    Tool-calling requests (``tools`` offered) are answered by `tool_turn`: search for the first
    hop, then the second, then ``finish`` with the answer, judged by the tool results seen so far.
    """

    def __call__(self, request: Request) -> Reply:
        if request.tool_names:
            return self.tool_turn(request)
        handler = getattr(self, f"reply_{request.schema_name}", None)
        if handler is None:
            return Reply(status=400, error=f"TinyWorld has no reply for {request.schema_name!r}")
        return Reply.json(handler(request))

    # -- tool calling -------------------------------------------------------------------------

    def tool_turn(self, request: Request) -> Reply:
        """Search for the question once (the configured retrieval when offered), then finish
        with its answer and passage ids. A knowledge_aware suggester (offered ``search_gap``)
        searches its next gap, and stops once a search of its was refused."""
        names = set(request.tool_names)
        if "search_gap" in names:
            if request.text("tool"):
                return Reply.tools(("stop_searching", {"reason": "the search was refused"}))
            plan = self.reply_QueryProposal(request)
            args = {"query": plan["query"], "gap_ids": plan["target_gap_ids"]}
            return Reply.tools(("search_gap", args), content=plan["reasoning"])
        question = request.line("Question") or QUESTION
        if request.text("tool") and "finish" in names:
            answer = self._answer(question)
            return Reply.tools(
                (
                    "finish",
                    {
                        "answer": answer["answer"],
                        "passage_ids": answer["passage_ids"],
                        "reason": answer["reasoning"],
                    },
                )  # fmt: skip
            )
        search = next((n for n in ("context_search", "search_passages") if n in names), None)
        return Reply.tools((search or sorted(names)[0], {"query": question}))

    # -- structured replies, by schema --------------------------------------------------------

    def reply_ClarifiedQuestion(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reason": "already a question", "question": r.line("Question") or QUESTION}

    def reply_Decomposition(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {
            "reason": "two hops",
            "question_subject": "Ada Lovelace",
            "sub_questions": [
                {"id": 1, "question": HOP1, "depends_on": []},
                {"id": 2, "question": "Where did #1 die?", "depends_on": [1]},
            ],
        }

    def _answer(self, question: str) -> dict[str, Any]:
        if _about_death(question):
            ids = ["byron", "ada"] if _about_father(question) else ["byron"]
            return {"reasoning": "Byron died at Missolonghi.", "answer": "Missolonghi",
                    "candidates": [], "evidence": [BYRON_QUOTE], "passage_ids": ids,
                    "confidence": 0.9}  # fmt: skip
        return {"reasoning": "Ada's father was Byron.", "answer": "Lord Byron",
                "candidates": [], "evidence": [ADA_QUOTE], "passage_ids": ["ada"],
                "confidence": 0.9}  # fmt: skip

    def reply_LibrarianReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return self._answer(r.line("Question") or QUESTION)

    def reply_BriefReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        """A cascade's model reader: the Librarian's answer in its brief form."""
        full = self._answer(r.line("Question") or QUESTION)
        return {key: full[key] for key in ("answer", "passage_ids", "confidence")}

    def reply_SeekerAction(self, r: Request) -> dict[str, Any]:  # noqa: N802
        history = r.first_user.split("Librarian history:", 1)[-1]
        if "Missolonghi" in history:
            return {"reason": "both hops answered", "action": "answer", "answer": "Missolonghi",
                    "evidence": ["byron", "ada"], "questions": [], "step_ids": []}  # fmt: skip
        if "Lord Byron" in history:
            return {"reason": "second hop", "action": "ask_librarian", "questions": [HOP2],
                    "step_ids": [2]}  # fmt: skip
        return {"reason": "first hop", "action": "ask_librarian", "questions": [HOP1],
                "step_ids": [1]}  # fmt: skip

    def reply_Thought(self, r: Request) -> dict[str, Any]:  # noqa: N802
        step = int(re.search(r"Step (\d+) of", r.first_user).group(1))  # type: ignore[union-attr]
        if step == 1:
            return {"reason": "first hop", "decision": "RETRIEVE", "query": HOP1}
        if step == 2:
            return {"reason": "second hop", "decision": "RETRIEVE", "query": HOP2}
        return {"reason": "done", "decision": "FINISH", "query": QUESTION,
                "answer": "Missolonghi", "sufficient": True}  # fmt: skip

    # knowledge_aware
    def reply_InitialRequired(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reasoning": "two gaps", "gaps": [HOP1, "Where did #1 die?"]}

    def reply_QueryProposal(self, r: Request) -> dict[str, Any]:  # noqa: N802
        known = r.first_user.split("What is Known:", 1)[-1].split("What is Required:", 1)[0]
        if "Lord Byron" in known:
            return {"reasoning": "gap 2", "target_gap_ids": ["2"], "query": HOP2}
        return {"reasoning": "gap 1", "target_gap_ids": ["1"], "query": HOP1}

    def reply_KnowledgeUpdateReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        query = r.line("Search just made")
        if _about_death(query):
            fact = {"statement": "Lord Byron died at Missolonghi.", "quote": BYRON_QUOTE,
                    "passage_ids": ["byron"], "gap_id": "2", "answer": "Missolonghi"}  # fmt: skip
        else:
            fact = {"statement": "Ada Lovelace's father was Lord Byron.", "quote": ADA_QUOTE,
                    "passage_ids": ["ada"], "gap_id": "1", "answer": "Lord Byron"}  # fmt: skip
        return {"reasoning": "found it", "facts": [fact], "new_gaps": []}

    def reply_ContextSelection(self, r: Request) -> dict[str, Any]:  # noqa: N802
        text = r.first_user
        segments = [
            {"passage_id": pid, "text": quote}
            for pid, quote in (("ada", ADA_QUOTE), ("byron", BYRON_QUOTE))
            if quote in text
        ]
        return {"reasoning": "the two facts", "segments": segments}

    def reply_AnswerReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reasoning": "Known answers it", "action": "answer", "answer": "Missolonghi",
                "passage_ids": ["byron", "ada"], "confidence": 0.9}  # fmt: skip

    # adaptive
    def reply_CoverageVerdict(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reason": "the corpus covers Ada Lovelace", "coverage": 0.9, "in_scope": True}

    def reply_SufficiencyVerdict(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reason": "enough", "missing": [], "sufficient": True}

    def reply_TripleCheckReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"relevant": True, "grounded": True, "adequate": True}

    def reply_RewriteReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reason": "rephrase", "query": HOP2}

    # deep_search
    def reply_GroundedQuery(self, r: Request) -> dict[str, Any]:  # noqa: N802
        query = r.line("Query")
        return {"reason": "resolved", "query": HOP2 if "#1" in query else query}

    def reply_RefinerReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        ids = [pid for pid in ("ada", "byron") if f"[{pid}]" in r.first_user]
        return {"reason": "relevant", "passage_ids": ids, "triples": []}

    def reply_LogicReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"chain": ["Ada's father was Lord Byron.", "Byron died at Missolonghi."],
                "gaps": [], "answer": "Missolonghi", "evidence": ["byron", "ada"],
                "confidence": 0.9}  # fmt: skip

    def reply_EvidenceVerdict(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reason": "grounded", "missing": [], "verdict": "accept"}

    def reply_ExpansionReply(self, r: Request) -> dict[str, Any]:  # noqa: N802
        return {"reason": "more", "queries": [HOP2]}


def prompt_tokens(body: dict[str, Any], chars_per_token: float = 4.0) -> int:
    """What a request reads (messages, tool definitions, reply schema), in tokens of
    `chars_per_token` characters."""
    read = [body.get(k) for k in ("messages", "tools", "response_format") if body.get(k)]
    return int(len(json.dumps(read)) / chars_per_token)


class WeakModel:
    """A small model behind a server without a tool-call parser (see the module docstring).

    Tool-calling requests get calls as bare JSON lines: on the first request of a conversation
    only ``finish`` (where offered) with `answer` and a made-up passage id; afterwards, every
    time, the same lines: an unknown tool, the main search on the question, the same call again,
    the main search on the second hop, an entity search, and ``finish`` again. Requests longer
    than `context_window` tokens (counted at `chars_per_token`, fewer characters a token than
    a client's usual estimate, as a small model's tokenizer does) get HTTP 400; their sizes are
    kept in `refused`.

    With `rounds` set it is a patient reader instead: every tool-calling request gets one new
    search (a query it has not sent before in that conversation) until the conversation holds
    `rounds` rounds of tool results, then ``finish`` with the answer and no made-up id.
    """

    MADE_UP_ID = "archive"
    #: the text forms it writes calls in: bare JSON lines, or Llama 3.x's pythonic list
    FORMS = ("json", "pythonic")

    def __init__(
        self,
        answer: str = "Missolonghi",
        context_window: int = 8192,
        chars_per_token: float = 3.0,
        form: str = "json",
        rounds: int = 0,
    ) -> None:
        if form not in self.FORMS:
            raise ValueError(f"unknown form {form!r}; the forms are: {', '.join(self.FORMS)}")
        self.form = form
        self.rounds = rounds
        self.asked: dict[str, int] = {}  # searches made per question (patient mode)
        self._lock = threading.Lock()
        self.answer = answer
        self.context_window = context_window
        self.chars_per_token = chars_per_token
        self.inner = TinyWorld()
        self.refused: list[int] = []

    def __call__(self, request: Request) -> Reply:
        need = prompt_tokens(request.body, self.chars_per_token)
        if need > self.context_window:
            self.refused.append(need)
            return Reply(
                status=400,
                error=f"the request exceeds the available context size ({need} tokens, n_ctx "
                f"{self.context_window}), try increasing it",
            )
        if request.tool_names:
            return Reply(content=self.tool_text(request))
        return self.inner(request)

    #: the patient reader's searches, one a round, each finding passages the last did not
    QUERIES = (QUESTION, "Marie Curie Warsaw", "Analytical Engine Babbage", HOP2, "Missolonghi")

    def tool_text(self, request: Request) -> str:
        names = request.tool_names
        if self.rounds:
            return self.patient_text(request)
        finish = (
            [{"name": "finish", "arguments": {"answer": self.answer,
                                              "passage_ids": [self.MADE_UP_ID]}}]
            if "finish" in names else []
        )  # fmt: skip
        if finish and not request.text("tool"):
            return "I know this one.\n" + self._write(finish)
        search = next(
            (n for n in ("search_gap", "context_search", "search_passages") if n in names),
            names[0],
        )
        question = request.line("Question") or QUESTION
        calls: list[dict[str, Any]] = [
            {"name": "web_search", "arguments": {"query": question}},
            {"name": search, "arguments": self._search_args(search, question)},
            {"name": search, "arguments": self._search_args(search, question)},
            {"name": search, "arguments": self._search_args(search, HOP2)},
            {"name": "search_entities", "arguments": {"query": "Lord Byron"}},
            *finish,
        ]
        return "Let me look this up.\n" + self._write(calls)

    def patient_text(self, request: Request) -> str:
        """One new search a request of a question (its ``Question:`` line, a conversation or a
        planner's fresh prompts alike); ``finish`` citing what the tools returned once `rounds`
        searches of it ran."""
        names = request.tool_names
        key = request.line("Question") or request.first_user[:200]
        with self._lock:
            done = self.asked.get(key, 0)
            self.asked[key] = done + 1
        search = next(
            (n for n in ("search_gap", "context_search", "search_passages") if n in names),
            names[0],
        )
        if done >= self.rounds and "finish" in names:
            ids = re.findall(r"\[([\w:.-]+)\]", request.text("tool"))
            call = {"name": "finish", "arguments": {"answer": self.answer, "passage_ids": ids[:3]}}
        else:
            query = self.QUERIES[done % len(self.QUERIES)]
            call = {"name": search, "arguments": self._search_args(search, query)}
        return self._write([call])

    def _write(self, calls: list[dict[str, Any]]) -> str:
        """`calls` as bare JSON lines, or as ``<|python_tag|>[name(key=value, ...), ...]``."""
        if self.form == "json":
            return "\n".join(json.dumps(c) for c in calls)
        written = [
            f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['arguments'].items())})"
            for c in calls
        ]
        return f"<|python_tag|>[{', '.join(written)}]<|eom_id|>"

    @staticmethod
    def _search_args(tool: str, query: str) -> dict[str, Any]:
        return {"query": query, "gap_ids": ["1"]} if tool == "search_gap" else {"query": query}


class Faults:
    """Wraps a responder: requests for which ``when(request)`` holds get ``fault`` instead."""

    def __init__(
        self, inner: Responder, fault: Reply, when: Callable[[Request], bool] = lambda r: True
    ) -> None:
        self.inner, self.fault, self.when = inner, fault, when

    def __call__(self, request: Request) -> Reply:
        if self.when(request):
            return self.fault
        return self.inner(request)


if __name__ == "__main__":  # pragma: no cover - a manual helper for benchmarks
    import sys

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    with FakeOpenAIServer(TinyWorld(), port=port) as server:
        print(f"serving TinyWorld at {server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
