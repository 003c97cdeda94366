"""The role interface: every role has an LLM policy and an offline policy behind one protocol.

A node asks `graphseek.agents.registry.get_roles(context)` for the policies of the run and calls them; it
never knows whether a chat model or the offline reasoner is behind. Each call returns a `Step`:
the value plus the usage it cost (zero for offline policies). LLM policies raise
`graphseek.errors.LLMOutputError` when a reply stays malformed after retries; nodes turn that into
an abstention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft, SeekerAction, SubQuestion, Usage

T = TypeVar("T")


@dataclass(frozen=True)
class Step(Generic[T]):
    value: T
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True)
class SeekerView:
    """What the Seeker sees on a turn."""

    question: str
    plan: Sequence[SubQuestion]
    drafts: Sequence[Draft]
    step_answers: dict[str, str]
    turn: int
    max_turns: int


class Clarifier(Protocol):
    def clarify(self, question: str) -> Step[str]: ...


class Decomposer(Protocol):
    def decompose(self, question: str) -> Step[list[SubQuestion]]: ...


class Librarian(Protocol):
    def draft(self, question: str, hits: Sequence[Hit]) -> Step[Draft]: ...


class Seeker(Protocol):
    def decide(self, view: SeekerView) -> Step[SeekerAction]: ...
