"""Index progress: one labelled bar per long stage on a terminal, nothing on a pipe unless -v."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from graphseek.knowledge import progress
from graphseek.knowledge.graph.algorithms import vectors as graph_vectors
from graphseek.knowledge.index import Index
from graphseek.knowledge.loaders import load_corpus

DEMO = Path(__file__).resolve().parents[1] / "graphseek" / "knowledge" / "demo" / "demo_corpus.json"


@pytest.fixture
def log_level() -> Iterator[Callable[[int], None]]:
    """Set the graphseek logger's level (as `-v` does); restored after the test."""
    logger = logging.getLogger("graphseek")
    old = logger.level
    yield logger.setLevel
    logger.setLevel(old)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_bars_only_on_a_terminal_or_with_verbose(
    monkeypatch: pytest.MonkeyPatch, log_level: Callable[[int], None]
) -> None:
    log_level(logging.WARNING)
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert progress.progress_enabled(True)
    assert not progress.progress_enabled(False)  # --quiet / --json
    monkeypatch.setattr("sys.stderr", _Pipe())
    assert not progress.progress_enabled(True)
    log_level(logging.INFO)  # graphseek -v
    assert progress.progress_enabled(True)


def _build(tmp_path: Path, stderr: io.StringIO, monkeypatch: pytest.MonkeyPatch, **kw: bool) -> str:
    monkeypatch.setattr("sys.stderr", stderr)
    monkeypatch.setattr(graph_vectors, "STAGE_BAR_MIN", 1)  # the demo corpus is small
    Index.build(DEMO, tmp_path / "index", graph=True, **kw)
    return stderr.getvalue()


@pytest.mark.slow
def test_index_build_labels_every_stage_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_level: Callable[[int], None]
) -> None:
    log_level(logging.WARNING)
    out = _build(tmp_path, _Terminal(), monkeypatch, show_progress=True)
    n = len(load_corpus(DEMO))
    for label in progress.STAGES:
        assert f"{label}:" in out, (label, out[-2000:])
    assert "embedding passages: 100%" in out and f"{n}/{n}" in out
    assert "extracting: 100%" in out


@pytest.mark.slow
def test_index_build_prints_nothing_on_a_pipe_or_when_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_level: Callable[[int], None]
) -> None:
    log_level(logging.WARNING)
    assert _build(tmp_path / "pipe", _Pipe(), monkeypatch, show_progress=True) == ""
    assert _build(tmp_path / "quiet", _Terminal(), monkeypatch, show_progress=False) == ""
