"""What every KAIR role shares (knowledge_aware, KAIR §3): the rules that hold whatever the
policy, and the plain-text renderings of the caches for prompts.

The rules are enforced here, in code, for the LLM and the offline policies alike:

- no repeated queries: `is_repeat` compares a planned query with the query history Q after
  normalising case, punctuation, articles and spacing;
- only supported and relevant facts enter Known (eq. 5): `accept_update` keeps a candidate
  fact only if it cites a passage that was shown to the updater and addresses an open Required
  gap; a gap is resolved only by such a fact carrying a short answer;
- the refined context keeps the source text (eq. 3, ExactMatch): `enforce_exact_match` drops
  every kept segment that is not an exact substring of its passage.

Gap ids: the planner's initial gaps are numbered "1", "2", … so that a gap description may
refer to an earlier gap's answer as `#N`; gaps found later get a content hash ("g1a2b3c4d").
Fact ids are `<gap id>/<hash of the fact's text>`, so the gap a fact addresses can be read back
from Known alone (`gap_of_fact`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from graphseek.agents.roles import KnowledgeDelta, Segment
from graphseek.state.models import EvidenceItem, Fact, Gap
from graphseek.tools.query_history import is_repeat as is_repeat  # re-export
from graphseek.tools.query_history import normalize_query

_PLACEHOLDER = re.compile(r"#(\d+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")

# -- queries ----------------------------------------------------------------------------------


# -- gaps -------------------------------------------------------------------------------------


def gap_refs(description: str) -> list[str]:
    """Ids of the gaps whose answers a description refers to as `#N`."""
    return _PLACEHOLDER.findall(description)


def fill_gap(description: str, answers: Mapping[str, str]) -> str:
    """The description with each `#N` replaced by the answer of gap N where it is known."""

    def sub(match: re.Match[str]) -> str:
        return answers.get(match.group(1)) or match.group(0)

    return _PLACEHOLDER.sub(sub, description)


def open_gaps(required: Iterable[Gap]) -> list[Gap]:
    return [g for g in required if not g.resolved]


def ready_gaps(required: Iterable[Gap], answers: Mapping[str, str]) -> list[Gap]:
    """Open gaps whose `#N` references all have answers (they can be searched for now)."""
    return [g for g in open_gaps(required) if all(answers.get(r) for r in gap_refs(g.description))]


def new_gap_id(description: str) -> str:
    return "g" + _digest(normalize_query(description))


def fact_id(gap_id: str, text: str) -> str:
    return f"{gap_id}/{_digest(text)}"


def gap_of_fact(fact: Fact) -> str | None:
    """The id of the gap a fact addresses (from its id), or None for a foreign fact."""
    head, sep, _ = fact.id.rpartition("/")
    return head if sep else None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:8]


# -- knowledge update (eq. 5) -----------------------------------------------------------------


@dataclass
class AcceptedUpdate:
    """What a knowledge update changes: new facts, changed gaps (resolved or new), the short
    answers of the gaps resolved, and why candidate facts were turned away."""

    facts: list[Fact] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)

    @property
    def resolved(self) -> list[str]:
        return [g.id for g in self.gaps if g.resolved]


def accept_update(
    required: Sequence[Gap],
    delta: KnowledgeDelta,
    passages: Mapping[str, str],
) -> AcceptedUpdate:
    """Apply KAIR eq. 5 to a proposed update.

    `passages` maps the ids of the passages the updater was shown to their text. A candidate fact
    enters Known only if it cites at least one of them (Supported) and addresses an open gap
    (Relevant); its `source` keeps its supporting quote only when that quote is an exact
    substring of a cited passage. A fact with an answer resolves its gap. New gap descriptions
    that are not already in Required become open gaps.
    """
    out = AcceptedUpdate()
    open_ids = {g.id: g for g in open_gaps(required)}
    known_descriptions = {normalize_query(g.description) for g in required}
    for proposal in delta.facts:
        fact = proposal.fact
        cited = [pid for pid in dict.fromkeys(fact.passage_ids) if pid in passages]
        if not cited:
            out.rejected.append(f"unsupported (no shown passage cited): {fact.text[:80]}")
            continue
        gap = open_ids.get(proposal.gap_id)
        if gap is None:
            out.rejected.append(f"irrelevant (no open gap {proposal.gap_id!r}): {fact.text[:80]}")
            continue
        quote = (
            fact.source if any(fact.source and fact.source in passages[p] for p in cited) else ""
        )
        out.facts.append(
            Fact(
                id=fact_id(gap.id, fact.text),
                text=fact.text,
                passage_ids=cited,
                source=quote,
            )
        )
        answer = proposal.answer.strip()
        if answer and gap.id not in out.answers:
            out.answers[gap.id] = answer
            out.gaps.append(gap.model_copy(update={"resolved": True}))
    for description in delta.new_gaps:
        text = " ".join(description.split())
        if text and normalize_query(text) not in known_descriptions:
            known_descriptions.add(normalize_query(text))
            out.gaps.append(Gap(id=new_gap_id(text), description=text))
    return out


# -- contextual filtering (eq. 3) -------------------------------------------------------------


def split_segments(text: str) -> list[str]:
    """Sentences of `text`, each an exact substring of it (no cleaning, no rejoining)."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        piece = text[start : match.start()].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def enforce_exact_match(
    segments: Sequence[Segment], passages: Mapping[str, str]
) -> tuple[list[Segment], list[str]]:
    """Keep the segments that are exact substrings of their passage (eq. 3); the rest are
    returned as "passage id: segment" strings. Duplicates and empty segments are dropped."""
    kept: list[Segment] = []
    dropped: list[str] = []
    seen: set[tuple[str, str]] = set()
    for seg in segments:
        text = seg.text.strip()
        if not text or (seg.passage_id, text) in seen:
            continue
        source = passages.get(seg.passage_id)
        if source is None or text not in source:
            dropped.append(f"{seg.passage_id}: {text[:120]}")
            continue
        seen.add((seg.passage_id, text))
        kept.append(Segment(passage_id=seg.passage_id, text=text, score=seg.score))
    return kept, dropped


def segments_to_context(
    segments: Sequence[Segment], sources: Mapping[str, EvidenceItem]
) -> list[EvidenceItem]:
    """Refined-context items (one per segment, `sentence` = the segment, `text` = the whole
    passage), in passage order of `sources`, then in reading order inside a passage."""
    order = {pid: i for i, pid in enumerate(sources)}
    ranked = sorted(
        (s for s in segments if s.passage_id in sources),
        key=lambda s: (order[s.passage_id], sources[s.passage_id].text.find(s.text)),
    )
    out = []
    for seg in ranked:
        item = sources[seg.passage_id]
        out.append(
            EvidenceItem(
                passage_id=item.passage_id,
                title=item.title,
                text=item.text,
                sentence=seg.text,
                score=round(seg.score, 4),
            )
        )
    return out


# -- renderings for prompts -------------------------------------------------------------------


def format_known(facts: Sequence[Fact]) -> str:
    if not facts:
        return "(nothing known yet)"
    return "\n".join(f"- {f.text} [{', '.join(f.passage_ids)}]" for f in facts)


def format_gaps(required: Sequence[Gap], answers: Mapping[str, str]) -> str:
    """Open gaps with their ids (placeholders filled), then the resolved ones with answers."""
    lines = [f"[{g.id}] {fill_gap(g.description, answers)}" for g in open_gaps(required)]
    done = [
        f"[{g.id}] (resolved: {answers.get(g.id, '?')}) {fill_gap(g.description, answers)}"
        for g in required
        if g.resolved
    ]
    if not lines:
        lines = ["(no open gaps)"]
    return "\n".join(lines + done)


def format_queries(queries: Sequence[str]) -> str:
    return "\n".join(f"- {q}" for q in queries) if queries else "(no searches yet)"


def format_context(items: Sequence[EvidenceItem], max_chars: int = 6000) -> str:
    """`[id] title: segment … segment` per passage, first seen first, cut to a budget."""
    if not items:
        return "(empty)"
    grouped: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for item in items:
        grouped.setdefault(item.passage_id, []).append(item.sentence or item.text)
        titles.setdefault(item.passage_id, item.title)
    blocks: list[str] = []
    used = 0
    for pid, parts in grouped.items():
        title = f" {titles[pid]}:" if titles[pid] else ""
        block = f"[{pid}]{title} {' … '.join(parts)}"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block)
        used += len(block)
    return "\n".join(blocks)
