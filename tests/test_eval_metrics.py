"""Answer and retrieval metrics against hand-computed values and a brute-force reference."""

from __future__ import annotations

import random

import pytest

from graphseek.evaluation.metrics import (
    aggregate,
    all_in_top_k,
    answer_metrics,
    exact_match,
    normalize_answer,
    recall_at_k,
    retrieval_metrics,
    retrieval_prf,
    sub_exact_match,
    token_f1,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The  Quick, brown fox!", "quick brown fox"),
        ("An apple a day", "apple day"),
        ("theater", "theater"),  # articles only as whole words
        ("U.S.A.", "usa"),
        ("  20 March, 851 ", "20 march 851"),
        ("", ""),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


def test_exact_match_articles_punctuation_and_aliases() -> None:
    assert exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert exact_match("Tower", ["Eiffel Tower"]) == 0.0
    assert exact_match("Stanley Hall", ["G. Stanley Hall", "Stanley Hall"]) == 1.0
    assert exact_match("Stanley Hall", "G. Stanley Hall") == 0.0
    assert exact_match("", ["x"]) == 0.0
    assert exact_match(None, ["x"]) == 0.0


def test_token_f1_partial_overlap_max_over_aliases() -> None:
    # gold "g stanley hall" (3 tokens), prediction 4 tokens, overlap 2: P=1/2, R=2/3 -> 4/7
    assert token_f1("Stanley Hall was president", ["G. Stanley Hall"]) == pytest.approx(4 / 7)
    # alias "stanley hall": P=1/2, R=1 -> 2/3, the maximum
    aliases = ["G. Stanley Hall", "Stanley Hall"]
    assert token_f1("Stanley Hall was president", aliases) == pytest.approx(2 / 3)
    # repeated tokens count once per gold occurrence: overlap 2, P=2/3, R=1 -> 0.8
    assert token_f1("new new york", ["New York"]) == pytest.approx(0.8)
    assert token_f1("Paris", ["London"]) == 0.0
    assert token_f1("The Paris!", ["paris"]) == 1.0
    assert token_f1(None, ["paris"]) == 0.0


def test_sub_exact_match() -> None:
    assert sub_exact_match("He was born in Paris, France.", ["Paris"]) == 1.0
    assert sub_exact_match("the Louvre Museum", ["The Louvre"]) == 1.0
    assert sub_exact_match("Lyon", ["Paris", "City of Light"]) == 0.0
    assert sub_exact_match("It is 1955.", ["nope", "1955"]) == 1.0
    # an alias that normalises to nothing matches nothing
    assert sub_exact_match("anything at all", ["a", "The"]) == 0.0
    assert sub_exact_match("", ["Paris"]) == 0.0


def test_answer_metrics_bundle() -> None:
    m = answer_metrics("the new york city", ["New York"])
    assert m["em"] == 0.0
    assert m["subem"] == 1.0
    assert m["f1"] == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))


def test_recall_at_k_and_all_in_top_k() -> None:
    retrieved = ["a", "b", "c", "d"]
    assert recall_at_k(retrieved, ["b", "d"], 2) == 0.5
    assert recall_at_k(retrieved, ["b", "d"], 4) == 1.0
    assert recall_at_k(retrieved, ["b", "d"], 1) == 0.0
    assert recall_at_k(["a", "a", "b"], ["b"], 2) == 1.0  # duplicates count once
    assert recall_at_k(retrieved, [], 2) is None
    assert all_in_top_k(retrieved, ["b", "d"], 2) == 0.0
    assert all_in_top_k(retrieved, ["b", "d"], 4) == 1.0
    assert all_in_top_k(retrieved, [], 4) is None


def test_recall_at_k_matches_brute_force() -> None:
    rng = random.Random(7)
    ids = [f"p{i}" for i in range(12)]
    for _ in range(200):
        retrieved = rng.sample(ids, rng.randint(0, 12))
        gold = rng.sample(ids, rng.randint(1, 4))
        k = rng.randint(1, 12)
        top = retrieved[:k]
        expected = sum(1 for g in gold if g in top) / len(gold)
        assert recall_at_k(retrieved, gold, k) == pytest.approx(expected)
        assert all_in_top_k(retrieved, gold, k) == float(all(g in top for g in gold))


def test_retrieval_prf() -> None:
    prf = retrieval_prf(["a", "b", "c"], ["b", "d"])
    assert prf["precision"] == pytest.approx(1 / 3)
    assert prf["recall"] == pytest.approx(1 / 2)
    assert prf["f1"] == pytest.approx(0.4)
    assert retrieval_prf([], ["b"]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert retrieval_prf(["x"], ["b"])["f1"] == 0.0
    assert retrieval_prf(["b"], ["b"]) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert retrieval_prf(["b"], [])["f1"] is None


def test_retrieval_metrics_keys() -> None:
    m = retrieval_metrics(["a", "b", "c"], ["b"], ["b", "c"], ks=(1, 2))
    assert m == {
        "recall@1": 0.0,
        "all@1": 0.0,
        "recall@2": 0.5,
        "all@2": 0.0,
        "ret_precision": 1.0,
        "ret_recall": 0.5,
        "ret_f1": pytest.approx(2 / 3),
    }


def test_aggregate_skips_flagged_for_retrieval_only() -> None:
    rows = [
        {"em": 1.0, "recall@2": 0.5, "ret_f1": 1.0},
        {"em": 0.0, "recall@2": 1.0, "ret_f1": 0.0},
        {"em": True, "recall@2": None, "ret_f1": 0.5},
    ]
    agg = aggregate(rows, [False, True, False])
    assert agg["em"] == {"mean": pytest.approx(2 / 3), "n": 3}
    assert agg["recall@2"] == {"mean": 0.5, "n": 1}
    assert agg["ret_f1"] == {"mean": 0.75, "n": 2}
    assert aggregate([{"em": None}])["em"] == {"mean": None, "n": 0}
    with pytest.raises(ValueError):
        aggregate(rows, [False])
