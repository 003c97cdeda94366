"""The operating-point rule: the lowest threshold whose (cross-validated) wrong-answer rate is at
most the target; and the profiles read their stored operating points."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from graphseek.agents.profiles import PROFILES, get_profile
from graphseek.evaluation.calibration import (
    Rates,
    choose_threshold,
    cross_validate,
    folds_of,
    leave_groups_out,
)

R, W, A = "right", "wrong", "abstained"

# ten questions; a higher threshold turns wrong answers (and some right ones) into abstentions
SWEEP = {
    0.1: [R, R, R, R, R, W, W, W, R, R],  # 30% wrong
    0.3: [R, R, R, R, R, W, A, A, R, R],  # 10% wrong
    0.5: [R, R, A, R, A, A, A, A, R, R],  # 0% wrong
}


def test_rates_count_outcomes() -> None:
    r = Rates.of(SWEEP[0.3])
    assert (r.right, r.wrong, r.abstained, r.n) == (7, 1, 2, 10)
    assert r.wrong_rate == pytest.approx(0.1)


def test_lowest_threshold_within_the_target() -> None:
    assert choose_threshold(SWEEP, 0.10) == 0.3
    assert choose_threshold(SWEEP, 0.30) == 0.1
    assert choose_threshold(SWEEP, 0.0) == 0.5
    # on a subset of questions the rule reads only those
    assert choose_threshold(SWEEP, 0.0, questions=[0, 1, 2, 3]) == 0.1


def test_no_threshold_within_the_target_takes_the_highest() -> None:
    assert choose_threshold({0.2: [W, R], 0.4: [W, A]}, 0.1) == 0.4


def test_leave_one_genre_out_chooses_on_the_other_genres() -> None:
    genres = ["a"] * 5 + ["b"] * 5
    out = leave_groups_out(SWEEP, genres, target=0.10)
    # on b's questions alone (5..9) 0.1 is 60% wrong and 0.3 20%: 0.5 is chosen for a
    assert out["a"][0] == 0.5 and out["a"][1] == Rates.of(SWEEP[0.5][:5])
    # on a's questions (0..4) 0.1 is already 0% wrong
    assert out["b"][0] == 0.1 and out["b"][1] == Rates.of(SWEEP[0.1][5:])
    assert leave_groups_out(SWEEP, ["a"] * 10)["a"][0] == choose_threshold(SWEEP, 0.10)
    with pytest.raises(ValueError, match="group names"):
        leave_groups_out(SWEEP, ["a"])


def test_folds_partition_the_questions() -> None:
    folds = folds_of(10, 3, seed=1)
    assert sorted(q for f in folds for q in f) == list(range(10))
    assert len(folds) == 3 and folds == folds_of(10, 3, seed=1)


def test_cross_validation_scores_each_fold_at_the_threshold_of_the_others() -> None:
    rates, chosen = cross_validate(SWEEP, k=5, target=0.10, seed=0)
    assert rates.n == 10 and len(chosen) == 5
    assert set(chosen) <= set(SWEEP)
    # brute force: the same pooled outcomes
    pooled = []
    for i, held in enumerate(folds_of(10, 5, 0)):
        train = [q for j, f in enumerate(folds_of(10, 5, 0)) if j != i for q in f]
        t = choose_threshold(SWEEP, 0.10, train)
        pooled += [SWEEP[t][q] for q in held]
    assert rates == Rates.of(pooled)


def test_uneven_sweeps_are_refused() -> None:
    with pytest.raises(ValueError):
        choose_threshold({0.1: [R], 0.2: [R, W]})


def test_every_profile_has_a_stored_operating_point() -> None:
    stored = json.loads(
        resources.files("graphseek.agents.profiles").joinpath("operating_points.json").read_text()
    )
    for name, profile in PROFILES.items():
        assert name in stored, f"profile {name} has no calibrated operating point"
        assert profile.operating_point == stored[name]["threshold"]
        assert 0.0 < profile.operating_point < 1.0
        assert stored[name]["cross_validated"]["wrong"] <= 0.15
    assert get_profile("general").operating_point == PROFILES["general"].operating_point


def test_the_context_knows_the_same_profiles() -> None:
    from graphseek.state.context import PROFILE_NAMES

    assert set(PROFILE_NAMES) == set(PROFILES)


def test_a_reader_sweep_passes_readings_below_each_threshold() -> None:
    from graphseek.evaluation.calibration import reader_sweep

    readings = [(0.9, "right"), (0.6, "wrong"), (0.95, "abstained"), (0.3, "right")]
    sweep = reader_sweep(readings, [0.2, 0.5, 0.8])
    assert sweep[0.2] == ["right", "wrong", "abstained", "right"]
    assert sweep[0.5] == ["right", "wrong", "abstained", "abstained"]
    assert sweep[0.8] == ["right", "abstained", "abstained", "abstained"]
    # the profiles' rule: the lowest threshold whose wrong rate is at most 10%
    assert choose_threshold(sweep) == 0.8
