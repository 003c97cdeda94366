"""A build's aligned entities as columns (`EntityColumns`), each `Entity` made when it is read.

Alignment gives every entity a name, aliases, a description, types, the passages and the
mentions it was merged from, and a build holds them all from alignment to the store write. As
frozen pydantic models (`Entity`) each took its object and field dict (about 330 bytes) and
four lists (aliases, types, passage ids, and a view of its mention ids with its own array):
about 600 bytes an entity beyond the strings themselves (`benchmarks/reduce_stages.py
--holders` at 100,000 passages: 184,000 models' objects 59 MB, their passage-id lists 24 MB and
mention-id arrays 27 MB). On a corpus whose names do not repeat there are 6 to 9 entities a
passage (57,481 for 2Wiki's 6,119 passages), so at a million passages these objects alone would
take several GB.

Here the strings are kept, once each, in flat lists (names, descriptions, and the aliases,
types and passage ids of all entities one after another, with each entity's end offset), and
the mention ids as int32 positions into alignment's sorted ids (`id_columns.MentionIds`) or,
for ids of another form, as strings. Written here because the columns are the build's own
shapes: pyarrow's list arrays would hold the same, as a dependency the build does not have.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from graphseek.knowledge.graph.id_columns import ABSENT, IdList, MentionIds
from graphseek.knowledge.graph.models import Entity, graph_record
from graphseek.knowledge.graph.records import EntityRecord


class _Ragged:
    """Lists held as one flat list (or int32 array) and each list's end offset."""

    __slots__ = ("ends", "flat")

    def __init__(self, flat: list[Any] | array[int]) -> None:
        self.flat = flat
        self.ends = array("q")

    def append(self, items: Sequence[Any]) -> None:
        self.flat.extend(items)
        self.ends.append(len(self.flat))

    def at(self, k: int) -> list[Any] | array[int]:
        start = self.ends[k - 1] if k else 0
        return self.flat[start : self.ends[k]]

    def taken(self, order: Sequence[int]) -> _Ragged:
        """The lists in `order` (a permutation of their positions)."""
        out = _Ragged(array("i") if isinstance(self.flat, array) else [])
        for k in order:
            out.append(self.at(k))
        return out


class EntityColumns(Sequence[Entity]):
    """Aligned entities as columns, sorted by id once `finish`ed: item k is an `Entity` made
    when read (`models.graph_record`: not validated, the fields' values as they were added),
    equal to the model alignment made before. `ids`, `names` and `types_of` read the columns
    without making entities; `by_id` looks them up by id (a bisection of the sorted ids).
    `mention_ids`: alignment's sorted mention ids, which every record's `mention_ids` is a view
    of (`IdList`) when they are a `MentionIds`."""

    def __init__(self, mention_ids: Sequence[str] = ()) -> None:
        self.ids: list[str] = []
        self.names: list[str] = []
        self.descriptions: list[str] = []
        self._aliases = _Ragged([])
        self._types = _Ragged([])
        self._passages = _Ragged([])
        self._source = mention_ids if isinstance(mention_ids, MentionIds) else None
        self._mentions = _Ragged(array("i") if self._source is not None else [])
        self._sorted = False

    def add(self, eid: str, record: EntityRecord) -> None:
        """Add the entity `eid` of an aligned group's `record` (ids in any order until
        `finish`)."""
        self.ids.append(eid)
        self.names.append(record.name)
        self.descriptions.append(record.description)
        self._aliases.append(record.aliases)
        self._types.append(record.types)
        self._passages.append(record.passage_ids)
        mids = record.mention_ids
        if self._source is None:
            self._mentions.append(list(mids))
        elif isinstance(mids, IdList) and mids.ids is self._source:
            self._mentions.append(mids.positions)
        else:  # a record of other ids: their positions, sorted as the ids are
            positions = [self._source.position(m) for m in mids]
            if ABSENT in positions:
                raise ValueError("an entity record names a mention id alignment does not have")
            self._mentions.append(sorted(positions))
        self._sorted = False

    def finish(self) -> EntityColumns:
        """Sort the entities by id (ids are unique); returns self."""
        order = sorted(range(len(self.ids)), key=self.ids.__getitem__)
        if any(k != n for n, k in enumerate(order)):
            self.ids = [self.ids[k] for k in order]
            self.names = [self.names[k] for k in order]
            self.descriptions = [self.descriptions[k] for k in order]
            self._aliases = self._aliases.taken(order)
            self._types = self._types.taken(order)
            self._passages = self._passages.taken(order)
            self._mentions = self._mentions.taken(order)
        if any(a == b for a, b in zip(self.ids, self.ids[1:], strict=False)):
            raise ValueError("two aligned entities have one id")
        self._sorted = True
        return self

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, k: int) -> Entity: ...

    @overload
    def __getitem__(self, k: slice) -> list[Entity]: ...

    def __getitem__(self, k: int | slice) -> Entity | list[Entity]:
        if isinstance(k, slice):
            return [self._entity(n) for n in range(*k.indices(len(self)))]
        n = len(self)
        if not -n <= k < n:
            raise IndexError("entity index out of range")
        return self._entity(k % n)

    def __iter__(self) -> Iterator[Entity]:
        return map(self._entity, range(len(self)))

    def _entity(self, k: int) -> Entity:
        positions = self._mentions.at(k)
        mention_ids: Sequence[str]
        if self._source is not None:
            mention_ids = IdList(self._source, positions)  # type: ignore[arg-type]
        else:
            mention_ids = positions  # type: ignore[assignment]
        return graph_record(
            Entity,
            id=self.ids[k],
            name=self.names[k],
            aliases=self._aliases.at(k),
            description=self.descriptions[k],
            types=self._types.at(k),
            passage_ids=self._passages.at(k),
            mention_ids=mention_ids,
        )

    def types_of(self, k: int) -> list[str]:
        """The types of entity k, without making the entity."""
        return self._types.at(k)  # type: ignore[return-value]

    def passage_ids_of(self, k: int) -> list[str]:
        """The passages entity k was extracted from, without making the entity."""
        return self._passages.at(k)  # type: ignore[return-value]

    def position(self, eid: str) -> int:
        """Where the entity `eid` is, or `ABSENT`."""
        if not self._sorted:
            raise ValueError("the entities are not sorted yet (call finish)")
        k = bisect_left(self.ids, eid)
        return k if k < len(self.ids) and self.ids[k] == eid else ABSENT

    def by_id(self) -> Mapping[str, Entity]:
        """The entities by id, each made when looked up."""
        return _ById(self)


class _ById(Mapping[str, Entity]):
    __slots__ = ("columns",)

    def __init__(self, columns: EntityColumns) -> None:
        self.columns = columns

    def __getitem__(self, eid: str) -> Entity:
        k = self.columns.position(eid)
        if k == ABSENT:
            raise KeyError(eid)
        return self.columns[k]

    def __contains__(self, eid: object) -> bool:
        return isinstance(eid, str) and self.columns.position(eid) != ABSENT

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns.ids)

    def __len__(self) -> int:
        return len(self.columns)
