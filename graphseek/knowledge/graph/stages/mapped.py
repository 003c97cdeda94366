"""The map stages (extraction, the passage pass) run elsewhere: a shard's results
(`MappedPassages`, made by `graphseek.knowledge.graph.build.map_passages`) and shards joined
in corpus order (`MappedJoin`, `join_mapped`), which `build_graph(..., mapped=...)` takes
instead of running those stages (`graphseek.knowledge.sharded` runs the shards on Dask)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.contextual import MentionVectors
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages.extract import check_extractions
from graphseek.knowledge.graph.stages.passage_pass import PassageVectors
from graphseek.knowledge.graph.store.sentences import PooledSentences
from graphseek.knowledge.passages import Passage


@dataclass
class MappedPassages:
    """What a build computes passage by passage (its map stages), computed elsewhere: the
    extraction of each passage and, with contextual alignment, the passage pass's vectors
    (rows in the passages' order) and mention vectors (by mention id); None where the pass did
    not run. `map_passages` makes it for one shard of a corpus; shards in corpus order are
    joined by `join_mapped`, and `build_graph(..., mapped=...)` runs the rest of the build on
    it (`graphseek.knowledge.sharded` runs the shards on Dask workers)."""

    extractions: Sequence[Extraction]
    passage_vectors: memory.Rows | None = None
    mentions: Mapping[str, np.ndarray] | None = None
    timings: dict[str, Any] = field(default_factory=dict)
    sentences: PooledSentences | None = None
    """The sentence vectors the passage pass pooled (``GraphSettings.sentences="pooled"``)."""

    def extracted(
        self, passages: Sequence[Passage], who: str, timings: dict[str, Any]
    ) -> memory.ExtractionSpool:
        """The extractions, checked against `passages` (`who` made them; spooled to disk unless
        they are); their timings join `timings`."""
        check_extractions(passages, self.extractions, f"the map stages ({who})")
        timings.update(self.timings)
        if isinstance(self.extractions, memory.ExtractionSpool):
            return self.extractions
        return memory.ExtractionSpool.of(self.extractions)

    def passage_vectors_for(
        self, settings: GraphSettings, sentences: PooledSentences | None
    ) -> PassageVectors | None:
        """The passage pass's results as the pass gives them, or None where the shards did not
        run it (the build then runs it)."""
        if self.mentions is None or settings.alignment != "contextual":
            return None
        if sentences is not None and self.sentences is not None:
            sentences = self.sentences  # pooled by the shards' passes
        return PassageVectors(settings, self.passage_vectors, self.mentions, sentences)


class MappedJoin:
    """Shards' map results joined as they come, in corpus order (`add` them in that order):
    the extractions, passage vectors and mention vectors go to temporary files as each shard
    is added, as a single build's do, so the driver holds none of them. `result` is what
    `join_mapped` gives for the same shards."""

    def __init__(self) -> None:
        self.extractions = memory.ExtractionSpool()
        self._vectors: memory.SpilledArray | None = None
        self._mentions: MentionVectors | None = None
        self._without_pass = False
        self._sentences: PooledSentences | None = None

    def add(self, part: MappedPassages) -> None:
        self.extractions.extend(part.extractions)
        if part.sentences is not None:
            if self._sentences is None:
                self._sentences = PooledSentences()
            self._sentences.update(part.sentences)
        if part.passage_vectors is None or self._without_pass:
            self._without_pass = True  # a shard without the pass: none kept
            self._vectors = self._mentions = None
            return
        rows = np.asarray(part.passage_vectors, dtype=np.float32)
        if self._vectors is None or self._mentions is None:
            self._vectors = memory.SpilledArray.zeros(0, rows.shape[1])
            self._mentions = MentionVectors(rows.shape[1])
        self._vectors.append(rows)
        self._mentions.update(part.mentions or {})

    def result(self) -> MappedPassages:
        if self._vectors is None or self._mentions is None:
            return MappedPassages(self.extractions, sentences=self._sentences)
        return MappedPassages(
            self.extractions, self._vectors, self._mentions, sentences=self._sentences
        )


def join_mapped(parts: Sequence[MappedPassages]) -> MappedPassages:
    """The shards' results as one, in the order given (the corpus order of the shards)
    (`MappedJoin`)."""
    joined = MappedJoin()
    for part in parts:
        joined.add(part)
    return joined.result()
