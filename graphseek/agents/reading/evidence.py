"""What a reply shows: the passages and sentences most likely to hold the answer, best first.

Every reply carries evidence, an abstention too. For an answer, the evidence items are its
grounding, each flagged `supports_answer` when its passage holds the answer (and `span` set when
its sentence does). For an abstention, `shown_evidence` ranks what the run read:

1. the evidence of the run's own drafts, the most confident first, with the draft's answer marked
   as the `span` where its sentence holds it (what the run judged but did not trust enough);
2. then the retrieved passages in the order the extractive reader ranks them: a passage's best
   candidate answer (its sentence, the span marked), else its sentence that best covers the
   question. The first `READ_PASSAGES` passages the run retrieved (first seen first) are read:
   parsing is what reading costs, and those are the ones its drafts read, parsed already. What
   is shown depends on the run only, not on what else the process read before.

Nothing here decides whether to answer; an item of an abstention never `supports_answer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphseek.agents.text import answer_occurs, contains
from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft, EvidenceItem

#: how many items an abstention shows at most (the CLI prints the first three)
SHOWN_ITEMS = 5
#: how many of the run's passages (first retrieved first) an abstention reads: parsing is the
#: cost (spaCy and the sentence embedder), and the first ones are those the drafts parsed
READ_PASSAGES = 5


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


def _draft_items(drafts: Sequence[Draft]) -> list[EvidenceItem]:
    items: list[EvidenceItem] = []
    for d in sorted(drafts, key=lambda d: -d.confidence):
        for e in d.evidence:
            span = d.answer if d.answer and contains(e.sentence or e.text, d.answer) else ""
            items.append(e.model_copy(update={"span": span, "supports_answer": False}))
    return items


def shown_evidence(
    question: str,
    drafts: Sequence[Draft],
    hits: Sequence[Hit],
    reader: Any = None,
    limit: int = SHOWN_ITEMS,
) -> list[EvidenceItem]:
    """The evidence an abstention shows: the drafts' evidence, then the hits as the reader
    ranks them (see the module docstring), one item per passage, at most `limit`."""
    out: dict[str, EvidenceItem] = {}
    for e in _draft_items(drafts):
        if len(out) >= limit:
            break
        out.setdefault(e.passage_id, e)
    if reader is None:
        from graphseek.agents.reading.reader import get_reader

        reader = get_reader()
    hits = [h for h in hits if h.passage.id not in out][:READ_PASSAGES]
    if len(out) >= limit or not hits:
        return list(out.values())
    # each passage's best candidate, in the reader's order across passages ...
    best: dict[str, tuple[tuple[int, float], str, str, float]] = {}
    for position, cand in enumerate(reader.rank(question, hits)):
        if cand.passage.id not in best:
            best[cand.passage.id] = ((0, position), cand.sentence, cand.text, cand.score)
    # ... then the passages with no candidate, by their sentence that covers the question best
    for hit, (sentence, score) in zip(hits, reader.best_sentences(question, hits), strict=True):
        if hit.passage.id not in best and sentence:
            best[hit.passage.id] = ((1, -score), sentence, "", score)
    by_id = {h.passage.id: h for h in hits}
    ranked = sorted(best.items(), key=lambda kv: (kv[1][0], kv[0]))
    for pid, (_, sentence, span, score) in ranked:
        if len(out) >= limit:
            break
        p = by_id[pid].passage
        out[pid] = EvidenceItem(
            passage_id=pid,
            title=p.title,
            text=p.text,
            sentence=sentence,
            score=round(score, 4),
            span=span,
        )
    return list(out.values())
