"""Stage 2, the passage pass: one run of the passage encoder over the passages, after
extraction, giving what three later consumers need from the same token states: the passage
vectors (the index's dense rows), the contextual mention vectors (alignment,
`graphseek.knowledge.graph.algorithms.contextual`) and the pooled sentence vectors (the sentence
layer). It runs only with contextual alignment; without a span encoder (a custom `embed`) the
settings fall back to record strings, so the manifest says what was done."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.contextual import (
    AheadPass,
    MentionVectors,
    encode_passages,
)
from graphseek.knowledge.graph.algorithms.vectors import span_encoder
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.store.sentences import PooledSentences
from graphseek.knowledge.passages import Passage


@dataclass
class PassageVectors:
    """What the passage pass gives: the `settings` the later stages run with (alignment by
    record strings where the encoder gives no token states), the passages' vectors (rows in
    their order, in a temporary file; None where the pass did not run), the mention vectors by
    mention id (empty where it did not run) and the pooled sentence vectors (None unless the
    graph has pooled sentences)."""

    settings: GraphSettings
    passages: memory.Rows | None
    mentions: Mapping[str, np.ndarray]
    sentences: PooledSentences | None

    def spilled_passages(self) -> memory.SpilledArray | None:
        """The passages' vectors, in a temporary file (an index stores them instead of
        encoding the passages a second time); not kept here."""
        rows, self.passages = self.passages, None
        return None if rows is None else memory.spill(rows)


def pooled_sentences(settings: GraphSettings) -> PooledSentences | None:
    """Where the pass pools sentence vectors, when the graph has pooled sentences."""
    return PooledSentences() if settings.sentences == "pooled" else None


def passage_pass(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    settings: GraphSettings,
    run: Run,
    *,
    sentences: PooledSentences | None,
    ahead: AheadPass | None = None,
    threads: int | None = None,
) -> PassageVectors:
    """With contextual alignment, one pass of the passage encoder over `passages` (its first
    batches may have run `ahead`, at most `threads` encoder threads at once:
    `Embedder.bulk_threads`), pooling sentence vectors into `sentences`."""
    if settings.alignment != "contextual":
        return PassageVectors(settings, None, {}, sentences)
    encoder = span_encoder(run.embed)
    if encoder is None:
        return PassageVectors(replace(settings, alignment="records"), None, {}, sentences)
    with timed(run.timings, "embed_passages", len(passages)) as recorded:
        limit = getattr(encoder, "bulk_threads", None)
        with limit(threads) if callable(limit) else contextlib.nullcontext():
            vectors, mentions = encode_passages(
                encoder,
                passages,
                extractions,
                show_progress=run.show_progress,
                ahead=ahead,
                sentences=sentences,
            )
        memory.release_encoder(encoder)
        recorded["mentions"] = len(mentions)
    return PassageVectors(settings, vectors, mentions, sentences)


def new_passage_pass(
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    settings: GraphSettings,
    run: Run,
    *,
    sentences: PooledSentences | None,
) -> PassageVectors:
    """An update's passage pass over the `new` passages of a store that aligns with contextual
    vectors. `ValueError` when `run.embed` cannot give contextual vectors."""
    done = passage_pass(new, extracted, settings, run, sentences=sentences)
    if done.settings.alignment != "contextual":
        raise ValueError(
            "the store aligns entities with contextual vectors, which a custom `embed` "
            "cannot give; update it without `embed`"
        )
    return done


def with_new(
    stored: Mapping[str, np.ndarray], new: Mapping[str, np.ndarray]
) -> Mapping[str, np.ndarray]:
    """An update's mention vectors: the store's, then the new passages' (a new row for an id
    replaces the stored one, as a dict's update would)."""
    if not stored:
        return new
    if isinstance(stored, MentionVectors):
        stored.update(new)
        return stored
    return {**stored, **new}
