"""Reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def rrf(
    rankings: Sequence[Sequence[T]],
    k: int = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[T, float]]:
    """Fuse ranked lists of ids: score(d) = sum_i weights[i] / (k + rank_i(d)), ranks 1-based.

    An id missing from a ranking gets nothing from it; an id repeated within one ranking counts
    at its first (best) position. Returns (id, score) pairs, best first; ties go to the id with
    the best single rank, then to the earlier ranking, then to first appearance.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if weights is None:
        weights = [1.0] * len(rankings)
    elif len(weights) != len(rankings):
        raise ValueError(f"got {len(weights)} weights for {len(rankings)} rankings")
    scores: dict[T, float] = {}
    best: dict[T, tuple[int, int]] = {}  # id -> (best rank, ranking index where it was seen)
    for r, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        seen: set[T] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            if item not in best or rank < best[item][0]:
                best[item] = (rank, r)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(
        scores.items(), key=lambda kv: (-kv[1], best[kv[0]][0], best[kv[0]][1], order[kv[0]])
    )
