"""rank-bm25 vs bm25s on the 2WikiMultiHopQA corpus: index build time and per-query latency.

Both libraries get the same tokens (graphseek's tokenizer, timed separately) and k1=1.5, b=0.75.
Query latency is the time to tokenize one question, score all passages and take the top k, over the
first 200 questions (the dev slice). Also prints how often the two agree on the top-k ids
(rank-bm25 BM25Okapi vs bm25s `robertson`, the matching variant; and vs bm25s `lucene`, the
variant graphseek uses).

    .venv/bin/python benchmarks/bm25_choice.py [--data-dir ../shared/data] [--questions 0:200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from graphseek.knowledge.loaders import load_corpus
from graphseek.knowledge.sparse import BM25Index, tokenize

ROOT = Path(__file__).resolve().parents[1]


def parse_slice(text: str) -> slice:
    start, _, stop = text.partition(":")
    return slice(int(start or 0), int(stop) if stop else None)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--questions", default="0:200", help="question slice, e.g. 0:200")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="build repetitions (best is kept)")
    args = parser.parse_args()

    from rank_bm25 import BM25Okapi

    print(f"load average (1/5/15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    data = args.data_dir / "2wikimultihopqa"
    passages = load_corpus(data / "2wikimultihopqa_corpus.json", chunk_size=0)
    texts = [p.content for p in passages]
    questions = json.loads((data / "questions.json").read_text())[parse_slice(args.questions)]
    queries = [q["question"] for q in questions]
    print(f"corpus: {len(passages)} passages; queries: {len(queries)}; k={args.k}")

    t0 = time.perf_counter()
    corpus_tokens = [tokenize(t) for t in texts]
    tokenize_s = time.perf_counter() - t0
    print(f"tokenize (shared by both): {tokenize_s:.3f} s")

    def best_of(fn):  # type: ignore[no-untyped-def]
        times, result = [], None
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - t)
        return min(times), result

    import bm25s

    rank_build, okapi = best_of(lambda: BM25Okapi(corpus_tokens, k1=1.5, b=0.75))

    def build_bm25s(method: str):  # type: ignore[no-untyped-def]
        r = bm25s.BM25(k1=1.5, b=0.75, method=method)
        r.index(corpus_tokens, show_progress=False)
        return BM25Index(r)

    s_build, lucene = best_of(lambda: build_bm25s("lucene"))
    _, robertson = best_of(lambda: build_bm25s("robertson"))

    def rank_query(query: str) -> list[int]:
        scores = okapi.get_scores(tokenize(query))
        return [int(i) for i in np.argsort(-scores, kind="stable")[: args.k]]

    rank_lat, s_lat = [], []
    rank_top, rob_top, luc_top = [], [], []
    for q in queries:
        t = time.perf_counter()
        rank_top.append(rank_query(q))
        rank_lat.append(time.perf_counter() - t)
        t = time.perf_counter()
        luc_top.append([i for i, _ in lucene.search(q, args.k)])
        s_lat.append(time.perf_counter() - t)
        rob_top.append([i for i, _ in robertson.search(q, args.k)])

    def agree(a: list[list[int]], b: list[list[int]]) -> float:
        return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)

    def overlap(a: list[list[int]], b: list[list[int]]) -> float:
        return statistics.mean(len(set(x) & set(y)) / args.k for x, y in zip(a, b, strict=True))

    ms = 1000.0
    print()
    print(f"{'':12} {'build s':>9} {'query p50 ms':>13} {'query p95 ms':>13} {'query mean ms':>14}")
    for name, build, lat in (
        ("rank-bm25", rank_build, rank_lat),
        ("bm25s", s_build, s_lat),
    ):
        print(
            f"{name:12} {build:9.3f} {percentile(lat, 50) * ms:13.3f} "
            f"{percentile(lat, 95) * ms:13.3f} {statistics.mean(lat) * ms:14.3f}"
        )
    print()
    print(f"build ratio rank-bm25 / bm25s: {rank_build / s_build:.1f}x")
    print(
        "query ratio rank-bm25 / bm25s (mean): "
        f"{statistics.mean(rank_lat) / statistics.mean(s_lat):.1f}x"
    )
    print(
        f"identical top-{args.k} lists, BM25Okapi vs bm25s robertson: "
        f"{agree(rank_top, rob_top):.1%} (id overlap {overlap(rank_top, rob_top):.1%})"
    )
    print(
        f"identical top-{args.k} lists, BM25Okapi vs bm25s lucene:    "
        f"{agree(rank_top, luc_top):.1%} (id overlap {overlap(rank_top, luc_top):.1%})"
    )


if __name__ == "__main__":
    main()
