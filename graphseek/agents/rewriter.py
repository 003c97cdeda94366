"""Rewriter role: failure-aware query rewrite (A2RAG §III-B3, eq. 6).

The rewrite depends on the failed Triple-Check condition: sharper entity and relation names for
relevance, a request for the supporting fact for grounding, restored constraints (or the
remaining hop, once part of a multi-hop question is answered) for adequacy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel

from graphseek.agents.prompts.rewriter import FAILURE_HINTS, REWRITER_SYSTEM, REWRITER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_evidence
from graphseek.state.bounds import Reasoning, Sentence
from graphseek.state.models import EvidenceItem


class RewriteReply(BaseModel):
    reason: Reasoning = ""
    query: Sentence


class QueryRewriter(Protocol):
    def rewrite(
        self,
        question: str,
        query: str,
        failure: str,
        answer: str,
        evidence: Sequence[EvidenceItem],
        previous: Sequence[str],
        names: Sequence[str] = (),
    ) -> Step[str]:
        """A new query, or `query` itself when no better one is found. `names` are aligned
        entity names (the graph's, the evidence titles) the rewrite may substitute."""
        ...


class LLMQueryRewriter(StructuredRole):
    def rewrite(
        self,
        question: str,
        query: str,
        failure: str,
        answer: str,
        evidence: Sequence[EvidenceItem],
        previous: Sequence[str],
        names: Sequence[str] = (),
    ) -> Step[str]:
        user = REWRITER_USER.format(
            question=question,
            query=query,
            failure=failure,
            hint=FAILURE_HINTS.get(failure, "rewrite the query"),
            answer=answer or "(none)",
            evidence=render_evidence(evidence),
            previous="\n".join(previous) or "(none)",
        )
        out, usage = self.ask(RewriteReply, REWRITER_SYSTEM, user)
        return Step(" ".join(out.query.split()) or query, usage)
