"""Stage 5, hyperedges and topics (G-RAGent's hyperedge layer): each n-ary fact becomes a
hyperedge over its entities (merged across passages), and topics are k-means clusters of the
hyperedges' vectors, each named by its keywords (`graphseek.knowledge.graph.algorithms.hyper`).

Hyperedges need only the alignment, so the stage begins as soon as it is done (`begin`): with
static vectors (thread-safe, mostly run with the GIL released) their vectors and k-means run on
a thread while linking runs here; with another encoder they run once linking is done
(`cluster`). `finish` waits for them and names the topics.

Onto a stored graph (a delta add), the new hyperedges join the nearest stored topics instead:
`topics_onto` (below, with why it is its own function)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.align import cached_encode
from graphseek.knowledge.graph.algorithms.hyper import (
    assign_topics,
    build_hyperedges,
    cluster_topics,
)
from graphseek.knowledge.graph.algorithms.vectors import (
    Embed,
    StageEmbed,
    VectorCache,
    hyperedge_text,
    set_stage,
)
from graphseek.knowledge.graph.models import Extraction, HyperEdge, Topic
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Clock, Run
from graphseek.knowledge.graph.stages.align import Alignment, DeltaAlignment
from graphseek.knowledge.graph.store.stored import STORED_ROWS, StoredGraph
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


# -- onto a stored graph (a delta add) ----------------------------------------------------------
#
# A build's topics are a k-means over every hyperedge vector (`HyperedgeTopics`), which rerun
# would renumber every topic. Onto a stored graph the new passages' hyperedges are built as a
# build builds them (`build_hyperedges`), and each one new to the store joins the nearest stored
# topic centroid (`nearest_topics`) instead.


@dataclass
class DeltaTopics:
    """Every hyperedge the new passages give (their passages are added), those new to the store
    with their topics (`fresh`), and the fresh ones' vectors."""

    hyperedges: Sequence[HyperEdge]
    fresh: list[HyperEdge]
    vectors: np.ndarray


def topics_onto(
    stored: StoredGraph,
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    settings: GraphSettings,
    strings: Embed,
) -> DeltaTopics:
    """The new passages' hyperedges (`build_hyperedges`, as a build makes them); each new one
    goes to the nearest stored topic (`nearest_topics`) instead of a new k-means."""
    hyperedges = build_hyperedges(
        extracted, aligned.mention_entity, min_entities=settings.min_hyperedge_entities
    )
    stored_hyper = {
        r[0]
        for r in stored.rows(
            "SELECT id FROM hyperedges WHERE id IN ({})", [h.id for h in hyperedges]
        )
    }
    fresh = [h for h in hyperedges if h.id not in stored_hyper]
    vectors = hyperedge_vectors(fresh, strings, {})
    topics = nearest_topics(stored, vectors) if fresh else []
    fresh = [
        h.model_copy(update={"topic_id": topic}) for h, topic in zip(fresh, topics, strict=True)
    ]
    return DeltaTopics(hyperedges, fresh, vectors)


def nearest_topics(stored: StoredGraph, vectors: np.ndarray) -> list[str | None]:
    """The topic of each row of `vectors`: the stored topic whose centroid (the normalised mean
    of its hyperedges' vectors) is nearest by cosine; None when the store has no topics."""
    topic_of = [r[0] for r in stored.con.execute("SELECT topic_id FROM hyperedges ORDER BY ord")]
    path = stored.dir / "hyperedge_vectors.npy"
    if not len(vectors) or not topic_of or not path.exists():
        return [None] * len(vectors)
    rows = np.load(path, mmap_mode="r")
    if rows.shape[0] != len(topic_of) or rows.shape[1] != vectors.shape[1]:
        return [None] * len(vectors)
    names = sorted({t for t in topic_of if t})
    if not names:
        return [None] * len(vectors)
    number = {t: k for k, t in enumerate(names)}
    labels = np.array([number.get(t, -1) for t in topic_of])
    sums = np.zeros((len(names), rows.shape[1]), dtype=np.float64)
    for start in range(0, len(rows), STORED_ROWS):
        block = np.asarray(rows[start : start + STORED_ROWS], dtype=np.float64)
        part = labels[start : start + STORED_ROWS]
        keep = part >= 0
        np.add.at(sums, part[keep], block[keep])
    centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    best = np.argmax(np.asarray(vectors, dtype=np.float64) @ centroids.T, axis=1)
    return [names[k] for k in best.tolist()]
