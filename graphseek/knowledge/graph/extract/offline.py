"""`OfflineExtractor`: entities, aliases, relations and n-ary facts from spaCy, with no LLM.

It parses passages in one `nlp.pipe` pass, batched; a corpus of at least `PARALLEL_MIN` passages
is split into chunks extracted by worker processes, one per core up to `MAX_PROCESSES` (see
`OfflineExtractor.extract`). What it reads in each parsed passage (entities, aliases, pronouns,
relations, facts): `graphseek.knowledge.graph.extract.doc_analysis`.

Speed: the ``attribute_ruler`` and ``lemmatizer`` pipes are disabled (`SpacyTables` stands in
for them): part-of-speech tags are mapped from the tagger's fine tags with the ruler's own tag
table, and lemmas are computed only for relation verbs with the rule lemmatizer, cached. The
rest (tok2vec, tagger, parser, ner) is the cost floor of the small English model;
``benchmarks/graph_build.py`` and ``benchmarks/indexing.py`` measure it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from graphseek.knowledge.graph.extract.base import ExtractionSink
from graphseek.knowledge.graph.extract.doc_analysis import DocAnalysis
from graphseek.knowledge.graph.extract.spacy_tables import SpacyTables
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.passages import Passage

#: NER labels kept as entity types (CARDINAL, ORDINAL, PERCENT, QUANTITY are dropped: noise).
DEFAULT_NER_LABELS: frozenset[str] = frozenset(
    {
        "PERSON",
        "NORP",
        "FAC",
        "ORG",
        "GPE",
        "LOC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "LANGUAGE",
        "DATE",
        "TIME",
        "MONEY",
    }
)

#: pipes the extractor does not run (see the module docstring)
DISABLED_PIPES: tuple[str, ...] = ("attribute_ruler", "lemmatizer")

PARALLEL_MIN = 256
"""`extract` runs worker processes only for at least this many passages (starting them and
shipping results back costs about a second)."""
MAX_PROCESSES = 4
CHUNK = 32
"""Passages per task sent to a worker process (small enough for a smooth progress bar)."""
INTERRUPT_POLL = 0.1
"""Seconds the parent waits for a chunk of extractions before it checks for Ctrl-C again."""


class OfflineExtractor:
    """spaCy-based extraction (see the module docstring). Not thread-safe; one per thread."""

    def __init__(
        self,
        *,
        batch_size: int = 64,
        n_process: int | None = None,
        ner_labels: Iterable[str] = DEFAULT_NER_LABELS,
        noun_chunks: bool = True,
        resolve_pronouns: bool = True,
        include_title: bool = True,
        min_fact_entities: int = 2,
        show_progress: bool = False,
    ) -> None:
        if batch_size < 1 or (n_process is not None and n_process < 1):
            raise ValueError("batch_size and n_process must be >= 1")
        self.batch_size = batch_size
        self.n_process = n_process if n_process is not None else default_processes()
        self.ner_labels = frozenset(ner_labels)
        self.noun_chunks = noun_chunks
        self.resolve_pronouns = resolve_pronouns
        self.include_title = include_title
        self.min_fact_entities = min_fact_entities
        self.show_progress = show_progress
        self._nlp: Any = None
        self._tables: SpacyTables | None = None

    @property
    def nlp(self) -> Any:
        """The spaCy pipeline (loaded on first use, without `DISABLED_PIPES`)."""
        if self._nlp is None:
            from graphseek.knowledge.nlp import get_nlp

            self._nlp = get_nlp(disable=DISABLED_PIPES)
        return self._nlp

    @property
    def tables(self) -> SpacyTables:
        if self._tables is None:
            self._tables = SpacyTables(self.nlp)
        return self._tables

    def prepare(self) -> None:
        """Load the pipeline now (importing and loading spaCy: about a second of one core; a
        build runs the passage encoder's first batches meanwhile)."""
        _ = self.tables

    def parse(self, passages: Sequence[Passage]) -> Iterator[Any]:
        """spaCy docs of the passages' texts, in order (in this process)."""
        docs: Iterable[Any] = self.nlp.pipe((p.text for p in passages), batch_size=self.batch_size)
        from graphseek.knowledge.progress import bar as progress_bar

        with progress_bar("extracting", len(passages), self.show_progress) as bar:
            for doc in docs:
                yield doc
                bar.update(1)

    def extract(self, passages: Sequence[Passage]) -> list[Extraction]:
        """The extraction of every passage, in order. At least `PARALLEL_MIN` passages with
        `n_process` > 1 run in worker processes forked from this one (they share the loaded
        pipeline), `CHUNK` passages per task: parsing *and* analysis are parallel, and the
        results are the ones a single process gives."""
        out: list[Extraction] = []
        self.extract_to(passages, out)
        return out

    def extract_to(self, passages: Sequence[Passage], sink: ExtractionSink) -> None:
        """`extract`, handing the extractions to `sink.extend` in order as they are made (a
        build spools them to disk instead of holding them all)."""
        processes = self.processes_for(len(passages))
        if processes <= 1:
            self._extract_here(passages, sink)
        else:
            self._extract_forked(passages, processes, sink)

    def processes_for(self, passages: int) -> int:
        """How many worker processes `extract` forks for this many passages (1: none, the
        extraction runs in this process)."""
        processes = min(self.n_process, -(-passages // CHUNK))
        if processes <= 1 or passages < PARALLEL_MIN or not _can_fork():
            return 1
        return processes

    def _extract_here(self, passages: Sequence[Passage], out: ExtractionSink) -> None:
        block: list[Extraction] = []
        for doc, passage in zip(self.parse(passages), passages, strict=True):
            block.append(self.extract_doc(doc, passage))
            if len(block) == CHUNK:
                out.extend(block)
                block = []
        out.extend(block)

    def _extract_forked(
        self, passages: Sequence[Passage], processes: int, out: ExtractionSink
    ) -> None:
        from graphseek.knowledge.progress import bar as progress_bar

        global _FORKED
        _ = self.tables  # loaded before the fork, so the workers inherit the pipeline
        # made as the pool's task thread takes them (a spooled corpus is read a chunk at a time)
        chunks = (passages[i : i + CHUNK] for i in range(0, len(passages), CHUNK))
        n_chunks = -(-len(passages) // CHUNK)
        _FORKED = self
        # Ctrl-C is held back while the workers are forked (they are born with it blocked, and
        # ignore it once started: `_worker_start`); then, in the main thread, it only sets a
        # flag that the loop below checks between waits: raised from inside a fork hook or a
        # condition wait of the pool's, KeyboardInterrupt was lost or left the pool's locks
        # held (a hang). Once the workers are gone, the previous handler raises it here.
        interrupted: list[int] = []
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(1))
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            try:
                with warnings.catch_warnings():
                    # Python 3.12+ warns about fork() in a process with threads (here: idle
                    # embedding workers); the forked workers only run spaCy and this module
                    warnings.filterwarnings("ignore", message=".*fork", category=DeprecationWarning)
                    pool = multiprocessing.get_context("fork").Pool(processes, _worker_start)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            with (
                pool,
                progress_bar("extracting", len(passages), self.show_progress) as bar,
            ):
                results = pool.imap(_extract_chunk, chunks)
                done = 0
                while done < n_chunks and not interrupted:
                    try:
                        part = results.next(timeout=INTERRUPT_POLL)
                    except multiprocessing.TimeoutError:
                        continue
                    out.extend(part)
                    bar.update(len(part))
                    done += 1
                if not interrupted:
                    pool.close()
                    pool.join()  # reaped: their CPU time shows in RUSAGE_CHILDREN
        finally:
            _FORKED = None
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
        if interrupted:  # the pool is terminated: hand the Ctrl-C on
            if callable(previous):
                previous(signal.SIGINT, None)
            raise KeyboardInterrupt

    def extract_doc(self, doc: Any, passage: Passage) -> Extraction:
        """The extraction of one parsed passage (a doc from `parse`)."""
        return DocAnalysis(doc, passage, self).extraction()

    def analyse(self, doc: Any, passage: Passage) -> DocAnalysis:
        """The full analysis of one parsed passage (used by the rule coreferencer)."""
        return DocAnalysis(doc, passage, self)


def default_processes() -> int:
    """One extraction process per core, at most `MAX_PROCESSES`."""
    return max(1, min(os.cpu_count() or 1, MAX_PROCESSES))


def _can_fork() -> bool:
    """Workers are forked on Linux only (macOS system libraries are not fork-safe; spawning
    would load the pipeline again in every worker)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _worker_start() -> None:
    """A worker ignores Ctrl-C: the terminal sends SIGINT to the whole process group, and the
    parent alone handles it (it ends the pool and reports the interruption in one line);
    otherwise each worker would print its own KeyboardInterrupt. (Forked with SIGINT blocked,
    so the parent's handler never runs here, not even in the fork hooks of other libraries.)"""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    gc.enable()  # the parent's build runs without it (`memory.bounded`); spaCy's docs go here


_FORKED: OfflineExtractor | None = None
"""The extractor a forked worker process uses (set in the parent just before the fork)."""


def _extract_chunk(passages: Sequence[Passage]) -> list[Extraction]:
    extractor = _FORKED
    assert extractor is not None, "extraction worker started without an extractor"
    docs = extractor.nlp.pipe((p.text for p in passages), batch_size=extractor.batch_size)
    return [extractor.extract_doc(d, p) for d, p in zip(docs, passages, strict=True)]
