"""Fusing ranked lists: reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009), and a
convex combination of normalised scores, the index's hybrid search."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def _fused(lists: Iterable[Iterable[tuple[T, float]]]) -> list[tuple[T, float]]:
    """Each id's contributions summed over `lists` (pairs of id and contribution, best first),
    an id repeated within one list counting at its first (best) position. Returns (id, score)
    pairs, best first; ties go to the id with the best single rank, then to the earlier list,
    then to first appearance."""
    scores: dict[T, float] = {}
    best: dict[T, tuple[int, int]] = {}  # id -> (best rank, list index where it was seen)
    for r, items in enumerate(lists):
        seen: set[T] = set()
        for rank, (item, value) in enumerate(items, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + value
            if item not in best or rank < best[item][0]:
                best[item] = (rank, r)
    order = {item: i for i, item in enumerate(scores)}
    return sorted(
        scores.items(), key=lambda kv: (-kv[1], best[kv[0]][0], best[kv[0]][1], order[kv[0]])
    )


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
    return _fused(
        [(item, weight / (k + rank)) for rank, item in enumerate(ranking, start=1)]
        for ranking, weight in zip(rankings, weights, strict=True)
    )


def _normalised(items: Sequence[tuple[T, float]], weight: float) -> list[tuple[T, float]]:
    """`items` with each score min-max normalised onto [0, 1] (all 1 when they are equal),
    times `weight`."""
    values = [float(v) for _, v in items]
    if not values:
        return []
    lo, hi = min(values), max(values)
    return [
        (item, weight * ((v - lo) / (hi - lo) if hi > lo else 1.0))
        for (item, _), v in zip(items, values, strict=True)
    ]


def convex(
    scored: Sequence[Sequence[tuple[T, float]]],
    weights: Sequence[float] | None = None,
) -> list[tuple[T, float]]:
    """Fuse scored lists by a convex combination of min-max normalised scores.

    Each list's scores are mapped onto [0, 1] (its best 1, its worst 0; a list whose scores are
    all equal gives each 1), and score(d) = sum_i weights[i] * norm_i(d), an id missing from a
    list getting 0 from it (below that list's worst). Weights default to equal shares. Unlike
    rank fusion, a list whose best candidate stands far above the rest keeps that lead: a
    lexical match on a rare word is not levelled to the rank of a vague dense neighbour (Bruch,
    Gai and Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023).
    Returns (id, score) pairs, best first; ties go to the id with the best single rank, then to
    the earlier list, then to first appearance. An id repeated within one list counts at its
    first (best) position.
    """
    if weights is None:
        weights = [1.0 / len(scored)] * len(scored) if scored else []
    elif len(weights) != len(scored):
        raise ValueError(f"got {len(weights)} weights for {len(scored)} lists")
    return _fused(_normalised(items, w) for items, w in zip(scored, weights, strict=True))
