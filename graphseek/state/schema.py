"""The one graph state every topology shares, plus its input and output views.

`InputState` is what a caller (or LangGraph Studio) sends, `OutputState` what it gets back;
`State` holds the internals. Keys written by parallel branches carry reducers
(`graphseek.state.reducers`); reset a reduced list with `langgraph.types.Overwrite`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from graphseek.state.models import Draft, EvidenceItem, Fact, Gap, SubQuestion, Usage
from graphseek.state.reducers import (
    add_usage,
    append_unique,
    dedupe_evidence,
    merge_dicts,
    merge_facts,
    merge_gaps,
)


class LibrarianTask(TypedDict):
    """Payload of a `Send` to the Librarian: one sub-question."""

    question: str
    step_id: NotRequired[int]


class Diagnostics(TypedDict, total=False):
    """What a workflow records about its own run (merged shallowly; lists concatenate)."""

    stage_reached: str  # adaptive: "local" | "bridge" | "ppr" (where retrieval ended)
    stages_visited: list[str]
    turns: int
    retries: int
    failures: list[str]  # Triple-Check / verification failure types, in order
    suggester_winners: list[int]  # knowledge_aware competitive: winning suggester per round
    rounds: int
    early_stop: bool  # react: stopped before the step budget
    coverage: float  # adaptive: coverage-gate score
    errors: list[str]  # malformed LLM replies and other recovered failures


class InputState(TypedDict):
    question: str


class OutputState(TypedDict):
    answer: NotRequired[str]
    abstained: NotRequired[bool]
    abstain_reason: NotRequired[str]
    evidence: NotRequired[Annotated[list[EvidenceItem], dedupe_evidence]]
    trace: NotRequired[Annotated[list[str], operator.add]]
    usage: NotRequired[Annotated[Usage, add_usage]]
    diagnostics: NotRequired[Annotated[Diagnostics, merge_dicts]]
    # every passage id retrieved during the run, in the order first seen (retrieval metrics)
    retrieved_ids: NotRequired[Annotated[list[str], append_unique]]


class State(InputState, OutputState):
    """Everything a workflow reads and writes."""

    clarified_question: NotRequired[str]
    # the decomposition plan, and answers to its steps by step id
    plan: NotRequired[list[SubQuestion]]
    step_answers: NotRequired[Annotated[dict[str, Any], merge_dicts]]
    # what the controlling agent decided last ("ask_librarian", "answer", "abstain", ...)
    next_action: NotRequired[str]
    # questions the Seeker (or a planner) sends to the Librarian next
    pending: NotRequired[list[LibrarianTask]]
    # the passages of a single-shot retrieval (naive, higra_retriever), best first
    passages: NotRequired[list[EvidenceItem]]
    # Librarian drafts from parallel branches; reset with Overwrite
    drafts: NotRequired[Annotated[list[Draft], operator.add]]
    # KAIR caches
    known: NotRequired[Annotated[list[Fact], merge_facts]]
    required: NotRequired[Annotated[list[Gap], merge_gaps]]
    query_history: NotRequired[Annotated[list[str], append_unique]]
    # free-form reasoning history (one entry per turn / observation)
    history: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    # counters
    turn: NotRequired[int]
    retries: NotRequired[int]
