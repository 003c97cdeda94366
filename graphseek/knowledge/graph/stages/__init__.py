"""The stages of a graph build, one module each, in the order `graphseek.knowledge.graph.build`
runs them:

1. `extract`: coreference (optional), then the extractor: one `Extraction` per passage;
2. `passage_pass`: one pass of the passage encoder: passage vectors for the index, contextual
   mention vectors for alignment, pooled sentence vectors;
3. `align`: exact, then semantic merging of the mentions into entities (HiGra Phase 2);
4. `link`: entity-entity relations (Phase 3) and entity-passage links (Phase 4);
5. `topics`: hyperedges from n-ary facts, topics by k-means over their vectors; `embed`: the
   vectors of the graph's entities and relations;
6. `write`: the store, written atomically, then its sentence layer.

`mapped` holds stages 1-2's results when they ran elsewhere (the sharded build's shards).

A delta add (`graphseek.knowledge.graph.delta`) runs stages 1-2 as a build does, then 3-6 onto
the stored graph (`graphseek.knowledge.graph.store.stored.StoredGraph`): each stage module holds
that variant beside the build's (`align.align_new`, `link.link_onto`, `topics.topics_onto`,
`embed.graph_vectors_onto`, `write.copy_store` and `write.write_onto`), sharing the build's
functions where they compute the same thing, and says why the rest is its own.

Each stage is a function with typed inputs and outputs (dataclasses named for what they hold).
What the stages keep out of memory between them goes through `graphseek.knowledge.graph.memory`;
each stage's time goes into the manifest's timings through `timed` (wall and CPU time and the
peak RSS, measured by `clock`).
`Run` is what every stage is handed: how the build runs (its `RunOptions`, with the models and the
timings), not what it builds (that is `GraphSettings`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from graphseek.knowledge.graph.algorithms.vectors import Embed, default_embed
from graphseek.knowledge.graph.settings import RunOptions
from graphseek.knowledge.graph.stages.clock import Clock, rate

__all__ = ["Clock", "Run", "rate", "timed"]


@contextlib.contextmanager
def timed(timings: dict[str, Any], stage: str, n_passages: int) -> Iterator[dict[str, Any]]:
    """Time the block as `stage` of a build of `n_passages` passages, into `timings` (wall and
    CPU seconds, the process's peak RSS at its end: the manifest's timings); what the block
    puts into the dict it is given is recorded beside them. Nothing is recorded when the block
    raises. (`Clock` times a stage that runs in stretches.)"""
    clock = Clock()
    extra: dict[str, Any] = {}
    yield extra
    clock.record(timings, stage, n_passages, **extra)


@dataclass
class Run:
    """How a build runs, the same for every stage: the encoder (`embed`: MiniLM unless a
    caller passed one), the chat model that decides merges and predicts relations (`model`;
    None: offline decisions), how many model calls at once, whether bars are shown, and the
    timings each stage adds to (the manifest records them)."""

    embed: Embed
    model: Any = None
    max_concurrency: int = 8
    show_progress: bool = False
    timings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        options: RunOptions,
        embed: Embed | None = None,
        model: Any = None,
        timings: dict[str, Any] | None = None,
    ) -> Run:
        """The stages' run of a build or an update run as `options` say, with `embed` (None:
        MiniLM) and the aligner `model` (None: offline decisions)."""
        return cls(
            embed or default_embed(options.show_progress),
            model,
            options.max_concurrency,
            options.show_progress,
            {} if timings is None else timings,
        )
