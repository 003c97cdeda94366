"""Choosing a profile's operating point: the abstention threshold of the offline reader.

One documented rule for every profile: **the lowest threshold whose cross-validated wrong-answer
rate is at most the target (10%)**. A threshold sweep gives, for each candidate threshold, the
outcome of every dev question (right / wrong / abstained, `graphseek.evaluation.scoring`) with
the workflow run at that threshold. `choose_threshold` applies the rule to a set of questions;
`cross_validate` estimates how the rule does on questions it was not chosen on: the questions are
split into folds, the threshold is chosen on all folds but one and scored on the one left out,
and the outcomes of the left-out folds are pooled. The operating point stored for the profile is
the rule applied to every dev question; its cross-validated figures are reported beside it.
Nothing here runs a workflow (`benchmarks/calibrate.py` does); it is pure and tested.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: the wrong-answer rate the rule keeps under
TARGET_WRONG_RATE = 0.10

# outcomes by threshold, in question order: {threshold: ["right", "wrong", "abstained", ...]}
Sweep = Mapping[float, Sequence[str]]


@dataclass(frozen=True)
class Rates:
    """Counts of outcomes over `n` questions."""

    right: int
    wrong: int
    abstained: int

    @property
    def n(self) -> int:
        return self.right + self.wrong + self.abstained

    @property
    def wrong_rate(self) -> float:
        return self.wrong / self.n if self.n else 0.0

    @property
    def right_rate(self) -> float:
        return self.right / self.n if self.n else 0.0

    @classmethod
    def of(cls, outcomes: Sequence[str]) -> Rates:
        c = Counter(outcomes)
        return cls(c["right"], c["wrong"], c["abstained"])


def _check(sweep: Sweep) -> int:
    sizes = {len(v) for v in sweep.values()}
    if not sweep or len(sizes) != 1:
        raise ValueError("a sweep needs at least one threshold and the same questions at each")
    return sizes.pop()


def choose_threshold(
    sweep: Sweep, target: float = TARGET_WRONG_RATE, questions: Sequence[int] | None = None
) -> float:
    """The lowest threshold whose wrong-answer rate over `questions` (default: all) is at most
    `target`; the highest threshold of the sweep when none is."""
    n = _check(sweep)
    picked = range(n) if questions is None else questions
    for t in sorted(sweep):
        if Rates.of([sweep[t][i] for i in picked]).wrong_rate <= target:
            return t
    return max(sweep)


def folds_of(n: int, k: int, seed: int = 0) -> list[list[int]]:
    """`n` question positions shuffled with `seed` and dealt into `k` folds (k <= n)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    k = max(1, min(k, n))
    return [sorted(order[i::k]) for i in range(k)]


def cross_validate(
    sweep: Sweep, k: int = 5, target: float = TARGET_WRONG_RATE, seed: int = 0
) -> tuple[Rates, list[float]]:
    """The pooled outcomes of the left-out folds, each scored at the threshold the rule chose on
    the other folds, and the threshold chosen for each fold."""
    n = _check(sweep)
    pooled: list[str] = []
    chosen: list[float] = []
    folds = folds_of(n, k, seed)
    for i, held in enumerate(folds):
        train = [q for j, fold in enumerate(folds) if j != i for q in fold] or held
        t = choose_threshold(sweep, target, train)
        chosen.append(t)
        pooled += [sweep[t][q] for q in held]
    return Rates.of(pooled), chosen


def leave_groups_out(
    sweep: Sweep, groups: Sequence[str], target: float = TARGET_WRONG_RATE
) -> dict[str, tuple[float, Rates]]:
    """For each group (a genre: `groups[i]` names question i's), the threshold the rule chooses
    on the other groups' questions and the held group's outcomes at it: how the operating point
    does on a kind of document it was not chosen on. With one group, it is chosen on itself."""
    n = _check(sweep)
    if len(groups) != n:
        raise ValueError(f"{len(groups)} group names for {n} questions")
    out: dict[str, tuple[float, Rates]] = {}
    for name in dict.fromkeys(groups):
        held = [i for i, g in enumerate(groups) if g == name]
        train = [i for i, g in enumerate(groups) if g != name] or held
        t = choose_threshold(sweep, target, train)
        out[name] = (t, Rates.of([sweep[t][i] for i in held]))
    return out


def reader_sweep(
    readings: Sequence[tuple[float, str]], thresholds: Sequence[float]
) -> dict[float, list[str]]:
    """The threshold sweep of one model reader of a cascade from its readings, each (its stated
    confidence, the outcome of its answer had it stood: "right" or "wrong", or "abstained" when
    it failed a check other than its confidence: no answer, ungrounded). At a threshold, a
    reading below it is an abstention (the question passes on), so `choose_threshold` picks the
    reader's point by the same rule as a profile's."""
    return {
        t: [o if o != "abstained" and c >= t else "abstained" for c, o in readings]
        for t in thresholds
    }
