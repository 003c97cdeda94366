"""Graph retrieval benchmark: Recall@2/@5 and latency of bm25, dense, hybrid, higra, progressive.

Two dev slices, both with the offline graph (spaCy extraction, no LLM):

- 2WikiMultiHopQA: `2wikimultihopqa_corpus.json`, questions 0-199 of `questions.json`; gold =
  the corpus titles equal to the subjects of the question's evidence triples (exact match, else
  case-insensitive); subjects with no such title are left out.
- MuSiQue: `musique_train.json` (100 questions) over `musique_train_corpus.json`; gold = the
  paragraphs marked `is_supporting`, matched on (title, text).

The index and the graph are built once under ``--cache-dir`` (default
``$GRAPHSEEK_CACHE_DIR/bench-graph`` or ``~/.cache/graphseek/bench-graph``) and reused. Latency
is per query, after one warm-up query, everything in one process; higra runs offline (no LLM
seed step). A second part times the personalised PageRank against ``networkx.pagerank`` on the
2Wiki entity graph.

    .venv/bin/python benchmarks/graph_retrieval.py [--data-dir ../shared/data]
        [--datasets 2wiki,musique] [--questions 0:200] [--cache-dir DIR] [--build-only]
        [--no-ppr-bench] [--set higra.rrf_ppr_k=10 ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Hit, Passage, passage_id
from graphseek.tools.graph_access import graph_view
from graphseek.tools.higra import HiGraConfig, HiGraRetriever
from graphseek.tools.progressive import ProgressiveConfig, ProgressiveRetriever

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("bm25", "dense", "hybrid", "higra", "progressive")


@dataclass
class Question:
    id: str
    text: str
    gold: set[str]  # 2wiki: titles; musique: passage ids


@dataclass
class Slice:
    name: str
    passages: list[Passage]
    questions: list[Question]
    gold_kind: str  # "title" or "id"


def parse_slice(text: str) -> slice:
    start, _, stop = text.partition(":")
    return slice(int(start or 0), int(stop) if stop else None)


def _dedupe(passages: list[Passage]) -> list[Passage]:
    seen: dict[str, Passage] = {}
    for p in passages:
        seen.setdefault(p.id, p)
    return list(seen.values())


def load_2wiki(data: Path, questions: slice) -> Slice:
    corpus = json.loads((data / "2wikimultihopqa_corpus.json").read_text())
    passages = _dedupe(
        [Passage.from_title_text(c["title"], c["text"], source="2wiki") for c in corpus]
    )
    titles = {p.title for p in passages}
    lower = {t.lower(): t for t in sorted(titles, reverse=True)}
    out = []
    for q in json.loads((data / "questions.json").read_text())[questions]:
        gold = set()
        for subject in {t[0] for t in q.get("evidence", [])}:
            if subject in titles:
                gold.add(subject)
            elif subject.lower() in lower:
                gold.add(lower[subject.lower()])
        out.append(Question(q["id"], q["question"], gold))
    return Slice("2wiki", passages, out, "title")


def load_musique(data: Path, questions: slice) -> Slice:
    corpus = json.loads((data / "musique_train_corpus.json").read_text())
    passages = _dedupe(
        [Passage.from_title_text(c["title"], c["text"], source="musique") for c in corpus]
    )
    ids = {p.id for p in passages}
    out = []
    for q in json.loads((data / "musique_train.json").read_text())[questions]:
        gold = {
            passage_id(p["title"], p["paragraph_text"])
            for p in q["paragraphs"]
            if p.get("is_supporting")
        }
        out.append(Question(q["id"], q["question"], gold & ids))
    return Slice("musique", passages, out, "id")


def ensure_index(sl: Slice, cache: Path, show_progress: bool) -> Index:
    """Open (or build) the slice's index and offline graph under the cache directory."""
    from graphseek.knowledge.graph.build import build_graph

    path = cache / sl.name / "index"
    try:
        index = Index.open(path)
        if len(index) != len(sl.passages):
            raise ValueError("stale index")
    except Exception:
        t = time.perf_counter()
        index = Index.build(sl.passages, path, show_progress=show_progress)
        print(f"[{sl.name}] index built in {time.perf_counter() - t:.0f} s -> {path}", flush=True)
    graph_dir = index.dir_for("graph")
    if not (graph_dir / "manifest.json").exists():
        t = time.perf_counter()
        build_graph(index.passages, graph_dir, extractor="offline", show_progress=show_progress)
        print(f"[{sl.name}] graph built in {time.perf_counter() - t:.0f} s -> {graph_dir}")
    return index


def recall(hits: list[Hit], gold: set[str], kind: str, k: int) -> float:
    got = {h.passage.title if kind == "title" else h.passage.id for h in hits[:k]}
    return len(got & gold) / len(gold)


def run_method(name: str, fn: Callable[[str], list[Hit]], sl: Slice) -> dict[str, float]:
    questions = [q for q in sl.questions if q.gold]
    fn(questions[0].text)  # warm up lazy loads
    latencies, r2, r5 = [], [], []
    for q in questions:
        t = time.perf_counter()
        hits = fn(q.text)
        latencies.append((time.perf_counter() - t) * 1000.0)
        r2.append(recall(hits, q.gold, sl.gold_kind, 2))
        r5.append(recall(hits, q.gold, sl.gold_kind, 5))
    ms = np.asarray(latencies)
    return {
        "R@2": statistics.mean(r2),
        "R@5": statistics.mean(r5),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "n": len(questions),
    }


def _overrides(pairs: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"higra": {}, "progressive": {}}
    for pair in pairs:
        key, _, value = pair.partition("=")
        which, _, field = key.partition(".")
        cls = HiGraConfig if which == "higra" else ProgressiveConfig
        kinds = {f.name: f.type for f in fields(cls)}
        if field not in kinds:
            raise SystemExit(f"unknown setting {key!r}")
        out[which][field] = float(value) if "." in value else int(value)
    return out


def bench_slice(sl: Slice, index: Index, overrides: dict[str, dict[str, Any]]) -> None:
    t = time.perf_counter()
    view = graph_view(index)
    print(f"[{sl.name}] graph view loaded in {time.perf_counter() - t:.1f} s: {view}")
    higra = HiGraRetriever.from_index(index, replace(HiGraConfig(), **overrides["higra"]))
    prog = ProgressiveRetriever.from_index(
        index, replace(ProgressiveConfig(), **overrides["progressive"])
    )
    k = 5
    methods: dict[str, Callable[[str], list[Hit]]] = {
        "bm25": lambda q: index.search(q, k, "bm25"),
        "dense": lambda q: index.search(q, k, "dense"),
        "hybrid": lambda q: index.search(q, k, "hybrid"),
        "higra": lambda q: higra.hits(higra.retrieve(q), k),
        "progressive": lambda q: prog.retrieve(q, k).hits,
    }
    rows = {name: run_method(name, fn, sl) for name, fn in methods.items()}
    n = rows["bm25"]["n"]
    print(f"\n{sl.name}: {n} questions with gold, {len(index)} passages")
    print(f"{'method':12} {'R@2':>6} {'R@5':>6} {'p50 ms':>8} {'p95 ms':>8}")
    for name, row in rows.items():
        print(f"{name:12} {row['R@2']:6.3f} {row['R@5']:6.3f} {row['p50']:8.1f} {row['p95']:8.1f}")
    stages: dict[str, int] = {}
    for q in sl.questions:
        if q.gold:
            ended = prog.retrieve(q.text, k).ended_at
            stages[ended] = stages.get(ended, 0) + 1
    print(f"progressive ended at: {stages}\n", flush=True)


def bench_ppr(index: Index) -> None:
    import networkx as nx

    from graphseek.tools.ppr import PageRank

    view = graph_view(index)
    a = view.undirected
    n = a.shape[0]
    rng = np.random.default_rng(0)
    seeds = [rng.choice(n, size=3, replace=False).tolist() for _ in range(10)]
    t = time.perf_counter()
    pr = PageRank.from_adjacency(a)
    prep = time.perf_counter() - t
    t = time.perf_counter()
    ours = [pr.run(dict.fromkeys(s, 1.0), tol=1e-6 * n, max_iter=100) for s in seeds]
    ours_s = (time.perf_counter() - t) / len(seeds)
    g = nx.from_scipy_sparse_array(a)
    t = time.perf_counter()
    ref = [nx.pagerank(g, personalization=dict.fromkeys(s, 1.0), tol=1e-6) for s in seeds]
    nx_s = (time.perf_counter() - t) / len(seeds)
    err = max(
        float(np.abs(o - np.array([r[i] for i in range(n)])).max())
        for o, r in zip(ours, ref, strict=True)
    )
    print(
        f"PPR on the 2wiki entity graph ({n} nodes, {a.nnz} directed edges), 10 queries:\n"
        f"  graphseek.tools.ppr: {ours_s * 1000:.1f} ms/query (+{prep * 1000:.0f} ms prepare)\n"
        f"  networkx.pagerank:   {nx_s * 1000:.1f} ms/query\n"
        f"  speed-up {nx_s / ours_s:.1f}x, max |difference| {err:.2e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--datasets", default="2wiki,musique")
    parser.add_argument("--questions", default="0:200", help="2wiki question slice")
    base = Path(os.environ.get("GRAPHSEEK_CACHE_DIR", Path.home() / ".cache" / "graphseek"))
    parser.add_argument("--cache-dir", type=Path, default=base.expanduser() / "bench-graph")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--no-ppr-bench", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--set", nargs="*", default=[], help="config overrides, higra.x=v")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    overrides = _overrides(args.set)

    loaders = {
        "2wiki": lambda: load_2wiki(args.data_dir / "2wikimultihopqa", parse_slice(args.questions)),
        "musique": lambda: load_musique(args.data_dir / "musique", slice(None)),
    }
    for name in args.datasets.split(","):
        sl = loaders[name]()
        index = ensure_index(sl, args.cache_dir, not args.no_progress)
        if args.build_only:
            continue
        bench_slice(sl, index, overrides)
        if name == "2wiki" and not args.no_ppr_bench:
            bench_ppr(index)


if __name__ == "__main__":
    main()
