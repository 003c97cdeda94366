"""Knowledge-updater role: turn retrieved passages into verified facts and revised gaps (KAIR
§3.1 Knowledge Update Mechanism, eq. 4-5).

The policy proposes; `graphseek.agents.kair.accept_update` (called by the node) lets in only
facts that cite a shown passage and address an open gap, and `keep_stated` (called by the
`update_knowledge` node) only facts stated in the passage they cite: a fact's quote is a verbatim
piece of a cited passage holding its answer, or most of its content words are found there; a gap
stays resolved only when its answer is in the cited text of one of its stated facts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field

from graphseek.agents.kair import (
    AcceptedUpdate,
    format_context,
    format_gaps,
    format_known,
    gap_of_fact,
)
from graphseek.agents.prompts.knowledge_updater import (
    KNOWLEDGE_UPDATER_SYSTEM,
    KNOWLEDGE_UPDATER_USER,
)
from graphseek.agents.roles import FactProposal, KnowledgeDelta, KnowledgeView, QueryPlan, Step
from graphseek.agents.structured_role import PassageRole
from graphseek.agents.text import content_words, normalize
from graphseek.knowledge.passages import Hit
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

#: share of a fact's content words that its cited passages must hold (without a verbatim quote)
STATED_SHARE = 2 / 3


def _found(word: str, words: set[str]) -> bool:
    """`word` or a word sharing its stem ("die" / "died", "direct" / "directed")."""
    if word in words:
        return True
    return len(word) >= 3 and any(
        len(w) >= 3 and (w.startswith(word) or word.startswith(w)) for w in words
    )


def _holds(text: str, phrase: str) -> bool:
    key = normalize(phrase)
    return bool(key) and f" {key} " in f" {normalize(text)} "


def unstated_reason(fact: Fact, passages: Mapping[str, str]) -> str:
    """Why `fact` is not stated in the passages it cites ("" when it is). `passages` maps the
    ids of the passages the run observed to their title and text."""
    cited = [passages[p] for p in fact.passage_ids if p in passages]
    if not cited:
        return "cites no observed passage"
    if fact.source and any(fact.source in text for text in cited):
        return ""  # a verbatim quote of a cited passage
    words = content_words(fact.text)
    found = set().union(*(content_words(text) for text in cited))
    missing = sorted(w for w in words if not _found(w, found))
    if words and len(missing) > len(words) * (1 - STATED_SHARE):
        return f"its words {', '.join(missing)} are not in {', '.join(fact.passage_ids)}"
    return ""


@dataclass(frozen=True)
class StatedUpdate:
    """An accepted update cut to the facts stated in their passages, and what was dropped."""

    update: AcceptedUpdate
    dropped: list[str]


def keep_stated(accepted: AcceptedUpdate, passages: Mapping[str, str]) -> StatedUpdate:
    """`accepted` without the facts its cited passages do not state (`unstated_reason`), and
    without the resolution of a gap whose answer no stated fact's passage holds."""
    facts: list[Fact] = []
    dropped: list[str] = []
    for fact in accepted.facts:
        why = unstated_reason(fact, passages)
        if why:
            dropped.append(f"{fact.text[:80]} ({why})")
        else:
            facts.append(fact)
    answers: dict[str, str] = {}
    for gap_id, answer in accepted.answers.items():
        texts = [
            passages.get(p, "") for f in facts if gap_of_fact(f) == gap_id for p in f.passage_ids
        ]
        if any(_holds(text, answer) for text in texts):
            answers[gap_id] = answer
        else:
            dropped.append(f"gap {gap_id} answer {answer!r} (not in a stated fact's passage)")
    gaps = [g for g in accepted.gaps if not g.resolved or g.id in answers]
    rejected = [*accepted.rejected, *(f"unstated: {d}" for d in dropped)]
    update = replace(accepted, facts=facts, gaps=gaps, answers=answers, rejected=rejected)
    return StatedUpdate(update, dropped)


def observed_texts(items: Sequence[Any]) -> dict[str, str]:
    """Passage id -> "title. text" of the passages (hits or evidence items) a step observed."""
    out: dict[str, str] = {}
    for item in items:
        passage = getattr(item, "passage", None)
        if passage is not None:
            pid, title, text = passage.id, passage.title, passage.text
        else:
            pid, title, text = item.passage_id, item.title, item.text
        out.setdefault(pid, f"{title}. {text}" if title else text)
    return out


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


class LLMKnowledgeUpdater(PassageRole):
    def update(
        self, view: KnowledgeView, query: QueryPlan, hits: Sequence[Hit]
    ) -> Step[KnowledgeDelta]:
        # the sentences most relevant to the gap's search, each with its neighbours
        user = self.evidence_prompt(
            KNOWLEDGE_UPDATER_SYSTEM, KNOWLEDGE_UPDATER_USER, hits,
            rank_by=query.query or view.question,
            question=view.question,
            query=query.query,
            known=format_known(view.known),
            required=format_gaps(view.required, view.answers),
            context=format_context(view.refined_context, self.max_chars // 2),
        )  # fmt: skip
        out, usage = self.ask(KnowledgeUpdateReply, KNOWLEDGE_UPDATER_SYSTEM, user)
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
