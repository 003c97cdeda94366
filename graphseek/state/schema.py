"""The graph states: a common base (`RunState`), key groups that several topologies share, and one
state per topology that adds only the keys its nodes read or write.

`InputState` is what a caller (or LangGraph Studio) sends, `OutputState` what it gets back; every
topology's state extends `RunState` (both, plus `next_action`, which each topology narrows to its
own `Literal` of actions). Keys written by parallel branches carry reducers
(`graphseek.state.reducers`); reset a reduced list with `langgraph.types.Overwrite`. A node shared
by several topologies types its state as the narrowest base that holds what it reads (LangGraph
then hands it those keys only); the Librarian and the suggester subgraphs keep their own states
beside their nodes (`graphseek.graphs.librarian_agent`, `graphseek.graphs.suggester_agent`).

What a node returns is a partial update: one `…Update` TypedDict per state (`total=False`, the
same keys as the state except `question`, each with the type of value a node writes: a reduced
list may also be an `Overwrite`), so mypy rejects a misspelt key or a `next_action` outside the
topology's `Literal`. The nodes that several topologies share return the common `RunUpdate` or
one of its narrow forms (`Abstention`, `DraftOutcome`); `tests/test_node_updates.py` checks every
update type against its state.

The TypedDicts come from `typing_extensions`: pydantic (which turns them into the JSON schemas the
LangGraph server and Studio show) rejects `typing.TypedDict` before Python 3.12.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite
from typing_extensions import ReadOnly, TypedDict

from graphseek.state.models import (
    Draft,
    EvidenceItem,
    Fact,
    Gap,
    SentenceBridge,
    SubQuestion,
    Usage,
)
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
    """Payload of a `Send` to a knowledge_aware suggester (keys kept distinct from
    `KnowledgeAwareState`'s)."""

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


#: adaptive: the progressive retriever's stages, in escalation order
Stage = Literal["local", "bridge", "ppr"]


class Diagnostics(TypedDict, total=False):
    """What a workflow records about its own run (merged shallowly; lists concatenate)."""

    stage_reached: Stage  # adaptive: where retrieval ended
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
    bridges_followed: list[str]  # dual_agent: a sentence bridge asked as a next hop's subject
    unstated_facts: list[str]  # knowledge_aware: facts not stated in the passage they cite
    dropped_calls: list[str]  # tool calls left out of a reply (over the cap, twice in a reply)
    repeated_calls: list[str]  # tool calls answered with the result of the same earlier call
    refused_finishes: list[str]  # finish calls refused: answer not in the passages observed
    no_progress_stop: str  # why a tool loop ended early: rounds that found nothing new
    answer_read_from: str  # the model's sentence the answer (its span) was read from
    answer_misfit: str  # a model's answer refused: it does not answer, or its evidence lacks it
    answered_by: str  # the reader of an escalation cascade whose answer the run gave
    readings: list[dict[str, Any]]  # each cascade reading: question, reader, outcome, reason, …
    reader_usage: dict[str, dict[str, int]]  # per reader: calls, prompt and completion tokens


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


# -- what each topology's controlling node decided last (`next_action`) ------------------------

#: naive, higra_retriever: the single-shot answer node answers or abstains
Outcome = Literal["answer", "abstain"]
#: dual_agent: the Seeker's move (`graphseek.state.models.SeekerAction.action`)
DualAgentAction = Literal["ask_librarian", "answer", "abstain"]
#: adaptive: retrieve again (a rewritten query), answer (Triple-Check passed) or abstain
AdaptiveAction = Literal["retrieve", "answer", "abstain"]
#: deep_search: search again (expanded queries), answer (evidence accepted) or abstain
DeepSearchAction = Literal["search", "answer", "abstain"]
#: react: the thought's decision (RETRIEVE, REASON, FINISH with or without an answer)
ReactAction = Literal["retrieve", "reason", "answer", "abstain"]
#: knowledge_aware: plan a round, retrieve, filter the context, answer or abstain
KnowledgeAwareAction = Literal["plan", "retrieve", "filter", "answer", "abstain"]


class RunState(InputState, OutputState):
    """The common base: the question, the output keys, and what the run decided last. Read-only
    here so that each topology narrows `next_action` to its own actions; the shared nodes read it
    only to tell "answer" and "abstain" apart."""

    next_action: NotRequired[ReadOnly[str]]


# -- key groups several topologies share ---------------------------------------------------------


class PassagesState(TypedDict):
    # the passages retrieved (a single shot, a stage, the observations so far), best first
    passages: NotRequired[list[EvidenceItem]]


class DraftsState(TypedDict):
    # Librarian drafts from parallel branches; reset with Overwrite
    drafts: NotRequired[Annotated[list[Draft], operator.add]]


class RefinedContextState(TypedDict):
    # knowledge_aware: the refined context D (segments: `sentence` is an exact substring of the
    # passage `text`)
    refined_context: NotRequired[list[EvidenceItem]]


class GraphContextState(TypedDict):
    # linearised graph evidence seen so far (relations, triples, hyperedges), first seen first
    graph_context: NotRequired[Annotated[list[str], append_unique]]


class LoopState(TypedDict):
    """The counters and records of a workflow that loops."""

    turn: NotRequired[int]
    # free-form reasoning history (one entry per turn / observation)
    history: NotRequired[Annotated[list[dict[str, Any]], operator.add]]
    # every query searched, first seen first
    query_history: NotRequired[Annotated[list[str], append_unique]]


class StepAnswersState(TypedDict):
    # answers to sub-questions (plan steps, gaps) by id
    step_answers: NotRequired[Annotated[dict[str, Any], merge_dicts]]


class PlanState(StepAnswersState):
    """A decomposition plan, its answers, and the questions to search next."""

    plan: NotRequired[list[SubQuestion]]
    pending: NotRequired[list[LibrarianTask]]


class ToolCallsState(TypedDict):
    # tool-calling agents: the model's tool calls (AIMessage) and the tools' results
    # (ToolMessage), in order; the same with a model and with the offline policies
    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]


class VerifiedState(TypedDict):
    """A verify-and-retry loop: the last verdict and the retries made."""

    # None after a verifying node abstained before its verdict
    verification: NotRequired[Verification | None]
    retries: NotRequired[int]


class FinalizeState(RunState, PassagesState, DraftsState, RefinedContextState):
    """What `finalize_answer` reads: the decision, the answer, and the passages the run read (an
    abstention shows the likeliest of them). LangGraph gives the node these keys only."""


# -- one state per topology ----------------------------------------------------------------------


class NaiveState(RunState, PassagesState, DraftsState):
    """`naive`: one retrieval, one draft."""

    next_action: NotRequired[Outcome]


class HigraRetrieverState(RunState, PassagesState, DraftsState, GraphContextState):
    """`higra_retriever`: the HiGraRetriever's passages and relations, one draft."""

    next_action: NotRequired[Outcome]


class DualAgentState(
    RunState, PlanState, DraftsState, LoopState, ToolCallsState, GraphContextState
):
    """`dual_agent`: the Seeker's plan and turns, the Librarians' drafts (and, from the Librarian
    subgraph, its tool calls, queries and graph relations)."""

    next_action: NotRequired[DualAgentAction]
    clarified_question: NotRequired[str]
    # the entities semantic bridging reached from the question's (retriever "bridge" or
    # `bridge_seeds`): candidate subjects of the next hop, offered to the Seeker
    bridges: NotRequired[list[SentenceBridge]]


class AdaptiveState(
    RunState, PassagesState, DraftsState, GraphContextState, LoopState, VerifiedState
):
    """`adaptive`: the query worked on, the progressive retriever's stages, Triple-Check."""

    next_action: NotRequired[AdaptiveAction]
    # the query worked on now (the question, then its rewrites)
    query: NotRequired[str]
    # the progressive retriever's state (`graphseek.tools.progressive.ProgressiveState`)
    retrieval: NotRequired[Any]
    # the last stage-wise sufficiency verdict
    sufficient: NotRequired[bool]


class DeepSearchState(
    RunState, PlanState, DraftsState, GraphContextState, LoopState, VerifiedState
):
    """`deep_search`: the plan, the channels' results, the logic draft and its verification."""

    next_action: NotRequired[DeepSearchAction]
    # what the parallel channels found this round (reset with Overwrite)
    channel_results: NotRequired[Annotated[list[ChannelResult], operator.add]]
    logic_draft: NotRequired[LogicDraft]


class ReactState(
    RunState, PassagesState, DraftsState, StepAnswersState, GraphContextState, LoopState,
    ToolCallsState,
):  # fmt: skip
    """`react`: the thoughts, the tool calls and what they observed (and, with readers, the
    cascade's draft over it: `read_observed`)."""

    next_action: NotRequired[ReactAction]
    # the last thought
    thought: NotRequired[Thought]


class KnowledgeAwareState(
    RunState, PassagesState, DraftsState, RefinedContextState, StepAnswersState, LoopState,
    ToolCallsState,
):  # fmt: skip
    """`knowledge_aware`: the KAIR caches, the planned query, the suggesters' proposals (and,
    with readers, the cascade's draft over what the rounds found: `read_observed`)."""

    next_action: NotRequired[KnowledgeAwareAction]
    known: NotRequired[Annotated[list[Fact], merge_facts]]
    required: NotRequired[Annotated[list[Gap], merge_gaps]]
    planned_query: NotRequired[PlannedQuery]
    # the suggesters' proposals (reset with Overwrite) and private caches (competitive mode) by
    # suggester index
    proposals: NotRequired[Annotated[list[Proposal], operator.add]]
    suggester_caches: NotRequired[Annotated[dict[str, SuggesterCache], merge_dicts]]


# -- what a node returns: partial updates (keys must be the state's channels) --------------------


class RunUpdate(TypedDict, total=False):
    """The output keys any node may write (`finalize_answer` writes only these)."""

    answer: str
    abstained: bool
    abstain_reason: str
    evidence: list[EvidenceItem] | Overwrite
    trace: list[str]
    usage: Usage
    diagnostics: Diagnostics
    retrieved_ids: list[str]


class Abstention(RunUpdate, total=False):
    """What `graphseek.graphs.common.abstain` returns: a node that gives up."""

    next_action: Literal["abstain"]


class PassagesUpdate(TypedDict, total=False):
    passages: list[EvidenceItem]


class DraftsUpdate(TypedDict, total=False):
    drafts: list[Draft] | Overwrite


class DraftOutcome(RunUpdate, DraftsUpdate, total=False):
    """What `graphseek.graphs.common.answer_or_abstain` returns: a single-shot answer node's
    draft, answer or abstention."""

    next_action: Outcome


class RefinedContextUpdate(TypedDict, total=False):
    refined_context: list[EvidenceItem]


class GraphContextUpdate(TypedDict, total=False):
    graph_context: list[str] | Overwrite


class LoopUpdate(TypedDict, total=False):
    turn: int
    history: list[dict[str, Any]]
    query_history: list[str] | Overwrite


class StepAnswersUpdate(TypedDict, total=False):
    step_answers: dict[str, Any] | Overwrite


class PlanUpdate(StepAnswersUpdate, total=False):
    plan: list[SubQuestion]
    pending: list[LibrarianTask]


class ToolCallsUpdate(TypedDict, total=False):
    messages: list[AnyMessage]


class VerifiedUpdate(TypedDict, total=False):
    verification: Verification | None
    retries: int


class NaiveUpdate(RunUpdate, PassagesUpdate, DraftsUpdate, total=False):
    next_action: Outcome


class HigraRetrieverUpdate(
    RunUpdate, PassagesUpdate, DraftsUpdate, GraphContextUpdate, total=False
):
    next_action: Outcome


class DualAgentUpdate(
    RunUpdate, PlanUpdate, DraftsUpdate, LoopUpdate, ToolCallsUpdate, GraphContextUpdate,
    total=False,
):  # fmt: skip
    next_action: DualAgentAction
    clarified_question: str
    bridges: list[SentenceBridge]


class AdaptiveUpdate(
    RunUpdate, PassagesUpdate, DraftsUpdate, GraphContextUpdate, LoopUpdate, VerifiedUpdate,
    total=False,
):  # fmt: skip
    next_action: AdaptiveAction
    query: str
    retrieval: Any
    sufficient: bool


class DeepSearchUpdate(
    RunUpdate, PlanUpdate, DraftsUpdate, GraphContextUpdate, LoopUpdate, VerifiedUpdate,
    total=False,
):  # fmt: skip
    next_action: DeepSearchAction
    channel_results: list[ChannelResult] | Overwrite
    logic_draft: LogicDraft


class ReactUpdate(
    RunUpdate, PassagesUpdate, DraftsUpdate, StepAnswersUpdate, GraphContextUpdate, LoopUpdate,
    ToolCallsUpdate, total=False,
):  # fmt: skip
    next_action: ReactAction
    thought: Thought


class KnowledgeAwareUpdate(
    RunUpdate, PassagesUpdate, DraftsUpdate, RefinedContextUpdate, StepAnswersUpdate, LoopUpdate,
    ToolCallsUpdate, total=False,
):  # fmt: skip
    next_action: KnowledgeAwareAction
    known: list[Fact] | Overwrite
    required: list[Gap] | Overwrite
    planned_query: PlannedQuery
    proposals: list[Proposal] | Overwrite
    suggester_caches: dict[str, SuggesterCache] | Overwrite


#: each topology's state by topology name
TOPOLOGY_STATES: dict[str, type] = {
    "naive": NaiveState,
    "higra_retriever": HigraRetrieverState,
    "dual_agent": DualAgentState,
    "adaptive": AdaptiveState,
    "deep_search": DeepSearchState,
    "react": ReactState,
    "knowledge_aware": KnowledgeAwareState,
}

#: each topology's node update by topology name
TOPOLOGY_UPDATES: dict[str, type] = {
    "naive": NaiveUpdate,
    "higra_retriever": HigraRetrieverUpdate,
    "dual_agent": DualAgentUpdate,
    "adaptive": AdaptiveUpdate,
    "deep_search": DeepSearchUpdate,
    "react": ReactUpdate,
    "knowledge_aware": KnowledgeAwareUpdate,
}
