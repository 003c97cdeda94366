"""Semantic merging's decided pairs of base entities, as columns.

Alignment decides every candidate pair (about ten per base entity) and keeps them to the store
write (the ``merge_pairs`` table, which an update reads back so that pairs of unchanged base
entities are not decided again). A dict ``(base id a, base id b) -> (cosine, merged)`` would
cost a tuple and its objects per pair, in each of the three sets alignment makes on the way
(the candidates, the undecided ones, the decisions). `MergePairs` keeps two int32 positions in
the sorted base ids, a float64 cosine and a merged flag per pair: 17 bytes. It reads as that
dict.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, Sequence

import numpy as np

from graphseek.knowledge.graph.memory.mention_table import sorted_position

Pair = tuple[str, str]
Decision = tuple[float, bool]


class MergePairs(Mapping[Pair, Decision]):
    """``{(ids[a[k]], ids[b[k]]): (sim[k], merged[k])}``: `ids` sorted and unique, a[k] < b[k],
    rows in (a, b) order without repeats (`of` sorts and checks them)."""

    def __init__(
        self,
        ids: Sequence[str],
        a: np.ndarray,
        b: np.ndarray,
        sim: np.ndarray,
        merged: np.ndarray,
    ) -> None:
        if any(x >= y for x, y in zip(ids, ids[1:], strict=False)):
            raise ValueError("MergePairs needs its base ids sorted and unique")
        self.ids = ids
        self.a = np.asarray(a, dtype=np.int32)
        self.b = np.asarray(b, dtype=np.int32)
        self.sim = np.asarray(sim, dtype=np.float64)
        self.merged = np.asarray(merged, dtype=bool)

    @property
    def codes(self) -> np.ndarray:
        """a * len(ids) + b per row, ascending (made when asked: 8 bytes a pair that the pairs
        would otherwise hold from alignment to the store write)."""
        return self.a.astype(np.int64) * max(len(self.ids), 1) + self.b

    @classmethod
    def of(
        cls,
        ids: Sequence[str],
        a: np.ndarray,
        b: np.ndarray,
        sim: np.ndarray,
        merged: np.ndarray,
    ) -> MergePairs:
        """The pairs of positions `a`, `b` (either order) in `ids`, sorted; a pair given twice
        keeps its first row."""
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        if np.any(lo == hi):
            raise ValueError("a pair of a base entity with itself")
        _, first = np.unique(lo * max(len(ids), 1) + hi, return_index=True)
        return cls(
            ids, lo[first], hi[first], np.asarray(sim)[first], np.asarray(merged, dtype=bool)[first]
        )

    @classmethod
    def empty(cls, ids: Sequence[str]) -> MergePairs:
        none = np.zeros(0, dtype=np.int32)
        return cls(ids, none, none, np.zeros(0), np.zeros(0, dtype=bool))

    @classmethod
    def from_mapping(cls, ids: Sequence[str], pairs: Mapping[Pair, Decision]) -> MergePairs:
        """The pairs of `pairs` (by base id) whose both ends are in `ids`; a `MergePairs` over
        other ids is re-indexed without reading its rows one by one."""
        if isinstance(pairs, MergePairs):
            if pairs.ids is ids:
                return pairs
            where = _positions(ids, pairs.ids)
            a, b = where[pairs.a], where[pairs.b]
            keep = (a >= 0) & (b >= 0)
            return cls.of(ids, a[keep], b[keep], pairs.sim[keep], pairs.merged[keep])
        position = {x: k for k, x in enumerate(ids)}
        rows = [
            (position[x], position[y], sim, merged)
            for (x, y), (sim, merged) in pairs.items()
            if x in position and y in position
        ]
        if not rows:
            return cls.empty(ids)
        columns = [np.array(column) for column in zip(*rows, strict=True)]
        return cls.of(ids, *columns)

    def join(self, other: MergePairs) -> MergePairs:
        """These pairs and `other`'s (same ids); a pair in both keeps this one's row."""
        return MergePairs.of(
            self.ids,
            np.concatenate([self.a, other.a]),
            np.concatenate([self.b, other.b]),
            np.concatenate([self.sim, other.sim]),
            np.concatenate([self.merged, other.merged]),
        )

    def _row(self, key: object) -> int:
        if not (isinstance(key, tuple) and len(key) == 2):
            return -1
        x, y = key
        i, j = sorted_position(self.ids, x), sorted_position(self.ids, y)
        if i < 0 or j < 0:
            return -1
        # rows in (a, b) order: those of a == i, then b == j among them
        lo, hi = np.searchsorted(self.a, i, "left"), np.searchsorted(self.a, i, "right")
        k = int(lo + np.searchsorted(self.b[lo:hi], j))
        return k if k < hi and self.b[k] == j else -1

    def __getitem__(self, key: Pair) -> Decision:
        k = self._row(key)
        if k < 0:
            raise KeyError(key)
        return float(self.sim[k]), bool(self.merged[k])

    def __contains__(self, key: object) -> bool:
        return self._row(key) >= 0

    def __iter__(self) -> Iterator[Pair]:
        ids = self.ids
        return ((ids[i], ids[j]) for i, j in zip(self.a.tolist(), self.b.tolist(), strict=True))

    def __len__(self) -> int:
        return len(self.a)

    def items(self) -> ItemsView[Pair, Decision]:
        return _Items(self)


class _Items(ItemsView[Pair, Decision]):
    """The rows in order, read from the columns (not looked up key by key)."""

    _mapping: MergePairs

    def __iter__(self) -> Iterator[tuple[Pair, Decision]]:
        pairs = self._mapping
        ids = pairs.ids
        for i, j, sim, merged in zip(
            pairs.a.tolist(),
            pairs.b.tolist(),
            pairs.sim.tolist(),
            pairs.merged.tolist(),
            strict=True,
        ):
            yield (ids[i], ids[j]), (sim, merged)


def _positions(ids: Sequence[str], others: Sequence[str]) -> np.ndarray:
    """Each of `others`' position in `ids`, -1 where absent (both sorted: one merge)."""
    out = np.full(len(others), -1, dtype=np.int64)
    k = 0
    for n, x in enumerate(others):
        while k < len(ids) and ids[k] < x:
            k += 1
        if k < len(ids) and ids[k] == x:
            out[n] = k
    return out
