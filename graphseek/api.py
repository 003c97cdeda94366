"""The Python API: `ask(index, question, topology=..., llm=...) -> Result`."""

from __future__ import annotations

import dataclasses
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from graphseek.errors import IndexChangedError, LLMError
from graphseek.graphs import build_workflow, check_topology, checkpointer_for, get_workflow
from graphseek.knowledge.postgres.connection import is_disconnect
from graphseek.llm.budget import BudgetGuard, guard_for
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage
from graphseek.state.validation import (  # re-exported: the API's checks live there
    MAX_QUESTION_CHARS,
    MAX_QUESTION_ENV,
    check_name,
    check_question,
    max_question_chars,
)

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

__all__ = [
    "MAX_QUESTION_CHARS",
    "MAX_QUESTION_ENV",
    "Result",
    "ask",
    "check_question",
    "check_settings",
    "make_context",
    "max_question_chars",
    "public_usage",
]


class Result(BaseModel):
    """A workflow's answer with the passages that ground it, its trace and its cost."""

    question: str
    topology: str
    answer: str = ""
    abstained: bool = True
    abstain_reason: str = ""
    evidence: list[EvidenceItem] = Field(default_factory=list)
    trace: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    diagnostics: dict[str, Any] = Field(default_factory=dict)
    retrieved_ids: list[str] = Field(default_factory=list)

    def to_public_dict(self) -> dict[str, Any]:
        """The CLI's `--json` object (`abstain_reason` is "" when the run answered). `evidence` is
        never empty when the run retrieved anything: an answer's grounding (`supports_answer`
        true where the passage holds the answer), or for an abstention the passages most likely
        to hold the answer, best first, each with its sentence most likely to hold the answer,
        that sentence's `context` (its neighbours) and the candidate `span` marked where there
        is one."""
        return {
            "answer": self.answer,
            "abstained": self.abstained,
            "abstain_reason": self.abstain_reason if self.abstained else "",
            "evidence": [
                {
                    "passage_id": e.passage_id,
                    "title": e.title,
                    "sentence": e.sentence,
                    "context": e.context,
                    "span": e.span,
                    "supports_answer": e.supports_answer,
                    "text": e.text,
                }
                for e in self.evidence
            ],
            "trace": self.trace,
            "usage": public_usage(self.usage),
            "diagnostics": self.diagnostics,
        }


def public_usage(usage: Usage) -> dict[str, Any]:
    """The `usage` object of the `--json` output."""
    return {
        "llm_calls": usage.llm_calls,
        "failed_calls": usage.failed_calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "tokens_estimated": usage.tokens_estimated,
        "estimated_calls": usage.estimated_calls,
        "llm_seconds": round(usage.llm_seconds, 3),
        "seconds": round(usage.seconds, 3),
    }


def _as_index(index: IndexStore | str | Path) -> IndexStore:
    if isinstance(index, (str, Path)):
        from graphseek.knowledge.index import Index

        return Index.open(index)
    return index


def _reopened(index: IndexStore) -> IndexStore:
    """The version now at an index's directory (`IndexChangedError` said it was replaced)."""
    from graphseek.knowledge.index import Index

    return Index.open(index.location_text, graph_reads=index.graph_reads)


def _resumed(workflow: Any, text: str, context: Context, config: dict[str, Any]) -> dict[str, Any]:
    """The output of a checkpointed run whose database connection dropped: once the server
    answers again (`reconnecting`: for a while, then `DatabaseUnavailableError`), its thread
    goes on from its last checkpoint (each step's was written before the next began,
    ``durability="sync"``, and the results of the tasks that finished are not run again), or
    starts again if none was written; a thread that had ended gives its output again without
    running. The thread ends once."""
    from graphseek.knowledge.postgres.connection import reconnecting

    where = getattr(getattr(context.index, "location", None), "display", "the checkpoint database")

    def go_on() -> dict[str, Any]:
        # (`next` may read as empty mid-run: the tasks of the failed step wrote their results)
        written = workflow.get_state(config).values
        return workflow.invoke(  # type: ignore[no-any-return]
            None if written else {"question": text},
            context=context,
            config=config,
            durability="sync",
        )

    return reconnecting(where, go_on)


_SETTINGS = [f.name for f in dataclasses.fields(Context) if f.name not in ("index", "llm")]


def check_settings(topology: str = "dual_agent", llm: Any = None, **settings: Any) -> None:
    """Validate a run's arguments before anything heavy loads, with the checks every run makes
    (`graphseek.state.validation`): the topology, the setting names, the retriever, then the
    `Context` the settings make (budgets, profile, mode, ...). Raises `UnknownTopologyError`
    or a `ValueError` (`InvalidRequestError`, `ContextError`) naming the bad argument and the
    closest known names. Settings left as None are not checked."""
    from graphseek.tools.retrievers import check_retriever

    check_topology(topology)
    given = {k: v for k, v in settings.items() if v is not None and k not in ("index", "llm")}
    for name in given:
        check_name("setting", name, _SETTINGS)
    if "retriever" in given:
        check_retriever(given["retriever"])
    Context(**given)
    if llm is not None or os.environ.get("GRAPHSEEK_LLM", "").strip():
        from graphseek.llm.factory import resolve_spec  # imports langchain: only when needed

        resolve_spec(llm, "default")


def make_context(
    index: IndexStore | str | Path | None = None, llm: Any = None, **settings: Any
) -> Context:
    """A `Context` from keyword settings, ignoring those left as None."""
    clean = {k: v for k, v in settings.items() if v is not None}
    return Context(index=_as_index(index) if index is not None else None, llm=llm, **clean)


def ask(
    index: IndexStore | str | Path,
    question: str,
    topology: str = "dual_agent",
    llm: Any = None,
    *,
    retriever: str | None = None,
    agents: int | None = None,
    mode: str | None = None,
    max_question_chars: int | None = None,
    thread_id: str | None = None,
    checkpointer: Any = None,
    **settings: Any,
) -> Result:
    """Answer `question` over `index` (an `Index` or its directory) with a named topology.

    `llm` is a model spec ("offline", "openai:gpt-4o-mini"), a mapping role -> spec, a chat model,
    or None (the `GRAPHSEEK_LLM` environment variable, else the offline reasoner). Other keyword
    settings (`top_k`, `max_turns`, `max_llm_calls`, …) go to the runtime `Context`.
    Every argument is checked before anything loads (`check_question`, `check_settings`); a
    question longer than `max_question_chars` (default `MAX_QUESTION_CHARS`, or
    $GRAPHSEEK_MAX_QUESTION_CHARS) is refused.

    Checkpoints: over an index stored in PostgreSQL the run checkpoints to the same database
    with LangGraph's `PostgresSaver` (`graphseek.graphs.checkpointer_for`); elsewhere only when a
    `checkpointer` is given. `thread_id` (default: a new one) names the thread; it is returned
    in `diagnostics["thread_id"]`.
    """
    text = check_question(question, max_question_chars)
    check_settings(topology, llm, retriever=retriever, agents=agents, mode=mode, **settings)
    workflow = get_workflow(topology)
    context = make_context(
        index,
        llm,
        retriever=retriever,
        agents=agents,
        mode=mode,
        max_question_chars=max_question_chars,
        **settings,
    )
    config: dict[str, Any] = {"recursion_limit": 200}
    saver = checkpointer if checkpointer is not None else checkpointer_for(context.index)
    if saver is not None:
        workflow = build_workflow(topology).compile(checkpointer=saver)
        thread_id = thread_id or uuid.uuid4().hex
        config["configurable"] = {"thread_id": thread_id}
    # every model call of the run reports to the run's guard, which refuses calls past the
    # budgets (the nodes find the same guard through the runtime context)
    guard = guard_for(context) or BudgetGuard(context.max_llm_calls, context.max_tokens)
    # a checkpointed run writes each step's checkpoint before the next step starts, so a
    # process killed mid-run leaves a thread that resumes from its last step (LangGraph's
    # default, "async", can lose the last steps, and left a thread that read as ended)
    durability = "sync" if saver is not None else None
    start = time.perf_counter()
    try:
        try:
            out = workflow.invoke(
                {"question": text},
                context=context,
                config={**config, "callbacks": [guard]},
                durability=durability,
            )
        except IndexChangedError:
            # a writer swapped a new version of the directory in before the run read all of
            # it: the run read nothing of the new one; answer again over the new version
            if saver is not None:
                raise
            assert context.index is not None  # make_context opened it
            context = dataclasses.replace(context, index=_reopened(context.index))
            out = workflow.invoke(
                {"question": text},
                context=context,
                config={**config, "callbacks": [guard]},
                durability=durability,
            )
        except Exception as exc:
            if saver is None or not is_disconnect(exc):
                raise
            # the checkpoint database dropped the connection (a server restart): go on from
            # the thread's last checkpoint once it answers again
            out = _resumed(workflow, text, context, {**config, "callbacks": [guard]})
    except LLMError as exc:  # a model failure no node turned into an abstention
        out = {
            "abstained": True,
            "abstain_reason": f"model call failed: {exc}",
            "diagnostics": {"errors": [f"{exc.kind}: {exc}"]},
        }
    seconds = time.perf_counter() - start
    state_usage = out.get("usage") or Usage()
    # the guard saw every call of the run, failed and parallel ones included
    usage = guard.usage if guard.usage.llm_calls >= state_usage.llm_calls else state_usage
    diagnostics = dict(out.get("diagnostics", {}))
    if guard.refused:
        diagnostics["budget_refusals"] = guard.refused
    if saver is not None:
        diagnostics["thread_id"] = thread_id
    return Result(
        question=question,
        topology=topology,
        answer=out.get("answer", ""),
        abstained=bool(out.get("abstained", not out.get("answer"))),
        abstain_reason=out.get("abstain_reason", ""),
        evidence=out.get("evidence", []),
        trace=out.get("trace", []),
        usage=usage.model_copy(update={"seconds": seconds}),
        diagnostics=diagnostics,
        retrieved_ids=out.get("retrieved_ids", []),
    )
