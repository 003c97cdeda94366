"""N-ary facts as hyperedges (G-RAGent §2.1), and their topics.

Each extracted fact becomes a hyperedge over the aligned entities it involves; identical facts
(same normalised relation text, same entity set) from several passages are one hyperedge with
all those passages as provenance.

Topics (the mapping phi: hyperedge -> topic) come from clustering the hyperedge embeddings with
k-means, ``k = max(1, round(sqrt(n) / 2))`` and a fixed seed (`KMeans` up to 20,000 hyperedges,
`MiniBatchKMeans` above). Topic ids are numbered in the order of each topic's first hyperedge
(by id), so the same hyperedges give the same topics. Each topic is named by the top TF-IDF
terms of its members' texts (a topic's texts are one document of the TF-IDF corpus).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from graphseek.knowledge.graph.memory.model_columns import HyperEdgeColumns
from graphseek.knowledge.graph.models import Extraction, HyperEdge, Topic
from graphseek.knowledge.text import normalize_text, stable_id

MINIBATCH_ABOVE = 20_000


def build_hyperedges(
    extractions: Iterable[Extraction], mention_entity: Mapping[str, str], *, min_entities: int = 1
) -> HyperEdgeColumns:
    """Hyperedges from facts, merged across passages, sorted by id (topics not yet set); as
    columns, each `HyperEdge` made when read."""
    merged: dict[str, tuple[str, list[str], set[str]]] = {}
    for extraction in extractions:
        for fact in extraction.facts:
            members = list(
                dict.fromkeys(mention_entity[m] for m in fact.mentions if m in mention_entity)
            )
            if len(members) < min_entities:
                continue
            hid = stable_id("h", normalize_text(fact.relation).strip(), *sorted(members))
            if hid in merged:
                merged[hid][2].add(fact.passage_id)
            else:
                merged[hid] = (fact.relation, members, {fact.passage_id})
    edges = HyperEdgeColumns()
    for hid, (relation, members, pids) in sorted(merged.items()):
        edges.append(
            id=hid, relation=relation, entity_ids=members, passage_ids=sorted(pids), topic_id=None
        )
    return edges.finish()


def topic_count(n: int) -> int:
    """``max(1, round(sqrt(n) / 2))``, at most n."""
    if n <= 0:
        return 0
    return min(n, max(1, round(math.sqrt(n) / 2)))


def cluster_topics(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """Topic number of each row, renumbered by first appearance (deterministic for a seed)."""
    n = len(vectors)
    k = topic_count(n)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if k <= 1:
        return np.zeros(n, dtype=np.int64)
    from sklearn.cluster import KMeans, MiniBatchKMeans

    data = np.asarray(vectors, dtype=np.float32)
    if n <= MINIBATCH_ABOVE:
        model = KMeans(n_clusters=k, random_state=seed, n_init=3)
    else:
        model = MiniBatchKMeans(
            n_clusters=k, random_state=seed, n_init=3, batch_size=4096, max_no_improvement=20
        )
    labels = _fit_predict_few_threads(model, data)
    renumber: dict[int, int] = {}
    out = np.empty(n, dtype=np.int64)
    for i, label in enumerate(labels.tolist()):
        out[i] = renumber.setdefault(label, len(renumber))
    return out


def _fit_predict_few_threads(model: Any, data: np.ndarray) -> np.ndarray:
    """`model.fit_predict(data)` with BLAS and OpenMP on one thread: k-means over a few thousand
    vectors is small work, and on a shared host with few cores spinning worker threads made it
    many times slower."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on threadpoolctl
        return np.asarray(model.fit_predict(data))
    with threadpool_limits(limits=1):
        return np.asarray(model.fit_predict(data))


def import_topic_libraries() -> None:
    """Import what `cluster_topics` and `topic_keywords` use (scikit-learn, most of its import
    time in scipy.stats). A build does it on a background thread while the
    passage encoder runs, whose threads leave the GIL free most of the time."""
    import sklearn.cluster  # noqa: F401
    import sklearn.feature_extraction.text  # noqa: F401


def topic_keywords(texts_by_topic: Sequence[Sequence[str]], top: int = 5) -> list[list[str]]:
    """Top TF-IDF terms of each topic (each topic's texts form one document)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    documents = [" ".join(texts) for texts in texts_by_topic]
    if not any(doc.strip() for doc in documents):
        return [[] for _ in documents]
    vectorizer = TfidfVectorizer(
        stop_words="english",
        token_pattern=r"(?u)\b[^\W\d_][\w\-]{2,}\b",
        sublinear_tf=True,
        max_features=100_000,
    )
    try:
        matrix = vectorizer.fit_transform(documents)
    except ValueError:  # only stop words
        return [[] for _ in documents]
    terms = vectorizer.get_feature_names_out()
    out: list[list[str]] = []
    for row in range(matrix.shape[0]):
        start, end = matrix.indptr[row], matrix.indptr[row + 1]
        cols, vals = matrix.indices[start:end], matrix.data[start:end]
        order = sorted(range(len(cols)), key=lambda k: (-vals[k], terms[cols[k]]))[:top]
        out.append([str(terms[cols[k]]) for k in order])
    return out


def assign_topics(
    edges: Sequence[HyperEdge],
    vectors: np.ndarray,
    *,
    seed: int = 0,
    keywords: int = 5,
    labels: np.ndarray | None = None,
) -> tuple[Sequence[HyperEdge], list[Topic]]:
    """The hyperedges with `topic_id` set (columns again for `HyperEdgeColumns`), and the
    topics. `labels`: `cluster_topics(vectors, seed)` when the caller has computed it
    already."""
    if labels is None:
        labels = cluster_topics(vectors, seed)
    members: dict[int, list[int]] = defaultdict(list)
    for i, label in enumerate(labels.tolist()):
        members[label].append(i)
    numbers = sorted(members)
    relations = (
        edges.column("relation")
        if isinstance(edges, HyperEdgeColumns)
        else [e.relation for e in edges]
    )
    words = topic_keywords([[relations[i] for i in members[t]] for t in numbers], keywords)
    names = {t: f"t-{t:04d}" for t in numbers}  # one string a topic, not one a hyperedge
    topics = [
        Topic(
            id=names[t],
            label=", ".join(kw[:3]) or f"topic {t}",
            keywords=kw,
            size=len(members[t]),
        )
        for t, kw in zip(numbers, words, strict=True)
    ]
    topic_ids = [names[label] for label in labels.tolist()]
    if isinstance(edges, HyperEdgeColumns):
        return edges.with_topics(topic_ids), topics
    out = [
        edge.model_copy(update={"topic_id": t}) for edge, t in zip(edges, topic_ids, strict=True)
    ]
    return out, topics
