"""The short version of the soak and fault benchmark (`benchmarks/soak.py`, issue 56): each
section with small counts over the demo corpus, asserting its invariants (never a wall time),
and the defects it found, each pinned by a direct test.

- load: 7 runs (every topology) at once through `ask` over the index in the embedded
  PostgreSQL, each checkpointing there; through `langgraph dev` in the `studio_server` step;
- crash and resume: one SIGKILL of a process running 7 checkpointed threads;
- crash during writes: one SIGKILL of each of `graphseek add` and `remove` (an index without a
  graph, for speed; the benchmark kills `index` too, graph indexes and PostgreSQL writes);
- concurrent writers and readers: one round each; damaged files: four files; bad input: all.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from graphseek.errors import IndexChangedError
from graphseek.knowledge.atomic import SCRATCH_LOCK, remove_orphans
from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Passage

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("soak", ROOT / "benchmarks" / "soak.py")
assert _spec is not None and _spec.loader is not None
soak = importlib.util.module_from_spec(_spec)
sys.modules["soak"] = soak
_spec.loader.exec_module(soak)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The soak's workspace: the demo index (with its graph) and one without a graph for the
    write sections; PostgreSQL is the session's (`pg_server`), given where a test needs it."""
    workspace = soak.Workspace(tmp_path_factory.mktemp("soak"), graph_writes=False, own_pg=False)
    yield workspace
    workspace.close()


@pytest.fixture
def pg_ws(ws: Any, pg_server: Any) -> Any:
    ws._pg = pg_server
    return ws


def passed(report: Any) -> None:
    assert report.failed() == [], report.table() + "\n" + "\n".join(report.notes)


# -- the sections, short ------------------------------------------------------------------------


def test_load_through_python_with_postgres_checkpoints(pg_ws: Any) -> None:
    report = soak.Report()
    soak.load_python(pg_ws, report, runs=7, threads=7, questions=soak.demo_questions()[:1])
    passed(report)
    assert [f.value for f in report.figures[:1]] == ["7/7"]


def test_crash_and_resume(pg_ws: Any) -> None:
    report = soak.Report()
    soak.crash_resume(pg_ws, report, kills=1, questions=soak.demo_questions(), threads=7)
    passed(report)
    assert report.figures[0].value.startswith("1 / ")


def test_crash_during_writes(ws: Any) -> None:
    report = soak.Report()
    # `index` killed mid-build: test_faults.py; every command, and PostgreSQL: the benchmark
    soak.crash_writes(ws, report, kills=1, backend="directory", commands=("add", "remove"))
    passed(report)
    assert report.figures[0].value == "2"


def test_concurrent_writers_and_readers(ws: Any) -> None:
    report = soak.Report()
    soak.two_writers(ws, report, rounds=1)
    soak.readers_during_add(ws, report, rounds=1)
    passed(report)


def test_damaged_files(ws: Any) -> None:
    report = soak.Report()
    soak.damaged_files(ws, report, limit=4)
    passed(report)


def test_bad_input_at_every_entry(ws: Any) -> None:
    report = soak.Report()
    soak.bad_input(ws, report, server=False)
    passed(report)
    total = report.figures[-1].value.split("/")[1]
    assert int(total) >= 50


@pytest.mark.studio_server
@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_load_and_bad_requests_through_the_server(ws: Any) -> None:
    report = soak.Report()
    soak.load_server(ws, report, runs=14, questions=soak.demo_questions()[:1])
    soak.bad_input(ws, report, server=True)
    passed(report)


# -- the defects found, each pinned -------------------------------------------------------------

NEW = Passage(id="quill", title="Xavier Quill", text="Xavier Quill was born in Lisbon.", source="t")


def test_a_reader_opened_before_an_add_never_reads_the_new_files(
    tiny_index: Index, tmp_path: Path
) -> None:
    """Found by `readers_during_add`: an index opened before another writer's add read the new
    BM25 files with its old passages ('BM25 index ... has 9 documents for 8 passages; rebuild
    it'). Now the lazy read refuses to mix, and `ask` answers over the new version."""
    from graphseek.api import ask

    path = tmp_path / "idx"
    shutil.copytree(tiny_index.path, path)
    reader = Index.open(path)
    Index.open(path).add_documents([NEW])
    with pytest.raises(IndexChangedError, match="open it again"):
        reader.search("Lisbon", k=3, method="bm25")
    result = ask(reader, "Where was Xavier Quill born?", topology="naive", llm="offline")
    assert "quill" in result.retrieved_ids
    writer = Index.open(path)
    writer.delete_documents(["quill"])  # the writer's own object goes on reading its version
    assert "quill" not in {h.passage.id for h in writer.search("Lisbon", k=3, method="bm25")}


def test_graph_store_arrays_read_after_a_swap_are_refused(ws: Any, tmp_path: Path) -> None:
    """The graph store's files read on first use (vectors, matrices, node ids, sentence layer)
    are checked against the version the store opened, as the index's own files are: a store
    swapped in since gives `IndexChangedError`, never the new version's arrays against the old
    one's tables. A reader opened afterwards reads the new version."""
    from graphseek.knowledge.atomic import swap_into_place

    path = tmp_path / "idx"
    shutil.copytree(ws.golden, path)
    index = Index.open(path)
    store = index.open_graph_store()  # graph.sqlite opened, no array read yet
    fresh = tmp_path / "fresh"
    shutil.copytree(ws.golden, fresh)
    swap_into_place(fresh, path)  # what a writer's add does, with the same content
    reads = [store.entity_embeddings, store.relation_embeddings, store.hyperedge_embeddings,
             store.adjacency, store.entity_passage_matrix, store.sentence_layer]  # fmt: skip
    for read in reads:
        with pytest.raises(IndexChangedError, match="open the index again"):
            read()
    store.close()
    with pytest.raises(IndexChangedError):
        index.open_graph_store()
    with pytest.raises(IndexChangedError):
        index.graph_neighbourhood()
    with Index.open(path).open_graph_store() as reopened:
        assert [len(read()) for read in (reopened.entity_embeddings, reopened.adjacency)]


def test_a_graph_tool_does_not_turn_a_changed_index_into_a_tool_error() -> None:
    from graphseek.graphs.tool_loop import tool_error_result

    assert tool_error_result(ValueError("bad")).startswith("Error: ValueError('bad')")
    with pytest.raises(IndexChangedError):
        tool_error_result(IndexChangedError("changed"))


def test_orphaned_scratch_directories_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    """Found by `crash_writes` on PostgreSQL: a write killed with SIGKILL left its temporary
    folder (graphseek-pg-*) in $TMPDIR. The next scratch folder of its kind removes it."""
    orphan, live, foreign = (
        tmp_path / "graphseek-pg-a",
        tmp_path / "graphseek-pg-b",
        tmp_path / "graphseek-pg-c",
    )
    for folder in (orphan, live, foreign):
        folder.mkdir()
    (orphan / SCRATCH_LOCK).touch()
    (live / SCRATCH_LOCK).touch()
    with FileLock(live / SCRATCH_LOCK):
        assert remove_orphans(tmp_path, "graphseek-pg-") == [orphan]
    assert not orphan.exists() and live.exists() and foreign.exists()


SPACY_THREADS = textwrap.dedent(
    """
    import threading
    from graphseek.knowledge.nlp import get_nlp
    errors = []
    def parse():
        try:
            get_nlp()("Where was Ada Lovelace born?")
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=parse) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(errors)
    """
)


def test_the_first_runs_of_a_fresh_process_load_spacy_once() -> None:
    """Found by `crash_resume` (four threads in a fresh process): spaCy imported by two threads
    at once failed ('partially initialized module spacy.util')."""
    done = subprocess.run(
        [sys.executable, "-c", SPACY_THREADS], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_eval_errors_are_one_line_on_stderr(tmp_path: Path) -> None:
    """Found by `bad_input`: `graphseek eval`'s errors went to stdout."""
    code, out, err = soak.run_cli(["eval", "--dataset", str(tmp_path / "nope.json")])
    assert soak.one_line_error(code, out, err) == ""
    assert err.startswith("graphseek eval: Unknown dataset")


def test_percentile() -> None:
    assert soak.percentile([], 0.5) == 0.0
    assert soak.percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert soak.percentile([1.0, 2.0], 0.95) == pytest.approx(1.95)


def test_a_reader_between_the_two_renames_of_a_swap_waits_for_the_new_directory(
    tmp_path: Path,
) -> None:
    """A reader that opens an index while its writer has renamed the old directory aside and
    not yet renamed the new one in sees the new one, not "no index at …"."""
    import threading
    import time

    from graphseek.knowledge.atomic import hold, recover

    target = tmp_path / "idx"
    with hold(target):  # the writer, mid-swap: the old directory renamed aside, the new not in
        (tmp_path / ".idx.old-0123456789ab").mkdir()
        threading.Timer(0.2, target.mkdir).start()
        started = time.monotonic()
        recover(target)
        assert target.is_dir() and time.monotonic() - started < 2
