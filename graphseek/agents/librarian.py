"""Librarian role: stateless retrieval-grounded drafting for one sub-question (HiGraAgent §5.1)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from graphseek.agents.prompts.librarian import LIBRARIAN_SYSTEM, LIBRARIAN_USER
from graphseek.agents.reading.evidence import to_evidence
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import PassageRole
from graphseek.agents.text import contains
from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Name, Names, Reasoning, Sentences
from graphseek.state.models import Draft


class LibrarianReply(BaseModel):
    reasoning: Reasoning = ""
    answer: Name
    candidates: Names = Field(default_factory=list)
    evidence: Sentences = Field(default_factory=list)
    passage_ids: Names = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)


class BriefReply(BaseModel):
    """A model reader's reply in a cascade: the answer, the passages stating it and a
    confidence. No reasoning, candidates or quoted sentences: the evidence shown is ranked by
    sentence either way (`graphseek.agents.reading.sentences`), and a small model fills those
    fields with section titles at several times the tokens of the answer."""

    answer: Name
    passage_ids: Names = Field(default_factory=list)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)

    def full(self) -> LibrarianReply:
        """The same reply as the Librarian's schema (no reasoning, candidates or quotes)."""
        return LibrarianReply(
            answer=self.answer, passage_ids=self.passage_ids, confidence=self.confidence
        )


#: the passages (first retrieved first) an answer is grounded on when the model cited and quoted
#: nothing but its answer occurs in them
QUOTED_ANSWER_PASSAGES = 2


def ground_reply(question: str, reply: LibrarianReply, hits: Sequence[Hit]) -> Draft:
    """Map the model's cited ids and sentences back onto retrieved passages (unknown ids drop);
    when it cited and quoted nothing, the passages its answer occurs in (a small model often
    answers with a sentence copied from a passage and leaves `passage_ids` empty)."""
    by_id = {h.passage.id: h for h in hits}

    def quote_in(hit: Hit) -> str:
        return next((s for s in reply.evidence if s and s in hit.passage.text), "")

    cited = [by_id[pid] for pid in reply.passage_ids if pid in by_id]
    items = [to_evidence(hit, quote_in(hit)) for hit in cited]
    if not items:  # the model cited nothing usable: ground on passages containing a quote
        items = [to_evidence(hit, quote) for hit in hits if (quote := quote_in(hit))]
    answer = reply.answer.strip()
    if not items and answer:  # nothing cited or quoted: an answer copied from a passage
        holding = [hit for hit in hits if contains(hit.passage.text, answer)]
        items = [
            to_evidence(hit, answer if answer in hit.passage.text else "")
            for hit in holding[:QUOTED_ANSWER_PASSAGES]
        ]
    return Draft(
        question=question,
        answer=answer,
        evidence=items,
        confidence=reply.confidence if items else min(reply.confidence, 0.3),
        candidates=[c for c in reply.candidates if c and c != reply.answer],
    )


class LLMLibrarian(PassageRole):
    def draft(self, question: str, hits: Sequence[Hit]) -> Step[Draft]:
        user = self.evidence_prompt(LIBRARIAN_SYSTEM, LIBRARIAN_USER, hits, question=question)
        out, usage = self.ask(LibrarianReply, LIBRARIAN_SYSTEM, user)
        return Step(ground_reply(question, out, hits), usage)
