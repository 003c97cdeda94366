"""Cache-friendly prompts: each step's prompt is the previous step's prompt (less its last,
changing message) followed by what is new, so a server's prefix cache (llama.cpp, vLLM) reuses
it; and no prompt template puts a step or turn counter before its last line."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

import graphseek.agents.prompts as prompts_package
from graphseek.agents.graph_librarian import LLMGraphLibrarian
from graphseek.agents.planner import LLMPlanner
from graphseek.agents.roles import KnowledgeView, SeekerView
from graphseek.agents.seeker import LLMSeeker
from graphseek.agents.thinker import LLMThinker, ThinkerView
from graphseek.graphs.kair_steps import kair_tools
from graphseek.graphs.librarian_agent import librarian_tools
from graphseek.llm import ScriptedChatModel
from graphseek.state.models import Draft, EvidenceItem, Fact, Gap, SubQuestion

QUESTION = "Where did Ada Lovelace's father die?"
COUNTERS = ("{step}", "{max_steps}", "{turn}", "{max_turns}")


def _call(name: str, args: dict[str, Any], step: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{step}"}])


def _two_steps(
    step: Callable[[Any, list[BaseMessage], int], Any], name: str, args: dict[str, Any]
) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """The prompts of two consecutive tool-calling steps of a role (`step(model, messages, n)`),
    the second after the first's call and its result."""
    model = ScriptedChatModel(responses=[_call(name, args, 1), _call(name, args, 2)])
    first = step(model, [], 0).value
    result = ToolMessage("[ada] Ada Lovelace: Her father was Lord Byron.", tool_call_id="c1")
    step(model, [first, result], 1)
    assert len(model.calls) == 2
    return model.calls[0], model.calls[1]


def _assert_prefix(earlier: list[BaseMessage], later: list[BaseMessage], *, changing: int) -> None:
    """`earlier` less its last `changing` messages is the start of `later`, and `later` adds to
    it (message types and contents compared, as a server sees them)."""

    def seen(ms: list[BaseMessage]) -> list[tuple[str, str, Any]]:
        return [(m.type, m.text, getattr(m, "tool_calls", None)) for m in ms]

    kept = earlier[: len(earlier) - changing]
    assert kept, "the prompt has no stable prefix"
    assert seen(later[: len(kept)]) == seen(kept)
    assert len(later) > len(kept)


def test_react_thinker_steps_share_their_prefix() -> None:
    def step(model: Any, messages: list[BaseMessage], n: int) -> Any:
        view = ThinkerView(question=QUESTION, history=[], hits=[], topics=["people", "places"],
                           step=n, max_steps=6)  # fmt: skip
        return LLMThinker(model, max_retries=0).call_tools(view, messages)

    earlier, later = _two_steps(step, "search_passages", {"query": QUESTION})
    # the step counter is the last message, never in the prefix
    assert earlier[-1].text == "Step 1 of 6: call a tool."
    assert later[-1].text == "Step 2 of 6: call a tool."
    assert all("Step" not in m.text for m in earlier[:-1])
    _assert_prefix(earlier, later, changing=1)


def test_graph_librarian_steps_share_their_prefix() -> None:
    def step(model: Any, messages: list[BaseMessage], n: int) -> Any:
        return LLMGraphLibrarian(model, max_retries=0).call_tools(
            QUESTION, messages, librarian_tools()
        )

    earlier, later = _two_steps(step, "context_search", {"query": QUESTION})
    _assert_prefix(earlier, later, changing=0)


def test_planner_steps_in_a_round_share_their_prefix() -> None:
    view = KnowledgeView(
        question=QUESTION,
        known=[Fact(id="1", text="Ada Lovelace's father is Lord Byron.", passage_ids=["ada"])],
        required=[Gap(id="1", description="Who is Ada's father?", resolved=True),
                  Gap(id="2", description="Where did #1 die?")],
        answers={"1": "Lord Byron"},
        query_history=["Who was Ada Lovelace's father?"],
    )  # fmt: skip

    def step(model: Any, messages: list[BaseMessage], n: int) -> Any:
        return LLMPlanner(model, max_retries=0).call_tools(view, messages, kair_tools())

    earlier, later = _two_steps(step, "search_gap", {"query": "Lord Byron death", "gap_ids": ["2"]})
    _assert_prefix(earlier, later, changing=0)


def _draft(question: str, answer: str, pid: str) -> Draft:
    evidence = [EvidenceItem(passage_id=pid, title=pid, text=f"{answer}.", sentence=f"{answer}.")]
    return Draft(question=question, answer=answer, evidence=evidence, confidence=0.9)


def test_seeker_turns_grow_at_the_end_with_the_counter_last() -> None:
    reply = {"reason": "more", "action": "ask_librarian", "questions": ["Where did Byron die?"]}
    model = ScriptedChatModel(responses=[reply, reply])
    seeker = LLMSeeker(model, max_retries=0)
    plan = [SubQuestion(id=1, question="Who is Ada's father?"),
            SubQuestion(id=2, question="Where did #1 die?", depends_on=[1])]  # fmt: skip
    first = [_draft("Who is Ada's father?", "Lord Byron", "ada")]
    second = [*first, _draft("Where did Lord Byron die?", "Missolonghi", "byron")]
    for turn, drafts in ((1, first), (2, second)):
        view = SeekerView(question=QUESTION, plan=plan, drafts=drafts, step_answers={},
                          turn=turn, max_turns=6)  # fmt: skip
        seeker.decide(view)
    (system1, user1), (system2, user2) = model.calls
    assert system1.text == system2.text
    head, counter = user1.text.rsplit("\n", 1)
    assert counter == "Turn 2 of 6."
    assert user2.text.startswith(head) and user2.text.endswith("Turn 3 of 6.")


@pytest.mark.parametrize(
    "module",
    sorted(m.name for m in pkgutil.iter_modules(prompts_package.__path__)),
)
def test_no_template_puts_a_counter_before_its_last_line(module: str) -> None:
    loaded = importlib.import_module(f"{prompts_package.__name__}.{module}")
    for name, value in vars(loaded).items():
        if not (name.isupper() and isinstance(value, str)):
            continue
        lines = value.rstrip().splitlines()
        for line in lines[:-1]:
            found = [c for c in COUNTERS if c in line]
            assert not found, f"{module}.{name}: {found} before the last line: {line!r}"
        assert not re.search(r"\{(?:time|date|now|timestamp)\}", value), f"{module}.{name}"
