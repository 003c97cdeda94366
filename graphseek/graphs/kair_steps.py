"""What every KAIR agent of `knowledge_aware` shares, the single agent and the suggesters alike:
its search as tool calls, and the knowledge update.

- The actions (`kair_tools()`, in `graphseek.tools.kair_tools`): `search_gap(query, gap_ids)`
  searches with the agent's retriever (`suggester_retriever`) and refuses a query already in
  the agent's history (a `ToolException`, so the `ToolNode` returns it as an error
  `ToolMessage` the planner can react to); the graph tools (entity search, neighbours, PPR
  expansion, passage search); `stop_searching`.
- `next_search`: the agent's next tool calls. A tool-calling planner model is called with the
  tools bound (`LLMPlanner.call_tools`); the offline planner, and a model that cannot call tools
  (noted), plan a query that is not a repeat (`plan_new_query`) and emit it as the same
  `search_gap` call, with a deterministic id.
- `kair_tool_node()`: the `ToolNode` that runs them, with `graphseek.graphs.tool_loop`'s bounds
  (at most `max_tool_calls_per_reply` calls a reply; a call identical to one already run is
  answered with its earlier result).
- `no_progress`: a model planner whose last rounds of calls found no new passage is stopped
  (two in a row: the same calls again, answered with their earlier results).
- `read_results`: the passages, queries and gap ids of the tool results (D_add), the notes of
  failed tools and the refused repeats.
- `update_from_hits`: the knowledge updater, keeping only what KAIR eq. 5 lets in.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage

from graphseek.agents.kair import AcceptedUpdate, accept_update
from graphseek.agents.planner import LLMPlanner
from graphseek.agents.registry import Roles
from graphseek.agents.roles import KnowledgeView, Planner, QueryPlan
from graphseek.agents.structured_role import offline_policy
from graphseek.agents.tool_calling import ToolsUnsupportedError, rounds_without_new_passages
from graphseek.errors import LLMError
from graphseek.graphs.tool_loop import GuardedToolNode
from graphseek.knowledge.passages import Hit
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage
from graphseek.tools.kair_tools import SEARCH_GAP, STOP, kair_tools
from graphseek.tools.kair_tools import SUGGESTER_RETRIEVERS as SUGGESTER_RETRIEVERS  # re-export
from graphseek.tools.kair_tools import suggester_retriever as suggester_retriever  # re-export
from graphseek.tools.query_history import is_repeat
from graphseek.tools.retrievers import resolve_index

log = logging.getLogger(__name__)

#: tool calls an agent makes at most in one round (a failed call may be followed by another)
MAX_SEARCHES = 3
#: rounds of tool calls in a row without a new passage that stop a model planner
NO_PROGRESS_ROUNDS = 2


def kair_tool_node() -> GuardedToolNode:
    """The node that runs a KAIR agent's calls (`kair_tools`), bounded (see the module
    docstring)."""
    return GuardedToolNode(kair_tools())


# -- deciding and reading a search ------------------------------------------------------------


@dataclass
class SearchStep:
    """An agent's decision: the message with its tool calls (a plain message: no search), what
    it cost, notes (the JSON path taken), repeats the JSON planner was turned away from, the
    plan's reason, and the failure that stopped it (None when it decided)."""

    message: AIMessage | None = None
    usage: Usage = field(default_factory=Usage)
    notes: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    reason: str = ""
    error: LLMError | None = None

    @property
    def searches(self) -> bool:
        """Whether the message calls a tool other than `stop_searching`."""
        calls = self.message.tool_calls if self.message is not None else []
        return any(c["name"] != STOP for c in calls)


def next_search(
    planner: Planner,
    view: KnowledgeView,
    messages: Sequence[BaseMessage],
    attempts: int,
    call_id: str,
    label: str = "planner",
) -> SearchStep:
    """The agent's next tool calls (see the module docstring). `messages` are the agent's
    calls and results so far this round; `call_id` prefixes the id of an emitted call."""
    step = SearchStep()
    if isinstance(planner, LLMPlanner):
        try:
            reply = planner.call_tools(view, messages, kair_tools())
        except ToolsUnsupportedError as exc:
            step.notes.append(f"{label}: {exc}; the JSON path is used instead")
            step.usage = exc.usage  # a request the server refused for its tools is charged
        except LLMError as exc:
            offline = offline_policy(planner, exc)
            if offline is None:
                return SearchStep(usage=error_usage(exc), reason=f"{label}: {exc}", error=exc)
            # on_model_failure="offline": the offline planner plans this round's search
            step.usage, planner = error_usage(exc), offline
        else:
            stop = [c for c in reply.value.tool_calls if c["name"] == STOP]
            reason = str((stop[0].get("args") or {}).get("reason") or "") if stop else ""
            text = reason or str(reply.value.text or "")[:300]
            return SearchStep(message=reply.value, usage=reply.usage, reason=text)
    try:
        plan, usage, rejected = plan_new_query(planner, view, attempts)
    except LLMError as exc:
        step.usage = step.usage + error_usage(exc)
        step.reason, step.error = f"{label}: {exc}", exc
        return step
    step.usage, step.rejected, step.reason = step.usage + usage, rejected, plan.reason
    if not plan.query:
        step.message = AIMessage(content=plan.reason or "no new query")
        return step
    digest = hashlib.sha1(plan.query.encode()).hexdigest()[:8]  # deterministic, distinct
    args = {"query": plan.query, "gap_ids": list(plan.gap_ids)}
    call = {"name": SEARCH_GAP, "args": args, "id": f"{call_id}-{digest}", "type": "tool_call"}
    step.message = AIMessage(content=plan.reason, tool_calls=[call])  # type: ignore[list-item]
    return step


def no_progress(planner: Planner, messages: Sequence[AnyMessage]) -> str:
    """Why a tool-calling model planner is stopped (empty when it goes on): its last
    `NO_PROGRESS_ROUNDS` rounds of calls in a row ran no new call and found no new passage (a
    search of a new query is progress in KAIR: it joins the query history). The offline
    planner plans a new query each round and is never stopped here."""
    if not isinstance(planner, LLMPlanner):
        return ""
    stale = rounds_without_new_passages(messages, ran_counts=True)
    if stale < NO_PROGRESS_ROUNDS:
        return ""
    return f"{stale} rounds of tool calls in a row ran no new call and found no new passage"


def round_messages(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The messages of the current round: those after the last successful tool result (a
    round's search ends with one; the calls refused before it are part of the round)."""
    out: list[AnyMessage] = []
    for message in reversed(list(messages)):
        if isinstance(message, ToolMessage) and message.status != "error":
            break
        out.append(message)
    return out[::-1]


def current_round(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """The current round's messages once its last tool calls have run: the calls refused
    before them, the last model message and its results."""
    msgs = list(messages)
    last = max((i for i, m in enumerate(msgs) if isinstance(m, AIMessage)), default=None)
    if last is None:
        return round_messages(msgs)
    return [*round_messages(msgs[:last]), *msgs[last:]]


def last_results(messages: Sequence[AnyMessage]) -> tuple[AIMessage | None, list[ToolMessage]]:
    """The last model message and the tool results after it."""
    results: list[ToolMessage] = []
    for message in reversed(list(messages)):
        if isinstance(message, ToolMessage):
            results.append(message)
        elif isinstance(message, AIMessage):
            return message, results[::-1]
    return None, results[::-1]


def searches_failed(messages: Sequence[AnyMessage]) -> bool:
    """Whether every result of the last tool calls is an error."""
    _, results = last_results(messages)
    return bool(results) and all(r.status == "error" for r in results)


def searches_made(messages: Sequence[AnyMessage]) -> int:
    """Model messages with tool calls in the current round."""
    return sum(1 for m in round_messages(messages) if isinstance(m, AIMessage) and m.tool_calls)


@dataclass
class SearchResults:
    """What the last tool calls found: passages (best first, once each), the queries searched,
    the gap ids they served, notes (tool errors), and repeated queries the tools refused."""

    hits: list[Hit] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    gap_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def read_results(messages: Sequence[AnyMessage], context: Context) -> SearchResults:
    """The `SearchResults` of the current round's tool calls."""
    index = resolve_index(context)
    out = SearchResults()
    calls: dict[str, Any] = {}
    seen: set[str] = set()
    for message in current_round(messages):
        if isinstance(message, AIMessage):
            calls.update({str(c["id"]): c for c in message.tool_calls})
            continue
        if not isinstance(message, ToolMessage):
            continue
        call = calls.get(message.tool_call_id)
        args = dict(call.get("args") or {}) if call else {}
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        if message.status == "error":
            content = str(message.content)
            if message.name == SEARCH_GAP and "already searched" in content:
                out.rejected.append(" ".join(str(args.get("query") or "").split()))
            else:
                out.notes.append(f"{message.name}: {content[:200]}")
            continue
        if not artifact:  # no retrieval result (e.g. stop_searching's echo)
            continue
        # a search that found nothing still counts as searched: the planner reformulates
        query = str(artifact.get("query") or args.get("query") or args.get("entity") or "")
        if not query and args.get("entities"):
            query = ", ".join(str(e) for e in args["entities"])
        if query.strip():
            out.queries.append(" ".join(query.split()))
        out.gap_ids.extend(str(g) for g in artifact.get("gap_ids") or args.get("gap_ids") or [])
        scores = list(artifact.get("scores") or [])
        for i, pid in enumerate(artifact.get("passage_ids") or []):
            if pid in seen or pid not in index:
                continue
            seen.add(pid)
            score = float(scores[i]) if i < len(scores) else 0.0
            out.hits.append(Hit(passage=index.get(pid), score=score, rank=len(out.hits) + 1))
    out.queries = list(dict.fromkeys(out.queries))
    out.gap_ids = list(dict.fromkeys(out.gap_ids))
    return out


def plan_new_query(
    planner: Planner, view: KnowledgeView, attempts: int
) -> tuple[QueryPlan, Usage, list[str]]:
    """Ask the planner for a query not in the history; a repeat is rejected and the planner asked
    again with the rejected queries listed, `attempts` times at most. Returns the plan (an empty
    query when none is new), the usage, and the rejected queries.

    The run's budget guard checks every planner call before it is sent (a spent budget raises
    `BudgetExceededError`); a failed call raises its `LLMError` carrying the usage of every call
    made here."""
    usage = Usage()
    rejected: list[str] = []
    for _ in range(max(1, attempts)):
        try:
            step = planner.plan(view, tuple(rejected))
        except LLMError as exc:
            exc.usage = usage + error_usage(exc)
            raise
        usage = usage + step.usage
        query = " ".join(step.value.query.split())
        if not query:
            return step.value, usage, rejected
        if is_repeat(query, [*view.query_history, *rejected]):
            rejected.append(query)
            continue
        return replace(step.value, query=query), usage, rejected
    reason = f"every proposed query was already searched ({'; '.join(rejected)})"
    return QueryPlan(query="", reason=reason), usage, rejected


def _shown_passages(hits: Sequence[Hit], context: Sequence[EvidenceItem]) -> dict[str, str]:
    """Passage id -> whole text of what a knowledge update sees: new hits and the context."""
    shown = {h.passage.id: h.passage.text for h in hits}
    for item in context:
        shown.setdefault(item.passage_id, item.text)
    return shown


def update_from_hits(
    roles: Roles, view: KnowledgeView, plan: QueryPlan, hits: Sequence[Hit]
) -> tuple[AcceptedUpdate, Usage, str | None]:
    """Run the knowledge updater and keep what KAIR eq. 5 lets in."""
    try:
        step = roles.knowledge_updater.update(view, plan, hits)
    except LLMError as exc:
        log.warning("knowledge updater failed on %r: %s", plan.query, exc)
        return AcceptedUpdate(), error_usage(exc), f"knowledge updater: {exc}"
    shown = _shown_passages(hits, view.refined_context)
    return accept_update(view.required, step.value, shown), step.usage, None
