"""Verifier roles: A2RAG's Triple-Check (§III-B2) and GraphSearch's evidence verification
(§3.1.2).

Triple-Check judges relevance, grounding and adequacy of one answer against its evidence and
reports the first failed check (the failure type the rewriter conditions on). Evidence
verification accepts or rejects a logic draft and names what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from graphseek.agents.prompts.verifier import (
    EVIDENCE_VERIFIER_SYSTEM,
    EVIDENCE_VERIFIER_USER,
    TRIPLE_CHECK_SYSTEM,
    TRIPLE_CHECK_USER,
)
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole, render_evidence, render_steps
from graphseek.state.bounds import Reasoning, Sentences
from graphseek.state.models import Draft, EvidenceItem
from graphseek.state.verdicts import LogicDraft, Verification


class TripleCheckReply(BaseModel):
    relevance_reason: Reasoning = ""
    relevant: bool
    grounding_reason: Reasoning = ""
    grounded: bool
    adequacy_reason: Reasoning = ""
    adequate: bool

    def verification(self) -> Verification:
        """The first violated condition, in A2RAG's order: relevance, grounding, adequacy."""
        checks = [
            ("relevance", self.relevant, self.relevance_reason),
            ("grounding", self.grounded, self.grounding_reason),
            ("adequacy", self.adequate, self.adequacy_reason),
        ]
        for name, ok, reason in checks:
            if not ok:
                return Verification(passed=False, failure=name, reason=reason)  # type: ignore[arg-type]
        return Verification(passed=True, reason="relevant, grounded and adequate")


class TripleChecker(Protocol):
    def check(
        self, question: str, answer: str, evidence: Sequence[EvidenceItem]
    ) -> Step[Verification]: ...


class LLMTripleChecker(StructuredRole):
    def check(
        self, question: str, answer: str, evidence: Sequence[EvidenceItem]
    ) -> Step[Verification]:
        user = TRIPLE_CHECK_USER.format(
            question=question, answer=answer or "(no answer)", evidence=render_evidence(evidence)
        )
        out, usage = self.ask(TripleCheckReply, TRIPLE_CHECK_SYSTEM, user)
        return Step(out.verification(), usage)


class EvidenceVerdict(BaseModel):
    reason: Reasoning = ""
    missing: Sentences = Field(default_factory=list)
    verdict: Literal["accept", "reject"]


class EvidenceVerifier(Protocol):
    def verify(
        self, question: str, drafts: Sequence[Draft], logic: LogicDraft
    ) -> Step[Verification]: ...


def render_logic(logic: LogicDraft) -> str:
    chain = "\n".join(f"- {c}" for c in logic.chain) or "- (empty)"
    gaps = "\n".join(f"- {g}" for g in logic.gaps) or "- (none)"
    return (
        f"Chain:\n{chain}\nProposed answer: {logic.answer or '(none)'} "
        f"(confidence {logic.confidence:.2f}; evidence {', '.join(logic.evidence) or 'none'})\n"
        f"Gaps:\n{gaps}"
    )


class LLMEvidenceVerifier(StructuredRole):
    def verify(
        self, question: str, drafts: Sequence[Draft], logic: LogicDraft
    ) -> Step[Verification]:
        user = EVIDENCE_VERIFIER_USER.format(
            question=question, steps=render_steps(drafts), draft=render_logic(logic)
        )
        out, usage = self.ask(EvidenceVerdict, EVIDENCE_VERIFIER_SYSTEM, user)
        accepted = out.verdict == "accept" and bool(logic.answer)
        reason = out.reason if logic.answer else f"the draft reached no answer. {out.reason}"
        verdict = Verification(
            passed=accepted,
            failure=None if accepted else "reject",
            reason=reason.strip(),
            missing=[] if accepted else list(out.missing),
        )
        return Step(verdict, usage)
