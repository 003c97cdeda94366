"""The `ToolNode` of the agentic topologies (`react`'s and the Librarian's `act`, `knowledge_aware`'s
`retrieve_documents` and its suggesters' `act`), with the bounds a weak model needs
(`graphseek.agents.tool_calling.plan_calls`):

- at most ``context.max_tool_calls_per_reply`` calls of a reply run; the rest, and a call made
  twice in one reply, are left out of the reply (the model message is rewritten in place, so
  every call in the conversation has its result) and named in ``diagnostics.dropped_calls``;
- a call identical to one that already ran this run is not run again: its earlier result comes
  back with the note "already called; result repeated" (``diagnostics.repeated_calls``);
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
from langgraph.runtime import Runtime

from graphseek.agents.tool_calling import CallPlan, check_finish, plan_calls, tool_schemas
from graphseek.tools.retrievers import resolve_index

#: calls of one reply that run, when the context does not say
DEFAULT_MAX_CALLS = 3


class GuardedToolNode(ToolNode):
    """A `ToolNode` (tool errors returned as error results) that runs a reply's calls through
    `plan_calls` and checks its `finish` calls (see the module docstring)."""

    def __init__(
        self, tools: Sequence[Any], *, finish: Sequence[str] = (), name: str = "tools"
    ) -> None:
        super().__init__(list(tools), handle_tool_errors=True, name=name)
        self._finish_names = tuple(finish)
        self._schemas = tool_schemas(tools)

    def _prepare(self, input: Any, runtime: Runtime) -> tuple[Any, AIMessage, CallPlan] | None:
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
        trimmed = ai.model_copy(update={"tool_calls": plan.run})
        return {**input, self._messages_key: [*messages[:last], trimmed]}, ai, plan

    def _func(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        prepared = self._prepare(input, runtime)
        if prepared is None:
            return super()._func(input, config, runtime)
        trimmed, ai, plan = prepared
        out = super()._func(trimmed, config, runtime) if plan.run else {}
        return self._assemble(input, ai, plan, out, runtime)

    async def _afunc(self, input: Any, config: RunnableConfig, runtime: Runtime) -> Any:
        prepared = self._prepare(input, runtime)
        if prepared is None:
            return await super()._afunc(input, config, runtime)
        trimmed, ai, plan = prepared
        out = await super()._afunc(trimmed, config, runtime) if plan.run else {}
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
        update: dict[str, Any] = {self._messages_key: messages}
        diagnostics: dict[str, Any] = {}
        if plan.dropped:
            diagnostics["dropped_calls"] = plan.dropped
        if plan.repeated:
            diagnostics["repeated_calls"] = plan.repeated
        if refused:
            diagnostics["refused_finishes"] = [r[:300] for r in refused]
        if diagnostics:
            update["diagnostics"] = diagnostics
        return update


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
