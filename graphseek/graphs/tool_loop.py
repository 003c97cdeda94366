"""The `ToolNode` of the agentic topologies (`react`'s and the Librarian's `act`, `knowledge_aware`'s
`retrieve_documents` and its suggesters' `act`), with the bounds a weak model needs
(`graphseek.agents.tool_calling.plan_calls`):

- at most ``context.max_tool_calls_per_reply`` calls of a reply run; the rest, and a call made
  twice in one reply, are left out of the reply (the model message is rewritten in place, so
  every call in the conversation has its result) and named in ``diagnostics.dropped_calls``;
- a call identical to one that already ran this run is not run again: its earlier result comes
  back with the note "already called; result repeated" (``diagnostics.repeated_calls``). "This
  run" is the whole run, not only the node's own conversation: the results of the calls that ran
  are kept in the run's scope (a `CallRecord`, ``run_scope(context)``), so parallel Librarians
  (`Send`) and later rounds share them; a call that a sibling branch is running at that moment
  waits for its result (the node first runs its own calls, so two siblings never wait on each
  other). Tools whose result depends on the calling agent's state (`PER_AGENT_TOOLS`: a KAIR
  agent's `search_gap`, with its own retriever and query history) and error results are not
  shared;
- a call of an unknown tool, or with arguments its schema refuses, is answered with the error;
- the `finish` calls (the node's `finish` names) are taken last, after the other calls have run:
  the answer is accepted only when it occurs in passages a tool returned this run
  (`check_finish`); the result carries the verdict (an accepted answer in its artifact, a
  refusal as an error the model reads), and the workflow's next node acts on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.messages.tool import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import TOOL_CALL_ERROR_TEMPLATE
from langgraph.runtime import Runtime

from graphseek.agents.tool_calling import CallPlan, check_finish, plan_calls, tool_schemas
from graphseek.errors import DatabaseUnavailableError, IndexChangedError
from graphseek.knowledge.postgres.connection import is_disconnect
from graphseek.llm.text_tool_calls import call_key
from graphseek.state.run_scope import CallRecord, run_scope
from graphseek.state.schema import Diagnostics
from graphseek.tools.kair_tools import SEARCH_GAP
from graphseek.tools.retrievers import resolve_index

#: calls of one reply that run, when the context does not say
DEFAULT_MAX_CALLS = 3
#: the tools whose result depends on the agent that calls them: never shared across the run
PER_AGENT_TOOLS = frozenset({SEARCH_GAP})
#: the run-scope name of the record of tool results (`CallRecord`)
RESULTS = "tool_results"
#: how long (seconds) a call waits for the same call running in a sibling branch
WAIT_FOR_SIBLING_S = 300.0


def _results(runtime: Runtime) -> CallRecord:
    return run_scope(runtime.context).get(RESULTS, CallRecord)


def _key(call: ToolCall) -> str:
    return call_key(str(call.get("name") or ""), dict(call.get("args") or {}))


class _Shared:
    """A reply's calls against the run's `CallRecord`: those answered from it, those this node
    claimed (it runs them and settles them), those a sibling runs now (`waiting`)."""

    def __init__(self, record: CallRecord, plan: CallPlan) -> None:
        self.record = record
        self.claimed: list[ToolCall] = []
        self.waiting: list[ToolCall] = []
        for call in list(plan.run):
            if call.get("name") in PER_AGENT_TOOLS:
                continue
            state, earlier = record.claim(_key(call))
            if state == "done":
                plan.repeat(call, earlier)
            elif state == "run":
                self.claimed.append(call)
            else:
                self.waiting.append(call)
        waiting = {id(c) for c in self.waiting}
        self.own = [c for c in plan.run if id(c) not in waiting]

    def settle(self, out: Any, messages_key: str) -> None:
        """Keep the results of the claimed calls that ran well; release every claim."""
        ran = out.get(messages_key) if isinstance(out, dict) else None
        by_id = {m.tool_call_id: m for m in ran or [] if isinstance(m, ToolMessage)}
        for call in self.claimed:
            result = by_id.get(str(call.get("id")))
            ok = result is not None and result.status != "error"
            self.record.settle(_key(call), result if ok else None)
        self.claimed = []

    def settle_unrun(self) -> None:
        for call in self.claimed:
            self.record.settle(_key(call))
        self.claimed = []

    def answer_waiting(self, plan: CallPlan, results: dict[str, Any]) -> list[ToolCall]:
        """Answer the waited-for calls whose sibling left a result; the others, to run here."""
        left: list[ToolCall] = []
        for call in self.waiting:
            earlier = results.get(_key(call))
            if earlier is None:
                left.append(call)
            else:
                plan.repeat(call, earlier)
        return left


def tool_error_result(exc: Exception) -> str:
    """A failed tool call's result, as `ToolNode(handle_tool_errors=True)` writes it, for the
    model to read; except an index rewritten under the run (`IndexChangedError`), which ends
    the run so that its caller can answer again over the new version, and a database that
    went away (`DatabaseUnavailableError`, a dropped PostgreSQL connection), which ends it in
    that error (an error result would read as "nothing found")."""
    if isinstance(exc, (IndexChangedError, DatabaseUnavailableError)) or is_disconnect(exc):
        raise exc
    return TOOL_CALL_ERROR_TEMPLATE.format(error=repr(exc))


class GuardedToolNode(ToolNode):
    """A `ToolNode` (tool errors returned as error results) that runs a reply's calls through
    `plan_calls` and checks its `finish` calls (see the module docstring)."""

    def __init__(
        self, tools: Sequence[Any], *, finish: Sequence[str] = (), name: str = "tools"
    ) -> None:
        super().__init__(list(tools), handle_tool_errors=tool_error_result, name=name)
        self._finish_names = tuple(finish)
        self._schemas = tool_schemas(tools)

    def _prepare(self, input: Any, runtime: Runtime) -> tuple[AIMessage, CallPlan] | None:
        messages = list(input.get(self._messages_key) or []) if isinstance(input, dict) else []
        last = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=None)
        if last is None:
            return None
        ai = messages[last]
        assert isinstance(ai, AIMessage)
        max_calls = getattr(runtime.context, "max_tool_calls_per_reply", DEFAULT_MAX_CALLS)
        plan = plan_calls(
            ai.tool_calls, messages[:last], self._schemas, int(max_calls), self._finish_names
        )
        return ai, plan

    def _only(self, input: Any, calls: list[ToolCall]) -> Any:
        """`input` whose last model message calls only `calls` (what the `ToolNode` runs)."""
        messages = list(input.get(self._messages_key) or [])
        last = max(i for i, m in enumerate(messages) if isinstance(m, AIMessage))
        trimmed = messages[last].model_copy(update={"tool_calls": calls})
        return {**input, self._messages_key: [*messages[:last], trimmed]}

    def _func(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        prepared = self._prepare(input, runtime)
        if prepared is None:
            return super()._func(input, config, runtime)
        ai, plan = prepared
        shared = _Shared(_results(runtime), plan)
        try:
            out = (
                super()._func(self._only(input, shared.own), config, runtime) if shared.own else {}
            )
            shared.settle(out, self._messages_key)
        finally:
            shared.settle_unrun()
        if shared.waiting and isinstance(out, dict):
            record = shared.record
            results = {_key(c): record.result(_key(c), WAIT_FOR_SIBLING_S) for c in shared.waiting}
            left = shared.answer_waiting(plan, results)
            if left:
                more = super()._func(self._only(input, left), config, runtime)
                out = _joined(out, more, self._messages_key)
        return self._assemble(input, ai, plan, out, runtime)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        prepared = self._prepare(input, runtime)
        if prepared is None:
            return await super()._afunc(input, config, runtime)
        ai, plan = prepared
        shared = _Shared(_results(runtime), plan)
        try:
            own = self._only(input, shared.own)
            out = await super()._afunc(own, config, runtime) if shared.own else {}
            shared.settle(out, self._messages_key)
        finally:
            shared.settle_unrun()
        if shared.waiting and isinstance(out, dict):
            record = shared.record
            results = {
                _key(c): await record.aresult(_key(c), WAIT_FOR_SIBLING_S) for c in shared.waiting
            }
            left = shared.answer_waiting(plan, results)
            if left:
                more = await super()._afunc(self._only(input, left), config, runtime)
                out = _joined(out, more, self._messages_key)
        return self._assemble(input, ai, plan, out, runtime)

    def _assemble(
        self, input: Any, ai: AIMessage, plan: CallPlan, out: Any, runtime: Runtime
    ) -> Any:
        if not isinstance(out, dict):  # a tool returned a Command: leave the output as it is
            return out
        ran = [m for m in out.get(self._messages_key) or [] if isinstance(m, ToolMessage)]
        results: dict[str, ToolMessage] = {m.tool_call_id: m for m in ran}
        results.update(plan.replies)
        refused: list[str] = []
        if plan.finish:
            observed = _observed(runtime, [*input.get(self._messages_key, []), *ran])
            for call in plan.finish:
                message = _finish_result(call, observed)
                refused += [str(message.content)] if message.status == "error" else []
                results[str(call.get("id"))] = message
        messages: list[AnyMessage] = []
        if len(plan.kept) != len(ai.tool_calls):  # calls were left out: the reply without them
            messages.append(ai.model_copy(update={"tool_calls": plan.kept}))
        messages += [results[str(c.get("id"))] for c in plan.kept if str(c.get("id")) in results]
        # keyed by the tool node's messages key (a str), so a plain dict, not an update type
        update: dict[str, Any] = {self._messages_key: messages}
        diagnostics: Diagnostics = {}
        if plan.dropped:
            diagnostics["dropped_calls"] = plan.dropped
        if plan.repeated:
            diagnostics["repeated_calls"] = plan.repeated
        if refused:
            diagnostics["refused_finishes"] = [r[:300] for r in refused]
        if diagnostics:
            update["diagnostics"] = diagnostics
        return update


def _joined(out: Any, more: Any, messages_key: str) -> Any:
    """Two `ToolNode` outputs as one (a tool's `Command` output is left as it is)."""
    if not isinstance(out, dict) or not isinstance(more, dict):
        return more if isinstance(out, dict) and not out else out
    return {messages_key: [*(out.get(messages_key) or []), *(more.get(messages_key) or [])]}


def _observed(runtime: Runtime, messages: Sequence[Any]) -> dict[str, str]:
    """Passage id -> title and text of every passage a tool returned in `messages` (the ids in
    the results' artifacts), read from the run's index."""
    ids: list[str] = []
    for message in messages:
        if isinstance(message, ToolMessage) and isinstance(message.artifact, dict):
            ids.extend(str(p) for p in message.artifact.get("passage_ids") or [])
    if not ids:
        return {}
    index = resolve_index(runtime.context)
    out: dict[str, str] = {}
    for pid in dict.fromkeys(ids):
        if pid in index:
            passage = index.get(pid)
            out[pid] = f"{passage.title}\n{passage.text}"
    return out


def _finish_result(call: ToolCall, observed: dict[str, str]) -> ToolMessage:
    """A finish call's result: the verdict of `check_finish` on the passages observed."""
    args = call.get("args") or {}
    cited = args.get("passage_ids") or []
    cited = [str(p) for p in (cited if isinstance(cited, list) else [cited])]
    verdict = check_finish(str(args.get("answer") or ""), cited, observed)
    call_id = str(call.get("id"))
    if not verdict.accepted:
        return ToolMessage(verdict.reason, name=call["name"], tool_call_id=call_id, status="error")
    ids = ", ".join(verdict.passage_ids) or "none"
    text = f"Answer accepted: {verdict.answer or '(none)'} (passages: {ids})"
    return ToolMessage(text, name=call["name"], tool_call_id=call_id, artifact=verdict.artifact())
