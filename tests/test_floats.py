"""`floats.assert_close`, the comparison of what two code paths compute: floats within a
tolerance, everything else exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from floats import HALF_STEPS, assert_close
from pydantic import BaseModel


@dataclass
class Scored:
    id: str
    score: float


class Pair(BaseModel):
    ids: tuple[str, str]
    sim: float
    merged: bool


def test_floats_within_the_tolerance_pass_and_beyond_it_fail() -> None:
    last_bit = [0.8972986340522766, {"a": (1e-9, True)}]
    assert_close([0.8972985744476318, {"a": (2e-9, True)}], last_bit)
    with pytest.raises(AssertionError, match=r"\[0\]: 0.8974 != 0.897"):
        assert_close([0.8974, {"a": (1e-9, True)}], last_bit)
    assert_close(float("nan"), float("nan"))
    assert_close(np.float32(0.5), 0.5 + 1e-7)


@pytest.mark.parametrize(
    ("got", "want"),
    [
        ({"a": 1.0, "b": 2.0}, {"a": 1.0}),  # keys
        ([1.0, 2.0], [1.0]),  # lengths
        ((1.0, 2.0), [1.0, 2.0]),  # a tuple is not a list
        (["e-1", 1.0], ["e-2", 1.0]),  # strings
        ([3, 1.0], [4, 1.0]),  # ints
        ({"merged": False}, {"merged": True}),  # bools
        ("0.5", 0.5),  # a string is not a number
        (True, 1.0),  # nor a bool
        (Scored("x", 1.0), Scored("y", 1.0)),  # a dataclass field by field
        (Pair(ids=("a", "b"), sim=0.5, merged=True), Pair(ids=("a", "c"), sim=0.5, merged=True)),
    ],
)
def test_everything_but_floats_is_compared_exactly(got: object, want: object) -> None:
    with pytest.raises(AssertionError):
        assert_close(got, want)


def test_models_and_dataclasses_compare_their_fields() -> None:
    assert_close(
        [Scored("x", 0.3 + 1e-8), Pair(ids=("a", "b"), sim=0.75, merged=False)],
        [Scored("x", 0.3), Pair(ids=("a", "b"), sim=0.75 - 1e-7, merged=False)],
    )
    with pytest.raises(AssertionError, match=r"\.score"):
        assert_close(Scored("x", 0.4), Scored("x", 0.3))


def test_arrays_keep_shape_and_dtype_and_float16_gets_its_steps() -> None:
    a = np.linspace(-1, 1, 50, dtype=np.float32)
    assert_close(a + np.float32(1e-7), a)
    for other in (a.astype(np.float64), a[:49], a.reshape(5, 10), a + np.float32(1e-3)):
        with pytest.raises(AssertionError):
            assert_close(other, a)
    with pytest.raises(AssertionError):
        assert_close(np.arange(3), np.array([0, 1, 3]))
    half = np.array([0.0312, 0.5, -0.9995], dtype=np.float16)
    assert_close(np.nextafter(half, np.float16(1)), half)  # one float16 step
    summed = half.astype(np.float32)
    assert_close(summed * np.float32(1 + 1e-3), summed, rtol=HALF_STEPS)
    with pytest.raises(AssertionError):
        assert_close(summed * np.float32(1 + 1e-3), summed)
