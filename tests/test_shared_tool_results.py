"""The run's record of tool results (`graphseek.state.run_scope.CallRecord`, used by
`graphseek.graphs.tool_loop.GuardedToolNode`): a call identical to one made anywhere in the run
(a parallel Librarian, a later Seeker round) is answered with the earlier result, not run again."""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

import graphseek.tools.librarian_tools as librarian_tools
from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM
from graphseek.agents.prompts.librarian import LIBRARIAN_TOOLS_SYSTEM
from graphseek.agents.prompts.seeker import SEEKER_SYSTEM
from graphseek.agents.tool_calling import REPEAT_NOTE
from graphseek.graphs import get_workflow
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context
from graphseek.state.run_scope import CallRecord

QUESTION = "Who was Ada Lovelace's father, and where did he die?"
FIRST = "Who was Ada Lovelace's father?"
SECOND = "Where did Lord Byron die?"
THIRD = "In which war did Lord Byron fight?"
SHARED_QUERY = "Lord Byron"


def test_call_record_runs_a_key_once_across_threads():
    record = CallRecord()
    assert record.claim("k") == ("run", None)
    assert record.claim("k") == ("wait", None)
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(record.result("k", timeout=30)))
    waiter.start()
    record.settle("k", "result")
    waiter.join(30)
    assert got == ["result"]
    assert record.claim("k") == ("done", "result")
    # a call with nothing to share is released: the next claim runs it
    assert record.claim("e") == ("run", None)
    record.settle("e", None)
    assert record.result("e") is None and record.claim("e") == ("run", None)


def scripted_team() -> ScriptedChatModel:
    """Two independent sub-questions whose Librarians both search "Lord Byron" first, then a
    Seeker round with a third question whose Librarian searches it too, then the answer."""
    seeker_turns = iter(
        [
            {"reason": "one more", "action": "ask_librarian", "questions": [THIRD],
             "step_ids": [None]},
            {"reason": "known", "action": "answer", "answer": "Missolonghi",
             "evidence": ["byron"]},
        ]
    )  # fmt: skip

    def respond(messages: list[Any]) -> Any:
        system = messages[0].content
        if system == CLARIFIER_SYSTEM:
            return {"reason": "fine", "question": QUESTION}
        if system == DECOMPOSER_SYSTEM:
            return {
                "reason": "two independent questions",
                "sub_questions": [
                    {"id": 1, "question": FIRST, "depends_on": []},
                    {"id": 2, "question": SECOND, "depends_on": []},
                ],
            }
        if system == LIBRARIAN_TOOLS_SYSTEM:
            if not any(isinstance(m, ToolMessage) for m in messages):
                call = {"name": "context_search", "args": {"query": SHARED_QUERY}, "id": "s"}
                return AIMessage(content="", tool_calls=[call])
            args = {"answer": "", "passage_ids": [], "reason": "enough read"}
            return AIMessage(content="", tool_calls=[{"name": "finish", "args": args, "id": "f"}])
        if system == SEEKER_SYSTEM:
            return next(seeker_turns)
        raise AssertionError(f"unexpected prompt: {system[:60]}")

    return ScriptedChatModel(responses=respond)


def test_parallel_librarians_and_later_rounds_share_one_run_of_a_call(tiny_index, monkeypatch):
    runs: list[str] = []
    lock = threading.Lock()
    real = librarian_tools.librarian_context

    def counted(context: Any, query: str) -> Any:
        with lock:
            runs.append(query)
        return real(context, query)

    monkeypatch.setattr(librarian_tools, "librarian_context", counted)
    model = scripted_team()
    context = Context(index=tiny_index, llm=model, retriever="bm25", max_retries=0)
    final = get_workflow("dual_agent").invoke({"question": QUESTION}, context=context)
    librarian_requests = [m for m in model.calls if m[0].content == LIBRARIAN_TOOLS_SYSTEM]
    assert len(librarian_requests) == 6  # three Librarians: a search, then finish
    assert runs == [SHARED_QUERY]  # the tool ran once in the run
    repeated = final["diagnostics"]["repeated_calls"]
    assert repeated == [f"context_search(query={SHARED_QUERY!r})"] * 2
    # the other Librarians read the same passages, with the note the in-loop repeat gets
    searched = [
        m for r in librarian_requests for m in r if isinstance(m, ToolMessage)
    ]  # what each Librarian's model read before its finish
    assert len(searched) == 3 and {m.name for m in searched} == {"context_search"}
    assert sum(str(m.content).startswith(f"({REPEAT_NOTE}") for m in searched) == 2
    assert len({tuple(m.artifact["passage_ids"]) for m in searched}) == 1
    assert final["answer"] == "Missolonghi"


def test_a_new_context_is_a_new_run(tiny_index, monkeypatch):
    runs: list[str] = []
    real = librarian_tools.librarian_context
    monkeypatch.setattr(
        librarian_tools, "librarian_context", lambda c, q: runs.append(q) or real(c, q)
    )
    for _ in range(2):
        context = Context(index=tiny_index, llm=scripted_team(), retriever="bm25", max_retries=0)
        get_workflow("dual_agent").invoke({"question": QUESTION}, context=context)
    assert runs == [SHARED_QUERY] * 2
