"""Passage-index benchmark on 2WikiMultiHopQA: build throughput, query latency, Recall@k.

Builds an `Index` over `2wikimultihopqa_corpus.json` (into a temporary directory, or --out),
reopens it, and for the question slice (default 0:200, the dev slice) prints per-query latency
p50/p95 of `Index.search` for bm25, dense and hybrid, and Recall@k as a sanity figure. Gold
passages are the corpus passages whose title equals a subject of the question's evidence
triples (exact match, else case-insensitive); subjects with no such title are left out of the
recall and counted separately.

    .venv/bin/python benchmarks/retrieval.py [--data-dir ../shared/data] [--questions 0:200]
        [--out DIR [--reuse]] [-k 5] [--chunk-size 0]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge import Index, load_corpus
from graphseek.knowledge.index import SEARCH_METHODS, SearchMethod

ROOT = Path(__file__).resolve().parents[1]


def parse_slice(text: str) -> slice:
    start, _, stop = text.partition(":")
    return slice(int(start or 0), int(stop) if stop else None)


def gold_titles(question: dict[str, Any], titles: set[str], lower: dict[str, str]) -> set[str]:
    found = set()
    for subject in {triple[0] for triple in question.get("evidence", [])}:
        if subject in titles:
            found.add(subject)
        elif subject.lower() in lower:
            found.add(lower[subject.lower()])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--questions", default="0:200", help="question slice, e.g. 0:200")
    parser.add_argument("--out", type=Path, help="index directory (default: a temporary one)")
    parser.add_argument(
        "--reuse", action="store_true", help="open the index at --out if there is one, no build"
    )
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=0,
        help="load_corpus chunk size; 0 (default) keeps the dataset's passages whole",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--query-threads",
        type=int,
        default=0,
        help="torch threads while querying (0: leave torch's default)",
    )
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"load average (1/5/15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")

    data = args.data_dir / "2wikimultihopqa"
    t0 = time.perf_counter()
    passages = load_corpus(data / "2wikimultihopqa_corpus.json", chunk_size=args.chunk_size)
    load_s = time.perf_counter() - t0
    questions = json.loads((data / "questions.json").read_text())[parse_slice(args.questions)]
    print(
        f"corpus: {len(passages)} passages (chunk size {args.chunk_size}), loaded in {load_s:.2f} s"
    )
    print(f"questions: {len(questions)} ({args.questions}); k={args.k}")

    workdir = None
    out = args.out
    if out is None:
        workdir = Path(tempfile.mkdtemp(prefix="graphseek-bench-"))
        out = workdir / "index"
    try:
        if args.reuse and (out / "manifest.json").is_file():
            print(f"build: skipped, reusing {out}")
        else:
            t0 = time.perf_counter()
            Index.build(
                passages, out, show_progress=not args.no_progress, batch_size=args.batch_size
            )
            build_s = time.perf_counter() - t0
            print(f"build: {build_s:.1f} s, {len(passages) / build_s:.1f} passages/s -> {out}")

        if args.query_threads > 0:
            import torch

            torch.set_num_threads(args.query_threads)
            print(f"torch threads while querying: {torch.get_num_threads()}")
        t0 = time.perf_counter()
        index = Index.open(out)
        print(f"open: {(time.perf_counter() - t0) * 1000:.0f} ms (manifest + passages)")

        titles = {p.title for p in index.passages}
        lower = {t.lower(): t for t in sorted(titles, reverse=True)}
        golds = [gold_titles(q, titles, lower) for q in questions]
        subjects = sum(len({t[0] for t in q.get("evidence", [])}) for q in questions)
        matched = sum(len(g) for g in golds)
        print(f"gold titles found in corpus: {matched}/{subjects} evidence subjects")
        queries = [q["question"] for q in questions]

        print()
        print(f"{'method':8} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {f'Recall@{args.k}':>10}")
        for method in SEARCH_METHODS:
            search_method: SearchMethod = method  # type: ignore[assignment]
            index.search(queries[0], k=args.k, method=search_method)  # warm up lazy loads
            latencies, recalls = [], []
            for query, gold in zip(queries, golds, strict=True):
                t = time.perf_counter()
                hits = index.search(query, k=args.k, method=search_method)
                latencies.append(time.perf_counter() - t)
                if gold:
                    retrieved = {h.passage.title for h in hits}
                    recalls.append(len(retrieved & gold) / len(gold))
            ms = np.asarray(latencies) * 1000
            print(
                f"{method:8} {np.percentile(ms, 50):8.2f} {np.percentile(ms, 95):8.2f} "
                f"{ms.mean():8.2f} {statistics.mean(recalls):10.3f}"
            )
        print(f"(recall over {len(recalls)} questions with at least one gold title)")

        t0 = time.perf_counter()
        index.search_many(queries, k=args.k, method="hybrid")
        batch_s = time.perf_counter() - t0
        print(
            f"hybrid search_many over {len(queries)} questions: {batch_s:.2f} s "
            f"({batch_s / len(queries) * 1000:.2f} ms/question)"
        )
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
