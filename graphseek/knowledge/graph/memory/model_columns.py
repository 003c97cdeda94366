"""Graph models held as columns (`ModelColumns`), each model made when it is read.

A build holds every aligned entity and hyperedge of the corpus from alignment to the store
write. As frozen pydantic models each costs its object and field dict and a list object per
list field (aliases, types, passages, members): several hundred bytes a model beyond its
strings. A corpus whose names do not repeat has several entities and hyperedges a passage, so
at a million passages those objects alone would take gigabytes.

Here a model class's scalar fields are one list each, and each list field one flat list of the
items of every model, one after another, with each model's end offset (8 bytes a model and a
pointer an item). The subclasses: `EntityColumns` (alignment's entities, their mention ids as
positions into alignment's sorted ids) and `HyperEdgeColumns`. Written here because the
columns are the build's own shapes: pyarrow's list arrays would hold the same, as a dependency
the build does not have.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel

from graphseek.knowledge.graph.algorithms.records import EntityRecord
from graphseek.knowledge.graph.memory.id_columns import ABSENT, IdList, MentionIds
from graphseek.knowledge.graph.memory.read_sequence import ReadSequence
from graphseek.knowledge.graph.models import Entity, HyperEdge, graph_record

_M = TypeVar("_M", bound=BaseModel)


class Ragged:
    """Lists held as one flat list (or int32 array) and each list's end offset."""

    __slots__ = ("ends", "flat")

    def __init__(self, flat: list[Any] | array[int] | None = None) -> None:
        self.flat: list[Any] | array[int] = [] if flat is None else flat
        self.ends = array("q")

    def append(self, items: Sequence[Any]) -> None:
        self.flat.extend(items)
        self.ends.append(len(self.flat))

    def at(self, k: int) -> Any:
        """List k (a new list, or an int32 array for an array's)."""
        start = self.ends[k - 1] if k else 0
        return self.flat[start : self.ends[k]]

    def taken(self, order: Sequence[int]) -> Ragged:
        """The lists in `order` (positions of them)."""
        out = Ragged(array("i") if isinstance(self.flat, array) else [])
        for k in order:
            out.append(self.at(k))
        return out


class ModelColumns(ReadSequence[_M]):
    """Models of `MODEL` as columns: the fields in `SCALARS` a list each, those in `LISTS` a
    `Ragged` each. Item k is a model made when read (`models.graph_record`: not validated; its
    lists are new lists), equal to the model made from the values added. `column` reads a
    scalar field's list and `items_of` one model's list field without making the model.
    Sorted by `id` once `finish`ed (nothing is added after), when `position` and `by_id` find
    a model by id. A subclass adds through its own method (`EntityColumns.add`,
    `HyperEdgeColumns.append`)."""

    MODEL: ClassVar[type[BaseModel]]
    SCALARS: ClassVar[tuple[str, ...]]
    LISTS: ClassVar[tuple[str, ...]]

    def __init__(self) -> None:
        self._columns: dict[str, list[Any]] = {name: [] for name in self.SCALARS}
        self._lists: dict[str, Ragged] = {name: Ragged() for name in self.LISTS}
        self._sorted = False

    def _add(self, values: Mapping[str, Any]) -> None:
        """Add a model of these field values (any order until `finish`; none after)."""
        if self._sorted:
            raise ValueError(
                f"the {self.MODEL.__name__} columns are finished: nothing can be added"
            )
        missing = [name for name in (*self.SCALARS, *self.LISTS) if name not in values]
        if missing:
            raise ValueError(f"a {self.MODEL.__name__} needs {', '.join(missing)}")
        for name, column in self._columns.items():
            column.append(values[name])
        for name, ragged in self._lists.items():
            ragged.append(values[name])

    def column(self, name: str) -> list[Any]:
        """The values of the scalar field `name`, one per model (the list held: not to be
        changed)."""
        return self._columns[name]

    @property
    def ids(self) -> list[str]:
        return self._columns["id"]

    def items_of(self, name: str, k: int) -> list[Any]:
        """Model k's list field `name` (a negative k as a list's), without making the model."""
        return self._lists[name].at(self._index(k))  # type: ignore[no-any-return]

    def _permute(self, order: Sequence[int]) -> None:
        self._columns = {name: [c[k] for k in order] for name, c in self._columns.items()}
        self._lists = {name: r.taken(order) for name, r in self._lists.items()}

    def finish(self) -> Self:
        """Sort the models by id (ids must be unique); returns self."""
        ids = self.ids
        order = sorted(range(len(ids)), key=ids.__getitem__)
        if any(k != n for n, k in enumerate(order)):
            self._permute(order)
            ids = self.ids
        self._check()
        if any(a == b for a, b in zip(ids, ids[1:], strict=False)):
            raise ValueError(f"two {self.MODEL.__name__} models have one id")
        self._sorted = True
        return self

    def _check(self) -> None:
        """Raise if the columns are not of one length (a subclass's own columns too)."""

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} models)"

    def _values(self, k: int) -> dict[str, Any]:
        values = {name: column[k] for name, column in self._columns.items()}
        values.update((name, ragged.at(k)) for name, ragged in self._lists.items())
        return values

    def _item(self, k: int) -> _M:
        return graph_record(self.MODEL, **self._values(k))  # type: ignore[return-value]

    def position(self, eid: str) -> int:
        """Where the model with the id `eid` is, or `ABSENT`."""
        if not self._sorted:
            raise ValueError("the models are not sorted yet (call finish)")
        ids = self.ids
        k = bisect_left(ids, eid)
        return k if k < len(ids) and ids[k] == eid else ABSENT

    def by_id(self) -> Mapping[str, _M]:
        """The models by id, each made when looked up."""
        return _ById(self)


class _ById(Mapping[str, _M]):
    __slots__ = ("columns",)

    def __init__(self, columns: ModelColumns[_M]) -> None:
        self.columns = columns

    def __getitem__(self, eid: str) -> _M:
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


class EntityColumns(ModelColumns[Entity]):
    """Alignment's entities (`add` an aligned group's record), their mention ids as int32
    positions into alignment's sorted ids when those are a `MentionIds` (each entity's
    `mention_ids` then an `IdList` view of them), else as strings."""

    MODEL = Entity
    ITEM = "entity"
    SCALARS = ("id", "name", "description")
    LISTS = ("aliases", "types", "passage_ids")

    def __init__(self, mention_ids: Sequence[str] = ()) -> None:
        super().__init__()
        self._source = mention_ids if isinstance(mention_ids, MentionIds) else None
        self._mentions = Ragged(array("i") if self._source is not None else [])

    def add(self, eid: str, record: EntityRecord) -> None:
        """Add the entity `eid` of an aligned group's `record`: the entity read back is
        `align.record_entity(record, eid)` (a record's mention ids are sorted)."""
        mids = record.mention_ids
        held: Sequence[Any]
        if self._source is None:
            held = list(mids)
        elif isinstance(mids, IdList) and mids.ids is self._source:
            held = mids.positions
        else:  # a record of other ids: their positions (sorted ids: ascending positions)
            held = sorted(self._source.position(m) for m in mids)
            if held and held[0] == ABSENT:
                raise ValueError("an entity record names a mention id alignment does not have")
        self._add(
            {
                "id": eid,
                "name": record.name,
                "description": record.description,
                "aliases": record.aliases,
                "types": record.types,
                "passage_ids": record.passage_ids,
            }
        )
        self._mentions.append(held)

    def _check(self) -> None:
        if len(self._mentions.ends) != len(self):
            raise ValueError("the entities' mention ids are not one list an entity")

    def _permute(self, order: Sequence[int]) -> None:
        super()._permute(order)
        self._mentions = self._mentions.taken(order)

    def _values(self, k: int) -> dict[str, Any]:
        values = super()._values(k)
        positions = self._mentions.at(k)
        values["mention_ids"] = (
            positions if self._source is None else IdList(self._source, positions)
        )
        return values


class HyperEdgeColumns(ModelColumns[HyperEdge]):
    """A build's hyperedges."""

    MODEL = HyperEdge
    ITEM = "hyperedge"
    SCALARS = ("id", "relation", "topic_id")
    LISTS = ("entity_ids", "passage_ids")

    def append(self, **values: Any) -> None:
        """Add a hyperedge of these field values (all of them)."""
        self._add(values)

    def with_topics(self, topic_ids: Sequence[str | None]) -> HyperEdgeColumns:
        """The same hyperedges with these topic ids (one per hyperedge, in order)."""
        if not self._sorted:
            raise ValueError("finish the hyperedges before giving them topics")
        if len(topic_ids) != len(self):
            raise ValueError("expected one topic id per hyperedge")
        out = HyperEdgeColumns()  # shares the other columns: neither can be added to
        out._columns = {**self._columns, "topic_id": list(topic_ids)}
        out._lists = self._lists
        out._sorted = True
        return out
