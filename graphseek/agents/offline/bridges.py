"""Sentence bridges as next-hop subjects (issue 57 item 3), shared by the offline Seeker and
`BranchingSeeker`.

When a run's retrieval bridges through sentences (`graphseek.tools.graph_context.
follows_bridges`), `dual_agent` hands the Seeker the entities semantic bridging reached from the
question's entities, each with the sentence that names both (`SentenceBridge`): for "Where did
Ada Lovelace's father die?", Lord Byron through "She married Lord Byron in 1815 and was the
mother of Ada Lovelace.". A bridge is read as another answer to the hop whose answer fills the
next step's `#N`, one found in a sentence instead of by the reader:

- `subjects`: the bridges that may answer a hop: of the kind of entity it asks for (any, when
  its expected answer names no entity label), the longest name of a sentence kept ("Ryan
  Adams", not "Adams"); one that extends the hop's own answer ("Ermengarde of Tours" for
  "Ermengarde") first, the others by activation;
- `bridge_draft`: a bridge as a draft of that hop, its activation as the confidence and the
  sentence as the evidence, for the chain rules that weigh a hop's readings (a bridge never
  outranks the reader's own answer by confidence alone: activations are similarities, 0.35 to
  about 0.8);
- `asked_through`: the bridge a later step's question was asked with (the step filled with the
  bridge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from graphseek.agents.offline.answer_types import (
    TITLE_SEPARATOR,
    expected_answer,
    parse_comparison,
)
from graphseek.agents.profiles import Profile
from graphseek.agents.text import fill_placeholders, normalize
from graphseek.state.models import Draft, EvidenceItem, SentenceBridge, SubQuestion

#: a question that offers its answer's options: "..., Playing It Wild or I'll Be Going Now?"
_OPTIONS = re.compile(r",[^,]+\bor\b[^,]+\?\s*$")
#: entity types that name a group or a language, no entity to ask a next hop about, unless the
#: hop asks for one
_VAGUE_TYPES = frozenset({"NORP", "LANGUAGE"})


def chain_bridges(
    question: str, bridges: Sequence[SentenceBridge], profile: Profile
) -> list[SentenceBridge]:
    """The bridges a question's chain may follow: none for a comparison or a question that
    offers options, whose steps' subjects are the options it names (on 2Wiki dev under the
    general profile, which does not parse those comparisons, bridges put in their steps turned
    two abstentions into wrong answers), else all."""
    if not bridges or parse_comparison(question, profile) is not None:
        return []
    if _OPTIONS.search(" ".join(question.split())):
        return []
    return list(bridges)


def extends(name: str, answer: str) -> bool:
    """Whether `name` is `answer` written longer: its words, as a phrase, and more
    ("Ermengarde of Tours" for "Ermengarde")."""
    n, a = normalize(name), normalize(answer)
    return bool(a) and n != a and f" {a} " in f" {n} "


def subjects(
    bridges: Sequence[SentenceBridge], hop: SubQuestion, answer: str, profile: Profile
) -> list[SentenceBridge]:
    """The bridges that may answer `hop` (module docstring), best first; the one equal to its
    answer left out (nothing new to ask)."""
    if not bridges:
        return []
    qa = expected_answer(hop.question, profile)
    labels = set(qa.labels) if qa.kind == "entity" else set()
    own = normalize(answer)

    def fits(bridge: SentenceBridge) -> bool:
        if normalize(bridge.entity) == own or (answer and extends(answer, bridge.entity)):
            return False  # the answer itself, or a shorter form of it: nothing new to ask
        if answer and extends(bridge.entity, answer):
            return True
        if labels:
            return bool(labels & set(bridge.types))
        return not set(bridge.types) <= _VAGUE_TYPES or not bridge.types

    # the longest name of one sentence: "Ryan Adams" keeps "Adams" out (the hop's own answer
    # too: "Leo Fong" keeps "Leo" out)
    pool = [b for b in bridges if fits(b) or normalize(b.entity) == own]
    kept = [
        b
        for b in pool
        if fits(b)
        and not any(
            o is not b and o.sentence == b.sentence and extends(o.entity, b.entity) for o in pool
        )
    ]
    return sorted(kept, key=lambda b: (not extends(b.entity, answer), -b.weight, b.round))


def bridge_draft(hop: SubQuestion, bridge: SentenceBridge) -> Draft:
    """`bridge` as a reading of `hop`: its entity the answer, its activation the confidence, its
    sentence the evidence."""
    return Draft(
        question=hop.question,
        answer=bridge.entity,
        step_id=hop.id,
        confidence=bridge.weight,
        evidence=[
            EvidenceItem(
                passage_id=bridge.passage_id,
                text=bridge.sentence,
                sentence=bridge.sentence,
                span=bridge.entity,
            )
        ],
    )


def asked_through(
    question: str,
    step: SubQuestion,
    answers: Mapping[str, str],
    bridges: Sequence[SentenceBridge],
) -> tuple[int, SentenceBridge] | None:
    """(the hop, the bridge) a question of `step` was asked with: the step with that hop's `#N`
    filled by the bridge instead of the hop's answer (a " — title" hint after it allowed); None
    for any other, the step asked with its hops' own answers first of all."""
    asked = normalize(question.split(TITLE_SEPARATOR, 1)[0])
    if not asked or asked == normalize(fill_placeholders(step.question, answers)):
        return None
    for dep in step.depends_on:
        for bridge in bridges:
            if normalize(bridge.entity) == normalize(answers.get(str(dep), "")):
                continue
            filled = fill_placeholders(step.question, {**answers, str(dep): bridge.entity})
            if asked == normalize(filled):
                return dep, bridge
    return None
