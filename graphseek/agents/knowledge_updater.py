"""Knowledge-updater role: turn retrieved passages into verified facts and revised gaps (KAIR
§3.1 Knowledge Update Mechanism, eq. 4-5).

The policy proposes; `graphseek.agents.kair.accept_update` (called by the node) lets in only
facts that cite a shown passage and address an open gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field

from graphseek.agents.formatting import with_passages
from graphseek.agents.kair import format_context, format_gaps, format_known
from graphseek.agents.prompts.knowledge_updater import (
    KNOWLEDGE_UPDATER_SYSTEM,
    KNOWLEDGE_UPDATER_USER,
)
from graphseek.agents.roles import FactProposal, KnowledgeDelta, KnowledgeView, QueryPlan, Step
from graphseek.knowledge.passages import Hit
from graphseek.llm import invoke_structured
from graphseek.state.bounds import (
    OBJECT_ITEMS,
    Name,
    Names,
    Reasoning,
    Sentence,
    Sentences,
    first_items,
)
from graphseek.state.models import Fact


class ExtractedFact(BaseModel):
    statement: Sentence = Field(description="The fact, as one self-contained sentence.")
    quote: Reasoning = Field(
        default="", description="The supporting sentence, copied word for word."
    )
    passage_ids: Names = Field(default_factory=list)
    gap_id: Name = Field(description="The id of the open gap this fact addresses.")
    answer: Name = Field(default="", description="The gap's short answer if the fact resolves it.")


class KnowledgeUpdateReply(BaseModel):
    reasoning: Reasoning = ""
    facts: Annotated[
        list[ExtractedFact],
        BeforeValidator(first_items(OBJECT_ITEMS)),
        Field(max_length=OBJECT_ITEMS),
    ] = Field(default_factory=list)
    new_gaps: Sentences = Field(default_factory=list)


class LLMKnowledgeUpdater:
    def __init__(self, model, max_retries: int = 2, max_chars: int = 6000) -> None:
        self.model = model
        self.max_retries = max_retries
        self.max_chars = max_chars

    def update(
        self, view: KnowledgeView, query: QueryPlan, hits: Sequence[Hit]
    ) -> Step[KnowledgeDelta]:
        user = with_passages(
            self.model, KNOWLEDGE_UPDATER_SYSTEM, KNOWLEDGE_UPDATER_USER, hits, self.max_chars,
            question=view.question,
            query=query.query,
            known=format_known(view.known),
            required=format_gaps(view.required, view.answers),
            context=format_context(view.refined_context, self.max_chars // 2),
        )  # fmt: skip
        messages = [("system", KNOWLEDGE_UPDATER_SYSTEM), ("human", user)]
        out, usage = invoke_structured(
            self.model, KnowledgeUpdateReply, messages, max_retries=self.max_retries
        )
        facts = [
            FactProposal(
                fact=Fact(
                    id=f.gap_id,
                    text=" ".join(f.statement.split()),
                    passage_ids=list(f.passage_ids),
                    source=f.quote.strip(),
                ),
                gap_id=f.gap_id.strip().strip("[]"),
                answer=f.answer.strip(),
            )
            for f in out.facts
            if f.statement.strip()
        ]
        delta = KnowledgeDelta(facts=facts, new_gaps=list(out.new_gaps), reason=out.reasoning)
        return Step(delta, usage)
