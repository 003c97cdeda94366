"""Id columns: many ids held as numbers or bytes instead of one Python string each.

A build holds ids by the million from alignment to the store write (a mention id per mention,
a relation id per relation), and as strings in a list each costs a string object, its
characters and the list's pointer. `MentionIds` keeps alignment's sorted
mention ids as two int32 columns (each id's passage and number), `IdList` some of them by
position (an entity's provenance), `AsciiIds` fixed-width ids (relation ids) as one numpy bytes
array. Each is a read-only `Sequence[str]` whose items are made when read, equal to a list of
the same strings. Written here because neither the standard library nor numpy has a compact
sequence of strings with a lookup by value.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from graphseek.knowledge.graph.memory.read_sequence import ReadSequence
from graphseek.knowledge.graph.models import mention_id

ABSENT = -1
"""The position of an id that is not there, and the code of a mention a table leaves out."""


def split_mention_id(key: object) -> tuple[str, int] | None:
    """``(passage id, k)`` of an id ``"<passage id>#m<k>"``
    (`graphseek.knowledge.graph.models.mention_id`), None for an id of another form: the id is
    exactly ``f"{passage}#m{k}"`` again (``"…#m07"`` is another id than ``"…#m7"``), and k
    has at most `MAX_DIGITS` digits (an int32)."""
    if not isinstance(key, str):
        return None
    passage, sep, number = key.rpartition("#m")
    if (
        sep
        and number.isdigit()
        and number.isascii()
        and len(number) <= MAX_DIGITS
        and (number[0] != "0" or number == "0")
    ):
        return passage, int(number)
    return None


MAX_DIGITS = 9
"""The most digits of a mention number k kept as an int32 (`split_mention_id`)."""


def mention_id_order(
    passages: Sequence[str], passage: np.ndarray, number: np.ndarray
) -> np.ndarray | None:
    """The stable order that sorts the ids ``f"{passages[passage[j]]}#m{number[j]}"`` as
    strings, found without making them: by ``"<passage id>#m"``, then by k's decimal digits as
    a string (``"1" < "10" < "100" < "11" < "2"``). None when one passage's ``"<id>#m"``
    begins another's (``"a"`` and ``"a#m1"``: their ids can interleave, so sort the strings).
    A passage's ids come together in string order otherwise, since no other id starts with
    its ``"<id>#m"``."""
    keys = [p + "#m" for p in passages]
    by_key = sorted(range(len(keys)), key=keys.__getitem__)
    if any(keys[b].startswith(keys[a]) for a, b in zip(by_key, by_key[1:], strict=False)):
        return None  # (a key that begins another is followed by one it begins, in order)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[np.asarray(by_key, dtype=np.int64)] = np.arange(len(keys), dtype=np.int64)
    number = np.asarray(number, dtype=np.int64)
    digits = np.ones(len(number), dtype=np.int64)
    for d in range(1, MAX_DIGITS):
        digits += number >= 10**d
    # k's digits left-aligned ("1" and "10" both 100000000), then the shorter first
    aligned = number * 10 ** (MAX_DIGITS - digits)
    return np.lexsort((digits, aligned, rank[np.asarray(passage, dtype=np.int64)]))


class _Strings(ReadSequence[str]):
    """A read-only sequence of strings made when read (item k: `_item`), equal to a list of
    the same strings."""

    __slots__ = ()
    ITEM = "id"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class MentionIdParts:
    """Mention ids split as they are added (`split_mention_id`): the distinct passages, and
    each id's passage code and k, in the order added; no id string is kept."""

    def __init__(self) -> None:
        self._code: dict[str, int] = {}
        self._passage, self._number = array("i"), array("i")

    def add(self, mid: str) -> bool:
        """Add `mid`; False (nothing added) when it is not of the form
        ``"<passage id>#m<k>"``."""
        split = split_mention_id(mid)
        if split is None:
            return False
        self._passage.append(self._code.setdefault(split[0], len(self._code)))
        self._number.append(split[1])
        return True

    def strings(self) -> list[str]:
        """The ids added, as strings, in the order added."""
        passages = list(self._code)
        return [
            mention_id(passages[p], k) for p, k in zip(self._passage, self._number, strict=True)
        ]

    def order(self) -> np.ndarray | None:
        """The order that sorts the ids added as strings (`mention_id_order`)."""
        passage = np.frombuffer(self._passage, dtype=np.int32)
        return mention_id_order(list(self._code), passage, np.frombuffer(self._number, np.int32))

    def ids(self, order: np.ndarray | None = None) -> MentionIds:
        """The ids added, in `order` (default: as added; a `MentionIds` holds them sorted)."""
        passage = np.frombuffer(self._passage, dtype=np.int32)
        number = np.frombuffer(self._number, dtype=np.int32)
        if order is not None:
            passage, number = passage[order], number[order]
        return MentionIds(list(self._code), passage, number)


class MentionIds(_Strings):
    """Sorted, unique mention ids of the form ``"<passage id>#m<k>"``, held as each one's
    passage (an int32 code into `passages`) and k (int32), about 16 bytes an id with the lookup
    below. Item j is made as a string when it is read.
    `position` finds an id through its passage's ids, kept by k: a dict lookup and a bisection
    over a few numbers (faster than bisecting every id). Build with `of`."""

    def __init__(self, passages: Sequence[str], passage: np.ndarray, number: np.ndarray) -> None:
        """`passages`: the distinct passage ids; `passage`, `number`: a row per id, in the ids'
        sorted order (neither this nor `of` checks the order or the uniqueness:
        `MentionColumns.of` does)."""
        passage = np.asarray(passage, dtype=np.int32)
        number = np.asarray(number, dtype=np.int32)
        if passage.shape != number.shape or passage.ndim != 1:
            raise ValueError(f"{passage.shape} passage codes for {number.shape} numbers")
        self.passages = passages
        # array indexing gives Python ints, fast (item reads, bisection)
        self._passage = array("i", passage.tobytes())
        self._number = array("i", number.tobytes())
        self.passage = np.frombuffer(self._passage, dtype=np.int32)
        """Each id's passage code (a read-only view)."""
        self.number = np.frombuffer(self._number, dtype=np.int32)
        """Each id's k (a read-only view)."""
        self.passage.flags.writeable = self.number.flags.writeable = False
        by_key = np.lexsort((number, passage))  # each passage's ids, by k
        self._by_key = array("i", by_key.astype(np.int32).tobytes())
        self._key_number = array("i", number[by_key].tobytes())
        counts = np.bincount(passage, minlength=len(passages))
        self._start = array(
            "q", np.concatenate([[0], np.cumsum(counts)]).astype(np.int64).tobytes()
        )
        self._code = {p: k for k, p in enumerate(passages)}

    @classmethod
    def of(cls, ids: Sequence[str]) -> MentionIds | None:
        """`ids` (sorted and unique: not checked) as a `MentionIds`; None when one is not of
        the form ``"<passage id>#m<k>"`` (keep the strings then)."""
        parts = MentionIdParts()
        if not all(parts.add(mid) for mid in ids):
            return None
        return parts.ids()

    def position(self, key: object) -> int:
        """The position of `key`, `ABSENT` if it is not one of these ids."""
        split = split_mention_id(key)
        if split is None:
            return ABSENT
        code = self._code.get(split[0])
        if code is None:
            return ABSENT
        lo, hi = self._start[code], self._start[code + 1]
        j = bisect_left(self._key_number, split[1], lo, hi)
        return self._by_key[j] if j < hi and self._key_number[j] == split[1] else ABSENT

    def __len__(self) -> int:
        return len(self._number)

    def _item(self, k: int) -> str:
        return mention_id(self.passages[self._passage[k]], self._number[k])

    def __iter__(self) -> Iterator[str]:
        passages = self.passages
        return (
            mention_id(passages[p], k) for p, k in zip(self._passage, self._number, strict=True)
        )

    def __contains__(self, key: object) -> bool:
        return self.position(key) != ABSENT

    def take(self, positions: Iterable[int] | np.ndarray) -> IdList:
        """The ids at `positions`, in sorted order (a view: `IdList`)."""
        return IdList(self, _ascending(positions))


def ids_at(ids: Sequence[str], positions: Iterable[int] | np.ndarray) -> Sequence[str]:
    """The ids at `positions` of the sorted `ids`, in sorted order: a view (`IdList`) of a
    `MentionIds`, else a list of the strings."""
    if isinstance(ids, MentionIds):
        return ids.take(positions)
    return [ids[k] for k in _ascending(positions)]


def _ascending(positions: Iterable[int] | np.ndarray) -> array[int]:
    """`positions` sorted, as an int32 array (a numpy array's sorted by numpy, without an int
    object per position)."""
    if isinstance(positions, np.ndarray):
        return array("i", np.sort(positions).astype(np.int32).tobytes())
    return array("i", sorted(positions))


class AsciiIds(_Strings):
    """Ids of ASCII characters held in one numpy array of fixed-width bytes (``S<width>``):
    a build's relation ids (``"r-"`` and 12 hex digits) take 14 bytes each. Item k is made as
    a string when it is read. Build with `of`."""

    def __init__(self, data: np.ndarray) -> None:
        if data.dtype.kind != "S" or data.ndim != 1:
            raise ValueError(f"expected a 1-D array of bytes, got {data.dtype} {data.shape}")
        self.data = data

    @classmethod
    def of(cls, ids: Sequence[str]) -> Sequence[str]:
        """`ids` as `AsciiIds`, or the list itself when one is not ASCII or ends in a NUL
        (which the bytes array would drop) or when they are empty."""
        if not ids or not all(i.isascii() and not i.endswith("\0") for i in ids):
            return ids
        return cls(np.array([i.encode("ascii") for i in ids], dtype=bytes))

    def __len__(self) -> int:
        return len(self.data)

    def _item(self, k: int) -> str:
        return bytes(self.data[k]).decode("ascii")

    def _slice(self, k: slice) -> list[str]:
        return [b.decode("ascii") for b in self.data[k].tolist()]

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self.data), 4096):  # a block of bytes objects at a time
            yield from (b.decode("ascii") for b in self.data[start : start + 4096].tolist())


class IdList(_Strings):
    """Some of a `MentionIds`' ids, by their positions (ascending: the ids in sorted order):
    an entity's provenance, 4 bytes an id instead of a list of strings. Equal to any sequence
    of the same strings."""

    __slots__ = ("ids", "positions")

    def __init__(self, ids: MentionIds, positions: array[int]) -> None:
        """`positions`: ascending (not checked; not copied)."""
        self.ids = ids
        self.positions = positions

    def __len__(self) -> int:
        return len(self.positions)

    def _item(self, k: int) -> str:
        return self.ids[self.positions[k]]

    def __iter__(self) -> Iterator[str]:
        return map(self.ids.__getitem__, self.positions)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdList) and other.ids is self.ids:
            return self.positions == other.positions
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # (defining __eq__ drops it all the same)

    def __repr__(self) -> str:
        return f"IdList({list(self)!r})"
