"""Choosing a two-hop chain by its joint support: which bridge, which answer, how sure.

A two-hop plan reads a bridge entity at step 1 ("Which program is Libgcrypt's code based on?")
and the answer at step 2 with `#1` filled by it ("Who is the principal author of #1?"). When the
step-1 reader is unsure, the Seeker asks step 2 for several of its candidates (branches). Picking
the branch whose step 2 reads best, and reporting step 1's confidence for the chain, throws away
what step 2 says about the bridge: a wrong bridge rarely leads to a well-supported answer.

`JointChooser` treats the bridge as a hidden variable. With `p(b)` the step-1 confidence of
bridge `b` and `e(b)` the step-2 confidence of the answer read with it, the posterior of `b`
given the step-2 readings is

    post(b) = p(b) e(b) / (sum over branches of p(b') e(b') + p_rest * e_rest)

where `p_rest` is the step-1 mass of the bridges not followed (at least `min_rest`) and `e_rest`
the step-2 confidence expected of a branch nobody read (`unexplored`, one constant). An answer's
confidence is the posterior mass of the branches that read it times their step-2 confidence:
the chain is as sure as its bridge and its final read together, on the common confidence scale
(0.5 = the abstention point). A read whose evidence never names its bridge is no evidence for
that bridge (the second hop's own words found a passage), and weighs as an unread branch.
Nothing here depends on a data set.

A chooser that cannot decide (no per-candidate confidences, one branch only) returns None and
the caller keeps its own rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from graphseek.agents.text import answer_occurs, fill_placeholders, normalize
from graphseek.state.models import Draft


@dataclass(frozen=True)
class ChainChoice:
    """The chosen chain: its bridge, the final draft and the chain's confidence."""

    bridge: str
    draft: Draft
    confidence: float
    branches: int  # how many branches were weighed


class ChainChooser(Protocol):
    def choose(
        self, template: str, placeholder: str, upstream: Sequence[Draft], finals: Sequence[Draft]
    ) -> ChainChoice | None:
        """The best chain for the final step `template` (holding `#placeholder`) from the
        upstream step's drafts and the final step's drafts, or None to keep the caller's rule."""
        ...


def bridge_confidences(upstream: Sequence[Draft]) -> dict[str, tuple[str, float]]:
    """Every bridge the upstream drafts propose, by normalised text: (surface, confidence),
    the highest confidence over the drafts. Empty when a draft answers without per-candidate
    confidences (a policy that does not report them)."""
    out: dict[str, tuple[str, float]] = {}
    for draft in upstream:
        if not draft.answer:
            continue
        if draft.candidates and len(draft.candidate_confidences) != len(draft.candidates):
            return {}
        pairs = [(draft.answer, draft.confidence)]
        pairs += list(zip(draft.candidates, draft.candidate_confidences, strict=True))
        for text, conf in pairs:
            key = normalize(text)
            if key and conf > out.get(key, ("", -1.0))[1]:
                out[key] = (text, conf)
    return out


def _linked(bridge: str, draft: Draft) -> bool:
    """Whether the draft's evidence (its passage, title included) names the bridge."""
    return any(answer_occurs(bridge, f"{e.title} {e.text} {e.sentence}") for e in draft.evidence)


def _bridge_of(
    draft: Draft, template: str, placeholder: str, bridges: Mapping[str, tuple[str, float]]
) -> str | None:
    """The bridge a final-step draft was asked with (its question is the template filled with
    it, possibly followed by a rephrasing suffix), the longest that fits."""
    asked = normalize(draft.question)
    best: str | None = None
    for key, (text, _) in bridges.items():
        filled = normalize(fill_placeholders(template, {placeholder: text}))
        if filled and (asked == filled or asked.startswith(filled + " ")):
            if best is None or len(key) > len(best):
                best = key
    return best


class JointChooser:
    """Bridge as a hidden variable: the chain supported by both hops (module docstring)."""

    def __init__(self, unexplored: float = 0.05, min_rest: float = 0.1) -> None:
        self.unexplored = unexplored
        self.min_rest = min_rest

    def choose(
        self, template: str, placeholder: str, upstream: Sequence[Draft], finals: Sequence[Draft]
    ) -> ChainChoice | None:
        bridges = bridge_confidences(upstream)
        if not bridges:
            return None
        # the best final draft per bridge
        per_bridge: dict[str, Draft] = {}
        for draft in finals:
            key = _bridge_of(draft, template, placeholder, bridges)
            if key is None:
                continue
            prev = per_bridge.get(key)
            if prev is None or (draft.answer and draft.confidence > prev.confidence):
                per_bridge[key] = draft
        answered = {k: d for k, d in per_bridge.items() if d.answer}
        if len(per_bridge) < 2 or not answered:
            return None
        # a read whose evidence never mentions its bridge says nothing about the bridge (the
        # second hop's words found a passage on their own): it weighs as a branch nobody read
        answered = {k: d for k, d in answered.items() if _linked(bridges[k][0], d)}
        if not answered:
            return None
        p = {k: max(0.0, min(1.0, bridges[k][1])) for k in per_bridge}
        rest = max(self.min_rest, 1.0 - sum(p.values()))
        weight = {
            k: p[k] * (d.confidence if k in answered else self.unexplored if d.answer else 0.0)
            for k, d in per_bridge.items()
        }
        total = sum(weight.values()) + rest * self.unexplored
        if total <= 0.0:
            return None
        # an answer's confidence: posterior of the bridges that read it x their final confidence
        by_answer: dict[str, float] = {}
        for k, d in answered.items():
            a = normalize(d.answer)
            by_answer[a] = by_answer.get(a, 0.0) + weight[k] / total * d.confidence
        best_answer = max(by_answer, key=lambda a: (by_answer[a], a))
        key = max(
            (k for k, d in answered.items() if normalize(d.answer) == best_answer),
            key=lambda k: (weight[k], k),
        )
        confidence = min(1.0, by_answer[best_answer])
        return ChainChoice(bridges[key][0], answered[key], round(confidence, 4), len(per_bridge))
