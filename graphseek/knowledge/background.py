"""Work handed to a daemon thread while the caller goes on.

A build spends seconds in single-threaded Python (linking, counting) while the other core idles.
Work that mostly runs with the GIL released (ONNX runs, the tokenizer's batch encoding, numpy
reductions, k-means) can use that core from a thread; pure-Python work cannot, so only the
former is worth handing over. Threads are daemons rather than an executor's: an interrupted
build ends at once instead of waiting for them at exit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """`fn()` on a daemon thread (or here and now, with ``thread=False``); `result()` waits for
    it and returns its value or raises its exception."""

    def __init__(self, fn: Callable[[], T], *, thread: bool = True) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if thread:
            self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
            self._thread.start()
        else:
            self._value = fn()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def wait(self) -> None:
        """Wait until `fn` has ended, whatever it gave (for cleaning up after a failure)."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> T:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]
