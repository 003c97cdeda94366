"""`ReadSequence`: the read-only sequence shape a build's columns share.

A build holds many things as columns and makes each item when it is read: mention ids
(`id_columns`), mentions (`mention_columns`), relations (`relation_columns`), entities and
hyperedges (`model_columns`), the spooled extractions (`spool`). Each is a `Sequence` whose
item k comes from one method; this class is their indexing (a negative index as a list's, an
`IndexError` naming the item out of range, a slice as a list) and their iteration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar, TypeVar, overload

_T = TypeVar("_T")


class ReadSequence(Sequence[_T]):
    """A read-only sequence whose item k is made by `_item(k)` (0 <= k < len) when read; a
    slice is the list of its items (`_slice`, which a subclass may read in bulk)."""

    __slots__ = ()

    ITEM: ClassVar[str] = "item"
    """What an item is called in the `IndexError` of an index out of range."""

    def _item(self, k: int) -> _T:
        raise NotImplementedError

    def _slice(self, k: slice) -> list[_T]:
        return [self._item(j) for j in range(*k.indices(len(self)))]

    @overload
    def __getitem__(self, k: int) -> _T: ...

    @overload
    def __getitem__(self, k: slice) -> list[_T]: ...

    def __getitem__(self, k: int | slice) -> _T | list[_T]:
        return self._slice(k) if isinstance(k, slice) else self._item(self._index(k))

    def _index(self, k: int) -> int:
        """`k` as a position (a negative one as a list's); `IndexError` out of range."""
        n = len(self)
        j = k + n if k < 0 else k
        if not 0 <= j < n:
            raise IndexError(f"{self.ITEM} {j} of {n}")
        return j

    def __iter__(self) -> Iterator[_T]:
        return map(self._item, range(len(self)))
