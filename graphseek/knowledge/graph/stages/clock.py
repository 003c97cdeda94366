"""Wall and CPU time of a graph build's phases, and the process's peak RSS at each phase's end,
for the timings its manifest records."""

from __future__ import annotations

import time
from typing import Any

from graphseek.knowledge.graph.memory import peak_mb


def rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else float("inf")


def cpu_time() -> float:
    """CPU seconds of this process and of its reaped children (the extraction workers)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows: no worker processes are forked there
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Clock:
    """Wall and CPU time of one phase (CPU time shows the cost on a busy host; it is the
    process's, so it includes background threads). `pause` / `resume` leave out a stretch."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = cpu_time()
        self.paused_wall = self.paused_cpu = 0.0
        self.paused_at: tuple[float, float] | None = None

    def pause(self) -> None:
        self.paused_at = (time.perf_counter(), cpu_time())

    def resume(self) -> None:
        if self.paused_at is not None:
            self.paused_wall += time.perf_counter() - self.paused_at[0]
            self.paused_cpu += cpu_time() - self.paused_at[1]
            self.paused_at = None

    def record(self, timings: dict[str, Any], name: str, n: int, **extra: Any) -> None:
        self.resume()
        wall = time.perf_counter() - self.wall - self.paused_wall
        cpu = cpu_time() - self.cpu - self.paused_cpu
        timings[name] = {
            "seconds": round(wall, 3),
            "cpu_seconds": round(cpu, 3),
            "passages_per_s": rate(n, wall),
            "peak_rss_mb": peak_mb(),
            **extra,
        }
