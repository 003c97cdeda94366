"""One atomic directory writer, shared by the passage index and the graph store, and one
atomic file writer for the single-file caches (`atomic_file`: the ONNX exports, the static
token table).

`atomic_directory(target)` is a context manager that yields a fresh building directory,
``<parent>/.<name>.building-<hex>``; when the block ends without an error it swaps that
directory into place (an existing `target` is renamed aside to ``.<name>.old-<hex>`` first and
removed after), and on any error, ``KeyboardInterrupt`` included, it removes the building
directory and leaves `target` as it was.

Two writers of one target cannot collide: the writer holds a lock file, ``<parent>/.<name>.lock``
(`filelock`; the OS releases it if the process dies, and it is removed when the writer ends), and
a second writer fails at once with `IndexBusyError`. Holding the lock, a writer removes what killed writers of *its own target* left
behind (``.<name>.building-*`` and ``.<name>.old-*`` directories; a target missing because a crash
fell between the two renames is first put back from the newest ``.old-*``), and nothing else.

A directory written inside one this process already holds (a graph store inside an index being
built, or inside an index held by `hold`) is private to that writer, so it takes no lock of its
own.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from filelock import FileLock, Timeout

from graphseek.errors import IndexBusyError

BUILDING = "building"
OLD = "old"
_HEX = 12
_held: set[Path] = set()
_held_lock = threading.Lock()


def file_stamp(path: Path) -> tuple[int, int] | None:
    """The identity of the file at `path` now: its inode and modification time (a writer that
    swaps a new directory in, or replaces the file, changes both); None when there is none.
    Readers compare a manifest's stamp before and after reading the files it describes."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def lock_path(target: Path) -> Path:
    """The lock file of `target`: a hidden sibling, ``.<name>.lock``."""
    return target.parent / f".{target.name}.lock"


def _leftovers(target: Path, kind: str) -> list[Path]:
    """``.<name>.<kind>-<hex>`` siblings of `target` (exactly that pattern, nothing broader)."""
    if not target.parent.is_dir():
        return []
    # the random part: uuid hex here; 8 characters of [a-z0-9_] from older graphseek versions
    pattern = re.compile(rf"\.{re.escape(target.name)}\.{kind}-[0-9a-z_]{{8,32}}")
    return sorted(
        (p for p in target.parent.iterdir() if pattern.fullmatch(p.name) and p.is_dir()),
        key=lambda p: p.stat().st_mtime,
    )


def _owned(target: Path) -> bool:
    with _held_lock:
        return any(parent in _held for parent in target.parents)


@contextmanager
def hold(target: Path, *, timeout: float = 0) -> Iterator[None]:
    """Hold `target`'s lock (no-op inside a directory this process already holds), recovering
    and cleaning what killed writers of `target` left behind. `IndexBusyError` if another
    process or thread holds it for more than `timeout` seconds (default: fail at once; -1:
    wait as long as it takes)."""
    target = Path(target).absolute()
    if _owned(target):
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(lock_path(target), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise IndexBusyError(
            f"{target} is being written by another graphseek process or thread (lock {lock.lock_file}); "
            "wait for it to finish."
        ) from None
    with _held_lock:
        _held.add(target)
    try:
        _clean(target)
        yield
    finally:
        with _held_lock:
            _held.discard(target)
        # unlinked while held, so nothing stays beside the target; a contender that opened the
        # old file before the unlink sees it unlinked after its flock and retries (filelock >= 4)
        with suppress(OSError):
            os.unlink(lock.lock_file)
        lock.release()


def _clean(target: Path) -> None:
    """Put back a target lost between the two renames of a swap; drop stale leftovers."""
    olds = _leftovers(target, OLD)
    if not target.exists() and olds:
        os.rename(olds.pop(), target)
    for stale in olds + _leftovers(target, BUILDING):
        shutil.rmtree(stale, ignore_errors=True)


SWAP_WAIT_S = 2.0
"""How long a reader waits for a target that a writer holding the lock has renamed aside: the
writer is between the two renames of its swap (microseconds)."""


def recover(target: Path) -> None:
    """`_clean` for readers: if `target` is missing but a swap left it renamed aside, put it back
    (under the lock). When a writer holds the lock it is between the two renames of its swap:
    wait (up to `SWAP_WAIT_S`) for the new `target` to appear, so a reader sees the old version
    or the new one, never none."""
    target = Path(target).absolute()
    if target.exists() or not _leftovers(target, OLD):
        return
    try:
        with hold(target):
            pass
    except IndexBusyError:
        deadline = time.monotonic() + SWAP_WAIT_S
        while not target.exists() and time.monotonic() < deadline:
            time.sleep(0.005)


@contextmanager
def atomic_file(target: Path, *, mode: int = 0o644) -> Iterator[Path]:
    """Yield a temporary path beside `target` (``.<name>.<random>.tmp``, created empty); when
    the block succeeds the file written there is renamed onto `target`, so readers and
    concurrent writers see the old file or a whole new one, never part of one; on any error,
    ``KeyboardInterrupt`` included, it is removed and `target` is left as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


SCRATCH_LOCK = ".graphseek-scratch.lock"


@contextmanager
def scratch_directory(prefix: str) -> Iterator[Path]:
    """A temporary directory (``$TMPDIR/<prefix><random>``) removed when the block ends, as
    `tempfile.TemporaryDirectory`; it holds a lock file while in use, so that one a killed
    process left behind is found and removed by the next `scratch_directory` of its `prefix`
    (`remove_orphans`) instead of staying in $TMPDIR."""
    base = Path(tempfile.gettempdir())
    remove_orphans(base, prefix)
    with tempfile.TemporaryDirectory(prefix=prefix, dir=base) as tmp:
        with FileLock(Path(tmp) / SCRATCH_LOCK):  # the OS releases it if the process dies
            yield Path(tmp)


def remove_orphans(base: Path, prefix: str) -> list[Path]:
    """Remove the scratch directories ``<base>/<prefix>*`` whose lock no process holds (their
    writer was killed); those in use, and folders without the lock file, are left. Returns
    what it removed."""
    removed = []
    for path in sorted(base.glob(f"{glob.escape(prefix)}*")):
        lock_file = path / SCRATCH_LOCK
        if not lock_file.is_file():
            continue
        lock = FileLock(lock_file, timeout=0)
        try:
            lock.acquire()
        except (Timeout, OSError):
            continue
        try:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        finally:
            lock.release()
    return removed


@contextmanager
def atomic_directory(target: Path, *, mode: int = 0o755) -> Iterator[Path]:
    """Yield a building directory for `target`; swap it into place when the block succeeds."""
    target = Path(target).absolute()
    with hold(target):
        tmp = target.parent / f".{target.name}.{BUILDING}-{uuid.uuid4().hex[:_HEX]}"
        try:
            os.mkdir(tmp, mode)
            with _held_lock:
                _held.add(tmp)
            yield tmp
            swap_into_place(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            with _held_lock:
                _held.discard(tmp)


def swap_into_place(new: Path, target: Path) -> None:
    """Rename `new` to `target`; an existing `target` is renamed aside first and removed after."""
    if not target.exists():
        os.rename(new, target)
        return
    backup = target.parent / f".{target.name}.{OLD}-{uuid.uuid4().hex[:_HEX]}"
    os.rename(target, backup)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(backup, target)
        raise
    shutil.rmtree(backup, ignore_errors=True)
