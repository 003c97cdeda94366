"""Id columns: ids held as numbers or bytes, read as the lists of strings they stand for."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from graphseek.knowledge.graph.memory.id_columns import (
    ABSENT,
    AsciiIds,
    MentionIds,
    mention_id_order,
    split_mention_id,
)
from graphseek.knowledge.graph.memory.mention_table import sorted_position


def test_mention_ids_read_as_the_sorted_strings_they_stand_for() -> None:
    # passages whose ids are prefixes of one another, and k past 9: string order, not (p, k)
    strings = sorted(
        [f"p1#m{k}" for k in range(12)] + ["p10#m0", "p10#m2", "p1#x#m3", "q#m0", "p#m1#m0"]
    )
    ids = MentionIds.of(strings)
    assert ids is not None and len(ids) == len(strings)
    assert ids == strings and list(ids) == strings and ids[3:6] == strings[3:6]
    assert [ids[k] for k in range(len(ids))] == strings and ids[-1] == strings[-1]
    for k, mid in enumerate(strings):
        assert ids.position(mid) == k == sorted_position(ids, mid) == sorted_position(strings, mid)
    for absent in ["p1#m12", "p1#m01", "p10#m1", "p2#m0", "p1", "p1#m", "", 7, "p#m1"]:
        assert ids.position(absent) == ABSENT == sorted_position(strings, absent)
        assert absent not in ids
    with pytest.raises(IndexError):
        ids[len(strings)]


def test_mention_ids_are_only_made_of_the_extractors_form() -> None:
    assert MentionIds.of(["p#m0", "p#m07"]) is None  # "07": another id than "7"
    assert MentionIds.of(["a", "b"]) is None and MentionIds.of(["p#f0"]) is None
    empty = MentionIds.of([])
    assert empty is not None and len(empty) == 0 and list(empty) == []
    assert split_mention_id("a#m1#m20") == ("a#m1", 20) and split_mention_id("a#m-1") is None


def test_an_id_list_is_a_sorted_view_equal_to_its_strings() -> None:
    strings = sorted(f"p{p}#m{k}" for p in range(3) for k in range(11))
    ids = MentionIds.of(strings)
    assert ids is not None
    view = ids.take([20, 3, 11])
    assert view == [strings[3], strings[11], strings[20]] and len(view) == 3
    assert view[0] == strings[3] and view[-1] == strings[20] and view[1:] == view[1:3]
    assert view == ids.take([3, 11, 20]) and view != ids.take([3, 11])
    assert view != [strings[3], strings[11], "other"] and view != "p0#m0"
    assert repr(view) == f"IdList({[strings[3], strings[11], strings[20]]!r})"
    assert pickle.loads(pickle.dumps(view)) == view


def test_ascii_ids_read_as_their_strings() -> None:
    strings = [f"r-{k:012x}" for k in range(5000)] + ["r-short", "x"]
    ids = AsciiIds.of(strings)
    assert isinstance(ids, AsciiIds) and ids.data.nbytes == len(strings) * 14
    assert ids == strings and list(ids) == strings and len(ids) == len(strings)
    assert ids[4999] == strings[4999] and ids[-1] == "x" and ids[10:13] == strings[10:13]
    assert pickle.loads(pickle.dumps(ids)) == strings and ids != strings[:-1]
    # what the bytes could not hold stays a list of the strings
    for kept in (["r-1", "é"], ["r-1", "r-2\0"], []):
        assert AsciiIds.of(kept) is kept
    with pytest.raises(ValueError):
        AsciiIds(np.zeros(3))


@pytest.mark.parametrize("seed", range(4))
def test_mention_id_order_sorts_as_the_strings_would(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # passage ids that begin one another, sort around "#" (0x23) and hold digits
    passages = ["a", "a!", "a$", "a#", "a#x", "ab", "a0", "p-1f", "p-1f0", "Zz", "é", "a#n"]
    passage = rng.integers(0, len(passages), size=400).astype(np.int32)
    number = np.concatenate(
        [rng.integers(0, 12, size=200), rng.integers(0, 10**9, size=200)]
    ).astype(np.int32)
    strings = [
        f"{passages[p]}#m{k}" for p, k in zip(passage.tolist(), number.tolist(), strict=True)
    ]
    order = mention_id_order(passages, passage, number)
    assert order is not None
    assert [strings[k] for k in order.tolist()] == sorted(strings)
    # stable: equal ids keep the order they came in
    assert order.tolist() == sorted(range(len(strings)), key=strings.__getitem__)


def test_mention_id_order_leaves_interleaving_passages_to_the_strings() -> None:
    # "a#m1#m0" (passage "a#m1") sorts between "a#m1" and "a#m10" (passage "a")
    assert mention_id_order(["a", "a#m1"], np.array([0, 1]), np.array([10, 0])) is None
    assert mention_id_order([], np.zeros(0, np.int32), np.zeros(0, np.int32)) is not None
    assert split_mention_id("p#m123456789") == ("p", 123456789)
    assert split_mention_id("p#m1234567890") is None  # past an int32's nine digits
