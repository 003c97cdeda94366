"""What sentence nodes cost a graph build: the passage pass with and without pooling the
sentences' vectors, against encoding every sentence on its own, and the layer's edges and write.

Over the first ``--n`` passages of a corpus (2Wiki by default), each pass run ``--repeat`` times
(the fastest kept, as the machine may be shared), with the packaged MiniLM:

- the passage pass alone (`encode_passages` with no mention spans: the dense vectors);
- the same pass pooling every sentence (``GraphSettings.sentences = "pooled"``, the default);
- encoding every sentence as its own text (``"encoded"``);
- splitting and linking the sentences (`link_sentences`, all passages linked to a few
  entities each, as the graph's links are), without vectors.

The whole graph build's time is in its manifest (``timings``): see
`benchmarks/graph_retrieval.py`, which prints it with the sentence layer's own seconds.

    .venv/bin/python benchmarks/sentence_nodes.py [--data-dir ../shared/data] [--n 1000]
        [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from scipy import sparse

from graphseek.knowledge.dense import encode_texts
from graphseek.knowledge.embedder import get_embedder
from graphseek.knowledge.graph.algorithms.contextual import encode_passages
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.store.sentences import (
    PooledSentences,
    link_sentences,
    passage_sentences,
)
from graphseek.knowledge.passages import Passage

ROOT = Path(__file__).resolve().parents[1]


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    corpus = json.loads(
        (args.data_dir / "2wikimultihopqa" / "2wikimultihopqa_corpus.json").read_text()
    )[: args.n]
    passages = [Passage.from_title_text(c["title"], c["text"]) for c in corpus]
    empty = [Extraction(passage_id=p.id, mentions=[], relations=[], facts=[]) for p in passages]
    encoder = get_embedder()
    encoder.encode(["warm up"])
    spans = [passage_sentences(p) for p in passages]
    texts = [p.content[a:b] for p, s in zip(passages, spans, strict=True) for a, b in s.tolist()]
    plain = best(lambda: encode_passages(encoder, passages, empty), args.repeat)
    pooled = best(
        lambda: encode_passages(encoder, passages, empty, sentences=PooledSentences()),
        args.repeat,
    )
    encoded = best(lambda: encode_texts(encoder, texts, batch_size=64), args.repeat)
    names = [[p.title] for p in passages]
    rng = np.random.default_rng(0)
    cols = rng.integers(0, len(passages), size=(len(passages), 8))
    rows = np.repeat(np.arange(len(passages)), 8)
    incidence = sparse.csr_matrix(
        (np.ones(rows.size), (rows, cols.ravel())), shape=(len(passages), len(passages))
    )
    linking = best(
        lambda: link_sentences(
            passages, [passage_sentences(p) for p in passages], names, incidence
        ),
        args.repeat,
    )
    print(f"{len(passages)} passages, {len(texts)} sentences, MiniLM, best of {args.repeat}")
    print(f"  passage pass alone:            {plain:7.1f} s")
    print(
        f"  passage pass pooling sentences: {pooled:7.1f} s  (+{pooled - plain:.1f} s, "
        f"{100 * (pooled - plain) / plain:+.1f}%)"
    )
    print(f"  every sentence encoded alone:  {encoded:7.1f} s  (+{100 * encoded / plain:.0f}%)")
    print(f"  split and link the sentences:  {linking:7.2f} s")


if __name__ == "__main__":
    main()
