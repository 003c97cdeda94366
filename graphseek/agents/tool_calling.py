"""What the tool-calling policies share: one step of a tool loop with the tools bound, where a
reply without a tool call is asked again (it is malformed for a tool-calling step), and the
conversion of a model that cannot call tools into `ToolsUnsupportedError` (the caller then takes
its JSON path). A model cannot call tools when it has no `bind_tools`, or when its server refuses
a request with tools (an HTTP error that names them: vLLM without `--enable-auto-tool-choice`,
a llama.cpp server without `--jinja`, an Ollama model without tool support); such a model is
remembered for the process while it lives (`RefusedModels`, held weakly), so later steps and
runs take the JSON path without another refused request.

A reply without `tool_calls` whose text holds calls (bare JSON lines, `<tool_call>` tags, Llama
3's `<|python_tag|>`, Llama 3.x's pythonic call lists, a code fence;
`graphseek.llm.text_tool_calls`) is read as those calls, so
a model behind a server without a tool-call parser still drives the loop.

Where the calls run, three small pure pieces keep a weak model's loop in bounds:
`plan_calls` (at most N calls a reply; a call identical to one already run this run is answered
with the earlier result; unknown tools and invalid arguments answered with an error; `finish`
taken last), `check_finish` (a final answer is accepted only when the passages it cites were
returned by a tool this run and state it) and `rounds_without_new_passages` (the early stop
after rounds that found nothing new).
"""

from __future__ import annotations

import hashlib
import re
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from graphseek.agents.text import answer_occurs, normalize
from graphseek.errors import LLMError, LLMOutputError, LLMRequestError, LLMTransportError
from graphseek.llm import invoke_message
from graphseek.llm.text_tool_calls import Schema, call_key, check_call, parse_tool_calls
from graphseek.state.models import Usage

#: a model whose window is at most this many tokens is offered compact tool definitions
#: (`tool_definitions`): every token of the schemas is a token of evidence the window cannot hold
COMPACT_TOOLS_WINDOW = 8192

NO_TOOL_CALL_PROMPT = (
    "Your reply called no tool. Call exactly one of the tools offered: a retrieval tool to "
    "gather evidence, or the tool that ends the search (finish(answer, passage_ids) where it "
    "is offered)."
)
"""Sent after a tool-calling reply without a tool call (no placeholders)."""


class ToolsUnsupportedError(Exception):
    """The model cannot call tools (no `bind_tools`, or its server refused the tools); the role's
    JSON path is used instead. `usage` is what the refused request cost (charge it)."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if isinstance(usage, Usage) else Usage()


#: an HTTP error that is about the tools of the request, not about the prompt
_TOOLS_REFUSED = re.compile(
    r"\btools?\b|tool[_ ]choice|tool[_ -]call|function[_ ]call|--jinja", re.IGNORECASE
)


class RefusedModels:
    """The models whose server refused tool calling, remembered for the process.

    A refusal is a property of the model's server (its launch flags), not of one run, so it
    outlives the run that met it: the next run with the same model takes the JSON path without
    another refused (and charged) request. Models are held weakly and matched by identity (chat
    models are unhashable pydantic objects): an entry goes with its model, as when
    `graphseek.llm.clear_model_cache` drops the clients built from specs."""

    def __init__(self) -> None:
        self._refs: list[Any] = []
        # reentrant: a model collected while the lock is held drops its entry in this thread
        self._lock = threading.RLock()

    def add(self, model: Any) -> None:
        with self._lock:
            if any(self._get(r) is model for r in self._refs):
                return
            try:
                self._refs.append(weakref.ref(model, self._drop))
            except TypeError:  # a model without weak references is held
                self._refs.append(model)

    def __contains__(self, model: object) -> bool:
        with self._lock:
            return any(self._get(r) is model for r in self._refs)

    def _drop(self, ref: Any) -> None:
        with self._lock:
            self._refs = [r for r in self._refs if r is not ref]

    @staticmethod
    def _get(entry: Any) -> Any:
        return entry() if isinstance(entry, weakref.ref) else entry


#: models whose server refused tool calling in this process
_REFUSED = RefusedModels()


def _refuses_tools(exc: LLMError) -> bool:
    """Whether a failed request says the server cannot take tools (a 4xx, or the 5xx some
    servers answer with) rather than something else (a context overflow, a timeout)."""
    if not isinstance(exc, LLMRequestError | LLMTransportError):
        return False
    if exc.cause in ("context overflow", "timeout", "connection error"):
        return False
    detail = re.sub(r"\(model '[^']*', \d+ attempt\(s\)\)", "", str(exc))  # not the model name
    return bool(_TOOLS_REFUSED.search(detail))


def _first_sentence(text: str) -> str:
    """The first sentence of `text` (to its first ". " or line break), whitespace collapsed."""
    text = " ".join(text.split())
    cut = re.search(r"(?<=[.!?])\s", text)
    return text[: cut.start()] if cut else text


def _bare(schema: Any) -> Any:
    """A JSON schema without its descriptions and titles, at every depth (the names and types
    a call needs stay)."""
    if isinstance(schema, Mapping):
        return {k: _bare(v) for k, v in schema.items() if k not in ("description", "title")}
    if isinstance(schema, list):
        return [_bare(v) for v in schema]
    return schema


def tool_definitions(tools: Sequence[Any], window: int | None) -> list[Any]:
    """What `tools` are bound as: the tools themselves, or, for a model whose `window` is at most
    `COMPACT_TOOLS_WINDOW` tokens, their OpenAI definitions with each description cut to its
    first sentence and the arguments' descriptions and titles left out. The model calls them by
    the same names and arguments, and the calls run the tools themselves."""
    if window is None or window > COMPACT_TOOLS_WINDOW:
        return list(tools)
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out = []
    for tool in tools:
        spec = convert_to_openai_tool(tool)
        fn = spec["function"]
        compact = {"name": fn["name"], "description": _first_sentence(fn.get("description", ""))}
        if "parameters" in fn:
            compact["parameters"] = _bare(fn["parameters"])
        out.append({"type": "function", "function": compact})
    return out


def model_name(model: Any) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return f"model {name!r}" if isinstance(name, str) else f"model {type(model).__name__}"


def call_tools(
    model: Any,
    tools: Sequence[Any],
    prompt: Sequence[BaseMessage],
    max_retries: int,
    *,
    callbacks: Sequence[Any] = (),
) -> tuple[AIMessage, Usage]:
    """`model` with `tools` bound, called on `prompt` until its reply calls a tool (at most
    ``1 + max_retries`` times, each retry told to call one; `callbacks`, the run's budget guard,
    see every request). Returns the reply and the usage of
    every attempt; raises `ToolsUnsupportedError` when the model cannot bind tools,
    `LLMOutputError` when it never calls one, and the taxonomy's other `LLMError`s."""
    if model in _REFUSED:
        raise ToolsUnsupportedError(f"the server of {model_name(model)} refused tool calling")
    from graphseek.llm.context_window import window_for

    window = window_for(model)
    try:
        bound = model.bind_tools(tool_definitions(tools, window.tokens if window else None))
    except (NotImplementedError, AttributeError) as exc:
        raise ToolsUnsupportedError(f"{type(model).__name__} cannot call tools") from exc
    messages = list(prompt)
    usage = Usage()
    text = ""
    attempts = max_retries + 1
    for _ in range(attempts):
        try:
            reply, spent = invoke_message(bound, messages, callbacks=callbacks)
        except LLMError as exc:
            exc.usage = usage + (exc.usage if isinstance(exc.usage, Usage) else Usage())
            if _refuses_tools(exc):
                _REFUSED.add(model)
                raise ToolsUnsupportedError(
                    f"the server of {model_name(model)} refused tool calling ({exc})",
                    usage=exc.usage,
                ) from exc
            raise
        usage = usage + spent
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=str(getattr(reply, "content", reply)))
        if not reply.tool_calls:
            reply, problems = with_text_calls(reply, tools, len(messages))
        else:
            problems = []
        if reply.tool_calls:
            return reply, usage
        text = str(reply.text or "")
        retry = NO_TOOL_CALL_PROMPT + (f" ({problems[0]})" if problems else "")
        messages = [*messages, reply, HumanMessage(retry)]
    raise LLMOutputError(
        f"malformed reply: {model_name(model)} called no tool after {attempts} attempt(s) "
        f"(max_retries={max_retries}); last reply: {' '.join(text.split())[:160]!r}",
        usage=usage,
        attempts=attempts,
    )


# -- tool calls written as text -----------------------------------------------------------------


def tool_schemas(tools: Iterable[Any]) -> dict[str, Schema]:
    """Tool name -> the schema of the arguments a model gives it (injected arguments left out)."""
    out: dict[str, Schema] = {}
    for t in tools:
        name = getattr(t, "name", None)
        if isinstance(name, str):
            schema = getattr(t, "tool_call_schema", None) or getattr(t, "args_schema", None)
            out[name] = schema if isinstance(schema, type | Mapping) else None
    return out


def with_text_calls(
    reply: AIMessage, tools: Sequence[Any], step: int = 0
) -> tuple[AIMessage, list[str]]:
    """`reply` with the tool calls its text holds as `tool_calls` (the text left as its content),
    or unchanged when it holds none; and the problems of a call attempted but not read. Call ids
    are deterministic: the step (the prompt's length), the call's place and its content."""
    text = str(reply.text or "")
    parsed = parse_tool_calls(text, tool_schemas(tools))
    if not parsed.calls:
        return reply, parsed.problems
    calls: list[ToolCall] = []
    for i, call in enumerate(parsed.calls):
        digest = hashlib.sha1(call_key(call.name, call.args).encode()).hexdigest()[:8]
        calls.append(ToolCall(name=call.name, args=call.args, id=f"text{step}_{i}_{digest}"))
    return reply.model_copy(update={"content": parsed.text, "tool_calls": calls}), []


# -- where the calls run: the cap, repeats, refused calls, finish last --------------------------

REPEAT_NOTE = "already called; result repeated"


@dataclass
class CallPlan:
    """What to do with a reply's tool calls: `run` them (in order), answer the others with
    `replies` (call id -> result: repeats, refused calls), check `finish` calls last; `kept` is
    every call the reply keeps, in order (`run`, the replied ones, then `finish`), `dropped`
    says which calls were left out (over the cap, or the same call twice in the reply) and
    `repeated` which were answered with an earlier result."""

    run: list[ToolCall] = field(default_factory=list)
    kept: list[ToolCall] = field(default_factory=list)
    replies: dict[str, ToolMessage] = field(default_factory=dict)
    finish: list[ToolCall] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    repeated: list[str] = field(default_factory=list)

    def repeat(self, call: ToolCall, earlier: ToolMessage) -> None:
        """Answer `call` with the `earlier` result of the same call (not run again)."""
        self.run = [c for c in self.run if c is not call]
        self.repeated.append(_describe(call))
        self.replies[str(call.get("id"))] = repeated_result(call, earlier)


def repeated_result(call: ToolCall, earlier: ToolMessage) -> ToolMessage:
    """The result of `call`, identical to a call that ran before: the `earlier` result with the
    note `REPEAT_NOTE` (its artifact without the usage, which the earlier call charged)."""
    artifact = earlier.artifact
    if isinstance(artifact, dict) and "usage" in artifact:
        artifact = {k: v for k, v in artifact.items() if k != "usage"}
    return ToolMessage(
        f"({REPEAT_NOTE}: call another tool or other arguments for new results)\n{earlier.content}",
        name=str(call.get("name") or ""),
        tool_call_id=str(call.get("id")),
        artifact=artifact,
        status=earlier.status,
    )


def earlier_results(messages: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    """`call_key` -> the result of the first call with that key that ran (had a result)."""
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    out: dict[str, ToolMessage] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                result = results.get(str(call.get("id")))
                if result is not None:
                    out.setdefault(call_key(call["name"], call.get("args") or {}), result)
    return out


def _describe(call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in (call.get("args") or {}).items())
    return f"{call['name']}({args})"[:200]


def plan_calls(
    calls: Sequence[ToolCall],
    earlier: Sequence[BaseMessage],
    schemas: Mapping[str, Schema],
    max_calls: int,
    finish: Iterable[str] = (),
) -> CallPlan:
    """Which of a reply's `calls` run (see `CallPlan`): `finish` calls (by name) are taken last
    and not capped; of the others, a call already made in the reply is dropped, the first
    `max_calls` kept and the rest dropped; a kept call with an unknown name or invalid arguments
    is answered with the error, one identical to a call that ran earlier (`earlier`, the run's
    messages before the reply) with that call's result and the note `REPEAT_NOTE`."""
    finishing = set(finish)
    before = earlier_results(earlier)
    plan = CallPlan()
    seen: set[str] = set()
    kept = 0
    for call in calls:
        name = str(call.get("name") or "")
        if name in finishing:
            plan.finish.append(call)
            continue
        args = dict(call.get("args") or {})
        key = call_key(name, args)
        if key in seen:
            plan.dropped.append(f"{_describe(call)}: the same call twice in one reply")
            continue
        seen.add(key)
        if kept >= max(1, max_calls):
            plan.dropped.append(f"{_describe(call)}: over {max(1, max_calls)} calls a reply")
            continue
        kept += 1
        plan.kept.append(call)
        call_id = str(call.get("id"))
        error = check_call(name, args, schemas)
        if error:
            plan.replies[call_id] = ToolMessage(
                f"Error: {error}. The call was not run.",
                name=name,
                tool_call_id=call_id,
                status="error",
            )
        elif key in before:
            plan.repeat(call, before[key])
        else:
            plan.run.append(call)
    plan.kept.extend(plan.finish)
    return plan


# -- a grounded finish ----------------------------------------------------------------------------

#: the result artifact's key for a finish accepted where the calls run
FINISH_KEY = "finish"


@dataclass(frozen=True)
class FinishVerdict:
    """Whether a final answer is accepted: the answer, the observed passages that state it, and
    why it was refused (empty when accepted). An empty answer is an accepted abstention."""

    accepted: bool
    answer: str = ""
    passage_ids: tuple[str, ...] = ()
    reason: str = ""

    def artifact(self) -> dict[str, Any]:
        return {FINISH_KEY: {"answer": self.answer, "passage_ids": list(self.passage_ids)}}


def _yes_no(answer: str) -> bool:
    return normalize(answer) in ("yes", "no")


def check_finish(
    answer: str, cited: Sequence[str], observed: Mapping[str, str], max_ids: int = 3
) -> FinishVerdict:
    """A final `answer` citing passage ids `cited`, against the passages `observed` this run
    (id -> title and text, those a tool returned): accepted when it occurs in a cited observed
    passage (those are its grounding), else when it occurs in any observed passage (those are
    cited instead); a yes/no answer needs an observed cited passage. Otherwise refused, saying
    why."""
    answer = " ".join(str(answer).split())
    if not answer:
        return FinishVerdict(accepted=True, answer="", reason="no answer given")
    cited = [str(p) for p in dict.fromkeys(cited)]
    known = [p for p in cited if p in observed]
    unknown = [p for p in cited if p not in observed]
    if _yes_no(answer):
        if known:
            return FinishVerdict(True, answer, tuple(known[:max_ids]))
    else:
        stating = [p for p in known if answer_occurs(answer, observed[p])]
        if not stating:
            stating = [p for p in observed if answer_occurs(answer, observed[p])]
        if stating:
            return FinishVerdict(True, answer, tuple(stating[:max_ids]))
    if not observed:
        why = "no tool has returned a passage yet in this run: search first"
    else:
        parts = []
        if unknown:
            parts.append(f"passage id(s) {', '.join(unknown[:5])} were not returned by any tool")
        if _yes_no(answer):
            parts.append("a yes/no answer needs the ids of the passages read that decide it")
        else:
            parts.append(f"{answer!r} does not occur in any passage read so far")
        why = "; ".join(parts)
    return FinishVerdict(
        accepted=False,
        answer=answer,
        reason=f"finish not accepted: {why}. Search for a passage that states the answer, then "
        "call finish with its words and its passage id.",
    )


def finish_verdicts(messages: Sequence[BaseMessage]) -> list[FinishVerdict]:
    """The finish verdicts among the results after the last model message (accepted ones carry
    `FINISH_KEY` in their artifact, refused ones are errors naming `finish`)."""
    out: list[FinishVerdict] = []
    for message in reversed(list(messages)):
        if isinstance(message, AIMessage):
            break
        if not isinstance(message, ToolMessage):
            continue
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        got = artifact.get(FINISH_KEY)
        if isinstance(got, dict):
            ids = tuple(str(p) for p in got.get("passage_ids") or [])
            out.append(FinishVerdict(True, str(got.get("answer") or ""), ids))
        elif message.status == "error" and str(message.content).startswith("finish not"):
            out.append(FinishVerdict(False, reason=str(message.content)))
    return out[::-1]


def accepted_finish(messages: Sequence[BaseMessage]) -> FinishVerdict | None:
    """The accepted finish among the last results, if any."""
    return next((v for v in finish_verdicts(messages) if v.accepted), None)


# -- progress -------------------------------------------------------------------------------------


def rounds_without_new_passages(messages: Sequence[BaseMessage], ran_counts: bool = False) -> int:
    """How many rounds of tool calls in a row, up to the last, returned no passage id that an
    earlier round had not (a round: a model message with tool calls and its results). With
    `ran_counts`, a round in which a call ran (not a repeat answered with an earlier result,
    not an error) counts as progress too."""
    seen: set[str] = set()
    stale = 0
    progress: bool | None = None
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            if progress is not None:
                stale = 0 if progress else stale + 1
            progress = False
        elif isinstance(message, ToolMessage) and progress is not None:
            artifact = message.artifact if isinstance(message.artifact, dict) else {}
            ids = {str(p) for p in artifact.get("passage_ids") or []}
            ran = message.status != "error" and not str(message.content).startswith(
                f"({REPEAT_NOTE}"
            )
            progress = progress or bool(ids - seen) or (ran_counts and ran)
            seen |= ids
    if progress is not None:
        stale = 0 if progress else stale + 1
    return stale
