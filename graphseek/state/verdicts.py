"""State models of the checking and searching workflows (`adaptive`, `deep_search`, `react`).

They hold what a verifier, a logic drafter, a search channel or a ReAct thought decided, in the
shape the routers read; the roles' LLM reply schemas (with their reason fields) are mapped onto
them in `graphseek.agents`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from graphseek.state.bounds import Name, Reasoning, Sentence
from graphseek.state.models import EvidenceItem

#: A2RAG's Triple-Check validators, in the order they are checked; GraphSearch's verifier
#: reports a failure as "reject".
FailureType = Literal["relevance", "grounding", "adequacy", "reject"]
#: G-RAGent's decision variable D_t.
Decision = Literal["RETRIEVE", "REASON", "FINISH"]
#: G-RAGent's hypergraph primitives.
Primitive = Literal["retrieve_subgraph", "node_feature", "neighbor_check"]
Channel = Literal["semantic", "relational", "refined"]


class Verification(BaseModel):
    """An answer-level check: passed, or the first failed condition and why."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    failure: FailureType | None = None
    reason: str = ""
    missing: list[str] = Field(
        default_factory=list, description="What evidence is missing (GraphSearch reject)."
    )


class Thought(BaseModel):
    """One ReAct thought (G-RAGent §2.2): the decision and what the action needs."""

    model_config = ConfigDict(frozen=True)

    reason: Reasoning = ""
    decision: Decision
    query: Sentence = Field(default="", description="The local objective: the sub-question now.")
    topic: Name = Field(default="", description="RETRIEVE: the predicted semantic topic.")
    primitive: Primitive = "retrieve_subgraph"
    entity: Name = Field(default="", description="node_feature / neighbor_check: the entity.")
    attribute: Name = Field(default="", description="node_feature: the attribute; "
                           "neighbor_check: the relation.")  # fmt: skip
    answer: Name = Field(default="", description="REASON: the sub-answer; FINISH: the answer.")
    step_id: int | None = Field(default=None, description="REASON: the plan step it answers.")
    sufficient: bool = Field(default=False, description="K_t: the context is sufficient now.")


class ChannelResult(BaseModel):
    """What one retrieval channel found for one sub-query (GraphSearch §3.2)."""

    model_config = ConfigDict(frozen=True)

    step_id: int
    query: str
    channel: Channel
    passages: list[EvidenceItem] = Field(default_factory=list)
    triples: list[str] = Field(default_factory=list, description="Linearised relations.")


class LogicDraft(BaseModel):
    """GraphSearch's logic draft L: the reasoning chain, the answer it leads to, its gaps."""

    model_config = ConfigDict(frozen=True)

    chain: list[str] = Field(default_factory=list)
    answer: str = ""
    evidence: list[str] = Field(default_factory=list, description="Passage ids it rests on.")
    gaps: list[str] = Field(default_factory=list)
    confidence: float = 0.0
