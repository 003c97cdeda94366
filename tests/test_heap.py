"""`give_back_free_heap`: the C heap's free memory goes back to the OS (glibc's malloc_trim)."""

from __future__ import annotations

import ctypes
import sys

import pytest

from graphseek.knowledge.heap import give_back_free_heap


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_memory_is_given_back() -> None:
    """200 MB freed inside the heap (a live block above it, so malloc cannot shrink the heap
    from the top by itself) stays resident until it is handed back."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 64 * 1024  # below glibc's mmap threshold: inside the heap
    blocks = [libc.malloc(size) for _ in range(3200)]
    assert all(blocks)
    for b in blocks:
        ctypes.memset(b, 1, size)  # resident
    top = libc.malloc(size)  # keeps the heap's top in use
    for b in blocks:
        libc.free(b)
    held = rss_mb()
    try:
        assert give_back_free_heap() is True
        assert held - rss_mb() > 150
    finally:
        libc.free(top)


def test_it_is_a_no_op_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphseek.knowledge import heap

    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    assert give_back_free_heap() is False
