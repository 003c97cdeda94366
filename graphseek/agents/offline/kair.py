"""Offline policies of the KAIR roles (knowledge_aware): planner, knowledge updater, context
filter and answerer, with no generative model.

- Planner: What is Required is the offline decomposer's plan, one gap per sub-question (ids "1",
  "2", … so `#N` refers to gap N's answer; a comparison's final step is left to the answerer).
  The next query is the first searchable open gap, its placeholders filled from Known answers;
  when that text is already in the query history it is reformulated: the offline Seeker's
  rephrasing, then a title-entity form without the wh-word ("Lord Byron place of death").
  Suggester i starts at the i-th formulation, so competing suggesters search differently.
- Knowledge updater: the offline Librarian's extractive draft for each searchable open gap
  (the targeted one first) over the new passages and the refined context; a draft whose
  confidence reaches the threshold adds the fact "question → answer" with its evidence passage
  and resolves the gap. A resolved gap can make the next one searchable in the same update.
- Context filter: the sentences (exact substrings) of the candidate text whose MiniLM cosine or
  lexical overlap with a Known fact, the question or an open gap reaches τ2.
- Answerer: the last resolved gap's answer with the passages of the facts behind it; for a
  comparison, the offline Seeker compares the gaps' answers; with no resolved gap, the offline
  Librarian over the refined context, abstaining below the confidence threshold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphseek.agents.kair import (
    fill_gap,
    gap_of_fact,
    is_repeat,
    open_gaps,
    ready_gaps,
    split_segments,
)
from graphseek.agents.offline.answer_types import expected_answer, parse_comparison
from graphseek.agents.offline.chain import profile_of
from graphseek.agents.offline.decomposer import decompose_question
from graphseek.agents.offline.seeker import OfflineSeeker, rephrase
from graphseek.agents.profiles import GENERAL, Profile, get_profile
from graphseek.agents.roles import (
    FactProposal,
    FinalAnswer,
    KnowledgeDelta,
    KnowledgeView,
    Librarian,
    QueryPlan,
    SeekerView,
    Segment,
    Step,
)
from graphseek.agents.text import AUX_WORDS, WH_WORDS, content_words, normalize
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import Draft, EvidenceItem, Fact, Gap, SubQuestion

#: the offline Librarian's confidence at which a draft resolves a gap (the run's
#: `abstain_threshold` when that is higher)
RESOLVE_THRESHOLD = 0.3


# -- planner ----------------------------------------------------------------------------------


def initial_plan(
    question: str, profile: str | Profile | None = None
) -> tuple[list[SubQuestion], set[int]]:
    """The offline decomposer's plan and the ids of the steps that restate a comparison (the
    answerer compares; they are not searched)."""
    profile = get_profile(profile)
    plan = decompose_question(question, profile) or [SubQuestion(id=1, question=question)]
    comparison = parse_comparison(question, profile)
    virtual: set[int] = set()
    if comparison is not None:
        for step in plan:
            if step.depends_on and (
                parse_comparison(step.question, profile) is not None
                or normalize(step.question) == normalize(question)
            ):
                virtual.add(step.id)
    return plan, virtual


def keyword_form(question: str, profile: Profile = GENERAL) -> str:
    """A title-entity query without the wh-word: "Where did Lord Byron die?" -> "Lord Byron
    place of death"; without a known relation, the question's words minus wh-words."""
    qa = expected_answer(question, profile)
    if qa.focus and qa.relation:
        relation = profile.relation_phrases.get(qa.relation, qa.relation.replace("_", " "))
        return f"{qa.focus} {relation}"
    words = re.findall(r"[\w'#-]+", question)
    drop = set(WH_WORDS) | set(AUX_WORDS)
    return " ".join(w for w in words if w.lower() not in drop)


def formulations(question: str, profile: Profile = GENERAL) -> list[str]:
    """Distinct wordings of one gap's question, the plain one first."""
    out: list[str] = []
    for text in (question, rephrase(question, profile), keyword_form(question, profile)):
        if text and not is_repeat(text, out):
            out.append(text)
    return out


class OfflinePlanner:
    """Planner role, offline policy: the decomposer's plan as Required, gaps searched in order."""

    def __init__(self, profile: str | Profile | None = None) -> None:
        self.profile = get_profile(profile)

    def initial_gaps(self, question: str) -> Step[list[Gap]]:
        plan, virtual = initial_plan(question, self.profile)
        gaps = [Gap(id=str(s.id), description=s.question) for s in plan if s.id not in virtual]
        return Step(gaps or [Gap(id="1", description=question)])

    def plan(self, view: KnowledgeView, rejected: Sequence[str] = ()) -> Step[QueryPlan]:
        asked = [*view.query_history, *rejected]
        ready = ready_gaps(view.required, view.answers)
        assigned = [g for g in ready if g.id in view.assigned_gaps]
        for gap in [*assigned, *(g for g in ready if g not in assigned)]:
            forms = formulations(fill_gap(gap.description, view.answers), self.profile)
            shift = view.agent % len(forms)
            for text in forms[shift:] + forms[:shift]:
                if not is_repeat(text, asked):
                    reason = f"gap {gap.id} is open and searchable"
                    if text != forms[0]:
                        reason += "; reformulated to avoid a repeated or shared query"
                    return Step(QueryPlan(query=text, gap_ids=(gap.id,), reason=reason))
        return Step(
            QueryPlan(query="", reason="every wording of the open gaps was already searched")
        )


# -- knowledge updater ------------------------------------------------------------------------


def context_hits(hits: Sequence[Hit], context: Sequence[EvidenceItem]) -> list[Hit]:
    """The new hits, then the refined context's passages (whole text) not among them."""
    out = list(hits)
    seen = {h.passage.id for h in hits}
    for item in context:
        if item.passage_id in seen or not item.text:
            continue
        seen.add(item.passage_id)
        passage = Passage(id=item.passage_id, title=item.title, text=item.text)
        out.append(Hit(passage=passage, score=item.score, rank=len(out) + 1))
    return out


class OfflineKnowledgeUpdater:
    """Knowledge-updater role, offline policy: the offline Librarian drafts each open gap."""

    def __init__(self, librarian: Librarian, threshold: float = RESOLVE_THRESHOLD) -> None:
        self.librarian = librarian
        self.threshold = threshold

    def update(
        self, view: KnowledgeView, query: QueryPlan, hits: Sequence[Hit]
    ) -> Step[KnowledgeDelta]:
        pool = context_hits(hits, view.refined_context)
        answers = dict(view.answers)
        facts: list[FactProposal] = []
        tried: set[str] = set()
        targets = set(query.gap_ids)
        pending = open_gaps(view.required)
        pending.sort(key=lambda g: g.id not in targets)  # stable: targeted gaps first
        progress = True
        while progress and pool:
            progress = False
            for gap in ready_gaps(pending, answers):
                if gap.id in answers or gap.id in tried:
                    continue
                tried.add(gap.id)
                question = fill_gap(gap.description, answers)
                draft = self.librarian.draft(question, pool).value
                if not draft.answer or draft.confidence < self.threshold or not draft.evidence:
                    continue
                answers[gap.id] = draft.answer
                fact = Fact(
                    id=gap.id,
                    text=f"{question} → {draft.answer}",
                    passage_ids=[e.passage_id for e in draft.evidence],
                    source=draft.evidence[0].sentence,
                )
                facts.append(FactProposal(fact=fact, gap_id=gap.id, answer=draft.answer))
                progress = True
        reason = f"resolved {len(facts)} gap(s) with the Librarian's extractive drafts"
        return Step(KnowledgeDelta(facts=facts, reason=reason))


# -- context filter ---------------------------------------------------------------------------


def lexical_similarity(segment: str, reference: str) -> float:
    """Share of the reference's content words found in the segment (0..1)."""
    ref = content_words(reference)
    return len(ref & content_words(segment)) / len(ref) if ref else 0.0


class OfflineContextFilter:
    """Context-filter role, offline policy: sentence-level relevance to Known, above τ2.

    `encode` maps texts to L2-normalised vectors (MiniLM by default, loaded on first use); with
    `encode=False` only the lexical overlap is used.
    """

    def __init__(
        self,
        encode: Callable[[Sequence[str]], np.ndarray] | bool | None = None,
        tau: float = 0.45,
        max_segments: int = 24,
    ) -> None:
        self._encode = encode
        self.tau = tau
        self.max_segments = max_segments

    def _vectors(self, texts: Sequence[str]) -> np.ndarray | None:
        if self._encode is False:
            return None
        if self._encode is None or self._encode is True:
            from graphseek.knowledge.embedder import get_embedder

            self._encode = get_embedder().encode
        encode: Any = self._encode
        return np.asarray(encode(list(texts)), dtype=np.float32)

    def refine(
        self, view: KnowledgeView, candidates: Sequence[EvidenceItem]
    ) -> Step[list[Segment]]:
        references = [f"{f.text} {f.source}".strip() for f in view.known]
        references.append(view.question)
        references += [fill_gap(g.description, view.answers) for g in open_gaps(view.required)]
        units: list[tuple[str, str]] = []
        for item in candidates:
            for piece in split_segments(item.sentence or item.text):
                units.append((item.passage_id, piece))
        if not units:
            return Step([])
        scores = np.array(
            [[lexical_similarity(seg, ref) for ref in references] for _, seg in units]
        ).max(axis=1)
        vectors = self._vectors([seg for _, seg in units] + references)
        if vectors is not None:
            seg_vecs, ref_vecs = vectors[: len(units)], vectors[len(units) :]
            scores = np.maximum(scores, (seg_vecs @ ref_vecs.T).max(axis=1))
        ranked = sorted(
            (i for i in range(len(units)) if scores[i] >= self.tau), key=lambda i: -scores[i]
        )[: self.max_segments]
        kept = [
            Segment(passage_id=units[i][0], text=units[i][1], score=float(scores[i]))
            for i in ranked
        ]
        return Step(kept)


# -- answerer ---------------------------------------------------------------------------------


class OfflineAnswerer:
    """Answerer role, offline policy: the last resolved gap's answer, or the Seeker's
    comparison, or the Librarian over the refined context."""

    def __init__(self, librarian: Librarian, abstain_threshold: float = 0.15) -> None:
        self.librarian = librarian
        self.abstain_threshold = abstain_threshold

    def answer(self, view: KnowledgeView) -> Step[FinalAnswer]:
        if parse_comparison(view.question, profile_of(self.librarian)) is not None:
            return Step(self._compare(view))
        resolved = [g for g in view.required if g.resolved and view.answers.get(g.id)]
        if resolved:
            final = resolved[-1]
            return Step(
                FinalAnswer(
                    answer=view.answers[final.id],
                    passage_ids=tuple(_passages_for(view.known, final.id)),
                    confidence=1.0,
                    reason=f"the answer of the last resolved gap ({final.id})",
                )
            )
        return Step(self._read(view))

    def _compare(self, view: KnowledgeView) -> FinalAnswer:
        plan, _ = initial_plan(view.question, profile_of(self.librarian))
        drafts = []
        for step in plan:
            answer = view.answers.get(str(step.id))
            if not answer:
                continue
            evidence = [
                EvidenceItem(passage_id=pid) for pid in _passages_for(view.known, str(step.id))
            ]
            drafts.append(
                Draft(
                    question=fill_gap(step.question, view.answers),
                    answer=answer,
                    step_id=step.id,
                    evidence=evidence,
                    confidence=1.0,
                )
            )
        seeker = OfflineSeeker(
            abstain_threshold=self.abstain_threshold, profile=profile_of(self.librarian)
        )
        action = seeker.decide(
            SeekerView(
                question=view.question,
                plan=plan,
                drafts=drafts,
                step_answers=dict(view.answers),
                turn=0,
                max_turns=1,  # the last turn: conclude, ask nothing
            )
        ).value
        if action.action != "answer" or not action.answer:
            return FinalAnswer(answer="", reason=action.reason or "the comparison failed")
        return FinalAnswer(
            answer=action.answer,
            passage_ids=tuple(action.evidence),
            confidence=action.confidence,
            reason=action.reason,
        )

    def _read(self, view: KnowledgeView) -> FinalAnswer:
        hits = context_hits([], view.refined_context)
        if not hits:
            return FinalAnswer(answer="", reason="the refined context is empty")
        draft = self.librarian.draft(view.question, hits).value
        if not draft.answer or draft.confidence < self.abstain_threshold:
            return FinalAnswer(
                answer="",
                reason=f"low confidence ({draft.confidence:.2f}) in {draft.answer!r} from the "
                "refined context",
            )
        return FinalAnswer(
            answer=draft.answer,
            passage_ids=tuple(e.passage_id for e in draft.evidence),
            confidence=draft.confidence,
            reason="the Librarian's draft over the refined context",
        )


def _passages_for(known: Sequence[Fact], gap_id: str) -> list[str]:
    """Passage ids of the facts behind a gap and the gaps it builds on (its facts first)."""
    own = [p for f in known if gap_of_fact(f) == gap_id for p in f.passage_ids]
    rest = [p for f in known if gap_of_fact(f) != gap_id for p in f.passage_ids]
    return list(dict.fromkeys(own + rest))
