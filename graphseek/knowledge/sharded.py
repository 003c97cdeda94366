"""The sharded build: an index's map stages run as Dask tasks, its reduce stages here.

A build's per-passage work (extraction, the passage pass of contextual alignment, the dense
passage embeddings) is the bulk of its time, and each passage's result depends on that passage
alone. `map_corpus` cuts the corpus into contiguous shards in corpus order, runs
`graphseek.knowledge.graph.build.map_passages` and the passage embedding of each shard as one
Dask task, and joins the results back in corpus order. The reduce stages (alignment, linking,
hyperedges and topics, BM25, the store write) then run in the calling process, on the code paths
of a single-process build (`build_graph(..., mapped=...)`, `passage_vectors`), into a directory
or one PostgreSQL store.

With no scheduler, a `distributed.LocalCluster` of `workers` processes (one thread each) is
started on this machine for the build and closed after it; with ``scheduler="tcp://host:8786"``
the tasks go to that cluster's workers (started with ``dask scheduler`` / ``dask worker``; each
needs graphseek installed, and makes the embedder from its spec). Dask is an optional extra:
``pip install "graphseek[distributed]"``.

A failed task (an exception, or a worker that died more often than Dask retries) ends the build
with one line naming the shard (`ShardError`); the map stages run before anything is written,
and both backends write atomically, so nothing is left at the target.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphseek.errors import GraphseekError, InvalidRequestError
from graphseek.knowledge.dense import Rows
from graphseek.knowledge.passages import Passage

logger = logging.getLogger(__name__)

INSTALL_HINT = 'pip install "graphseek[distributed]"'
SHARD_PASSAGES = 256
"""Passages per task at most; a corpus gets at least 4 shards per worker when it has enough
passages (a slow shard then holds up less of the build), and none under `MIN_SHARD`."""
MIN_SHARD = 32
SHARDS_PER_WORKER = 4
IN_FLIGHT_PER_WORKER = 2
"""Shards a worker has submitted ahead (or finished, waiting for an earlier one to be joined):
one running and one queued keeps it busy; the driver holds these shards' passages and results,
not the whole corpus's."""
CONNECT_TIMEOUT = 30.0
"""Seconds to reach a Dask scheduler, and for its workers to be there."""


class ShardError(GraphseekError):
    """A task of a sharded build failed on a worker (or the cluster could not be used)."""


@dataclass(frozen=True)
class Sharding:
    """Where a build's map stages run: a `LocalCluster` of `workers` processes, or the cluster
    of the Dask `scheduler` (``tcp://host:8786``); `shard_size` passages per task at most."""

    workers: int | None = None
    scheduler: str | None = None
    shard_size: int = SHARD_PASSAGES


@dataclass
class MappedCorpus:
    """The map stages' results, rows in corpus order: the graph's (`MappedPassages`, None for a
    build without a graph) and the index's dense passage vectors."""

    graph: Any
    vectors: Rows
    """In a temporary file (`SpilledArray`), joined a shard at a time."""
    seconds: float
    shards: int


def sharding_for(workers: int | None, scheduler: str | None) -> Sharding | None:
    """The sharding an `Index.build(..., workers=, scheduler=)` asks for (None: in this process),
    checked: Dask installed, `workers` a positive number, the scheduler a ``tcp://`` (or
    ``tls://``, ``inproc://``) address."""
    if workers is None and not scheduler:
        return None
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)):
        raise InvalidRequestError(f"workers must be a whole number, got {workers!r}")
    if workers is not None and workers < 1:
        raise InvalidRequestError(f"workers must be 1 or more, got {workers}")
    if scheduler and "://" not in scheduler:
        raise InvalidRequestError(
            f"the Dask scheduler address {scheduler!r} has no protocol; write tcp://HOST:8786"
        )
    require_dask()
    return Sharding(workers=workers, scheduler=scheduler or None)


def require_dask() -> None:
    """One line naming the extra to install when Dask's `distributed` is missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise InvalidRequestError(
            f"a sharded build (--workers, --scheduler) needs Dask, which is not installed "
            f"({exc.name}): {INSTALL_HINT}"
        ) from None


def shard_bounds(n: int, workers: int, shard_size: int = SHARD_PASSAGES) -> list[tuple[int, int]]:
    """[start, end) of each contiguous shard of `n` passages: at most `shard_size` each, at
    least `SHARDS_PER_WORKER` per worker where shards of `MIN_SHARD` allow, sizes within one."""
    wanted = max(-(-n // shard_size), min(workers * SHARDS_PER_WORKER, n // MIN_SHARD), 1)
    count = min(wanted, max(n, 1))
    base, extra = divmod(n, count)
    bounds, start = [], 0
    for k in range(count):
        end = start + base + (1 if k < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def checked_graph_options(graph_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The graph options as `map_passages` takes them (`graph_arguments`), checked before any
    task runs."""
    from graphseek.knowledge.graph.settings import graph_arguments

    return graph_arguments(graph_options, False)


def map_shard(
    passages: list[Passage],
    embedder: str,
    dim: int,
    graph_options: Mapping[str, Any] | None,
    batch_size: int,
) -> tuple[Any, np.ndarray]:
    """One task, on a worker: the graph's map stages of `passages` (None without a graph) and
    their dense vectors, as a single-process build computes them (the graph's passage pass when
    the embedder is the packaged MiniLM, else encoded with the embedder of spec `embedder`)."""
    from graphseek.knowledge import embedders
    from graphseek.knowledge.embedders import graph_pass_vectors, passage_vectors

    mapped = None
    if graph_options is not None:
        from graphseek.knowledge.graph.build import map_passages

        mapped = map_passages(passages, in_process=True, **graph_options)
    encoder = embedders.embedder_for(embedder, dim=dim)
    computed = graph_pass_vectors(encoder, mapped.passage_vectors if mapped else None)
    vectors = passage_vectors(encoder, passages, computed, batch_size, False)
    return mapped, np.asarray(vectors, dtype=np.float32)


def map_corpus(
    sharding: Sharding,
    items: Sequence[Passage],
    encoder: Any,
    graph_options: Mapping[str, Any] | None,
    *,
    graph: bool,
    batch_size: int = 64,
    show_progress: bool = False,
) -> MappedCorpus:
    """Run the map stages of `items` as Dask tasks (`map_shard`, one per shard) and join their
    results in corpus order as they come (`MappedJoin`: the extractions, passage vectors and
    mention vectors to temporary files; the index's passage vectors to one more). At most
    `IN_FLIGHT_PER_WORKER` shards a worker are submitted or finished and not yet joined, so
    the driver holds those shards' passages and results, not the corpus's (a spooled corpus is
    read a shard at a time). A failed task raises `ShardError` (one line) once the others are
    cancelled."""
    from graphseek.knowledge import embedders
    from graphseek.knowledge.graph.build import MappedJoin
    from graphseek.knowledge.graph.memory.spool import SpilledArray
    from graphseek.knowledge.progress import bar as progress_bar

    started = time.perf_counter()
    spec, dim = embedders.embedder_spec(encoder), int(encoder.dim)
    options = checked_graph_options(graph_options) if graph else None
    joined = MappedJoin() if graph else None
    vectors = SpilledArray.zeros(0, dim)  # the index's, on disk until it reads them

    def take(result: tuple[Any, np.ndarray]) -> None:
        mapped, rows = result
        vectors.append(np.ascontiguousarray(rows, dtype=np.float32))
        if joined is not None:
            joined.add(mapped)

    with dask_client(sharding) as client:
        workers = max(len(client.nthreads()), 1)
        bounds = shard_bounds(len(items), workers, sharding.shard_size)

        def submit(k: int) -> Any:
            a, b = bounds[k]
            return client.submit(
                map_shard,
                list(items[a:b]),
                spec,
                dim,
                options,
                batch_size,
                key=f"graphseek-shard-{k}-{os.getpid()}-{time.monotonic_ns()}",
                pure=False,
            )

        with progress_bar("mapping shards", len(items), show_progress, unit="passage") as bar:
            _run_shards(client, submit, take, bounds, workers * IN_FLIGHT_PER_WORKER, bar.update)
    result = joined.result() if joined is not None else None
    seconds = time.perf_counter() - started
    if result is not None:
        result.timings["map"] = {
            "seconds": round(seconds, 3),
            "shards": len(bounds),
            "workers": workers,
            "passages_per_s": round(len(items) / seconds, 1) if seconds > 0 else None,
        }
    logger.info("Mapped %d passages in %d shards on %d workers", len(items), len(bounds), workers)
    return MappedCorpus(result, vectors, seconds, len(bounds))


def _run_shards(
    client: Any,
    submit: Callable[[int], Any],
    take: Callable[[Any], None],
    bounds: list[tuple[int, int]],
    window: int,
    progress: Callable[[int], Any],
) -> None:
    """Run shard k's task (`submit(k)`, a future) for every shard, and `take` their results in
    shard order, each as soon as those before it are taken. At most `window` shards are
    submitted or finished and not yet taken at any time. The first failure cancels the others
    and raises `ShardError`."""
    from distributed import as_completed

    running = as_completed()
    pending: dict[str, tuple[int, Any]] = {}  # by key: the shard and future of each task out
    done: dict[int, Any] = {}
    submitted = taken = 0

    def fill() -> None:
        nonlocal submitted
        while submitted < len(bounds) and submitted < taken + max(window, 1):
            future = submit(submitted)
            pending[future.key] = (submitted, future)
            running.add(future)
            submitted += 1

    fill()
    for future in running:
        k = pending[future.key][0]
        if future.status != "finished":
            error = future.exception()
            client.cancel([f for _, f in pending.values()])
            a, b = bounds[k]
            raise ShardError(
                f"the sharded build failed: shard {k + 1} of {len(bounds)} "
                f"(passages {a + 1}-{b}) raised {_one_line(error)} on a Dask worker; "
                "nothing was written"
            )
        done[k] = future.result()
        del pending[future.key]  # its result is released on the worker once taken here
        progress(bounds[k][1] - bounds[k][0])
        while taken in done:
            take(done.pop(taken))
            taken += 1
        fill()


@contextmanager
def dask_client(sharding: Sharding) -> Iterator[Any]:
    """A Dask client: on the cluster of `sharding.scheduler`, else on a `LocalCluster` of
    `sharding.workers` processes (one thread each) started here and closed on the way out; the
    one way graphseek starts a cluster (the build, its benchmark and its tests)."""
    require_dask()
    from distributed import Client, LocalCluster

    if sharding.scheduler:
        try:
            client = Client(sharding.scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise ShardError(
                f"cannot reach the Dask scheduler at {sharding.scheduler}: {_one_line(exc)}"
            ) from None
        with client:
            try:
                client.wait_for_workers(sharding.workers or 1, timeout=CONNECT_TIMEOUT)
            except TimeoutError:
                raise ShardError(
                    f"the Dask scheduler at {sharding.scheduler} has fewer than "
                    f"{sharding.workers or 1} workers after {CONNECT_TIMEOUT:.0f} s; start them with "
                    f"`dask worker {sharding.scheduler}`"
                ) from None
            yield client
        return
    workers = sharding.workers or 1
    threads = max(1, (os.cpu_count() or 1) // workers)
    env = {"GRAPHSEEK_EMBED_WORKERS": os.environ.get("GRAPHSEEK_EMBED_WORKERS", str(threads))}
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # its HTTP server: this host, any free port
            silence_logs=logging.CRITICAL,  # a task's failure is reported here, in one line
            env=env,
        ) as cluster,
        Client(cluster) as client,
    ):
        logger.info("Dask local cluster of %d workers: %s", workers, client.dashboard_link)
        yield client


def _one_line(exc: BaseException | None) -> str:
    if exc is None:
        return "an unknown error"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
