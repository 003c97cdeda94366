"""`graphseek.knowledge.background.Background`: a value or an exception handed back, on a
daemon thread or in the caller's."""

from __future__ import annotations

import threading

import pytest

from graphseek.knowledge.background import Background


def test_result_comes_from_a_daemon_thread() -> None:
    seen: list[threading.Thread] = []
    job = Background(lambda: seen.append(threading.current_thread()) or 42)
    assert job.result() == 42 and job.result() == 42
    assert seen[0] is not threading.current_thread() and seen[0].daemon


def test_an_exception_reaches_the_caller() -> None:
    def fail() -> int:
        raise ValueError("no vectors")

    job = Background(fail)
    with pytest.raises(ValueError, match="no vectors"):
        job.result()


def test_without_a_thread_it_runs_at_once_here() -> None:
    seen: list[threading.Thread] = []
    job = Background(lambda: seen.append(threading.current_thread()) or "done", thread=False)
    assert seen == [threading.current_thread()] and job.result() == "done"
