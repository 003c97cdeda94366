"""What a build holds from one stage to a later one, kept in unnamed temporary files.

A build's raw extractions and contextual mention vectors grow with the corpus and are needed
from the stage that makes them to the store write; held in memory they would be the largest
part of a large build. Here they go to files in ``TMPDIR`` and are read back when a
stage needs them: `TempFile` (append, then ``pread`` by offset: plain reads, since the pages of
a memory map would count in the process's RSS), `ExtractionSpool` (extractions, one pickle
each), `SpilledArray` (the graph's vectors, from the stage that makes them to the write;
the passage vectors, from the passage pass to the index's write)
and `graphseek.knowledge.graph.algorithms.contextual.MentionVectors` (rows by mention id); an update
reads a stored ``.npy`` a row at a time the same way (`NpyRows`).

Written by hand: no library keeps a sequence of pickled records in a temporary file with
random reads (`shelve` and `sqlite3` key them by strings and copy every read through their
own layers; this is two system calls)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

import numpy as np

from graphseek.errors import CorpusError
from graphseek.knowledge.graph.memory.read_sequence import ReadSequence
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.passages import EMPTY_CORPUS, Passage, check_passage, duplicate_id

_R = TypeVar("_R")

READ_BYTES = 1 << 24
"""`RecordSpool` iteration reads about this many bytes of records at a time."""


class TempFile:
    """An unnamed temporary file (in ``TMPDIR``; it goes away with its last user) that grows at
    its end and is read by offset."""

    def __init__(self, prefix: str) -> None:
        self._file = tempfile.TemporaryFile(prefix=prefix)
        self.size = 0

    def append(self, data: bytes | memoryview) -> int:
        """Write `data` (bytes, or a contiguous buffer such as an array's) at the end; returns
        its offset."""
        offset = self.size
        view = memoryview(data)
        if not view.nbytes:  # (an empty array's view cannot be cast to bytes)
            return offset
        view = view.cast("B")
        while view:  # a write may be short (one is capped at about 2 GB on Linux)
            written = os.pwrite(self._file.fileno(), view, self.size)
            view = view[written:]
            self.size += written
        return offset

    def write_at(self, offset: int, data: bytes | memoryview) -> None:
        """Write `data` over bytes already written, from `offset`."""
        view = memoryview(data)
        view = view.cast("B") if view.nbytes else memoryview(b"")
        if offset < 0 or offset + view.nbytes > self.size:
            raise ValueError(f"bytes {offset}..{offset + view.nbytes} of a file of {self.size}")
        while view:
            written = os.pwrite(self._file.fileno(), view, offset)
            view = view[written:]
            offset += written

    def grow(self, size: int) -> None:
        """Make the file `size` bytes long (at least its size now), the new bytes zeros that
        take no disk until written over (a sparse file, where the file system allows it)."""
        if size < self.size:
            raise ValueError(f"a file of {self.size} bytes cannot grow to {size}")
        os.ftruncate(self._file.fileno(), size)
        self.size = size

    def read(self, offset: int, size: int) -> bytes:
        """`size` bytes from `offset` (which were written)."""
        if offset < 0 or offset + size > self.size:
            raise ValueError(f"bytes {offset}..{offset + size} of a file of {self.size}")
        return pread_all(self._file.fileno(), offset, size, "a temporary file")

    def read_into(self, offset: int, buffer: memoryview) -> None:
        """Fill `buffer` (a writable byte view) with the bytes from `offset`."""
        size = buffer.nbytes
        if offset < 0 or offset + size > self.size:
            raise ValueError(f"bytes {offset}..{offset + size} of a file of {self.size}")
        done = 0
        while done < size:  # a read may be short (one is capped at about 2 GB on Linux)
            got = os.preadv(self._file.fileno(), [buffer[done:]], offset + done)
            if not got:
                raise OSError(f"unexpected end of a temporary file at byte {offset + done}")
            done += got


def pread_all(fd: int, offset: int, size: int, name: str) -> bytes:
    """`size` bytes of the open file `fd` from `offset` (a read may be short: it is continued);
    `OSError` naming the file (`name`) if it ends first."""
    parts: list[bytes] = []
    while size > 0:
        part = os.pread(fd, size, offset)
        if not part:
            raise OSError(f"unexpected end of {name} at byte {offset}")
        parts.append(part)
        offset += len(part)
        size -= len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class RecordSpool(ReadSequence[_R]):
    """Records in a temporary file, one pickle each, in the order added, read back when asked:
    indexing reads one record, a slice its span at once, iteration about `READ_BYTES` at a
    time. Each read makes new objects: changing one changes nothing here. A subclass says how a
    record is pickled (`_encode`, `_decode`: a plain tuple unpickles faster than a model)."""

    ITEM = "record"

    def __init__(self) -> None:
        self._file = TempFile(f"graphseek-{self.ITEM}s-")
        self._ends = array("q")

    def _encode(self, record: _R) -> Any:
        return record

    def _decode(self, value: Any) -> _R:
        return cast(_R, value)

    def _added(self, record: _R) -> None:
        """A hook: `record` was just written (at position ``len(self) - 1``)."""

    def extend(self, records: Iterable[_R]) -> None:
        """Add `records` at the end."""
        blobs: list[bytes] = []
        end = self._file.size
        for x in records:
            blob = pickle.dumps(self._encode(x), protocol=pickle.HIGHEST_PROTOCOL)
            blobs.append(blob)
            end += len(blob)
            self._ends.append(end)
            self._added(x)
        if blobs:
            self._file.append(b"".join(blobs))

    def _span(self, k: int) -> tuple[int, int]:
        start = self._ends[k - 1] if k else 0
        return start, self._ends[k] - start

    def _item(self, k: int) -> _R:
        return self._decode(pickle.loads(self._file.read(*self._span(k))))

    def _slice(self, k: slice) -> list[_R]:
        first, stop, step = k.indices(len(self))
        if step != 1 or first >= stop:
            return super()._slice(k)
        return list(self._read(first, stop))

    def _read(self, k: int, n: int) -> Iterator[_R]:
        """Records k..n-1, read about `READ_BYTES` at a time."""
        while k < n:
            start = self._span(k)[0]
            last = k
            while last + 1 < n and self._ends[last + 1] - start <= READ_BYTES:
                last += 1
            data = memoryview(self._file.read(start, self._ends[last] - start))
            for i in range(k, last + 1):
                begin, size = self._span(i)
                yield self._decode(pickle.loads(data[begin - start : begin - start + size]))
            k = last + 1

    def __iter__(self) -> Iterator[_R]:
        return self._read(0, len(self))

    def __len__(self) -> int:
        return len(self._ends)


class ExtractionSpool(RecordSpool[Extraction]):
    """Extractions in a temporary file: a build makes them passage by passage and reads them
    back once per stage that needs them (alignment's mentions, the relations and facts of
    linking and hyperedges, the store write), so none of them stays in memory between stages.
    `passage_digests`: an 8-byte digest of each record's passage id (`id_digest`), kept in
    memory (the check of a build's extractions against its passages reads none of them)."""

    ITEM = "extraction"

    def __init__(self) -> None:
        super().__init__()
        self.passage_digests = array("q")

    @classmethod
    def of(cls, extractions: Iterable[Extraction]) -> ExtractionSpool:
        """A spool of `extractions` (an iterable: they are written as they come)."""
        out = cls()
        for block in _blocks_of(extractions):
            out.extend(block)
        return out

    def _added(self, record: Extraction) -> None:
        self.passage_digests.append(id_digest(record.passage_id))


class PassageSpool(RecordSpool[Passage]):
    """A corpus's passages in a temporary file (not held as objects through a whole build),
    read back by each stage that needs them (extraction,
    the passage pass, linking, the store write). Made by `of`, which checks them as
    `Index.build` does (passages, ids unique); a build takes it as checked."""

    ITEM = "passage"

    def _encode(self, record: Passage) -> Any:
        return (record.id, record.title, record.text, record.source)

    def _decode(self, value: Any) -> Passage:
        pid, title, text, source = value  # (validating is faster than `model_construct`)
        return Passage(id=pid, title=title, text=text, source=source)

    @classmethod
    def of(cls, passages: Iterable[Passage]) -> PassageSpool:
        """The passages of `passages` (an iterable: written as they come), in order. `TypeError`
        for an item that is not a `Passage`, `CorpusError` for an empty corpus or an id given
        twice (item positions count from 0). Held meanwhile: 8 bytes a passage (a digest of
        its id, `id_digest`; equal digests are compared by reading the records back)."""
        out = cls()
        digests = array("q")
        count = 0
        for block in _blocks_of(passages):
            for p in block:
                digests.append(id_digest(check_passage(p, count).id))
                count += 1
            out.extend(block)
        if not count:
            raise CorpusError(EMPTY_CORPUS)
        out._check_unique(np.frombuffer(digests, dtype=np.int64))
        return out

    def _check_unique(self, digests: np.ndarray) -> None:
        order = np.argsort(digests, kind="stable")
        ranked = digests[order]
        equal = np.flatnonzero(ranked[1:] == ranked[:-1])
        seen: set[str] = set()
        for k in sorted({int(order[i + j]) for i in equal.tolist() for j in (0, 1)}):
            pid = self[k].id
            if pid in seen:
                raise duplicate_id(pid, k)
            seen.add(pid)


def id_digest(pid: str) -> int:
    """An 8-byte digest of an id, as a signed int64 (ids told apart without holding them)."""
    digest = hashlib.blake2b(pid.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _blocks_of(items: Iterable[_R], size: int = 1024) -> Iterator[list[_R]]:
    """`items` in lists of `size` (the last may be shorter, none empty)."""
    block: list[_R] = []
    for x in items:
        block.append(x)
        if len(block) == size:
            yield block
            block = []
    if block:
        yield block


class SpilledArray:
    """A 2-D array moved to a temporary file (the graph's entity, relation, hyperedge and base
    vectors, which only alignment's radius search and the store write read after the stage that
    makes them; the passage vectors, from the passage pass to the index's write). `blocks`
    reads its rows back a block at a time, `take` the rows asked, `load` them all; `put` writes
    over rows (`zeros`: a file of zeros to fill)."""

    def __init__(self, array: np.ndarray) -> None:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"a spilled array is made of a numpy array, not {type(array).__name__}")
        if array.ndim != 2:
            raise ValueError(f"a spilled array has 2 dimensions, not {array.ndim}")
        self.shape: tuple[int, int] = (int(array.shape[0]), int(array.shape[1]))
        self.dtype = array.dtype
        self._file = TempFile("graphseek-array-")
        self._file.append(np.ascontiguousarray(array).data)

    @classmethod
    def zeros(cls, rows: int, width: int, dtype: Any = np.float32) -> SpilledArray:
        """A (`rows`, `width`) array of zeros in a file, without the zeros in memory: rows are
        then written with `put` (the passage pass's vectors, in the order of its blocks)."""
        spilled = cls(np.zeros((0, width), dtype=dtype))
        spilled._file.grow(rows * width * spilled.dtype.itemsize)
        spilled.shape = (rows, width)
        return spilled

    @classmethod
    def of_blocks(cls, blocks: Iterable[np.ndarray], width: int) -> SpilledArray:
        """The rows of `blocks` (float32 arrays of `width` columns) written one block at a
        time: the file a `SpilledArray` of their stack would have, without the stack."""
        spilled = cls(np.zeros((0, width), dtype=np.float32))
        for block in blocks:
            spilled.append(block)
        return spilled

    def append(self, block: np.ndarray) -> None:
        """Add the rows of `block` (an array of this dtype and width) after the last."""
        width = self.shape[1]
        if block.ndim != 2 or block.shape[1] != width or block.dtype != self.dtype:
            raise ValueError(f"a block of shape {block.shape} ({block.dtype}) for {width}")
        self._file.append(np.ascontiguousarray(block).data)
        self.shape = (self.shape[0] + len(block), width)

    @property
    def ndim(self) -> int:
        return 2

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    def __len__(self) -> int:
        return self.shape[0]

    def blocks(self, rows: int) -> Iterator[np.ndarray]:
        """The rows, `rows` at a time (read-only arrays)."""
        width = self.shape[1] * self.dtype.itemsize
        for start in range(0, self.shape[0], rows):
            n = min(rows, self.shape[0] - start)
            data = self._file.read(start * width, n * width)
            yield np.frombuffer(data, dtype=self.dtype).reshape(n, self.shape[1])

    def load(self) -> np.ndarray:
        """Every row, in one new (writable) array, read into it without a copy of the bytes."""
        out = np.empty(self.shape, dtype=self.dtype)
        self._file.read_into(0, out.data.cast("B") if out.size else memoryview(b""))
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Every row (`load`), for ``np.asarray``."""
        rows = self.load()
        return rows if dtype is None else rows.astype(dtype, copy=False)

    def take(self, rows: Sequence[int] | np.ndarray) -> np.ndarray:
        """Rows `rows` (any order, repeats allowed), stacked in the order asked."""
        at = np.asarray(rows, dtype=np.int64)
        if len(at) and (int(at.min()) < 0 or int(at.max()) >= self.shape[0]):
            raise IndexError(f"rows {int(at.min())}..{int(at.max())} of {self.shape[0]}")
        return gather_rows(self._file.read, at, self.shape[1], self.dtype)

    def put(self, rows: Sequence[int] | np.ndarray, values: np.ndarray) -> None:
        """Write `values` (one row each) over rows `rows`."""
        width = self.shape[1] * self.dtype.itemsize
        values = np.ascontiguousarray(values, dtype=self.dtype).reshape(-1, self.shape[1])
        for row, value in zip(np.asarray(rows, dtype=np.int64).tolist(), values, strict=True):
            if not 0 <= row < self.shape[0]:
                raise IndexError(f"row {row} of {self.shape[0]}")
            self._file.write_at(row * width, value.data)


def gather_rows(
    read: Callable[[int, int], bytes], at: np.ndarray, dim: int, dtype: np.dtype, start: int = 0
) -> np.ndarray:
    """Rows `at` (row numbers, any order, repeats allowed) of a file of `dim`-wide `dtype` rows
    that begins at byte `start`, stacked in the order asked: each run of rows that lie one after
    another is one `read(offset, size)`."""
    itemsize = np.dtype(dtype).itemsize * dim
    out = np.empty((len(at), dim), dtype=dtype)
    if not len(at):
        return out
    order = np.argsort(at, kind="stable")
    rows = at[order]
    starts = np.flatnonzero(np.r_[True, np.diff(rows) != 1])
    ends = np.r_[starts[1:], len(rows)]
    for first, end in zip(starts.tolist(), ends.tolist(), strict=True):
        data = read(start + int(rows[first]) * itemsize, (end - first) * itemsize)
        out[order[first:end]] = np.frombuffer(data, dtype=dtype).reshape(-1, dim)
    return out


class KeyedRows(Mapping[str, np.ndarray]):
    """Rows of a file by key (`_row`: key to row number; rows of `dim` `dtype` values from
    byte `_start`), read with ``pread`` when asked, never mapped (mapped pages count in the
    process's RSS): `NpyRows` here,
    `graphseek.knowledge.graph.algorithms.contextual.MentionVectors`. ``in``, ``len`` and iteration
    (keys in the order first given) do not read the file."""

    dim: int
    dtype: np.dtype
    _row: Mapping[str, int]
    _start = 0

    def _reader(self) -> contextlib.AbstractContextManager[Callable[[int, int], bytes]]:
        """A ``read(offset, size)`` for the rows' file, for the span of one `take`."""
        raise NotImplementedError

    def take(self, keys: Sequence[str]) -> np.ndarray:
        """The rows of `keys` stacked, (len(keys), dim) (`np.stack` of their lookups): rows that
        lie one after another in the file, as a passage's mentions do, are read with one
        ``pread`` (`gather_rows`)."""
        at = np.fromiter((self._row[k] for k in keys), dtype=np.int64, count=len(keys))
        with self._reader() as read:
            return gather_rows(read, at, self.dim, self.dtype, self._start)

    def __getitem__(self, key: str) -> np.ndarray:
        return self.take([key])[0]

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)

    def sorted_keys(self) -> Sequence[str]:
        """The keys, sorted (as ``sorted(self)``)."""
        return sorted(self._row)


def sorted_keys(rows: Mapping[str, Any]) -> Sequence[str]:
    """``sorted(rows)``; a `KeyedRows` may give a view (`MentionVectors`: its frozen ids)."""
    return rows.sorted_keys() if isinstance(rows, KeyedRows) else sorted(rows)


def stack_rows(rows: Mapping[str, np.ndarray], keys: Sequence[str]) -> np.ndarray:
    """The rows of `keys` stacked: a `KeyedRows` reads them in runs, a dict is stacked."""
    if isinstance(rows, KeyedRows):
        return rows.take(keys)
    return np.stack([rows[k] for k in keys])


class NpyRows(KeyedRows):
    """The rows of a stored 2-D ``.npy`` by key (`keys[k]`: row k), never the whole array: an
    update's stored base vectors, of which alignment needs each row once. Each `take` opens the
    file for its reads (nothing stays open between them)."""

    def __init__(self, path: str | os.PathLike[str], keys: Sequence[str]) -> None:
        self.path = os.fspath(path)
        with open(self.path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran, self.dtype = header(handle)
            self._start = handle.tell()
        if len(shape) != 2 or shape[0] != len(keys) or fortran:
            raise ValueError(f"{self.path}: {shape} rows for {len(keys)} keys")
        self.dim = int(shape[1])
        self._row = {key: k for k, key in enumerate(keys)}

    @contextlib.contextmanager
    def _reader(self) -> Iterator[Callable[[int, int], bytes]]:
        with open(self.path, "rb") as handle:
            yield lambda offset, size: pread_all(handle.fileno(), offset, size, self.path)
