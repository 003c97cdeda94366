"""The Librarian as a tool-calling agent: `dual_agent`'s `ask_librarian` node (a subgraph run
once per sub-question, in parallel through `Send`).

    search_evidence → act (ToolNode) → search_evidence … → draft_answer

- `search_evidence`: the Librarian decides its next tool calls. With a tool-calling model, the
  model (search tools and `finish` bound: `graphseek.tools.librarian_tools`) reads the question
  and its searches so far; it stops early by calling `finish` with the answer and the passage ids that
  state it. The offline Librarian, and a model that cannot call tools (noted in the
  diagnostics), emit one `context_search` call: the run's configured retrieval (the context's
  retriever, or the HiGraRetriever's relations and passages with ``retriever="higra"``).
- `act`: a `ToolNode` runs the calls; the tools read the index from the runtime context. Tool
  errors come back as ToolMessages. At most `MAX_SEARCHES` rounds of searching, and
  `graphseek.graphs.tool_loop`'s bounds: at most `max_tool_calls_per_reply` calls a reply, a
  repeated call answered with its earlier result, `finish` taken after the other calls and
  accepted only when its answer occurs in passages the searches returned (a refusal is a tool
  result the model reads before its next step). Two rounds in a row that found no new passage
  end the search (`diagnostics.no_progress_stop`).
- `draft_answer`: the answer of an accepted `finish` call, grounded on the passages found;
  otherwise the Librarian policy drafts from them (the offline reasoner, or the model's JSON
  reply).

The routing is a conditional edge on the last message's tool calls (`route_librarian`). The
messages (tool calls and results) are written to the parent state, so they show in Studio.
"""

from __future__ import annotations

import hashlib
import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graphseek.agents.graph_librarian import LLMGraphLibrarian
from graphseek.agents.librarian import LibrarianReply, ground_reply
from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.registry import get_roles
from graphseek.agents.structured_role import offline_policy
from graphseek.agents.tool_calling import (
    FinishVerdict,
    ToolsUnsupportedError,
    accepted_finish,
    check_finish,
    rounds_without_new_passages,
)
from graphseek.errors import LLMError
from graphseek.graphs.higra_retriever import graph_draft
from graphseek.graphs.tool_loop import GuardedToolNode
from graphseek.knowledge.passages import Hit
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem, Usage
from graphseek.state.reducers import add_usage, append_unique, dedupe_evidence, merge_dicts
from graphseek.state.schema import Diagnostics, LibrarianTask
from graphseek.tools.lc_tools import FINISH
from graphseek.tools.librarian_tools import librarian_tools
from graphseek.tools.retrievers import resolve_index

#: rounds of tool calls a Librarian makes at most before it drafts
MAX_SEARCHES = 3
#: rounds of tool calls in a row without a new passage that end the search
NO_PROGRESS_ROUNDS = 2


class LibrarianOutput(TypedDict):
    """What a Librarian run gives back to the parent graph (same keys and reducers as
    `graphseek.state.schema.DualAgentState`)."""

    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    drafts: NotRequired[Annotated[list[Draft], operator.add]]
    usage: NotRequired[Annotated[Usage, add_usage]]
    trace: NotRequired[Annotated[list[str], operator.add]]
    query_history: NotRequired[Annotated[list[str], append_unique]]
    retrieved_ids: NotRequired[Annotated[list[str], append_unique]]
    step_answers: NotRequired[Annotated[dict[str, Any], merge_dicts]]
    graph_context: NotRequired[Annotated[list[str], append_unique]]
    diagnostics: NotRequired[Annotated[Diagnostics, merge_dicts]]


class LibrarianState(LibrarianTask, LibrarianOutput):
    """One Librarian run: its sub-question, the updates it returns to the parent, and what its
    searches found."""

    found: NotRequired[Annotated[list[EvidenceItem], dedupe_evidence]]
    searches: NotRequired[int]


class LibrarianUpdate(TypedDict, total=False):
    """What a Librarian node returns: a partial `LibrarianState`."""

    messages: list[AnyMessage]
    drafts: list[Draft]
    usage: Usage
    trace: list[str]
    query_history: list[str]
    retrieved_ids: list[str]
    step_answers: dict[str, Any]
    graph_context: list[str]
    diagnostics: Diagnostics
    found: list[EvidenceItem]
    searches: int


def _last_ai(messages: list[AnyMessage]) -> AIMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)


def _observed(state: LibrarianState, runtime: Runtime[Context]) -> LibrarianUpdate:
    """The update from the tool results after the last model message: passages found (with
    their scores), graph lines, notes, and the usage of the retrieval itself."""
    index = resolve_index(runtime.context)
    results: list[ToolMessage] = []
    for message in reversed(list(state.get("messages", []))):
        if isinstance(message, AIMessage):
            break
        if isinstance(message, ToolMessage):
            results.append(message)
    found: list[EvidenceItem] = []
    lines: list[str] = []
    notes: list[str] = []
    usage = Usage()
    for message in reversed(results):
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        if message.status == "error" or not artifact:
            if message.status == "error":
                notes.append(f"librarian tool {message.name}: {str(message.content)[:200]}")
            continue
        scores = list(artifact.get("scores") or [])
        for i, pid in enumerate(artifact.get("passage_ids") or []):
            if pid in index:
                score = float(scores[i]) if i < len(scores) else 0.0
                found.append(to_evidence(Hit(passage=index.get(pid), score=score, rank=i + 1)))
        lines.extend(artifact.get("lines") or [])
        if artifact.get("note"):
            notes.append(str(artifact["note"]))
        if isinstance(artifact.get("usage"), dict):
            usage = usage + Usage(**artifact["usage"])
    update: LibrarianUpdate = {}
    if found:
        update["found"] = found
        update["retrieved_ids"] = [e.passage_id for e in found]
    if lines:
        update["graph_context"] = lines
    if notes:
        update["diagnostics"] = {"notes": notes}
    if usage.llm_calls:
        update["usage"] = usage
    return update


def search_evidence(state: LibrarianState, runtime: Runtime[Context]) -> LibrarianUpdate:
    """The Librarian's next tool calls (or none: time to draft)."""
    ctx = runtime.context
    question = state["question"]
    searches = state.get("searches", 0)
    update = _observed(state, runtime)
    if searches == 0:
        update["query_history"] = [question]
    if searches >= MAX_SEARCHES:
        return update
    messages = list(state.get("messages", []))
    if accepted_finish(messages) is not None:  # a finish taken after its reply's searches
        return update
    stale = rounds_without_new_passages(messages)
    if stale >= NO_PROGRESS_ROUNDS:
        why = f"{stale} rounds of librarian tool calls in a row found no new passage"
        diagnostics = update.setdefault("diagnostics", {})
        diagnostics["no_progress_stop"] = why
        diagnostics.setdefault("notes", []).append(f"librarian: {why}; drafting from what it read")
        return update
    librarian = get_roles(ctx).graph_librarian
    if isinstance(librarian, LLMGraphLibrarian):
        try:
            step = librarian.call_tools(question, messages, librarian_tools())
        except ToolsUnsupportedError as exc:
            note = f"librarian: {exc}; the JSON path is used instead"
            update.setdefault("diagnostics", {}).setdefault("notes", []).append(note)
            if exc.usage.llm_calls:  # the refused request is charged
                update["usage"] = update.get("usage", Usage()) + exc.usage
        except LLMError as exc:
            if offline_policy(librarian, exc) is None:
                errors = [f"librarian: {exc}"]
                return update | {"usage": error_usage(exc), "diagnostics": {"errors": errors}}
            # on_model_failure="offline": the offline Librarian's step (its one search)
            update["usage"] = update.get("usage", Usage()) + error_usage(exc)
        else:
            usage = update.get("usage", Usage()) + step.usage
            return update | {"messages": [step.value], "searches": searches + 1, "usage": usage}
    if searches:
        return update  # the offline Librarian searches once, with the run's retrieval
    digest = hashlib.sha1(question.encode()).hexdigest()[:8]  # deterministic, distinct per question
    call = {"name": "context_search", "args": {"query": question}, "type": "tool_call",
            "id": f"librarian-{state.get('step_id') or 0}-{digest}"}  # fmt: skip
    return update | {"messages": [AIMessage(content="", tool_calls=[call])], "searches": 1}


def route_librarian(state: LibrarianState) -> Literal["act", "draft_answer"]:
    """Tool calls are run; a `finish` alone that the passages found ground ends the search, one
    beside other calls, or one refused, is run too (taken last where the calls run, a refusal
    answered with its reason); no new call (the search budget spent, a finish accepted, no
    progress), no call, or a failure go to the draft."""
    if state.get("diagnostics", {}).get("errors"):
        return "draft_answer"
    messages = list(state.get("messages", []))
    last = messages[-1] if messages else None
    # no new request (the newest message is a tool result), or no tool call: draft
    if not isinstance(last, AIMessage) or not last.tool_calls:
        return "draft_answer"
    if _finish_alone(last, list(state.get("found", []))) is not None:
        return "draft_answer"
    return "act"


def _finish_alone(message: AIMessage | None, found: list[EvidenceItem]) -> FinishVerdict | None:
    """The verdict on a reply that only calls `finish`, when the passages found accept it."""
    calls = list(message.tool_calls) if message is not None else []
    if not calls or any(c["name"] != FINISH for c in calls):
        return None
    args = calls[-1].get("args") or {}
    cited = args.get("passage_ids") or []
    cited = [str(p) for p in (cited if isinstance(cited, list) else [cited])]
    observed = {e.passage_id: f"{e.title}\n{e.text}" for e in found}
    verdict = check_finish(str(args.get("answer") or ""), cited, observed)
    return verdict if verdict.accepted else None


def _finish_draft(question: str, call: Any, verdict: FinishVerdict, hits: list[Hit]) -> Draft:
    """The draft of an accepted `finish` call: its answer, on the passages that state it."""
    args = call.get("args") or {} if call is not None else {}
    answer = verdict.answer
    try:
        confidence = float(args.get("confidence", 0.8))
    except (TypeError, ValueError):
        confidence = 0.8
    reply = LibrarianReply(
        reasoning=str(args.get("reason") or ""),
        answer=answer,
        candidates=[str(c) for c in args.get("candidates") or []],
        passage_ids=list(verdict.passage_ids),
        confidence=min(1.0, max(0.0, confidence)) if answer else 0.0,
    )
    return ground_reply(question, reply, hits)


def draft_answer(state: LibrarianState, runtime: Runtime[Context]) -> LibrarianUpdate:
    """The draft: a `finish` call's answer grounded on the passages found, or the Librarian
    policy's draft from them (the graph relations as extra context)."""
    question = state["question"]
    step_id = state.get("step_id")
    found = list(state.get("found", []))
    hits = [Hit(passage=_passage(e), score=e.score, rank=i) for i, e in enumerate(found, 1)]
    messages = list(state.get("messages", []))
    last = _last_ai(messages)
    finish_call = next((c for c in (last.tool_calls if last else []) if c["name"] == FINISH), None)
    verdict = accepted_finish(messages) or _finish_alone(last, found)
    errors = state.get("diagnostics", {}).get("errors") or []
    update: LibrarianUpdate = {"trace": ["ask_librarian"]}
    if errors:
        cause = str(errors[-1]).removeprefix("librarian: ")
        draft = Draft(question=question, answer="", step_id=step_id, error=cause)
    elif verdict is not None:
        draft = _finish_draft(question, finish_call, verdict, hits).model_copy(
            update={"step_id": step_id, "question": question}
        )
    else:
        lines = list(state.get("graph_context", []))
        draft, usage, error = graph_draft(question, hits, lines, runtime, step_id)
        update["usage"] = usage
        if error:
            draft = draft.model_copy(update={"error": error})
            update["diagnostics"] = {"errors": [f"librarian: {error}"]}
    update["drafts"] = [draft]
    if step_id is not None and draft.answer:
        update["step_answers"] = {str(step_id): draft.answer}
    return update


def _passage(item: EvidenceItem) -> Any:
    from graphseek.knowledge.passages import Passage

    return Passage(id=item.passage_id, title=item.title, text=item.text)


def build_librarian_agent() -> StateGraph[LibrarianState, Context, LibrarianTask, LibrarianOutput]:
    builder = StateGraph(
        LibrarianState,
        input_schema=LibrarianTask,
        output_schema=LibrarianOutput,
        context_schema=Context,
    )
    builder.add_node(search_evidence)
    builder.add_node("act", GuardedToolNode(librarian_tools(), finish=[FINISH]))
    builder.add_node(draft_answer)
    builder.add_edge(START, "search_evidence")
    builder.add_conditional_edges("search_evidence", route_librarian, ["act", "draft_answer"])
    builder.add_edge("act", "search_evidence")
    builder.add_edge("draft_answer", END)
    return builder


librarian_agent = build_librarian_agent().compile(name="librarian")
