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


RETAINED = """
import ctypes, json, sys
sys.path.insert(0, sys.argv[2])
from graphseek.knowledge.heap import bound_heap
from test_heap import rss_mb

took = bound_heap() if sys.argv[1] == "bound" else None
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
big = libc.malloc(16 << 20)  # mapped; freeing it raises glibc's own threshold to 16 MB
libc.free(big)
size = 2 << 20
blocks = [libc.malloc(size) for _ in range(100)]
for b in blocks:
    ctypes.memset(b, 1, size)
top = libc.malloc(64 << 10)  # keeps the heap's top in use
before = rss_mb()
for b in blocks:
    libc.free(b)
print(json.dumps({"took": took, "retained": rss_mb() - before + 200}))
"""


def _retained(mode: str) -> dict[str, object]:
    """The child's report: whether `bound_heap` took (``mode`` "bound"), and the MB of the 200
    freed that stay resident."""
    import json
    import subprocess
    from pathlib import Path

    run = subprocess.run(
        [sys.executable, "-c", RETAINED, mode, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_bound_heap_maps_large_blocks_on_their_own() -> None:
    """200 MB of 2 MB blocks, freed with a live block above them: after glibc has raised its
    mmap threshold they came from the heap and stay resident; under `bound_heap` each was
    mapped on its own and goes back when freed."""
    default = _retained("default")
    bound = _retained("bound")
    assert bound["took"] is True
    assert float(default["retained"]) > 150  # MB still resident of the 200 freed
    assert float(bound["retained"]) < 50


def test_bound_heap_asks_for_one_arena_and_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphseek.knowledge import heap

    asked: list[tuple[int, int]] = []
    monkeypatch.setattr(heap, "_mallopt", lambda: lambda p, v: asked.append((p, v)) or 1)
    monkeypatch.delenv(heap.KEEP_HEAP_ENV, raising=False)
    assert heap.bound_heap() is True
    assert asked == [(heap.M_ARENA_MAX, 1), (heap.M_MMAP_THRESHOLD, 1 << 20)]


def test_bound_heap_leaves_malloc_alone_when_asked_or_without_mallopt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from graphseek.knowledge import heap

    asked: list[tuple[int, int]] = []
    monkeypatch.setattr(heap, "_mallopt", lambda: lambda p, v: asked.append((p, v)) or 1)
    monkeypatch.setenv(heap.KEEP_HEAP_ENV, "1")
    assert heap.bound_heap() is False
    monkeypatch.setenv(heap.KEEP_HEAP_ENV, "0")
    monkeypatch.setattr(heap, "_mallopt", lambda: None)
    assert heap.bound_heap() is False
    assert asked == []
