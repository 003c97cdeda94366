"""The role interface: every role has an LLM policy and an offline policy behind one protocol.

A node asks `graphseek.agents.registry.get_roles(context)` for the policies of the run and calls them; it
never knows whether a chat model or the offline reasoner is behind. Each call returns a `Step`:
the value plus the usage it cost (zero for offline policies). LLM policies raise
`graphseek.errors.LLMError` (transport, request, malformed reply, budget) when a call fails; nodes turn that into
an abstention, unless the run falls back to the offline policy for that step
(`Context.on_model_failure="offline"`, `graphseek.agents.structured_role.falls_back`): the `Step`
then carries the offline value, the failed call's usage, and a `degraded` note the node records in
`diagnostics["degraded"]` (`diagnostics_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from graphseek.knowledge.passages import Hit
from graphseek.state.models import (
    Draft,
    EvidenceItem,
    Fact,
    Gap,
    SeekerAction,
    SentenceBridge,
    SubQuestion,
    Usage,
)
from graphseek.state.schema import Diagnostics

T = TypeVar("T")


@dataclass(frozen=True)
class Step(Generic[T]):
    """A role's answer for one step: the value, what it cost, notes on how it was reached
    (e.g. a repaired plan), and `degraded` ("role: reason") when the LLM policy failed and the
    offline policy gave the value."""

    value: T
    usage: Usage = field(default_factory=Usage)
    notes: tuple[str, ...] = ()
    degraded: tuple[str, ...] = ()


def diagnostics_of(*steps: Step[Any]) -> Diagnostics:
    """The `diagnostics` entries of steps: their notes and degradations (empty when none)."""
    out: Diagnostics = {}
    key: Literal["notes", "degraded"]
    for key in ("notes", "degraded"):
        items = [item for step in steps for item in getattr(step, key)]
        if items:
            out[key] = items
    return out


@dataclass(frozen=True)
class SeekerView:
    """What the Seeker sees on a turn."""

    question: str
    plan: Sequence[SubQuestion]
    drafts: Sequence[Draft]
    step_answers: dict[str, str]
    turn: int
    max_turns: int
    #: entities semantic bridging reached from the question's, each with its sentence: candidate
    #: subjects of a next hop (empty unless the run's retrieval bridges)
    bridges: Sequence[SentenceBridge] = ()


class Clarifier(Protocol):
    def clarify(self, question: str) -> Step[str]: ...


class Decomposer(Protocol):
    def decompose(self, question: str) -> Step[list[SubQuestion]]: ...


class Librarian(Protocol):
    def draft(self, question: str, hits: Sequence[Hit]) -> Step[Draft]: ...


class Seeker(Protocol):
    def decide(self, view: SeekerView) -> Step[SeekerAction]: ...


# -- knowledge_aware (KAIR §3): planner, knowledge updater, context filter, answerer -----------


@dataclass(frozen=True)
class KnowledgeView:
    """What a KAIR agent sees: the question, its caches (Known, Required, the short answers of
    resolved gaps by gap id, the query history), the shared refined context, and its place in a
    team of suggesters (`assigned_gaps`: the gaps a collaborative round gave it)."""

    question: str
    known: Sequence[Fact] = ()
    required: Sequence[Gap] = ()
    answers: Mapping[str, str] = field(default_factory=dict)
    query_history: Sequence[str] = ()
    refined_context: Sequence[EvidenceItem] = ()
    agent: int = 0
    agents: int = 1
    assigned_gaps: Sequence[str] = ()
    turn: int = 0
    max_turns: int = 6

    @property
    def open_gaps(self) -> list[Gap]:
        return [g for g in self.required if not g.resolved]


@dataclass(frozen=True)
class QueryPlan:
    """The next search query (empty when no new query can be made) and the gaps it targets."""

    query: str
    gap_ids: Sequence[str] = ()
    reason: str = ""


@dataclass(frozen=True)
class FactProposal:
    """A candidate Known fact addressing the open gap `gap_id`; with `answer`, it resolves it."""

    fact: Fact
    gap_id: str
    answer: str = ""


@dataclass(frozen=True)
class KnowledgeDelta:
    """A knowledge update: candidate facts, and descriptions of newly found gaps."""

    facts: Sequence[FactProposal] = ()
    new_gaps: Sequence[str] = ()
    reason: str = ""


@dataclass(frozen=True)
class Segment:
    """A piece of a passage kept in the refined context (must be an exact substring of it)."""

    passage_id: str
    text: str
    score: float = 0.0


@dataclass(frozen=True)
class FinalAnswer:
    """The answerer's verdict: an answer with its passage ids, or "" (abstain) with a reason."""

    answer: str
    passage_ids: Sequence[str] = ()
    confidence: float = 0.0
    reason: str = ""


class Planner(Protocol):
    def initial_gaps(self, question: str) -> Step[list[Gap]]: ...

    def plan(self, view: KnowledgeView, rejected: Sequence[str] = ()) -> Step[QueryPlan]: ...


class KnowledgeUpdater(Protocol):
    def update(
        self, view: KnowledgeView, query: QueryPlan, hits: Sequence[Hit]
    ) -> Step[KnowledgeDelta]: ...


class ContextFilter(Protocol):
    def refine(
        self, view: KnowledgeView, candidates: Sequence[EvidenceItem]
    ) -> Step[list[Segment]]: ...


class Answerer(Protocol):
    def answer(self, view: KnowledgeView) -> Step[FinalAnswer]: ...
