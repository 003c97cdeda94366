"""Contextual mention vectors for semantic merging, from the passage encoder's own pass.

Semantic merging (Phase 2) compares base entities by vector. Encoding each base entity's record
string (``"name; aliases; TYPES"``) is a second MiniLM pass over about as many tokens as the
passages themselves. Instead, each mention gets the mean of the passage encoder's last token
states over the mention's characters ("late chunking"), from the run that embeds the passage
for dense search anyway (`Embedder.encode_spans`); a base entity's vector is the normalised sum
of its mentions' vectors (`graphseek.knowledge.graph.algorithms.align.Aligner`). The vectors carry
the context the name appears in, so "Paris" the city and "Paris" the film drift apart.

Compared with record strings, this saves a transformer pass per build; the retrieval quality
against record strings, with the command that measures it, is in docs/performance.md.

Where a mention has no span (an LLM extraction, a span past the model's 256-token window), its
name is searched in the passage; a mention found nowhere, or past the window, gets no vector. A
base entity with no mention vector merges by name only, or embeds its record string
(`GraphSettings.outside_window`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

import numpy as np

from graphseek.knowledge.graph.memory.mention_table import ABSENT, MentionRows, MentionTable
from graphseek.knowledge.graph.memory.spool import KeyedRows, SpilledArray, TempFile, stack_rows
from graphseek.knowledge.graph.models import Extraction, Mention
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.progress import bar as progress_bar

ALIGNMENT_VECTORS = ("contextual", "records")
"""How semantic merging embeds base entities: ``"contextual"`` pools their mentions' token
states from the passage pass (this module); ``"records"`` encodes each record string."""

MENTION_DTYPE = np.float16
"""Mention vectors are kept and stored at half precision (a base entity's vector is computed
from the rounded values in a build and in an update alike, so both give the same graph)."""


class MentionVectors(KeyedRows):
    """Contextual mention vectors by mention id, kept in an unnamed temporary file (in
    ``TMPDIR``) instead of in memory: one float16 row per mention (768 bytes with MiniLM), which
    a build holds from the passage pass to the store write, and which grows with the corpus. A
    lookup reads its row with ``pread``, a read-only array; `take`
    reads many in runs (`KeyedRows`). The file goes away with the last object using it
    (`restrict` makes views sharing it)."""

    dtype = np.dtype(MENTION_DTYPE)

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._file = TempFile("graphseek-mentions-")
        self._row: MentionRows | MentionTable[int] = MentionRows()

    @property
    def _width(self) -> int:
        return self.dim * np.dtype(MENTION_DTYPE).itemsize

    def append(self, ids: Sequence[str], block: np.ndarray) -> None:
        """Add the rows of `block` (n, dim), row k the vector of `ids[k]` (a later row for an id
        replaces the earlier one, as a dict's assignment would)."""
        if len(ids) != len(block) or (len(block) and block.shape[1] != self.dim):
            raise ValueError(f"{len(ids)} ids for a block of shape {block.shape}")
        if not len(ids):
            return
        if not isinstance(self._row, MentionRows):
            raise ValueError("these mention vectors are frozen (`freeze`): no row can be added")
        at = self._file.append(np.ascontiguousarray(block, dtype=MENTION_DTYPE).tobytes())
        first = at // max(self._width, 1)
        for k, mid in enumerate(ids):
            self._row[mid] = first + k

    def update(self, other: Mapping[str, np.ndarray]) -> None:
        """Add every row of `other`, in its order (as `dict.update`: a row for an id already
        here replaces it)."""
        ids = list(other)
        if ids:
            self.append(ids, np.stack([other[m] for m in ids]))

    @classmethod
    def from_npy(cls, path: str | os.PathLike[str], ids: Sequence[str]) -> MentionVectors:
        """The rows of a stored ``.npy`` of mention vectors (row k: `ids[k]`), copied into a
        new file `BASE_ROWS` rows at a time with plain reads (a memory map's pages would count
        in the RSS). Float32 rows (a PostgreSQL store's export) were float16 values and are
        stored as such again."""
        with open(path, "rb") as handle:
            np.lib.format.read_magic(handle)
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
            if len(shape) != 2 or shape[0] != len(ids) or fortran or dtype.kind != "f":
                raise ValueError(f"{path}: {shape} {dtype} rows for {len(ids)} mention ids")
            out = cls(int(shape[1]))
            for start in range(0, len(ids), BASE_ROWS):
                chunk = ids[start : start + BASE_ROWS]
                rows = np.fromfile(handle, dtype=dtype, count=len(chunk) * out.dim)
                out.append(chunk, rows.reshape(len(chunk), out.dim))
        return out

    def restrict(self, ids: Iterable[str]) -> MentionVectors:
        """The vectors of those of `ids` that have one (the same file, not copied)."""
        out = MentionVectors.__new__(MentionVectors)
        out.dim, out._file = self.dim, self._file
        row = self._row
        out._row = MentionRows((mid, r) for mid in ids if (r := row.get(mid)) is not None)
        return out

    def freeze(self, ids: Sequence[str]) -> None:
        """Look rows up through `ids` from now on (sorted and unique, among them every key
        here: alignment's mention ids, `MentionTable.ids`): an int32 row number per id instead
        of its own index by passage (`MentionRows`, which keeps id strings of its own). Every
        object sharing these
        vectors sees the same keys and rows; none can be added after."""
        rows = np.fromiter(
            (self._row.get(mid, ABSENT) for mid in ids), dtype=np.int32, count=len(ids)
        )
        table: MentionTable[int] = MentionTable(ids, rows)
        if len(table) != len(self._row):
            raise ValueError(f"{len(self._row) - len(table)} mention vectors have no id in `ids`")
        self._row = table

    def sorted_keys(self) -> Sequence[str]:
        """The ids, sorted: once frozen, a view of the ids they were frozen with (a
        `MentionIds`' are made when read: no list of every mention id at the store write)."""
        if isinstance(self._row, MentionTable):
            return self._row.keys_sorted()
        return super().sorted_keys()

    def __getitem__(self, mid: str) -> np.ndarray:
        row = self._row[mid]
        return np.frombuffer(self._file.read(row * self._width, self._width), dtype=MENTION_DTYPE)

    def _reader(self) -> contextlib.AbstractContextManager[Callable[[int, int], bytes]]:
        return contextlib.nullcontext(self._file.read)


class SentenceSpans(Protocol):
    """Where the passage pass pools sentences (`graphseek.knowledge.graph.store.sentences`)."""

    def spans(self, passage: Passage) -> np.ndarray: ...

    def put(self, passage_id: str, spans: np.ndarray, vectors: np.ndarray) -> None: ...


class SpanEncoder(Protocol):
    """What contextual vectors need from an embedder (`graphseek.knowledge.embedder.Embedder`)."""

    dim: int

    def encode_spans(
        self, texts: Sequence[str], spans: Sequence[np.ndarray], batch_size: int = 64
    ) -> tuple[np.ndarray, list[np.ndarray]]: ...


AHEAD_MIN = 256
"""A build runs the pass's first batches ahead (`begin_passages`) from this many passages on
(the offline extractor forks its workers from there; below, the pass is short anyway)."""


class AheadPass(Protocol):
    """A pass begun before its spans are known (`graphseek.knowledge.embedder.SpanPass`)."""

    def run_ahead(self, stop: threading.Event) -> int: ...

    def finish(self, spans: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]: ...


def mention_spans(passage: Passage, mentions: Sequence[Mention]) -> np.ndarray:
    """[start, end) character spans of `mentions` in `passage.content`, (n, 2): the extractor's
    span when it has a valid one, else the first case-insensitive occurrence of the name, else
    (-1, -1) (no vector)."""
    content = passage.content
    lowered: str | None = None
    out = np.full((len(mentions), 2), -1, dtype=np.int64)
    for k, m in enumerate(mentions):
        if 0 <= m.start < m.end <= len(content):
            out[k] = (m.start, m.end)
            continue
        name = m.name.strip()
        if not name:
            continue
        if lowered is None:
            lowered = content.lower()
        at = lowered.find(name.lower())
        if at >= 0:
            out[k] = (at, at + len(name))
    return out


BLOCK_BATCHES = 4
"""The passage pass works through blocks of `batch_size` x this many passages (longest first):
a block's extractions, spans and pooled mention vectors are held until the block is done, so
larger blocks raise the passage pass's peak without making it faster
(`benchmarks/passage_pass.py` measures both)."""


def _blocks(passages: Sequence[Passage], batch_size: int) -> list[list[int]]:
    """The pass's blocks of passage positions: longest first, `batch_size` x `BLOCK_BATCHES`
    at a time."""
    lengths = [len(p.content) for p in passages]  # one pass (a spooled corpus: in blocks)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    block = max(batch_size * BLOCK_BATCHES, 1)
    return [order[start : start + block] for start in range(0, len(order), block)]


def begin_passages(
    encoder: SpanEncoder, passages: Sequence[Passage], *, batch_size: int = 64
) -> AheadPass | None:
    """The first block of `encode_passages`'s pass as a `SpanPass` (whose `run_ahead` runs
    batches before the mention spans exist), or None when `encoder` has no `span_pass`. Hand it
    to `encode_passages(..., ahead=...)` with the same passages and batch size."""
    make = getattr(encoder, "span_pass", None)
    if make is None or not passages:
        return None
    first = _blocks(passages, batch_size)[0]
    return make([passages[i].content for i in first], batch_size=batch_size)


def encode_passages(
    encoder: SpanEncoder,
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    *,
    batch_size: int = 64,
    show_progress: bool = False,
    ahead: AheadPass | None = None,
    sentences: SentenceSpans | None = None,
) -> tuple[SpilledArray, MentionVectors]:
    """Passage vectors (rows in the order of `passages`, as `encode_texts` gives) and the
    contextual vector of every mention that has one, by mention id (`MENTION_DTYPE`). Both are
    in temporary files (`SpilledArray`, `MentionVectors`): the passage vectors are written a
    block at a time, so no array of them is held during the pass, a build's peak.

    Blocks of passages, longest first, under one ``embedding passages`` bar: memory beyond the
    outputs is the token ids, states and pooled vectors of the blocks under way. An encoder
    whose `encode_spans` may be called from several threads at once (``concurrent_spans``:
    `Embedder` on ONNX Runtime with two threads or more) has `IN_FLIGHT` blocks under way, so
    its worker threads go from one block's batches to the next's without waiting for a
    block's last batch; the results are taken in block order all the same. `ahead`: the first
    block begun by `begin_passages` (the same vectors, with its batches run ahead not run
    again). `sentences`: the spans of each passage's sentences are pooled in the same pass and
    handed to `sentences.put` (`graphseek.knowledge.graph.store.sentences.PooledSentences`)."""
    n = len(passages)
    vectors = SpilledArray.zeros(n, encoder.dim)
    mentions = MentionVectors(encoder.dim)

    def run(k: int, idx: list[int]) -> tuple[dict[int, list[Mention]], np.ndarray, list]:
        found_in = {i: extractions[i].mentions for i in idx}  # one read each from a spool
        chosen = [passages[i] for i in idx]  # one read each from a spooled corpus
        spans = [mention_spans(p, found_in[i]) for p, i in zip(chosen, idx, strict=True)]
        extra = [sentences.spans(p) for p in chosen] if sentences is not None else []
        if extra:  # the sentences' spans after the mentions', split off below
            spans = [np.concatenate([m, s]) for m, s in zip(spans, extra, strict=True)]
        if k == 0 and ahead is not None:
            rows, pooled = ahead.finish(spans)
        else:
            rows, pooled = encoder.encode_spans(
                [p.content for p in chosen], spans, batch_size=batch_size
            )
        if sentences is not None:
            for r, (p, own) in enumerate(zip(chosen, extra, strict=True)):
                cut = len(pooled[r]) - len(own)
                sentences.put(p.id, own, pooled[r][cut:])
                pooled[r] = pooled[r][:cut]
        return found_in, rows, pooled

    def take(idx: list[int], done: tuple[dict[int, list[Mention]], np.ndarray, list]) -> None:
        found_in, rows, pooled = done
        vectors.put(idx, rows)
        for i, span_vectors in zip(idx, pooled, strict=True):
            found = np.flatnonzero(np.abs(span_vectors).sum(1) > 0)
            passage_mentions = found_in[i]
            mentions.append(
                [passage_mentions[at].id for at in found.tolist()],
                span_vectors[found].astype(MENTION_DTYPE),
            )

    blocks = _blocks(passages, batch_size)
    in_flight = IN_FLIGHT if getattr(encoder, "concurrent_spans", False) else 1
    with progress_bar("embedding passages", n, show_progress, unit="passage") as bar:
        if in_flight == 1:
            for k, idx in enumerate(blocks):
                take(idx, run(k, idx))
                bar.update(len(idx))
            return vectors, mentions
        # the blocks' pooling limits BLAS to one thread (`SpanPass.finish`); with blocks on
        # two threads, each limit entered and left inside this one keeps them all at one
        from threadpoolctl import threadpool_limits

        with (
            threadpool_limits(limits=1, user_api="blas"),
            ThreadPoolExecutor(in_flight, thread_name_prefix="pass-block") as runner,
        ):
            pending: deque[tuple[list[int], Future[Any]]] = deque()

            def take_first() -> None:
                idx, done = pending.popleft()
                take(idx, done.result())
                bar.update(len(idx))

            try:
                for k, idx in enumerate(blocks):
                    pending.append((idx, runner.submit(run, k, idx)))
                    if len(pending) >= in_flight:
                        take_first()
                while pending:
                    take_first()
            except BaseException:
                # Ctrl-C or a failed block: the blocks not begun are dropped, those under way
                # end (each its batches already queued)
                runner.shutdown(wait=False, cancel_futures=True)
                raise
    return vectors, mentions


IN_FLIGHT = 2
"""Blocks of the passage pass under way at once (`encode_passages`, with an encoder whose
`encode_spans` allows it): with one block at a time a worker thread idles at each block's end
while the other runs its last batch (`benchmarks/indexing.py` times the pass)."""


BASE_ROWS = 65_536
"""`base_vectors` stacks at most about this many mention rows at a time (whole groups): a
float32 copy of every mention vector at once would be the alignment stage's peak, growing with
the corpus."""


def base_vectors(
    members: Sequence[Sequence[str]], mention_vectors: Mapping[str, np.ndarray], dim: int
) -> tuple[np.ndarray, list[int]]:
    """The vector of each group of mention ids (a base entity): the normalised sum of its
    members' vectors. Returns the (n, dim) rows and the positions of groups with no member
    vector (their rows are zero; the caller may fill them). As blocks of rows, none of them
    held together: `base_vector_blocks`."""
    out = np.empty((len(members), dim), dtype=np.float32)
    missing: list[int] = []
    done = 0
    for block in base_vector_blocks(members, mention_vectors, dim, missing):
        out[done : done + len(block)] = block
        done += len(block)
    return out, missing


def base_vector_blocks(
    members: Sequence[Sequence[str]],
    mention_vectors: Mapping[str, np.ndarray],
    dim: int,
    missing: list[int],
) -> Iterator[np.ndarray]:
    """`base_vectors`' rows in order, a block at a time (float32, `dim` wide), each group's
    position without a member vector appended to `missing` (its row is zero). Groups are
    summed a block of about `BASE_ROWS` member rows at a time; a group is never split, so each
    sum is the one a single stack of every row would give."""
    rows: list[str] = []  # the mention ids of the block
    owner: list[int] = []
    done = 0  # the rows yielded

    def flush(end: int) -> np.ndarray:
        out = np.zeros((end - done, dim), dtype=np.float32)
        if rows:
            stacked = stack_rows(mention_vectors, rows).astype(np.float32)
            owners = np.asarray(owner)
            starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
            sums = np.add.reduceat(stacked, starts, axis=0)
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            out[owners[starts] - done] = sums / np.maximum(norms, 1e-12)
        rows.clear()
        owner.clear()
        return out

    for k, ids in enumerate(members):
        found = [m for m in ids if m in mention_vectors]
        if not found:
            missing.append(k)
            continue
        if rows and len(rows) + len(found) > BASE_ROWS:
            block = flush(k)
            done = k
            yield block
        rows.extend(found)
        owner.extend([k] * len(found))
    if rows or done < len(members):
        yield flush(len(members))
