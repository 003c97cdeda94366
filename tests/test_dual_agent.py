"""The dual-agent workflow driven end to end by the scripted chat model (and offline)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM
from graphseek.agents.prompts.librarian import LIBRARIAN_TOOLS_SYSTEM
from graphseek.agents.prompts.seeker import SEEKER_SYSTEM
from graphseek.api import ask
from graphseek.errors import UnknownTopologyError
from graphseek.graphs import get_workflow
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context

QUESTION = "Lord Byron's daughter's mother, Ada Lovelace's father died where?"

PLAN = {
    "reason": "two independent lookups, then one that depends on the first",
    "question_subject": "place of death",
    "sub_questions": [
        {"id": 1, "question": "Who was the father of Ada Lovelace?", "depends_on": []},
        {"id": 2, "question": "Who was the mother of Ada Lovelace?", "depends_on": []},
        {"id": 3, "question": "Where did #1 die?", "depends_on": [1]},
    ],
}

LIBRARIAN = {
    "Who was the father of Ada Lovelace?": ("Lord Byron", "ada"),
    "Who was the mother of Ada Lovelace?": ("Annabella Milbanke", "milbanke"),
    "Where did Lord Byron die?": ("Missolonghi", "byron"),
    "Where did George Gordon Byron die?": ("Missolonghi", "byron"),
}


def _system(messages) -> str:
    return messages[0].content


def _human(messages) -> str:
    return messages[1].content


def scripted(seeker_replies, confidence=None):
    """A scripted model that routes by role prompt; the Seeker replays `seeker_replies`; the
    Librarian finishes with `confidence` when given."""
    seeker = iter(seeker_replies)

    def respond(messages):
        system = _system(messages)
        if system == CLARIFIER_SYSTEM:
            return {
                "reason": "starts with a name",
                "question": "Where did Ada Lovelace's father die?",
            }
        if system == DECOMPOSER_SYSTEM:
            return PLAN
        if system == LIBRARIAN_TOOLS_SYSTEM:  # the tool-calling Librarian: search, then finish
            question = _human(messages).split("\n", 1)[0].removeprefix("Question: ")
            answer, pid = LIBRARIAN[question]
            if not any(isinstance(m, ToolMessage) for m in messages):
                call = {"name": "context_search", "args": {"query": question}, "id": "s1"}
                return AIMessage(content="", tool_calls=[call])
            finish = {"answer": answer, "passage_ids": [pid], "reason": "stated"}
            if confidence is not None:
                finish["confidence"] = confidence
            return AIMessage(
                content="", tool_calls=[{"name": "finish", "args": finish, "id": "f1"}]
            )
        if system == SEEKER_SYSTEM:
            return next(seeker)
        raise AssertionError(f"unexpected prompt: {system[:60]}")

    return ScriptedChatModel(responses=respond)


ASK_STEP_3 = {
    "reason": "step 3 needs the father's name",
    "action": "ask_librarian",
    "questions": ["Where did Lord Byron die?"],
    "step_ids": [3],
}
ANSWER = {
    "reason": "done",
    "action": "answer",
    "answer": "Missolonghi",
    "evidence": ["byron", "ada"],
}


def test_scripted_run_visits_nodes_in_order(tiny_index):
    model = scripted([ASK_STEP_3, ANSWER])
    graph = get_workflow("dual_agent")
    nodes = []
    final = {}
    for chunk in graph.stream(
        {"question": QUESTION},
        context=Context(index=tiny_index, llm=model, retriever="bm25"),
        stream_mode=["updates", "values"],
    ):
        mode, payload = chunk
        if mode == "updates":
            nodes.extend(payload)
        else:
            final = payload
    assert nodes == [
        "clarify_question",
        "decompose_question",
        "ask_librarian",
        "ask_librarian",
        "decide_action",
        "ask_librarian",
        "decide_action",
        "finalize_answer",
    ]
    assert final["trace"] == nodes
    assert final["clarified_question"] == "Where did Ada Lovelace's father die?"
    assert [s.question for s in final["plan"]] == [
        "Who was the father of Ada Lovelace?",
        "Who was the mother of Ada Lovelace?",
        "Where did #1 die?",
    ]
    assert final["plan"][2].depends_on == [1]
    assert final["step_answers"] == {
        "1": "Lord Byron",
        "2": "Annabella Milbanke",
        "3": "Missolonghi",
    }
    assert final["query_history"][-1] == "Where did Lord Byron die?"
    assert final["answer"] == "Missolonghi" and final["abstained"] is False
    assert [e.passage_id for e in final["evidence"]][:2] == ["byron", "ada"]  # then related
    assert final["turn"] == 2
    # clarify + decompose + 3 librarians x (search + finish) + 2 seeker calls, with tokens
    assert final["usage"].llm_calls == 10
    assert final["usage"].prompt_tokens > 0 and final["usage"].completion_tokens > 0
    # the two independent steps went out in the same superstep (parallel Send)
    assert len(model.calls) == 10
    # the Librarians' tool calls and results are in the state (what Studio shows)
    calls = [c["name"] for m in final["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert sorted(calls) == ["context_search"] * 3 + ["finish"] * 3
    assert sum(isinstance(m, ToolMessage) for m in final["messages"]) == 3


def test_seeker_that_keeps_asking_abstains_on_turn_budget(tiny_index):
    # weak drafts (below the gate's confidence) and a new question each turn: the turn budget
    # ends the loop (a supported, confident draft would end it at once: tests/test_seeker_gate.py)
    again = ASK_STEP_3 | {"questions": ["Where did George Gordon Byron die?"]}
    model = scripted([ASK_STEP_3, again], confidence=0.3)
    result = ask(tiny_index, QUESTION, llm=model, retriever="bm25", max_turns=2)
    assert result.abstained and result.answer == ""
    assert "turn budget" in result.abstain_reason
    assert result.trace[-1] == "finalize_answer"
    assert result.trace.count("decide_action") == 3  # two turns, then the budget check


def test_llm_call_budget_is_obeyed(tiny_index):
    model = scripted([ASK_STEP_3] * 10)
    result = ask(tiny_index, QUESTION, llm=model, retriever="bm25", max_llm_calls=4)
    assert result.abstained and "LLM-call budget" in result.abstain_reason
    assert result.usage.llm_calls <= 5


def test_malformed_seeker_reply_is_retried_then_abstains(tiny_index):
    model = scripted(["not json at all", '{"action": "dance"}', "still {broken"])
    result = ask(tiny_index, QUESTION, llm=model, retriever="bm25", max_retries=2)
    assert result.abstained
    assert "seeker failed" in result.abstain_reason
    seeker_calls = [m for m in model.calls if _system(m) == SEEKER_SYSTEM]
    assert len(seeker_calls) == 3  # one attempt and two retries


def test_offline_reasoner_answers_two_hop_question(tiny_index):
    result = ask(
        tiny_index, "Where did Ada Lovelace's father die?", llm="offline", profile="wikipedia"
    )
    assert result.answer == "Missolonghi"
    assert not result.abstained
    assert "byron" in [e.passage_id for e in result.evidence]
    assert result.usage.llm_calls == 0
    assert result.trace[:2] == ["clarify_question", "decompose_question"]


def test_unknown_topology_lists_known_ones(tiny_index):
    with pytest.raises(UnknownTopologyError, match="known topologies: naive, dual_agent"):
        ask(tiny_index, "Who?", topology="nope")


def test_empty_question_is_rejected(tiny_index):
    with pytest.raises(ValueError, match="question is empty"):
        ask(tiny_index, "   ")
