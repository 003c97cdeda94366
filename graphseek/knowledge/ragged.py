"""Lists of integers held as two arrays (`Groups`): the members one after another and where
each list starts.

Exact merging's groups (`graphseek.knowledge.graph.algorithms.exact`) and BM25's token ids of every
text (`graphseek.knowledge.sparse`, read by bm25s as a list per text) are such lists, a few bytes a
member instead of a Python int's pointer and a list object each. Written here because numpy has
no ragged array and the lists are read back one at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

__all__ = ["Groups", "starts_of"]


class Groups(Sequence[list[int]]):
    """Groups of integers held as two arrays: the members of every group one after another
    (`flat`, int32) and where each group starts in it (`starts`, one more than the groups).
    Item k is group k as a list. Exact merging's groups (about one per two mentions) are held
    through alignment's radius search, where lists of Python ints would cost an object per
    member."""

    def __init__(self, flat: np.ndarray, starts: np.ndarray) -> None:
        self.flat = np.asarray(flat, dtype=np.int32)
        self.starts = np.asarray(starts, dtype=np.int64)

    @classmethod
    def of(cls, groups: Sequence[Sequence[int]]) -> Groups:
        lengths = np.fromiter((len(g) for g in groups), dtype=np.int64, count=len(groups))
        flat = np.fromiter((i for g in groups for i in g), dtype=np.int32, count=int(lengths.sum()))
        return cls(flat, starts_of(lengths))

    def __len__(self) -> int:
        return len(self.starts) - 1

    @overload
    def __getitem__(self, k: int) -> list[int]: ...

    @overload
    def __getitem__(self, k: slice) -> list[list[int]]: ...

    def __getitem__(self, k: int | slice) -> list[int] | list[list[int]]:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"group {k} of {len(self)}")
        return self._group(k)

    def __iter__(self) -> Iterator[list[int]]:
        return map(self._group, range(len(self)))

    def _group(self, k: int) -> list[int]:
        return self.flat[self.starts[k] : self.starts[k + 1]].tolist()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Groups):
            return bool(
                np.array_equal(self.flat, other.flat) and np.array_equal(self.starts, other.starts)
            )
        if isinstance(other, Sequence):
            return len(self) == len(other) and all(
                a == list(b) for a, b in zip(self, other, strict=True)
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def take(self, order: Sequence[int] | np.ndarray) -> Groups:
        """The groups in the order `order` gives (group ``order[k]`` becomes group k)."""
        order = np.asarray(order, dtype=np.int64)
        lengths = self.lengths()[order]
        starts = starts_of(lengths)
        source = np.repeat(self.starts[order] - starts[:-1], lengths)
        return Groups(self.flat[source + np.arange(starts[-1], dtype=np.int64)], starts)

    def labels(self, n: int) -> np.ndarray:
        """Each of the integers 0..n-1's group number (int32; every one must be in a group)."""
        out = np.empty(n, dtype=np.int32)
        out[self.flat] = np.repeat(np.arange(len(self), dtype=np.int32), self.lengths())
        return out


def starts_of(lengths: np.ndarray) -> np.ndarray:
    """Where each group starts in `Groups.flat`, and the end: 0, then the running sum."""
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
