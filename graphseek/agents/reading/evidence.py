"""What a reply shows: the sentences most likely to hold the answer, best first.

Every reply carries evidence, an abstention too, and every item shows a sentence with its
context (`graphseek.agents.reading.sentences`: ranked by relevance to the question, not by the
reader's guess of the answer's type, so a wrong guess never hides the right sentence).

- For an answer, the evidence items are its grounding, each flagged `supports_answer` when its
  passage holds the answer; `with_sentences` gives each its sentence (the one holding the answer
  when there is one, else its most relevant) and that sentence's context, so a model's
  evidence shows sentences as the offline reader's does, and `span` where the sentence holds
  the answer.
- For an abstention, `shown_evidence` ranks the sentences of what the run read (the first
  `READ_PASSAGES` passages it retrieved, then those its drafts cited) by their relevance to the
  question or to a sub-question its drafts answered (a second hop's sentence answers its step,
  not the whole question's words), and shows the best
  `SHOWN_ITEMS`, a sentence that is already another's context skipped, and the sentence that
  states the latest draft's answer second when the ranker put it lower (the abstention's
  reason names that answer; a run just below its operating point is often right). A sentence
  that holds one of the drafts' answers or of the reader's best `GUESSES` candidates (else whose
  context holds one) has that `span` marked: what the run judged but did not trust enough.

What is shown depends on the run only, not on what else the process read before. Nothing here
decides whether to answer; an item of an abstention never `supports_answer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from graphseek.agents.text import answer_occurs, contains
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.models import Draft, EvidenceItem

if TYPE_CHECKING:
    from graphseek.agents.reading.sentences import RankedSentence

#: how many items an abstention shows at most (the CLI prints the first three)
SHOWN_ITEMS = 5
#: how many of the run's passages (first retrieved first) an abstention reads: parsing is the
#: cost (spaCy and the sentence embedder), and the first ones are those the drafts parsed
READ_PASSAGES = 5
#: how many of the reader's candidates an abstention marks where its sentences hold them
GUESSES = 3
#: how many of the drafts' sub-questions an abstention ranks sentences for, beside the question
STEP_QUESTIONS = 3
#: where the sentence of the latest draft's answer is shown (0: first), when the
#: ranker put it lower
GUESS_AT = 1
#: an answer shows at least this many items: its grounding, then the most relevant other
#: sentences the run read (`with_related`)
ANSWER_ITEMS = 3


def to_evidence(hit: Hit, sentence: str = "") -> EvidenceItem:
    """A retrieved passage as an evidence item (`sentence`: the part of it that counts)."""
    p = hit.passage
    return EvidenceItem(
        passage_id=p.id, title=p.title, text=p.text, sentence=sentence, score=hit.score
    )


def mark_support(items: Sequence[EvidenceItem], answer: str) -> list[EvidenceItem]:
    """An answer's evidence with `supports_answer` set where the passage states the answer
    (`answer_occurs`, the test a model's `finish` passes) and `span` where its sentence holds
    the answer's very words."""
    out = []
    for e in items:
        inside = contains(e.sentence, answer) if e.sentence else False
        out.append(
            e.model_copy(
                update={
                    "supports_answer": answer_occurs(answer, f"{e.title} {e.text} {e.sentence}"),
                    "span": answer if inside else e.span,
                }
            )
        )
    return out


def _read_hits(drafts: Sequence[Draft], hits: Sequence[Hit]) -> list[Hit]:
    """The first `READ_PASSAGES` hits, then the passages the drafts cite that are not among them."""
    read = list(hits[:READ_PASSAGES])
    seen = {h.passage.id for h in read}
    for d in sorted(drafts, key=lambda d: -d.confidence):
        for e in d.evidence:
            if e.passage_id not in seen and e.text:
                seen.add(e.passage_id)
                passage = Passage(id=e.passage_id, title=e.title, text=e.text)
                read.append(Hit(passage=passage, score=e.score, rank=len(read) + 1))
    return read


def _guesses(drafts: Sequence[Draft]) -> list[str]:
    out: list[str] = []
    for d in sorted(drafts, key=lambda d: -d.confidence):
        for a in (d.answer, *d.candidates):
            if a and a not in out:
                out.append(a)
    return out


def with_best_guess(
    shown: list[RankedSentence], ranked: Sequence[RankedSentence], drafts: Sequence[Draft]
) -> list[RankedSentence]:
    """`shown` with the sentence of the latest draft's answer (a plan's last step) second
    (`GUESS_AT`) when it is not among the first `GUESS_AT + 1` already: a run that abstains just
    below its operating point is often right, and its reason names that answer, so the sentence
    that states it is shown; the rest stay in the ranker's order."""
    # the latest draft with an answer: a plan's last step, whose answer the reason names
    best = next((d for d in reversed(drafts) if d.answer and d.evidence), None)
    if best is None:
        return shown
    cited = {(e.passage_id, e.sentence) for e in best.evidence if e.sentence}
    own = [s for s in ranked if (s.passage.id, s.text) in cited and contains(s.text, best.answer)]
    own = own or [s for s in ranked if contains(s.text, best.answer)]
    first = shown[: GUESS_AT + 1]
    if not own or any(
        s.passage.id == own[0].passage.id and abs(s.index - own[0].index) <= 1 for s in first
    ):  # shown already, or as the context of a sentence shown
        return shown
    rest = [s for s in shown if s != own[0]]
    return (rest[:GUESS_AT] + [own[0]] + rest[GUESS_AT:])[: len(shown)]


def _ranked_for_steps(
    question: str, drafts: Sequence[Draft], read: Sequence[Hit], reader: Any
) -> list[RankedSentence]:
    """The sentences of `read` ranked by their relevance to the question or to any of the
    sub-questions its drafts answered (up to `STEP_QUESTIONS`), each scored by the best: a
    second hop's sentence ("Olof Palme was born in Stockholm") shares few words with the whole
    question ("Where was Lisbeth Palme's husband born?") but answers its step."""
    from graphseek.agents.reading.sentences import rank_sentences

    asked = list(dict.fromkeys([question, *(d.question for d in drafts if d.question)]))
    best: dict[tuple[str, int], RankedSentence] = {}
    for q in asked[: STEP_QUESTIONS + 1]:
        for s in rank_sentences(q, read, reader):
            key = (s.passage.id, s.index)
            if key not in best or s.score > best[key].score:
                best[key] = s
    order = {h.passage.id: k for k, h in enumerate(read)}
    return sorted(best.values(), key=lambda s: (-s.score, order.get(s.passage.id, 0), s.index))


def _reader(reader: Any) -> Any:
    """`reader`, else the process-wide reader the offline Librarian reads with (one parse of a
    passage serves the reading and the evidence)."""
    if reader is not None:
        return reader
    from graphseek.agents.reading.reader import get_reader

    return get_reader()


def _item(s: RankedSentence, span: str, supports_answer: bool = False) -> EvidenceItem:
    """A ranked sentence as the evidence item a reply shows, with its context and `span`."""
    return EvidenceItem(
        passage_id=s.passage.id,
        title=s.passage.title,
        text=s.passage.text,
        sentence=s.text,
        context=s.context,
        score=round(s.score, 4),
        span=span,
        supports_answer=supports_answer,
    )


def shown_evidence(
    question: str,
    drafts: Sequence[Draft],
    hits: Sequence[Hit],
    reader: Any = None,
    limit: int = SHOWN_ITEMS,
) -> list[EvidenceItem]:
    """The evidence an abstention shows: the most relevant sentences of what the run read (see
    the module docstring), each with its context and a candidate `span` where it holds one."""
    from graphseek.agents.reading.sentences import top_sentences

    reader = _reader(reader)
    read = _read_hits(drafts, hits)
    if not read:
        return []
    ranked = _ranked_for_steps(question, drafts, read, reader)
    shown = with_best_guess(top_sentences(ranked, limit), ranked, drafts)
    # what the run guessed, best first: its drafts' answers, then the reader's candidates
    guesses = _guesses(drafts)
    for cand in reader.rank(question, read)[:GUESSES]:
        if cand.text not in guesses:
            guesses.append(cand.text)
    out = []
    for s in shown:
        span = next((g for g in guesses if contains(s.text, g)), "")
        span = span or next((g for g in guesses if contains(s.context, g)), "")
        out.append(_item(s, span))
    return out


def with_related(
    question: str,
    grounding: Sequence[EvidenceItem],
    drafts: Sequence[Draft],
    hits: Sequence[Hit],
    answer: str,
    reader: Any = None,
    limit: int = ANSWER_ITEMS,
) -> list[EvidenceItem]:
    """An answer's `grounding`, then, up to `limit` items in all, the sentences of what the run
    read (as an abstention ranks them: `shown_evidence`) that the grounding does not show already,
    itself or as a sentence's context. A user checking the answer sees what else the run found
    most relevant, so a wrong answer does not hide the sentence that holds the right one. Each
    added item is flagged `supports_answer` where its passage states the answer, and its `span`
    set where its sentence does."""
    from graphseek.agents.reading.sentences import top_sentences

    out = list(grounding)
    if len(out) >= limit:
        return out
    reader = _reader(reader)
    read = _read_hits(drafts, hits)
    if not read:
        return out
    shown = [(e.passage_id, e.context or e.sentence) for e in out if e.sentence]
    fresh = [
        s
        for s in _ranked_for_steps(question, drafts, read, reader)
        if not any(pid == s.passage.id and s.text in seen for pid, seen in shown)
    ]
    for s in top_sentences(fresh, limit - len(out)):
        span = answer if answer and contains(s.text, answer) else ""
        states = bool(answer) and answer_occurs(answer, f"{s.passage.title} {s.passage.text}")
        out.append(_item(s, span, supports_answer=states))
    return out


def with_sentences(
    question: str, items: Sequence[EvidenceItem], answer: str = "", reader: Any = None
) -> list[EvidenceItem]:
    """`items` each with a sentence and its context: an item without a sentence (a model's
    citation of a whole passage) gets its passage's sentence that holds `answer`, else its most
    relevant one; an item with a sentence gets that sentence's context. `span` is set where the
    sentence holds `answer`."""
    from graphseek.agents.reading.sentences import best_in_passage, rank_sentences

    todo = [e for e in items if e.text and not e.context]
    if not todo:
        return list(items)
    reader = _reader(reader)
    hits = [
        Hit(passage=Passage(id=e.passage_id, title=e.title, text=e.text), score=e.score, rank=k + 1)
        for k, e in enumerate(todo)
    ]
    ranked = rank_sentences(question, hits, reader)
    out = []
    for e in items:
        if not e.text or e.context:
            out.append(e)
            continue
        if e.sentence:
            mine = [s for s in ranked if s.passage.id == e.passage_id]
            same = next((s for s in mine if s.text == e.sentence), None)
            same = same or next((s for s in mine if e.sentence in s.text), None)
            update = {"context": same.context if same else e.sentence}
        else:
            best = best_in_passage(ranked, e.passage_id, answer)
            if best is None:
                out.append(e)
                continue
            update = {"sentence": best.text, "context": best.context}
        sentence = update.get("sentence", e.sentence)
        if answer and not e.span and contains(sentence, answer):
            update["span"] = answer
        out.append(e.model_copy(update=update))
    return out
