"""A value per mention id, kept as integer codes over alignment's sorted mention ids.

Alignment gives every mention its entity, its base entity and its node in the graph before
alignment; the later stages look them up by mention id, from alignment to the store write. As
dicts (hash tables and entries, the int objects of the node numbers) each would cost several
times the ids themselves. A `MentionTable` holds the sorted ids once (shared by every table of
one alignment), a 4-byte code per mention and the distinct values; a lookup bisects the ids
(slower than a dict, which a pass over every mention can afford). Written here because neither
the standard library nor numpy has a read-only sorted-key map of strings.

The sorted ids themselves are a `graphseek.knowledge.graph.memory.id_columns.MentionIds` when every
one has the form the extractors write (``"<passage id>#m<k>"``): two int32 columns instead of
a string per mention held from alignment to the store write; a lookup goes through the id's
passage instead of bisecting.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Generic, TypeVar, overload

import numpy as np

from graphseek.knowledge.graph.memory.id_columns import ABSENT, MentionIds, ids_at, split_mention_id
from graphseek.knowledge.graph.models import mention_id

__all__ = ["ABSENT", "MentionRows", "MentionTable", "sorted_position"]

V = TypeVar("V")
_T = TypeVar("_T")


def sorted_position(ids: Sequence[str], key: object) -> int:
    """The position of `key` in the sorted `ids` (bisection; `MentionIds.position` for those),
    `ABSENT` if it is not there."""
    if isinstance(ids, MentionIds):
        return ids.position(key)
    if not isinstance(key, str):
        return ABSENT
    k = bisect_left(ids, key)
    return k if k < len(ids) and ids[k] == key else ABSENT


class MentionTable(Mapping[str, V], Generic[V]):
    """``{ids[k]: values[codes[k]]}`` for every k whose code is not `ABSENT`. `ids`: sorted,
    unique (not copied: tables of one alignment share them). `values`: the distinct values,
    or None for tables whose codes are the values (ints)."""

    def __init__(
        self,
        ids: Sequence[str],
        codes: np.ndarray | Sequence[int],
        values: Sequence[V] | None = None,
    ) -> None:
        codes = np.asarray(codes, dtype=np.int32)
        if codes.shape != (len(ids),):
            raise ValueError(f"{codes.shape[0] if codes.ndim else 0} codes for {len(ids)} ids")
        self.ids = ids
        self._codes = array("i", codes.tobytes())  # indexing gives Python ints, fast
        self._values = values
        self._len = int(np.count_nonzero(codes != ABSENT))

    @property
    def codes(self) -> np.ndarray:
        """The codes, one per id (a view: read only)."""
        return np.frombuffer(self._codes, dtype=np.int32)

    def _code(self, key: object) -> int:
        k = sorted_position(self.ids, key)
        return ABSENT if k == ABSENT else self._codes[k]

    def __getitem__(self, key: str) -> V:
        code = self._code(key)
        if code == ABSENT:
            raise KeyError(key)
        return code if self._values is None else self._values[code]  # type: ignore[return-value]

    @overload
    def get(self, key: str) -> V | None: ...

    @overload
    def get(self, key: str, default: V | _T) -> V | _T: ...

    def get(self, key: str, default: object = None) -> object:
        code = self._code(key)
        if code == ABSENT:
            return default
        return code if self._values is None else self._values[code]

    def __contains__(self, key: object) -> bool:
        return self._code(key) != ABSENT

    def __iter__(self) -> Iterator[str]:
        codes = self._codes
        return (mid for k, mid in enumerate(self.ids) if codes[k] != ABSENT)

    def keys_sorted(self) -> Sequence[str]:
        """The ids in the table, sorted (as ``sorted(table)``; a view of a `MentionIds`, whose
        ids are made when read)."""
        return ids_at(self.ids, np.flatnonzero(self.codes != ABSENT))

    def __len__(self) -> int:
        return self._len

    def where(self, keep: Callable[[V], bool]) -> MentionTable[V]:
        """The table of the mentions whose value `keep` accepts (same ids, same values)."""
        if self._values is None:
            raise TypeError("`where` needs a table with values")
        accepted = np.fromiter((keep(v) for v in self._values), dtype=bool, count=len(self._values))
        codes = self.codes
        present = codes != ABSENT
        kept = present.copy()
        kept[present] = accepted[codes[present]]
        return MentionTable(self.ids, np.where(kept, codes, ABSENT), self._values)


class MentionRows(MutableMapping[str, int]):
    """A row number per mention id, kept by passage: an id ``"<passage id>#m<k>"``
    (`graphseek.knowledge.graph.models.mention_id`) is filed under its passage, whose numbers k
    and rows are two arrays (int32 and int64, sorted by k), about 12 bytes a mention, where a
    dict keyed by the id strings would hold its own strings and int objects. The passage pass's
    mention vectors hold it from the pass to the end of alignment (`contextual.MentionVectors`,
    before `freeze`). Ids of another form (none the extractors make; `split_mention_id`: also
    k of ten digits or more) go to a plain dict. Iteration gives each passage's ids by k, the
    passages in the order first given. Written here because a dict cannot share the prefix of
    its keys."""

    def __init__(self, items: Iterable[tuple[str, int]] = ()) -> None:
        self._passages: dict[str, tuple[array[int], array[int]]] = {}
        self._other: dict[str, int] = {}
        self._len = 0
        for key, row in items:
            self[key] = row

    def __setitem__(self, key: str, row: int) -> None:
        split = split_mention_id(key)
        if split is None:
            self._len += key not in self._other
            self._other[key] = row
            return
        passage, number = split
        entry = self._passages.get(passage)
        if entry is None:
            entry = self._passages[passage] = (array("i"), array("q"))
        numbers, rows = entry
        if not numbers or number > numbers[-1]:  # a passage's mentions come in order
            numbers.append(number)
            rows.append(row)
            self._len += 1
            return
        at = bisect_left(numbers, number)
        if numbers[at] == number:
            rows[at] = row
        else:
            numbers.insert(at, number)
            rows.insert(at, row)
            self._len += 1

    def get(self, key: object, default: Any = None) -> Any:
        split = split_mention_id(key)
        if split is None:
            return self._other.get(key, default) if isinstance(key, str) else default
        entry = self._passages.get(split[0])
        if entry is None:
            return default
        numbers, rows = entry
        at = bisect_left(numbers, split[1])
        return rows[at] if at < len(numbers) and numbers[at] == split[1] else default

    def __getitem__(self, key: str) -> int:
        row = self.get(key)
        if row is None:
            raise KeyError(key)
        return int(row)

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __delitem__(self, key: str) -> None:
        raise TypeError("mention rows are only added or replaced")

    def __iter__(self) -> Iterator[str]:
        for passage, (numbers, _) in self._passages.items():
            for number in numbers:
                yield mention_id(passage, number)
        yield from self._other

    def __len__(self) -> int:
        return self._len
