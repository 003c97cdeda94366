"""How a graph build keeps its memory bounded: the one interface its stages use for it.

A build's largest parts grow with the corpus and are needed from the stage that makes them to a
much later one: the extractions, the mention vectors, the graph's vectors. The stages hand them
here instead of holding them, and read them back when they need them:

- **spill a column** (`spill`, `vectors_for_write`): a 2-D array of vectors to an unnamed
  temporary file in ``TMPDIR`` (`spool`), until the store write reads it; the extractions and
  mention vectors are spooled the same way by the stages that make them;
- **read it back** (`read_back`, `keep_rows`, `stack_rows`): the whole array, or the rows a later
  stage asks;
- **hold as columns** (`mention_columns`, `relation_columns`, and the types a stage's results
  hold: `EntityColumns`, `RelationColumns`, `MentionTable`, `PassageLinks`): what alignment and
  linking keep until the write, as codes and each distinct value once instead of an object per
  item; each reads as a sequence or a mapping of what it holds;
- **release** what no later stage reads (`after_alignment`, `after_graph_vectors`,
  `release_encoder`);
- **a budget** (`plan_budget`, `check_peak`): how much of the build runs at once (extraction
  processes, encoder threads, the write's page cache: `budget`), which never changes the store;
- **time-share** (`RunAhead`): the passage pass's first batches run on a thread while the
  extractor loads its model;
- **the process** (`bounded`): Python's automatic garbage collection off and `malloc` kept to one
  heap for the build (`graphseek.knowledge.heap.bound_heap`).

None of it changes what a stage computes: the store is the same byte for byte whatever is
spilled (tested in ``tests/test_bounded_build.py``). docs/scale.md says what grows with the
corpus and how large builds are run.

The mechanisms are this package's modules, which the algorithms below the stages (alignment,
linking, the store) import directly; the pipeline and the stages use this interface only:

- `spool`: temporary files (`TempFile`), the extractions (`ExtractionSpool`), the passages
  (`PassageSpool`), a column of vectors (`SpilledArray`), a stored ``.npy`` read by rows;
- the columns, each read as the list or dict it replaces: `id_columns` (ids as numbers or
  bytes), `mention_columns`, `relation_columns`, `model_columns` (entities, hyperedges),
  `mention_table` (a value per mention id), `merge_pairs` (semantic merging's decisions),
  `passage_links` (entity-passage links), and `read_sequence`, the sequence shape they share;
- `budget`: a build's peak estimated from its size, and the settings that fit a budget;
- `run_ahead`: `RunAhead`.

This package is imported first by `graphseek.knowledge.graph` (its interface imports the
algorithm modules that import its mechanisms; loaded first, those find its submodules).
"""

from __future__ import annotations

import functools
import gc
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from graphseek.knowledge.graph.algorithms.align import cached_encode, spill_per_text
from graphseek.knowledge.graph.algorithms.contextual import MentionVectors
from graphseek.knowledge.graph.memory import spool
from graphseek.knowledge.graph.memory.budget import MemoryPlan, plan_memory
from graphseek.knowledge.graph.memory.mention_columns import MentionColumns
from graphseek.knowledge.graph.memory.mention_table import MentionTable
from graphseek.knowledge.graph.memory.model_columns import EntityColumns
from graphseek.knowledge.graph.memory.passage_links import PassageLinks
from graphseek.knowledge.graph.memory.relation_columns import RelationBuilder, RelationColumns
from graphseek.knowledge.graph.memory.run_ahead import RunAhead
from graphseek.knowledge.graph.memory.spool import (
    ExtractionSpool,
    PassageSpool,
    SpilledArray,
    id_digest,
)
from graphseek.knowledge.heap import bound_heap, peak_rss_mb
from graphseek.knowledge.text import clear_name_caches

if TYPE_CHECKING:
    from graphseek.knowledge.graph.algorithms.vectors import Embed, VectorCache
    from graphseek.knowledge.graph.extract.base import Extractor
    from graphseek.knowledge.graph.models import Extraction
    from graphseek.knowledge.passages import Passage

__all__ = [
    "EntityColumns",
    "ExtractionSpool",
    "MentionColumns",
    "MentionTable",
    "PassageLinks",
    "PassageSpool",
    "RelationBuilder",
    "RelationColumns",
    "Rows",
    "RunAhead",
    "SpilledArray",
    "after_alignment",
    "after_graph_vectors",
    "bound_process_heap",
    "bounded",
    "check_peak",
    "first_misplaced",
    "keep_rows",
    "mention_columns",
    "peak_mb",
    "plan_budget",
    "read_back",
    "relation_columns",
    "release_encoder",
    "spill",
    "stack_rows",
    "vectors_for_write",
]

log = logging.getLogger(__name__)

Rows = np.ndarray | SpilledArray
"""A column of vectors, in memory or spilled to a temporary file (``np.asarray`` reads it)."""

# `SpilledArray`: a column of vectors in a temporary file. `ExtractionSpool`: the extractions,
# one per passage, in a temporary file as they are made (a stage reads them back in order);
# `PassageSpool`: the passages so (a corpus read from a path). What alignment and linking hold
# until the write is kept as columns (codes and each distinct value once, not an object per
# item): `EntityColumns`, `RelationColumns`, `MentionTable` (mention id -> entity or base),
# `MentionColumns`, `PassageLinks` (entity-passage links as two int32 columns); each reads as
# a sequence or a mapping of what it holds.


# -- spill a column, read it back ---------------------------------------------------------------


def spill(rows: Rows) -> SpilledArray:
    """`rows` in a temporary file (as they are when they already are)."""
    # the class itself for the test, the module's name (which a test may wrap) to make one
    return rows if isinstance(rows, spool.SpilledArray) else SpilledArray(rows)


def read_back(rows: Rows) -> np.ndarray:
    """Every row of `rows`, in memory."""
    return np.asarray(rows)


def stack_rows(rows: Mapping[str, np.ndarray], keys: Sequence[str]) -> np.ndarray:
    """The rows of `keys` in one array (a `MentionVectors` reads them from its file in runs)."""
    return spool.stack_rows(rows, keys)


def vectors_for_write(
    texts: list[str], strings: Embed, cache: dict[str, np.ndarray]
) -> np.ndarray | SpilledArray:
    """The vectors of `texts` (the graph's entities or relations), which only the store write
    reads. A per-text encoder's (the static one) go to a file a chunk at a time as they are
    made (`spill_per_text`): `cache` is read but not written (its views would keep the array),
    and a text met again is encoded again, to the same vector. Another encoder's are cached and
    kept (a batch can change a vector's last bits, and a repeated text must keep the first
    one's)."""
    if not getattr(strings, "per_text", False):
        return cached_encode(texts, strings, cache)
    return spill_per_text(texts, strings, cache)


def first_misplaced(passages: Sequence[Passage], extractions: Sequence[Extraction]) -> int | None:
    """The first position whose extraction is not of the passage at that position, or None
    (one extraction per passage is checked before). A spool's are compared by their passage
    ids' digests, without reading the extractions back."""
    if isinstance(extractions, ExtractionSpool):
        digests = extractions.passage_digests
        found = (k for k, p in enumerate(passages) if digests[k] != id_digest(p.id))
    else:
        pairs = zip(passages, extractions, strict=True)
        found = (k for k, (p, x) in enumerate(pairs) if x.passage_id != p.id)
    return next(found, None)


def keep_rows(
    vectors: Mapping[str, np.ndarray], ids: Sequence[str], keyed_by: Sequence[str]
) -> Mapping[str, np.ndarray]:
    """The vectors of the mentions `ids`, kept for the store write: `vectors` itself when it
    holds no others (a build's; a `MentionVectors` stays in its file, looked up through
    `keyed_by`, alignment's sorted mention ids, from now on), else those of `ids` only (an
    update's cache also holds the vectors of removed passages). Mention ids are unique, so
    counting the mentions found is the subset test."""
    if sum(1 for m in ids if m in vectors) == len(vectors):
        kept = vectors
    elif isinstance(vectors, MentionVectors):
        kept = vectors.restrict(ids)
    else:
        kept = {m: vectors[m] for m in ids if m in vectors}
    if isinstance(kept, MentionVectors):
        kept.freeze(keyed_by)
    return kept


# -- hold as columns ----------------------------------------------------------------------------


def mention_columns(extractions: Iterable[Extraction]) -> MentionColumns:
    """Every mention of `extractions`, read in one pass, as columns (`MentionColumns`): read
    from a spool, every mention is a new object with its own strings, and alignment holds every
    mention to its end, so they are coded as they are read."""
    return MentionColumns.of(m for x in extractions for m in x.mentions)


def relation_columns() -> RelationBuilder:
    """Where linking collects the relations, part by part (`add`), as columns: each part's
    objects are freed once added; `finish` gives the `RelationColumns`."""
    return RelationBuilder()


# -- release what no later stage reads ----------------------------------------------------------


def after_alignment(cache: VectorCache) -> None:
    """Alignment is done: only the store write reads the base vectors again (from alignment's
    temporary file), nothing the alignment cache, and names are compared no more (their
    caches are emptied, so linking's objects take that memory)."""
    if cache.alignment.vectors is not cache.vectors:
        cache.alignment.vectors = {}
    cache.alignment.base_vectors = {}  # an update's stored rows
    clear_name_caches()


def after_graph_vectors(cache: VectorCache) -> None:
    """The graph's vectors are made and spilled: the cache held views of them."""
    cache.vectors = {}


def release_encoder(encoder: Any) -> None:
    """The passage pass's batch buffers, which no later stage needs."""
    release = getattr(encoder, "release_memory", None)
    if callable(release):
        release()


# -- a budget -----------------------------------------------------------------------------------


def plan_budget(
    passages: int, extractor: Extractor, budget: int | str | None, *, own: bool, map_stages: bool
) -> MemoryPlan:
    """The settings of a build of `passages` under `budget` (`plan_memory`), applied to the
    offline extractor when the build made it (`own`; a caller's keeps its processes); without
    `map_stages` (the sharded build's driver) only the reduce stages run here. One warning when
    even the least memory is estimated over the budget."""
    from graphseek.knowledge.graph.extract.offline import OfflineExtractor

    offline = extractor if isinstance(extractor, OfflineExtractor) else None
    forked = offline.processes_for(passages) if offline is not None else 1
    plan = plan_memory(
        passages, budget, processes=forked, lower_processes=own, map_stages=map_stages
    )
    if offline is not None and own and plan.processes < forked:
        offline.n_process = plan.processes
    if not plan.fits:
        log.warning(
            "a graph build of %d passages is estimated to need about %d MB, over the memory "
            "budget of %d MB; it runs with the least (%s) and may swap: see docs/scale.md",
            passages,
            plan.estimate_mb,
            plan.budget_mb,
            plan.describe(),
        )
    return plan


def peak_mb() -> float | None:
    """The process's peak RSS so far, in MB (`check_peak` compares a build's with it)."""
    return peak_rss_mb()


def check_peak(plan: MemoryPlan, peak_before: float | None) -> None:
    """Warn when the build raised the process's peak over its budget."""
    peak = peak_rss_mb()
    if peak is not None and peak > plan.budget_mb and peak > (peak_before or 0):
        log.warning(
            "the graph build peaked at %d MB, over its memory budget of %d MB (estimated: %d "
            "MB); docs/scale.md says what grows with the corpus",
            peak,
            plan.budget_mb,
            plan.estimate_mb,
        )


# -- the process --------------------------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])


def bounded(fn: _F) -> _F:
    """Run `fn` with Python's automatic garbage collection off (as it was, after).

    A build makes millions of long-lived objects (extractions, records, models, ids); each full
    collection walks all of them, and one runs every time their number grows by a quarter. They
    hold no reference cycles, so reference counting frees whatever the build drops; cyclic
    garbage, if any, waits for the next collection after it. (Forked extraction workers collect
    as usual: `offline._worker_start`.)"""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return wrapper  # type: ignore[return-value]


def bound_process_heap() -> None:
    """`malloc` kept to one heap, large blocks mapped on their own, for the rest of the process
    (`bound_heap`; before extraction workers fork and encoder threads start: they inherit it)."""
    bound_heap()
