"""ReAct thought, offline policy (G-RAGent §2.2).

The thinker follows the question's grammar-based plan. On each step, for the current
sub-question (the first unanswered step, earlier answers filled in):

- FINISH as soon as everything observed so far answers the whole question (early stopping: the
  remaining steps are skipped): every hop of the plan resolves over the observations with enough
  confidence, or, for a comparison or yes/no question, the offline Librarian drafts it whole with
  high confidence; FINISH too when the last step is answered;
- REASON when the observations answer the current sub-question (its answer is recorded and the
  next step starts), without touching the graph;
- RETRIEVE otherwise, on the topic whose label and keywords best match the sub-question (a topic
  not yet tried for it), or on the passages alone when no topic matches;
- FINISH with an empty answer (an abstention) when a sub-question stays unanswered after
  `max_attempts` retrievals.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphseek.agents.offline.chain import ANSWERED, plan_for, profile_of, resolve_chain
from graphseek.agents.roles import Librarian, Step
from graphseek.agents.text import content_words, fill_placeholders, normalize
from graphseek.agents.thinker import ThinkerView
from graphseek.knowledge.passages import Hit
from graphseek.state.verdicts import Thought

#: the whole-question confidence at which the thinker stops before finishing its plan
EARLY_STOP = 0.8


class OfflineThinker:
    def __init__(
        self,
        librarian: Librarian,
        threshold: float = ANSWERED,
        early_stop: float = EARLY_STOP,
        max_attempts: int = 2,
    ) -> None:
        self.librarian = librarian
        self.threshold = threshold
        self.early_stop = early_stop
        self.max_attempts = max_attempts

    def think(self, view: ThinkerView) -> Step[Thought]:
        return Step(self._think(view))

    def _think(self, view: ThinkerView) -> Thought:
        plan, whole = plan_for(view.question, profile_of(self.librarian))
        answers = {k: v for k, v in view.step_answers.items() if v}
        hits = list(view.hits)
        if hits and (whole or len(plan) > 1):
            early = self._early_answer(view.question, hits, whole)
            if early is not None:
                answer, confidence = early
                return Thought(
                    reason=f"The observations already answer the whole question "
                    f"(confidence {confidence:.2f}); the remaining steps are skipped.",
                    decision="FINISH",
                    query=view.question,
                    answer=answer,
                    sufficient=True,
                )
        current = next((s for s in plan if str(s.id) not in answers), None)
        if current is None:
            final = answers.get(str(plan[-1].id), "")
            return Thought(
                reason="Every step of the plan is answered.",
                decision="FINISH",
                query=view.question,
                answer=final,
                sufficient=bool(final),
            )
        query = view.question if whole else fill_placeholders(current.question, answers)
        tried = [h for h in view.history if h.get("decision") == "RETRIEVE"
                 and normalize(str(h.get("query", ""))) == normalize(query)]  # fmt: skip
        if tried and hits:
            draft = self.librarian.draft(query, hits).value
            if draft.answer and draft.confidence >= self.threshold:
                last = current.id == plan[-1].id
                return Thought(
                    reason=f"The observations answer {query!r} (confidence "
                    f"{draft.confidence:.2f}).",
                    decision="FINISH" if last else "REASON",
                    query=query,
                    answer=draft.answer,
                    step_id=None if last else current.id,
                    sufficient=last,
                )
        if len(tried) >= self.max_attempts:
            return Thought(
                reason=f"{query!r} stays unanswered after {len(tried)} retrievals.",
                decision="FINISH",
                query=query,
                answer="",
            )
        topic = best_topic(query, view.topics, [str(h.get("topic", "")) for h in tried])
        return Thought(
            reason=f"Retrieve evidence for {query!r}"
            + (f" from topic {topic!r}." if topic else " from the passages."),
            decision="RETRIEVE",
            query=query,
            topic=topic,
        )

    def _early_answer(
        self, question: str, hits: Sequence[Hit], whole: bool
    ) -> tuple[str, float] | None:
        """The answer when the observations already hold it: a comparison or yes/no question
        drafted whole with high confidence, or every hop of the plan resolved over them."""
        if whole:
            draft = self.librarian.draft(question, hits).value
            if draft.answer and draft.confidence >= max(self.early_stop, self.threshold):
                return draft.answer, draft.confidence
            return None
        chain = resolve_chain(self.librarian, question, hits, self.threshold)
        final = chain.final
        if not chain.resolved or final is None:
            return None
        return final.answer, min(d.confidence for d in chain.drafts.values())


def best_topic(query: str, topics: Sequence[str], tried: Sequence[str] = ()) -> str:
    """The untried topic sharing most words with the query, a word matching when one is a
    prefix of the other ("die" / "died"); "" when none shares any."""
    words = content_words(query)
    best, best_score = "", 0
    for topic in topics:
        if topic in tried:
            continue
        score = sum(1 for w in words if any(_related(w, t) for t in content_words(topic)))
        if score > best_score:
            best, best_score = topic, score
    return best


def _related(a: str, b: str) -> bool:
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= 3 and long.startswith(short)
