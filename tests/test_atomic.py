"""The one atomic directory writer (`graphseek.knowledge.atomic`), on plain directories."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from graphseek.errors import IndexBusyError
from graphseek.knowledge.atomic import atomic_directory, hold, recover


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def write(target: Path, text: str) -> None:
    with atomic_directory(target) as tmp:
        assert tmp.parent == target.parent and tmp.name.startswith(f".{target.name}.building-")
        (tmp / "data.txt").write_text(text)


def test_a_write_appears_whole_and_replaces_the_previous_one(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    write(target, "one")
    write(target, "two")
    assert (target / "data.txt").read_text() == "two"
    assert names(tmp_path) == ["idx"]  # no building, old or lock leftovers


def test_an_error_or_ctrl_c_leaves_the_previous_directory(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    write(target, "one")
    for error in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)):
            with atomic_directory(target) as tmp:
                (tmp / "data.txt").write_text("half")
                raise error
        assert (target / "data.txt").read_text() == "one"
        assert names(tmp_path) == ["idx"]


def test_leftovers_of_killed_writers_are_removed_for_this_target_only(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    write(target, "one")
    mine = [tmp_path / ".idx.building-0123456789ab", tmp_path / ".idx.building-abcd_123"]
    mine += [tmp_path / ".idx.old-fedcba987654"]
    others = [
        tmp_path / ".idx2.building-0123456789ab",  # another index whose name starts the same
        tmp_path / ".idx.building-notrandom!",  # not a name a writer makes
        tmp_path / "idx.building-0123456789ab",  # not hidden
    ]
    for d in mine + others:
        d.mkdir()
    write(target, "two")
    assert not any(d.exists() for d in mine)
    assert all(d.is_dir() for d in others)


def test_a_target_lost_between_the_two_renames_is_put_back(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    write(target, "one")
    target.rename(tmp_path / ".idx.old-0123456789ab")
    recover(target)
    assert (target / "data.txt").read_text() == "one" and names(tmp_path) == ["idx"]


def test_a_second_writer_fails_at_once_and_nested_writes_take_no_lock(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    errors: list[BaseException] = []
    with atomic_directory(target) as tmp:
        # a directory inside the one being built is private to this writer: no lock of its own
        with atomic_directory(tmp / "graph") as inner:
            (inner / "g.txt").write_text("graph")
        assert names(tmp) == ["graph"]

        def other() -> None:
            try:
                write(target, "other")
            except IndexBusyError as exc:
                errors.append(exc)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        (tmp / "data.txt").write_text("mine")
    assert len(errors) == 1 and "is being written by another graphseek" in str(errors[0])
    assert (target / "data.txt").read_text() == "mine"
    assert (target / "graph" / "g.txt").read_text() == "graph"
    with hold(target):  # held again once free; the lock file goes with the holder
        assert ".idx.lock" in names(tmp_path)
    assert names(tmp_path) == ["idx"]
