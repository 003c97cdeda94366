"""`MentionColumns`: alignment's mentions as columns, read back as the mentions they hold."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from graphseek.knowledge.graph.memory.id_columns import MentionIds
from graphseek.knowledge.graph.memory.mention_columns import MentionColumns, mention_columns
from graphseek.knowledge.graph.models import Mention


def _mentions() -> list[Mention]:
    return [
        Mention(id="p2#m0", passage_id="p2", name="Akron", types=["GPE"], sentence=0),
        Mention(
            id="p10#m1",
            passage_id="p10",
            name="Curry",
            aliases=["Stephen Curry"],
            description="a guard",
            types=["PERSON"],
            sentence=3,
        ),
        Mention(id="p10#m0", passage_id="p10", name="Akron", types=["GPE", "ORG"]),
        Mention(id="p2#m10", passage_id="p2", name="Akron", types=["GPE"], sentence=1),
    ]


def test_columns_give_back_the_mentions_sorted_by_id() -> None:
    columns = MentionColumns.of(_mentions())
    assert columns.ids == ["p10#m0", "p10#m1", "p2#m0", "p2#m10"]
    assert isinstance(columns.ids, MentionIds)  # the extractors' form: two int columns
    assert columns.id_list([3, 0]) == ["p10#m0", "p2#m10"]
    # the sentence is not kept (alignment does not read it)
    expected = [replace(m, sentence=-1) for m in sorted(_mentions(), key=lambda m: m.id)]
    assert list(columns) == expected
    assert columns[-1] == columns[3] and columns[1:3] == list(columns)[1:3]
    with pytest.raises(IndexError):
        columns[4]
    # each field's distinct values once, a code per mention
    assert columns.names == ["Akron", "Curry"]
    assert columns.codes("name").tolist() == [0, 1, 0, 0]
    assert [columns.passages[c] for c in columns.codes("passage")] == ["p10", "p10", "p2", "p2"]
    assert columns.nbytes == 5 * 4 * 4
    # the lists of one value are one list, shared by the mentions made from it
    assert columns[2].types is columns[3].types and columns[2].aliases is columns[0].aliases


def test_columns_are_made_once() -> None:
    columns = MentionColumns.of(_mentions())
    assert mention_columns(columns) is columns
    assert list(mention_columns(_mentions())) == list(columns)
    assert len(MentionColumns.of([])) == 0 and list(MentionColumns.of([])) == []


def test_a_repeated_mention_id_is_refused() -> None:
    with pytest.raises(ValueError, match="'p2#m0' occurs twice: every mention needs its own"):
        MentionColumns.of([*_mentions(), _mentions()[0]])


def test_columns_must_match_the_ids() -> None:
    codes = {f: np.zeros(2, dtype=np.int32) for f in ("passage", "name", "aliases")}
    with pytest.raises(ValueError, match="expected"):
        MentionColumns(["a", "b"], codes, ["p"], ["n"], [[]], [""], [[]])
    codes |= {f: np.zeros(1, dtype=np.int32) for f in ("description", "types")}
    with pytest.raises(ValueError, match="a row for each of the 2 ids"):
        MentionColumns(["a", "b"], codes, ["p"], ["n"], [[]], [""], [[]])


def test_items_have_every_field_of_a_mention() -> None:
    """Items are made without `Mention.__init__`: each slot must be set (the sentence and
    the span, which alignment does not read, to -1)."""
    item = MentionColumns.of(_mentions())[0]
    assert {s: getattr(item, s) for s in Mention.__slots__} == {
        "id": "p10#m0",
        "passage_id": "p10",
        "name": "Akron",
        "aliases": [],
        "description": "",
        "types": ["GPE", "ORG"],
        "sentence": -1,
        "start": -1,
        "end": -1,
    }


def test_ids_of_another_form_stay_strings() -> None:
    mentions = [replace(m, id=m.id.replace("#m", "/")) for m in _mentions()]
    columns = MentionColumns.of(mentions)
    assert columns.ids == ["p10/0", "p10/1", "p2/0", "p2/10"] and isinstance(columns.ids, list)
    assert columns.id_list([3, 0]) == ["p10/0", "p2/10"]
    assert [m.id for m in columns] == columns.ids


@pytest.mark.parametrize(
    "ids",
    [
        ["p2#m0", "p10#m1", "p10#m0", "p2#m10", "p1#m100", "p1#m11", "p1#m2"],
        ["a#m1", "a#m1#m0", "a#m10", "a!#m3", "a#m2"],  # "a#m1#m0": ids that interleave
        ["p#m0", "p#m1234567890", "q#m07", "r"],  # of other forms: strings
    ],
)
def test_columns_sort_any_ids_as_their_strings(ids: list[str]) -> None:
    mentions = [Mention(id=i, passage_id=i.partition("#")[0], name=i) for i in ids]
    columns = MentionColumns.of(mentions)
    assert columns.ids == sorted(ids) and [m.id for m in columns] == sorted(ids)
    assert [m.name for m in columns] == sorted(ids)  # every column in the same order
    with pytest.raises(ValueError, match=f"{sorted(ids)[1]!r} occurs twice"):
        MentionColumns.of([*mentions, mentions[ids.index(sorted(ids)[1])]])
