"""The sharded build (issue 27, item 2): the map stages (extraction, the passage pass, the
passage embeddings) as Dask tasks over contiguous shards, the reduce stages in the calling
process. A sharded build with 2 workers writes what the single-process build writes: the same
passages, embeddings (to 1e-5), BM25 files (byte for byte), graph store (file for file in a
directory, table for table in PostgreSQL: every id, name and row exactly, the floats that come
from the workers' passage pass within `floats.assert_close`) and the same top-k of every
retriever. A failing task ends the build with one line and leaves nothing at the target.

Why the floats get a tolerance: a worker runs the passage pass over its shard alone, so the
batches (which passages, padded to which length) are not the single build's, and the
mention vectors, base vectors, merge similarities and "similar" relation weights made from
them can differ in the last bit between CPUs whose kernels are not batch-invariant. The merge
candidates and decisions are compared exactly: on this corpus the cosine nearest the candidate
threshold (1 - tau) is 1.4e-5 from it, and a last-bit change (one float16 step of a mention
vector's component) moves a cosine by about 1e-6.

One local cluster of 2 worker processes (the build's own, `dask_client`) serves the module (its
workers keep their models loaded between builds) through the scheduler address, the path a real
cluster takes; the CLI test starts and closes its own local cluster (``--workers 2``). The
corpus and the store comparisons are tests/demo_builds.py's, the embedded PostgreSQL
conftest.py's `pg_server`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from demo_builds import assert_same_store, demo_copies, store_files, store_manifest
from floats import assert_close

from graphseek.cli import main
from graphseek.errors import IndexNotFoundError
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.sharded import (
    INSTALL_HINT,
    ShardError,
    Sharding,
    dask_client,
    shard_bounds,
)
from graphseek.tools.retrievers import retrieve, retriever_names

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUERIES = [
    "Where did Ada Lovelace's father die?",
    "Who designed the Analytical Engine?",
    "In which country was the woman who won the Nobel Prize twice born?",
    "Greek War of Independence sieges",
    "programmable computer",
]


def same_retrieval(got: Any, expected: Any) -> None:
    """Every retriever's top 5 for each query: the same passages in the same order, the scores
    within 1e-5. The rankings are compared exactly: the nearest tie they decide (two dense
    scores within the hybrid depth of 20) is 3.3e-6 apart, and a last-bit difference of the
    passage vectors moves a score by about 1e-7."""
    names = retriever_names()
    assert {"bm25", "dense", "hybrid", "higra", "progressive"} <= set(names)
    for name in names:
        if name == "bridge" and not (has_sentences(got) and has_sentences(expected)):
            continue  # a PostgreSQL graph holds no sentence nodes yet (issue 57)
        for query in QUERIES:
            want = retrieve(expected, query, 5, name)
            have = retrieve(got, query, 5, name)
            assert [h.passage.id for h in have] == [h.passage.id for h in want], (name, query)
            assert [h.score for h in have] == pytest.approx([h.score for h in want], abs=1e-5)


def has_sentences(index: Any) -> bool:
    from graphseek.tools.bridge import NoSentenceLayerError, sentence_layer_of

    try:
        sentence_layer_of(index)
    except NoSentenceLayerError:
        return False
    return True


# -- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def passages() -> list[Passage]:
    return demo_copies(7, "sharded")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The build's local Dask cluster (`dask_client`) of 2 worker processes, kept for the
    module; its scheduler's address."""
    with dask_client(Sharding(workers=2)) as client:
        yield client.scheduler.address


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory, passages: list[Passage]) -> Index:
    """The single-process build of the corpus, with its graph."""
    path = tmp_path_factory.mktemp("single") / "index"
    return Index.build(passages, path, show_progress=False, graph=True)


class FailingExtractor:
    """Extracts nothing, and raises on the passage `fail_on` (shipped to the workers by
    value: see `failing`)."""

    def __init__(self, fail_on: str) -> None:
        self.fail_on = fail_on

    def extract(self, passages: Sequence[Passage]) -> list[Extraction]:
        for p in passages:
            if p.id == self.fail_on:
                raise ValueError(f"cannot read passage {p.id}\nsecond line of the message")
        return [Extraction(passage_id=p.id) for p in passages]


@pytest.fixture
def failing(passages: list[Passage]) -> FailingExtractor:
    import cloudpickle

    # the workers cannot import this test module: its classes travel by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return FailingExtractor(passages[150].id)


# -- shards ---------------------------------------------------------------------------------------


def test_shards_are_contiguous_in_corpus_order() -> None:
    for n, workers in [(1, 2), (31, 2), (238, 2), (1000, 2), (1000, 8), (5000, 3)]:
        bounds = shard_bounds(n, workers)
        assert bounds[0][0] == 0 and bounds[-1][1] == n
        assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
        sizes = [b - a for a, b in bounds]
        assert max(sizes) - min(sizes) <= 1 and max(sizes) <= 256
    assert len(shard_bounds(238, 2)) == 7  # no shard under 32 passages
    assert len(shard_bounds(1000, 2)) == 8  # 4 per worker
    assert len(shard_bounds(5000, 3)) == 20  # at most 256 passages each


def test_unknown_graph_options_fail_before_any_task(tmp_path: Path) -> None:
    from graphseek.errors import InvalidRequestError

    few = demo_copies(1, "sharded")[:3]
    with pytest.raises(InvalidRequestError, match="unknown graph option: tua"):
        Index.build(few, tmp_path / "x", graph=True, graph_options={"tua": 0.5}, workers=2)
    assert not (tmp_path / "x").exists()


# -- the same index as the single-process build ---------------------------------------------------


def test_sharded_directory_build_is_the_single_process_build(
    tmp_path: Path, passages: list[Passage], single: Index, scheduler: str
) -> None:
    assert len(passages) == 238
    # a stream: spooled as read (`PassageSpool`), then read back a shard at a time
    sharded = Index.build(
        iter(passages), tmp_path / "index", show_progress=False, graph=True, scheduler=scheduler
    )
    assert sharded.passages == single.passages
    np.testing.assert_allclose(sharded.embeddings, single.embeddings, atol=1e-5)
    reopened = Index.open(tmp_path / "index")
    np.testing.assert_allclose(reopened.embeddings, single.embeddings, atol=1e-5)
    # BM25 (made in this process from the same texts): the same files, byte for byte
    assert store_files(sharded.path / "bm25") == store_files(single.path / "bm25")
    # the graph store: the same files, each with the same rows, ids and names; its floats (from
    # the workers' passage pass: other batches, two float kernels) within a tolerance
    assert "graph.sqlite" in store_files(sharded.path / "graph")
    assert_same_store(sharded.path / "graph", single.path / "graph")
    assert store_manifest(sharded.path / "graph") == store_manifest(single.path / "graph")
    timings = json.loads((sharded.path / "graph" / "manifest.json").read_text())["timings"]
    assert timings["map"]["workers"] == 2 and timings["map"]["shards"] == 7
    same_retrieval(reopened, single)


def _slow_shard(k: int, seconds: float) -> int:
    import time

    time.sleep(seconds)
    return k


def test_shards_are_taken_in_order_with_a_bounded_window(scheduler: str) -> None:
    """`_run_shards` takes each result in shard order however the tasks finish, and never has
    more than its window of shards submitted and not yet taken."""
    from distributed import Client

    from graphseek.knowledge.sharded import _run_shards

    bounds = [(10 * k, 10 * k + 10) for k in range(9)]
    submitted: list[int] = []
    taken: list[int] = []
    most = 0
    with Client(scheduler) as client:

        def submit(k: int) -> Any:
            nonlocal most
            submitted.append(k)
            most = max(most, len(submitted) - len(taken))
            # earlier shards finish last within each window
            return client.submit(_slow_shard, k, 0.05 * (3 - k % 3), pure=False)

        progress: list[int] = []
        _run_shards(client, submit, taken.append, bounds, 3, progress.append)
    assert taken == submitted == list(range(9))
    assert most == 3 and sum(progress) == 90


def test_sharded_build_into_postgres_is_the_single_process_build(
    pg_server: Any, passages: list[Passage], single: Index, scheduler: str
) -> None:
    uri = f"{pg_server.get_uri()}&schema=sharded"
    Index.build(passages, uri, show_progress=False, graph=True, scheduler=scheduler)
    index = Index.open(uri)  # fresh: everything read from the tables
    assert type(index).__name__ == "PostgresIndex"
    assert index.passages == single.passages
    np.testing.assert_allclose(index.embeddings, single.embeddings, atol=1e-5)
    pg, ref = index.graph, single.graph
    assert pg.passage_ids() == ref.passage_ids()
    assert pg.entities() == ref.entities()
    # "similar" relations weigh their merge similarity, from the workers' passage pass (other
    # batches): within a tolerance, as the adjacency they sum into; ids and ends exactly
    assert_close(pg.relations(), ref.relations())
    assert pg.hyperedges() == ref.hyperedges() and pg.topics() == ref.topics()
    for a, b in zip(pg.adjacency(True), ref.adjacency(True), strict=True):
        if hasattr(a, "toarray"):
            assert_close(a.toarray(), b.toarray())
        else:
            assert a == b
    for get in ("entity_embeddings", "relation_embeddings", "hyperedge_embeddings"):
        (got, got_ids), (want, want_ids) = getattr(pg, get)(), getattr(ref, get)()
        assert got_ids == want_ids
        np.testing.assert_allclose(got, want, atol=1e-6)
    same_retrieval(index, single)


# -- a failing task -------------------------------------------------------------------------------


def test_a_failing_task_is_one_line_and_leaves_nothing(
    tmp_path: Path,
    passages: list[Passage],
    single: Index,
    scheduler: str,
    failing: FailingExtractor,
    pg_server: Any,
) -> None:
    target = tmp_path / "index"
    options = {"extractor": failing}
    with pytest.raises(ShardError) as caught:
        Index.build(
            passages, target, show_progress=False, graph=True, graph_options=options,
            scheduler=scheduler,
        )  # fmt: skip
    message = str(caught.value)
    assert "\n" not in message
    assert "ValueError: cannot read passage" in message and "passages 137-170" in message
    assert not target.exists() and list(tmp_path.iterdir()) == []
    # a previous index at the target stays as it was
    previous = Index.build(passages[:40], target, show_progress=False)
    before = store_files(target)
    with pytest.raises(ShardError):
        Index.build(
            passages, target, show_progress=False, graph=True, graph_options=options,
            scheduler=scheduler,
        )  # fmt: skip
    assert store_files(target) == before and len(Index.open(target)) == len(previous) == 40
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    # into PostgreSQL: no index appears in the schema
    uri = f"{pg_server.get_uri()}&schema=failed"
    with pytest.raises(ShardError):
        Index.build(
            passages, uri, show_progress=False, graph=True, graph_options=options,
            scheduler=scheduler,
        )  # fmt: skip
    with pytest.raises(IndexNotFoundError):
        Index.open(uri)


# -- the CLI --------------------------------------------------------------------------------------


def test_cli_workers_start_a_local_cluster(
    tmp_path: Path,
    passages: list[Passage],
    single: Index,
    capsys: pytest.CaptureFixture[str],
) -> None:
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(
        "".join(json.dumps({"id": p.id, "title": p.title, "text": p.text}) + "\n" for p in passages)
    )
    out = tmp_path / "index"
    code = main(["index", str(corpus_file), "--out", str(out), "--no-graph", "--workers", "2"])
    assert code == 0, capsys.readouterr().err
    assert f"Indexed {len(passages)} passages into" in capsys.readouterr().out
    built = Index.open(out)
    assert [p.id for p in built.passages] == [p.id for p in single.passages]
    np.testing.assert_allclose(built.embeddings, single.embeddings, atol=1e-5)
    for query in QUERIES:
        for method in ("bm25", "dense"):
            got = [h.passage.id for h in built.search(query, 5, method=method)]
            assert got == [h.passage.id for h in single.search(query, 5, method=method)]


def test_cli_without_dask_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(json.dumps({"id": "a", "title": "A", "text": "Some text."}) + "\n")
    out = tmp_path / "index"
    code = main(["index", str(corpus_file), "--out", str(out), "--workers", "2", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert INSTALL_HINT in err and not out.exists()


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--workers", "0"], "workers must be 1 or more"),
        (["--scheduler", "somehost:8786"], "has no protocol"),
    ],
)
def test_cli_refuses_bad_sharding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text(json.dumps({"id": "a", "title": "A", "text": "Some text."}) + "\n")
    code = main(["index", str(corpus_file), "--out", str(tmp_path / "index"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and problem in err and err.count("\n") == 1, err
