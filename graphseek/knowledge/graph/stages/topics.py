"""Stage 5, hyperedges and topics (G-RAGent's hyperedge layer): each n-ary fact becomes a
hyperedge over its entities (merged across passages), and topics are k-means clusters of the
hyperedges' vectors, each named by its keywords (`graphseek.knowledge.graph.hyper`).

Hyperedges need only the alignment, so the stage begins as soon as it is done (`begin`): with
static vectors (thread-safe, mostly run with the GIL released) their vectors and k-means run on
a thread while linking runs here; with another encoder they run once linking is done
(`cluster`). `finish` waits for them and names the topics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.align import cached_encode
from graphseek.knowledge.graph.hyper import assign_topics, build_hyperedges, cluster_topics
from graphseek.knowledge.graph.models import Extraction, HyperEdge, Topic
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Clock, Run
from graphseek.knowledge.graph.stages.align import Alignment
from graphseek.knowledge.graph.vectors import (
    Embed,
    StageEmbed,
    VectorCache,
    hyperedge_text,
    set_stage,
)
from graphseek.knowledge.progress import bar as progress_bar


@dataclass
class Topics:
    """The hyperedges (sorted by id, each with its topic), the topics, and the hyperedges'
    vectors (rows in the hyperedges' order, in a temporary file until the write)."""

    hyperedges: Sequence[HyperEdge]
    topics: list[Topic]
    vectors: memory.SpilledArray


class HyperedgeTopics:
    """The stage under way: `begin` it once alignment is done, `cluster` once linking is done,
    `finish` after the graph's vectors."""

    def __init__(
        self,
        hyperedges: Sequence[HyperEdge],
        settings: GraphSettings,
        run: Run,
        strings: Embed,
        cache: VectorCache,
        clock: Clock,
    ) -> None:
        self.hyperedges = hyperedges
        self.settings = settings
        self.run = run
        self.strings = strings
        self.cache = cache
        self.clock = clock
        self.job: Background[tuple[np.ndarray, np.ndarray]] | None = None

    @classmethod
    def begin(
        cls,
        extractions: Sequence[Extraction],
        aligned: Alignment,
        settings: GraphSettings,
        run: Run,
        strings: Embed,
        cache: VectorCache,
    ) -> HyperedgeTopics:
        """The hyperedges of the facts in `extractions`; with static vectors (`strings`), their
        vectors and k-means begun on a thread."""
        clock = Clock()
        hyperedges = build_hyperedges(
            extractions, aligned.merged.mention_entity, min_entities=settings.min_hyperedge_entities
        )
        stage = cls(hyperedges, settings, run, strings, cache, clock)
        if getattr(strings, "thread_safe", False):
            stage.job = stage._vectors_and_clusters(thread=True)
        clock.pause()
        return stage

    def _vectors_and_clusters(self, *, thread: bool) -> Background[tuple[np.ndarray, np.ndarray]]:
        """The hyperedges' vectors and their k-means labels, on a thread or here and now."""
        hyperedges, strings, cache = self.hyperedges, self.strings, self.cache.vectors
        seed = self.settings.seed

        def run() -> tuple[np.ndarray, np.ndarray]:
            vectors = hyperedge_vectors(hyperedges, strings, cache)
            return vectors, cluster_topics(vectors, seed)

        return Background(run, thread=thread)

    def cluster(self) -> None:
        """The hyperedges' vectors and clusters, here and now unless begun on a thread."""
        self.clock.resume()
        set_stage(self.run.embed, "topics")
        if self.job is None:
            self.job = self._vectors_and_clusters(thread=False)
        self.clock.pause()

    def finish(self, n_passages: int) -> Topics:
        """The topics, with their keywords, and each hyperedge's topic."""
        job, self.job = self.job, None  # the stage holds nothing once finished
        hyperedges, self.hyperedges = self.hyperedges, ()
        assert job is not None, "cluster() first"
        self.clock.resume()
        # MiniLM shows its own "topics" bar over the hyperedges it embeds; static vectors do not
        show = self.run.show_progress and not isinstance(self.strings, StageEmbed)
        with progress_bar("topics", 2, show, unit="step") as steps:
            vectors, labels = job.result()
            steps.update(1)
            hyperedges, topics = assign_topics(
                hyperedges,
                vectors,
                seed=self.settings.seed,
                keywords=self.settings.topic_keywords,
                labels=labels,
            )
            steps.update(1)
        done = Topics(hyperedges, topics, memory.spill(vectors))
        self.clock.record(self.run.timings, "hyperedges_topics", n_passages)
        return done


def hyperedge_vectors(
    hyperedges: Sequence[HyperEdge], strings: Embed, cache: dict[str, np.ndarray]
) -> np.ndarray:
    """The vectors of `hyperedges`' texts in the graph's space (`strings`), through `cache`."""
    return cached_encode([hyperedge_text(h) for h in hyperedges], strings, cache)
