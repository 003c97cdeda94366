"""Alignment's mentions as columns: a `Sequence[Mention]` sorted by mention id.

Alignment holds every mention of the corpus from its first step to its last, more than twenty
a passage; as `Mention` objects, even slotted with their repeated values shared, they would be
the largest part of alignment's peak. `MentionColumns` keeps the id strings (the
entities' provenance and alignment's `MentionTable`s keep them after alignment anyway), an
int32 code per mention for each other field, and each field's distinct values once; item k is
made as a `Mention` when it is read, and the steps that pass over every mention (the passage
numbers of `exact_groups`, the name and type keys of `raw_entity_count`) read the codes
directly. Written here because a dataframe library would hold the same codes and strings with
a dependency and a copy per conversion, and alignment's functions read mentions one group at a
time.

The ids are a `MentionIds` (two int32 columns, each id made when read) when all have the
form the extractors write, else the strings; `id_list` gives a group's ids for its record.

Not kept, because alignment reads none of them: the name's span (`Mention.start`, `end`; it
served the passage pass, which is over when alignment starts) and the sentence number (the
later stages read it from the extractions). Items have -1 (unknown) for the three.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

import numpy as np

from graphseek.knowledge.graph.memory.id_columns import MentionIdParts, MentionIds, ids_at
from graphseek.knowledge.graph.memory.read_sequence import ReadSequence
from graphseek.knowledge.graph.models import Mention

_T = TypeVar("_T", bound=Hashable)
_new = object.__new__

FIELDS = ("passage", "name", "aliases", "description", "types")
"""The fields kept, as codes into their distinct values (with the id)."""


class Distinct(Generic[_T]):
    """The distinct values of one field, each given an int code in order of first sight."""

    def __init__(self) -> None:
        self.values: list[_T] = []
        self._code: dict[_T, int] = {}

    def code(self, value: _T) -> int:
        code = self._code.get(value)
        if code is None:
            code = self._code[value] = len(self.values)
            self.values.append(value)
        return code


class MentionColumns(ReadSequence[Mention]):
    """Mentions sorted by id, held as columns (see the module docstring). Build with `of`."""

    ITEM = "mention"

    def __init__(
        self,
        ids: Sequence[str],
        codes: Mapping[str, np.ndarray],
        passages: list[str],
        names: list[str],
        aliases: list[list[str]],
        descriptions: list[str],
        types: list[list[str]],
    ) -> None:
        """`codes`: an int32 column per field of `FIELDS`, a row per id; the lists: each
        field's distinct values, which its codes number."""
        if set(codes) != set(FIELDS):
            raise ValueError(f"columns {sorted(codes)}: expected {list(FIELDS)}")
        self.ids = ids
        """The mention ids, sorted and unique (a `MentionIds` or a list)."""
        # array indexing gives Python ints, fast; a column each, read by `_item`
        self._codes = {
            n: array("i", np.asarray(c, dtype=np.int32).tobytes()) for n, c in codes.items()
        }
        if any(len(c) != len(ids) for c in self._codes.values()):
            raise ValueError(f"every column must have a row for each of the {len(ids)} ids")
        self._passage, self._name = self._codes["passage"], self._codes["name"]
        self._alias, self._description = self._codes["aliases"], self._codes["description"]
        self._type = self._codes["types"]
        self.passages = passages
        self.names = names
        self.aliases = aliases
        self.descriptions = descriptions
        self.types = types

    @classmethod
    def of(cls, mentions: Iterable[Mention]) -> MentionColumns:
        """The columns of `mentions` (one pass), sorted by id. Lists of aliases and types are
        kept once per distinct value: the items made from them share them (read only). Ids of
        the extractors' form are split as they come (`MentionIds`), so their strings are never
        all held at once: freed after the sort, they left holes in the heap between the names
        kept, which the later stages did not fill (the process's RSS kept them)."""
        parts: MentionIdParts | None = MentionIdParts()  # None once an id is of another form
        strings: list[str] = []  # the ids then
        passages, names, descriptions = Distinct[str](), Distinct[str](), Distinct[str]()
        aliases, types = Distinct[tuple[str, ...]](), Distinct[tuple[str, ...]]()
        codes = {name: array("i") for name in FIELDS}
        for m in mentions:
            if parts is not None and not parts.add(m.id):
                strings, parts = parts.strings(), None
            if parts is None:
                strings.append(m.id)
            codes["passage"].append(passages.code(m.passage_id))
            codes["name"].append(names.code(m.name))
            codes["aliases"].append(aliases.code(tuple(m.aliases)))
            codes["description"].append(descriptions.code(m.description))
            codes["types"].append(types.code(tuple(m.types)))
        ids: Sequence[str]
        order = None if parts is None else parts.order()
        if parts is not None and order is not None:
            ids = parts.ids(order)
            same = (ids.passage[1:] == ids.passage[:-1]) & (ids.number[1:] == ids.number[:-1])
            repeated = ids[int(np.argmax(same))] if same.any() else None
        else:  # ids of another form, or passages whose ids interleave: sort the strings
            if parts is not None:
                strings = parts.strings()
            order = np.array(sorted(range(len(strings)), key=strings.__getitem__), dtype=np.int64)
            strings = [strings[k] for k in order.tolist()]
            repeated = next((a for a, b in zip(strings, strings[1:], strict=False) if a == b), None)
            compact = MentionIds.of(strings)
            ids = strings if compact is None else compact
        if repeated is not None:
            raise ValueError(
                f"mention id {repeated!r} occurs twice: every mention needs its own id"
            )
        return cls(
            ids,
            {n: np.frombuffer(c, dtype=np.int32)[order] for n, c in codes.items()},
            passages.values,
            names.values,
            [list(v) for v in aliases.values],
            descriptions.values,
            [list(v) for v in types.values],
        )

    def __len__(self) -> int:
        return len(self.ids)

    def _item(self, k: int) -> Mention:
        # every slot set here, without `Mention.__init__`: its keyword and default handling
        # would be most of an item's cost, and alignment makes each mention twice
        m = _new(Mention)
        m.id = self.ids[k]
        m.passage_id = self.passages[self._passage[k]]
        m.name = self.names[self._name[k]]
        m.aliases = self.aliases[self._alias[k]]
        m.description = self.descriptions[self._description[k]]
        m.types = self.types[self._type[k]]
        m.sentence = m.start = m.end = -1
        return m

    def id_list(self, positions: Iterable[int]) -> Sequence[str]:
        """The ids of the mentions at `positions`, sorted (a record's `mention_ids`): a view
        (`IdList`) of a `MentionIds`, else a list of the strings."""
        return ids_at(self.ids, positions)

    def codes(self, field: str) -> np.ndarray:
        """One field's column, a row per mention (a read-only int32 view): its codes into
        its distinct values (`passages`, `names`, ...). `field`: one of `FIELDS`."""
        return np.frombuffer(self._codes[field], dtype=np.int32)

    @property
    def nbytes(self) -> int:
        """The columns' size (not the strings, which are shared with the extractions)."""
        return sum(c.itemsize * len(c) for c in self._codes.values())


def mention_columns(mentions: Iterable[Mention] | MentionColumns) -> MentionColumns:
    """`mentions` as columns (itself when it is)."""
    return mentions if isinstance(mentions, MentionColumns) else MentionColumns.of(mentions)
