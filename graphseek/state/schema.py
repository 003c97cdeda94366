"""The one graph state every topology shares, plus its input and output views.

`InputState` is what a caller (or LangGraph Studio) sends, `OutputState` what it gets back;
`State` holds the internals. Keys written by parallel branches carry reducers
(`graphseek.state.reducers`); reset a reduced list with `langgraph.types.Overwrite`.

The TypedDicts come from `typing_extensions`: pydantic (which turns them into the JSON schemas the
LangGraph server and Studio show) rejects `typing.TypedDict` before Python 3.12.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from graphseek.state.models import Draft, EvidenceItem, Fact, Gap, SubQuestion, Usage
from graphseek.state.reducers import (
    add_usage,
    append_unique,
    dedupe_evidence,
    merge_dicts,
    merge_facts,
    merge_gaps,
)
from graphseek.state.verdicts import ChannelResult, LogicDraft, Thought, Verification


class LibrarianTask(TypedDict):
    """Payload of a `Send` to the Librarian: one sub-question."""

    question: str
    step_id: int | None


class PlannedQuery(TypedDict):
    """knowledge_aware: the next search query, the Required gaps it targets, and why."""

    query: str
    gap_ids: list[str]
    reason: str


class SuggesterCache(TypedDict):
    """knowledge_aware: one agent's caches (private to a competitive suggester): Known facts,
    Required gaps, short answers to resolved gaps by gap id, and the queries it issued."""

    known: list[Fact]
    required: list[Gap]
    answers: dict[str, str]
    queries: list[str]


class SuggesterTask(TypedDict):
    """Payload of a `Send` to a knowledge_aware suggester (keys kept distinct from `State`'s)."""

    suggester: int
    question: str
    suggester_cache: SuggesterCache
    shared_context: list[EvidenceItem]
    assigned_gaps: list[str]
    round: int


class Proposal(TypedDict):
    """knowledge_aware: one suggester's round: its query, the passages it retrieved, and its
    caches after the knowledge update (the utility of KAIR eq. 6 is `open_gaps`)."""

    suggester: int
    query: str
    retriever: str
    passages: list[EvidenceItem]
    cache: SuggesterCache
    open_gaps: int
    known_facts: int


class ChannelTask(TypedDict):
    """Payload of a `Send` to a retrieval channel (deep_search): one grounded sub-query."""

    subquery: str
    step_id: int


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
    notes: list[str]  # retrieval notes, e.g. no knowledge graph (passage search instead)
    rejected_queries: list[str]  # knowledge_aware: planned queries already in the history
    dropped_segments: list[str]  # knowledge_aware: filtered segments not found in their passage
    degraded: list[str]  # "role: reason": a failed model call answered by the offline policy
    seeker_gate: list[str]  # dual_agent: turns ended by a supported draft or a repeated question
    unstated_facts: list[str]  # knowledge_aware: facts not stated in the passage they cite
    dropped_calls: list[str]  # tool calls left out of a reply (over the cap, twice in a reply)
    repeated_calls: list[str]  # tool calls answered with the result of the same earlier call
    refused_finishes: list[str]  # finish calls refused: answer not in the passages observed
    no_progress_stop: str  # why a tool loop ended early: rounds that found nothing new


class InputState(TypedDict):
    """What a run takes: the question (Studio's input form)."""

    question: str


class OutputState(TypedDict):
    """What a run returns: the answer with its grounding, or an explicit abstention, plus the
    trace, the cost and the run's diagnostics."""

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
    # knowledge_aware: the refined context D (segments: `sentence` is an exact substring of the
    # passage `text`), the query planned for this round, and the suggesters' proposals (reset
    # with Overwrite) and private caches (competitive mode) by suggester index
    refined_context: NotRequired[list[EvidenceItem]]
    planned_query: NotRequired[PlannedQuery]
    proposals: NotRequired[Annotated[list[Proposal], operator.add]]
    suggester_caches: NotRequired[Annotated[dict[str, SuggesterCache], merge_dicts]]
    # free-form reasoning history (one entry per turn / observation)
    history: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    # counters
    turn: NotRequired[int]
    retries: NotRequired[int]
    # adaptive: the progressive retriever's state (`graphseek.tools.progressive.ProgressiveState`)
    retrieval: NotRequired[Any]
    # adaptive / react: the query worked on now (a rewritten question, a sub-question)
    query: NotRequired[str]
    # linearised graph evidence seen so far (relations, triples, hyperedges), first seen first
    graph_context: NotRequired[Annotated[list[str], append_unique]]
    # adaptive: the last stage-wise sufficiency verdict; adaptive / deep_search: the last check
    sufficient: NotRequired[bool]
    verification: NotRequired[Verification]
    # deep_search: what the parallel channels found this round (reset with Overwrite), the draft
    channel_results: NotRequired[Annotated[list[ChannelResult], operator.add]]
    logic_draft: NotRequired[LogicDraft]
    # react: the last thought
    thought: NotRequired[Thought]
    # tool-calling agents: the model's tool calls (AIMessage) and the tools' results
    # (ToolMessage), in order; the same with a model and with the offline policies
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
