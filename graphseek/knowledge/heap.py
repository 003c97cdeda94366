"""Handing the C heap's free memory back to the operating system, and keeping less of it.

glibc's `malloc` keeps memory that is freed inside its heaps (the main one and one per thread
that allocated) for the process's later allocations; only `malloc_trim` returns it. A bulk pass
of the passage encoder leaves hundreds of MB there once ONNX Runtime's arenas are released:
memory the graph stages after it never reuse, since their large arrays are mapped anew and the
pass's threads are done. Written here because neither the standard library nor psutil exposes `malloc_trim`;
it is called through ctypes, and is a no-op where the C library has none (macOS, musl).

`bound_heap` goes further for a graph build (glibc's `mallopt`, the same as the
``MALLOC_ARENA_MAX`` and ``MALLOC_MMAP_THRESHOLD_`` environment variables): one heap for every
thread instead of one per thread that allocated (memory freed by the write's database thread,
the name-candidate thread or the encoder's threads is then reused by the others), and blocks of
`MMAP_THRESHOLD` bytes or more mapped on their own and unmapped when freed (glibc raises its
threshold up to 32 MB as large blocks are freed, so a build's many short-lived arrays of a few MB
came from the heaps and left holes there between objects that live on).
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable
from typing import Any

M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter: blocks this large or larger are mapped on their own."""
M_ARENA_MAX = -8
"""glibc's `mallopt` parameter: the most heaps (arenas) `malloc` makes for a process."""
ARENAS = 1
"""Heaps a graph build keeps (`bound_heap`)."""
MMAP_THRESHOLD = 1 << 20
"""Blocks a graph build maps on their own (`bound_heap`): 1 MB."""
KEEP_HEAP_ENV = "GRAPHSEEK_KEEP_MALLOC"
"""Set (to anything but empty or ``0``) to leave the C library's `malloc` settings alone."""


@functools.cache
def _libc_function(name: str, argtypes: tuple[Any, ...], restype: Any) -> Callable[..., int] | None:
    """The C library's function `name`, looked up among the symbols the process has loaded
    (no `ldconfig` run) and typed; None where there is none."""
    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes, function.restype = list(argtypes), restype
    return function  # type: ignore[no-any-return]


def _mallopt() -> Callable[[int, int], int] | None:
    """The C library's `mallopt`; None where there is none."""
    return _libc_function("mallopt", (ctypes.c_int, ctypes.c_int), ctypes.c_int)


def bound_heap(arenas: int = ARENAS, mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Make `malloc` keep at most `arenas` heaps and map blocks of `mmap_threshold` bytes or
    more on their own, for the rest of the process (and processes forked from it). True if
    the C library took both; False where it has no `mallopt` (not glibc), refused, or
    `KEEP_HEAP_ENV` is set. Changes no computation (the same store), only where memory comes
    from: a build's stages then reuse or give back what the others freed (docs/scale.md)."""
    if os.environ.get(KEEP_HEAP_ENV, "") not in ("", "0"):
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(M_ARENA_MAX, arenas)) and bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold))


def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's `malloc_trim`; None where there is none."""
    return _libc_function("malloc_trim", (ctypes.c_size_t,), ctypes.c_int)


def give_back_free_heap() -> bool:
    """Return the C heap's free memory to the OS (`malloc_trim(0)`); True if it could be
    asked, False where the C library has no `malloc_trim`."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def peak_rss_mb() -> float | None:
    """The process's peak resident set so far, in MB (Linux's ``ru_maxrss`` is in KiB, macOS's
    in bytes); None where `resource` is missing. Forked extraction workers are not counted."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)
