"""Handing the C heap's free memory back to the operating system.

glibc's `malloc` keeps memory that is freed inside its heaps (the main one and one per thread
that allocated) for the process's later allocations; only `malloc_trim` returns it. A bulk pass
of the passage encoder leaves hundreds of MB there once ONNX Runtime's arenas are released
(338 of 883 MB at the end of a 10,000-passage build's passage pass, measured): memory the graph
stages after it never reuse, since their large arrays are mapped anew and the pass's threads
are done. Written here because neither the standard library nor psutil exposes `malloc_trim`;
it is called through ctypes, and is a no-op where the C library has none (macOS, musl).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's `malloc_trim`, looked up among the symbols the process has loaded (no
    `ldconfig` run); None where there is none."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back_free_heap() -> bool:
    """Return the C heap's free memory to the OS (`malloc_trim(0)`); True if it could be
    asked, False where the C library has no `malloc_trim`."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
