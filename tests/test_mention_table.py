"""`MentionTable`: a value per mention id over sorted ids, read as the dict it replaces."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from graphseek.knowledge.graph.memory.id_columns import IdList, MentionIds
from graphseek.knowledge.graph.memory.mention_table import ABSENT, MentionTable


def test_reads_as_the_dict_it_stands_for() -> None:
    ids = ["p1#m0", "p1#m1", "p10#m0", "p2#m0"]
    table = MentionTable(ids, [1, 0, 1, ABSENT], ["e-a", "e-b"])
    as_dict = {"p1#m0": "e-b", "p1#m1": "e-a", "p10#m0": "e-b"}
    assert table == as_dict and dict(table) == as_dict
    assert len(table) == 3 and list(table) == ["p1#m0", "p1#m1", "p10#m0"]
    assert table["p10#m0"] == "e-b" and table.get("p2#m0") is None
    assert table.get("p9#m0", "none") == "none" and "p2#m0" not in table
    assert "p1#m" not in table and 3 not in table  # a prefix, not a string: absent
    with pytest.raises(KeyError):
        table["p2#m0"]


def test_codes_are_the_values_without_a_value_list() -> None:
    table = MentionTable(["a", "b", "c"], np.array([7, 0, 7]))
    assert table == {"a": 7, "b": 0, "c": 7} and isinstance(table["a"], int)
    with pytest.raises(TypeError):
        table.where(bool)


def test_where_keeps_the_mentions_of_accepted_values_and_shares_the_ids() -> None:
    ids = [f"p#m{k}" for k in range(6)]
    table = MentionTable(ids, [0, 1, 2, 1, ABSENT, 0], ["x", "y", "z"])
    kept = table.where({"x", "z"}.__contains__)
    assert kept == {"p#m0": "x", "p#m2": "z", "p#m5": "x"} and kept.ids is ids
    assert table == {"p#m0": "x", "p#m1": "y", "p#m2": "z", "p#m3": "y", "p#m5": "x"}


def test_pickles_and_rejects_codes_of_another_length() -> None:
    table = MentionTable(["a", "b"], [1, 0], ["u", "v"])
    assert pickle.loads(pickle.dumps(table)) == {"a": "v", "b": "u"}
    with pytest.raises(ValueError, match="3 codes for 2 ids"):
        MentionTable(["a", "b"], [0, 0, 0], ["u"])


# -- MentionRows: rows by mention id, kept by passage -------------------------------------------


def test_mention_rows_answer_as_a_dict_of_the_same_assignments() -> None:
    import random

    from graphseek.knowledge.graph.memory.mention_table import MentionRows
    from graphseek.knowledge.graph.models import mention_id

    rng = random.Random(0)
    passages = ["p1", "p10", "a#m3", "x#mb", "doc/7 §2"]  # ids that hold "#m" themselves too
    keys = [mention_id(p, k) for p in passages for k in range(12)] + ["odd", "p1#m07", "q#m"]
    reference: dict[str, int] = {}
    rows = MentionRows()
    for _ in range(400):  # new keys in and out of order, and replacements
        key = rng.choice(keys)
        value = rng.randrange(10**10)  # rows past int32 as well
        reference[key] = value
        rows[key] = value
    assert len(rows) == len(reference)
    assert sorted(rows) == sorted(reference)
    for key in keys + ["p1#m99", "nope#m1", "p1", ""]:
        assert rows.get(key) == reference.get(key)
        assert (key in rows) == (key in reference)
    assert dict(rows.items()) == reference
    assert rows.get(7) is None and 7 not in rows
    with pytest.raises(KeyError):
        rows["p1#m99"]


def test_mention_rows_keep_each_passages_ids_by_number() -> None:
    from graphseek.knowledge.graph.memory.mention_table import MentionRows

    rows = MentionRows([("b#m10", 0), ("b#m2", 1), ("a#m0", 2), ("b#m1", 3)])
    assert list(rows) == ["b#m1", "b#m2", "b#m10", "a#m0"]
    assert [rows[k] for k in rows] == [3, 1, 0, 2]
    with pytest.raises(TypeError):
        del rows["a#m0"]


def test_a_table_over_mention_ids_answers_as_over_the_strings() -> None:
    strings = sorted(f"p{p}#m{k}" for p in range(12) for k in range(13))
    ids = MentionIds.of(strings)
    assert ids is not None
    codes = np.arange(len(strings)) % 3 - 1  # every third absent
    values = ["x", "y"]
    over_ids, over_strings = MentionTable(ids, codes, values), MentionTable(strings, codes, values)
    assert over_ids == dict(over_strings) and len(over_ids) == len(over_strings)
    assert over_ids.keys_sorted() == sorted(over_strings) == list(over_ids)
    assert isinstance(over_ids.keys_sorted(), IdList)
    assert over_strings.keys_sorted() == sorted(over_strings)
    assert over_ids.where("y".__eq__) == over_strings.where("y".__eq__)
    assert pickle.loads(pickle.dumps(over_ids)) == dict(over_strings)
