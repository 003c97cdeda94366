"""`MergePairs`: decided merge pairs as columns, read as the dict they replace."""

from __future__ import annotations

import numpy as np
import pytest

from graphseek.knowledge.graph.memory.merge_pairs import MergePairs

IDS = ["b1", "b2", "b3", "b4"]


def test_sorted_pairs_first_row_kept_and_read_as_a_dict() -> None:
    pairs = MergePairs.of(
        IDS, np.array([2, 0, 1, 3]), np.array([0, 1, 3, 1]), [0.9, 0.8, 0.7, 0.6], [1, 0, 0, 1]
    )
    as_dict = {("b1", "b2"): (0.8, False), ("b1", "b3"): (0.9, True), ("b2", "b4"): (0.7, False)}
    assert pairs == as_dict and list(pairs.items()) == sorted(as_dict.items())
    assert pairs[("b1", "b3")] == (0.9, True) and isinstance(pairs[("b1", "b3")][0], float)
    assert ("b3", "b1") not in pairs and ("b1", "b9") not in pairs and "b1" not in pairs
    assert len(pairs) == 3 and list(pairs) == sorted(as_dict)
    with pytest.raises(KeyError):
        pairs[("b3", "b4")]
    with pytest.raises(ValueError, match="itself"):
        MergePairs.of(IDS, np.array([1]), np.array([1]), [1.0], [True])


def test_from_a_dict_or_other_ids_keeps_the_pairs_of_present_ends() -> None:
    stored = {("b1", "b3"): (0.5, True), ("b2", "b9"): (0.4, False), ("b3", "b4"): (0.3, False)}
    pairs = MergePairs.from_mapping(IDS, stored)
    assert pairs == {("b1", "b3"): (0.5, True), ("b3", "b4"): (0.3, False)}
    later = ["b0", "b1", "b3", "b4", "b5"]  # b2 gone, b0 and b5 new: positions shift
    moved = MergePairs.from_mapping(later, pairs)
    assert moved == pairs and moved.ids is later and moved.a.tolist() == [1, 2]
    assert MergePairs.from_mapping(IDS, pairs) is pairs
    assert MergePairs.from_mapping(IDS, {}) == {} and len(MergePairs.empty(IDS)) == 0


def test_join_keeps_its_own_row_for_a_pair_in_both() -> None:
    ours = MergePairs.of(IDS, np.array([0]), np.array([1]), [0.0], [True])
    theirs = MergePairs.of(IDS, np.array([0, 2]), np.array([1, 3]), [0.7, 0.6], [False, True])
    assert ours.join(theirs) == {("b1", "b2"): (0.0, True), ("b3", "b4"): (0.6, True)}


def test_every_lookup_is_the_dicts() -> None:
    """Each (x, y) of the ids is found exactly when the dict of the same rows has it (rows
    looked up by a, then b, with no per-row codes held)."""
    rng = np.random.default_rng(3)
    ids = [f"b{k:02d}" for k in range(30)]
    a, b = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    keep = a != b
    pairs = MergePairs.of(ids, a[keep], b[keep], rng.random(int(keep.sum())), keep[keep])
    reference = dict(pairs.items())
    assert len(reference) == len(pairs) < 200
    for x in [*ids, "a", "b99"]:
        for y in [*ids, "zz"]:
            assert ((x, y) in pairs) == ((x, y) in reference)
            if (x, y) in reference:
                assert pairs[(x, y)] == reference[(x, y)]
    codes = pairs.codes
    assert list(codes) == sorted(codes) and len(set(codes.tolist())) == len(pairs)
