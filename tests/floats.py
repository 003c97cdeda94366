"""What two code paths compute, compared: every float within a tolerance, the rest exactly.

Two code paths that compute the same floats with different kernels (an HNSW search and an
exact FAISS one, BLAS and a SIMD loop, batches or shards of other shapes, pgvector and numpy)
can differ in the last bits, and which bits differ depends on the CPU the tests run on (a
clean-clone CI run once got 0.8972986340522766 from one path and 0.8972985744476318 from the
other). A test that compares such results across paths uses `assert_close`: the floats within
`RTOL`/`ATOL`, and everything else (keys, lengths, ids, names, order, dtypes, ints, bools,
strings) exactly. A computation compared with itself stays an exact comparison.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from pydantic import BaseModel

RTOL = 1e-5
"""Relative tolerance: float32 holds about 7 significant digits, and two kernels that sum in
another order differ in the last one or two."""
ATOL = 1e-6
"""Absolute tolerance, for values near zero."""
HALF_STEPS = 2 * float(np.finfo(np.float16).eps)
"""Relative tolerance of float32 values summed from float16 rows (a graph's base vectors, from
its float16 mention vectors): a last-bit difference before the rounding to float16 can
become one float16 step (1/1024 of the value), which the sum keeps."""


def assert_close(
    got: Any, want: Any, *, rtol: float = RTOL, atol: float = ATOL, where: str = ""
) -> None:
    """`got` equals `want` with every float within `rtol`/`atol`, compared through nested
    lists, tuples, mappings, dataclasses, pydantic models (their `model_dump`) and numpy arrays
    (shape and dtype exactly; a float array within at least two units in the last place of its
    dtype, as a float16 row rounds a 1e-7 difference to its 1e-3 steps). Anything else is
    compared with ``==``. `where` names the value in the failure message."""
    if isinstance(want, BaseModel):
        _expect(type(got) is type(want), where, f"{type(got).__name__} != {type(want).__name__}")
        assert_close(got.model_dump(), want.model_dump(), rtol=rtol, atol=atol, where=where)
    elif dataclasses.is_dataclass(want) and not isinstance(want, type):
        _expect(type(got) is type(want), where, f"{type(got).__name__} != {type(want).__name__}")
        for f in dataclasses.fields(want):
            assert_close(
                getattr(got, f.name), getattr(want, f.name), rtol=rtol, atol=atol,
                where=f"{where}.{f.name}",
            )  # fmt: skip
    elif isinstance(want, np.ndarray) or isinstance(got, np.ndarray):
        a, b = np.asarray(got), np.asarray(want)
        _expect(a.shape == b.shape, where, f"shape {a.shape} != {b.shape}")
        _expect(a.dtype == b.dtype, where, f"dtype {a.dtype} != {b.dtype}")
        if np.issubdtype(b.dtype, np.floating):
            tol = max(rtol, 2 * float(np.finfo(b.dtype).eps))
            np.testing.assert_allclose(a, b, rtol=tol, atol=atol, err_msg=where)
        else:
            np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(want, Mapping):
        _expect(isinstance(got, Mapping), where, f"{type(got).__name__} is not a mapping")
        missing, extra = set(want) - set(got), set(got) - set(want)
        _expect(not missing and not extra, where, f"keys missing {missing}, extra {extra}")
        for key in want:
            assert_close(got[key], want[key], rtol=rtol, atol=atol, where=f"{where}[{key!r}]")
    elif isinstance(want, list | tuple):
        _expect(
            isinstance(got, list | tuple) and isinstance(got, tuple) == isinstance(want, tuple),
            where,
            f"{type(got).__name__} != {type(want).__name__}",
        )
        _expect(len(got) == len(want), where, f"length {len(got)} != {len(want)}")
        for k, (x, y) in enumerate(zip(got, want, strict=True)):
            assert_close(x, y, rtol=rtol, atol=atol, where=f"{where}[{k}]")
    elif isinstance(want, float | np.floating):
        number = isinstance(got, int | float | np.number) and not isinstance(got, bool)
        _expect(number, where, f"{got!r} is not a number")
        tol = (
            max(rtol, 2 * float(np.finfo(want.dtype).eps))
            if isinstance(want, np.floating)
            else rtol
        )
        both_nan = math.isnan(got) and math.isnan(want)
        close = both_nan or math.isclose(got, want, rel_tol=tol, abs_tol=atol)
        _expect(close, where, f"{got!r} != {want!r} (rtol {tol:g}, atol {atol:g})")
    else:
        _expect(bool(got == want), where, f"{got!r} != {want!r}")


def _expect(ok: bool, where: str, problem: str) -> None:
    if not ok:
        raise AssertionError(f"{where or 'value'}: {problem}")
