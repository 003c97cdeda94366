"""Retrieval latency benchmark on 2WikiMultiHopQA: query encoding, bm25/dense/hybrid and, when the
index has a knowledge graph, higra and progressive; p50/p95 wall and CPU ms, Recall@k, and the
speed-up over a reference pipeline measured in the same run.

The reference is the straightforward library pipeline: rank_bm25's `BM25Okapi` scores every
passage; with a graph, the entities linked to its top passages seed `networkx.pagerank`
(personalised) over the entity graph, and passages are ranked by the PageRank mass of their
entities. Its p50 divided by a method's p50 is the "x ref" column (goal >= 10x).

Gold passages are the corpus passages whose title equals a subject of the question's evidence
triples (exact match, else case-insensitive); subjects with no such title are left out.
Every method but "encode (repeat, cached)" runs with the embedder's query cache cleared before
each question, so each query is encoded (cold figures); the cached row shows a repeat.
CPU ms (process CPU time per query) is printed beside wall ms: on a host shared by many
processes the wall time mostly measures waiting for a core, the CPU time what a query costs.

    .venv/bin/python benchmarks/retrieval.py [--index DIR | --out DIR [--reuse]] [--questions 0:200]
        [--data-dir ../shared/data] [-k 5] [--graph] [--no-reference] [--exact-ppr]

--exact-ppr adds progressive with exact PPR (power iteration over the whole graph, the
algorithm before push PPR) as the baseline of progressive's push PPR: recall and top-k agreement.
--neighbourhood adds higra and progressive over the same directory index opened with
``graph_reads="neighbourhood"`` (each query reads its neighbourhood from graph.sqlite and the
vector files instead of the graph loaded whole): latency, recall and top-k agreement with the
whole-graph rows, and the time to load each (the whole graph, the neighbourhood catalogue).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge import Index, load_corpus
from graphseek.knowledge.passages import Hit

ROOT = Path(__file__).resolve().parents[1]
NB = "(neighbourhood reads)"
TARGETS_MS = {"encode": 5.0, "hybrid": 8.0, "higra": 20.0, "progressive": 40.0}


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


def load_avg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


class Reference:
    """rank_bm25 over every passage, then (with a graph) networkx personalised PageRank."""

    def __init__(self, index: Index, graph: bool) -> None:
        from rank_bm25 import BM25Okapi

        self.index = index
        self.bm25 = BM25Okapi([self.tokenize(p.content) for p in index.passages])
        self.graph: Any = None
        if graph:
            import networkx as nx

            from graphseek.tools.graph_access import graph_view

            view = graph_view(index)
            self.view = view
            self.graph = nx.from_scipy_sparse_array(view.undirected)
            position = {p.id: i for i, p in enumerate(index.passages)}
            self.passage_rows = np.asarray([position[pid] for pid in view.passage_ids])

    @staticmethod
    def tokenize(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    def search(self, query: str, k: int) -> list[int]:
        import networkx as nx

        scores = self.bm25.get_scores(self.tokenize(query))
        top = np.argsort(-scores, kind="stable")[: max(k, 5)]
        if self.graph is None:
            return top[:k].tolist()
        view = self.view
        links = view.links.tocsc()
        pos = {int(r): j for j, r in enumerate(self.passage_rows)}
        seeds: dict[int, float] = {}
        for row in top.tolist():
            j = pos.get(row)
            if j is None:
                continue
            for e in links.indices[links.indptr[j] : links.indptr[j + 1]].tolist():
                seeds[e] = seeds.get(e, 0.0) + 1.0
        if not seeds:
            return top[:k].tolist()
        rank = nx.pagerank(self.graph, personalization=seeds, tol=1e-6)
        mass = np.zeros(view.n_entities)
        mass[list(rank)] = list(rank.values())
        passage_mass = view.links.T @ mass
        best = np.argsort(-passage_mass, kind="stable")[:k]
        return self.passage_rows[best].tolist()


def exact_ppr_progressive(prog: Any) -> Any:
    """`prog` (a ProgressiveRetriever) with Stage 3's push PPR replaced by exact PPR: power
    iteration over the whole graph to tol 1e-7 (at most 60 steps), as before push PPR."""
    from graphseek.tools import progressive as pr
    from graphseek.tools.ppr import PageRank

    view = prog.view
    pagerank = PageRank.from_adjacency(view.undirected)

    class ExactPPR(pr.ProgressiveRetriever):
        def _step(self, step: Any, state: Any, ranking: Any) -> Any:
            if step != "stage_ppr":
                return super()._step(step, state, ranking)
            cfg = self.config
            seeds = [view.entity_pos[e] for e in state.entity_seeds]
            scores = None
            if seeds:
                scores = pagerank.run(
                    dict.fromkeys(seeds, 1.0),
                    alpha=cfg.alpha,
                    tol=1e-7,
                    max_iter=60,
                    degree_normalize=True,
                )
            state = pr.stage_ppr(view, state, cfg, passage_ranking=ranking, scores=scores)
            return view, pr.check(view, state, cfg)

    return ExactPPR(
        view, prog.passage_search, embed=prog.embed, lookup=prog.lookup, config=prog.config
    )


def measure(
    fn: Callable[[str], Any], queries: list[str], before: Callable[[], Any] | None = None
) -> tuple[np.ndarray, np.ndarray, list]:
    """Wall and CPU ms of `fn` per query; `before` runs untimed before each call (it clears
    the embedder's query cache, so every query is encoded: cold figures)."""
    fn(queries[0])  # warm up lazy loads
    wall, cpu, out = [], [], []
    for q in queries:
        if before is not None:
            before()
        c, t = time.process_time(), time.perf_counter()
        out.append(fn(q))
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return np.asarray(wall) * 1000, np.asarray(cpu) * 1000, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--questions", default="0:200", help="question slice, e.g. 0:200")
    parser.add_argument("--index", type=Path, help="an existing index to benchmark (no build)")
    parser.add_argument("--out", type=Path, help="index directory (default: a temporary one)")
    parser.add_argument("--reuse", action="store_true", help="open the index at --out if any")
    parser.add_argument("--graph", action="store_true", help="build the graph too (slow)")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--chunk-size", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-reference", action="store_true", help="skip the reference run")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--torch-threads", type=int, default=0, help="torch threads (torch backend only)"
    )
    parser.add_argument("--methods", default="", help="comma-separated subset of the methods")
    parser.add_argument(
        "--neighbourhood",
        action="store_true",
        help="also higra and progressive reading each query's neighbourhood from the store",
    )
    parser.add_argument(
        "--exact-ppr",
        action="store_true",
        help="also progressive with exact PPR (power iteration) in Stage 3, the baseline of "
        "its push PPR: recall and top-k agreement",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"load average (1/5/15 min): {load_avg()}; cores: {os.cpu_count()}")

    data = args.data_dir / "2wikimultihopqa"
    questions = json.loads((data / "questions.json").read_text())[parse_slice(args.questions)]
    workdir = None
    try:
        if args.index is not None:
            path = args.index
        else:
            path = args.out
            if path is None:
                workdir = Path(tempfile.mkdtemp(prefix="graphseek-bench-"))
                path = workdir / "index"
            if not (args.reuse and (path / "manifest.json").is_file()):
                passages = load_corpus(
                    data / "2wikimultihopqa_corpus.json", chunk_size=args.chunk_size
                )
                t0 = time.perf_counter()
                Index.build(
                    passages,
                    path,
                    show_progress=not args.no_progress,
                    batch_size=args.batch_size,
                    graph=args.graph,
                )
                build_s = time.perf_counter() - t0
                print(f"build: {build_s:.1f} s, {len(passages) / build_s:.1f} passages/s")
        t0 = time.perf_counter()
        index = Index.open(path)
        print(f"index: {path} ({len(index)} passages, graph: {index.has_graph}); ", end="")
        print(f"open {(time.perf_counter() - t0) * 1000:.0f} ms")

        titles = {p.title for p in index.passages}
        lower = {t.lower(): t for t in sorted(titles, reverse=True)}
        golds = [gold_titles(q, titles, lower) for q in questions]
        queries = [q["question"] for q in questions]
        print(f"questions: {len(queries)} ({args.questions}), {sum(map(bool, golds))} with gold")

        embedder = index._encoder
        backend = getattr(embedder, "backend", "torch")
        cold = getattr(embedder, "clear_query_cache", None)
        methods: dict[str, Callable[[str], Any]] = {
            "encode": lambda q: embedder.encode([q]),
            "encode (repeat, cached)": lambda q: embedder.encode([q]),
            "bm25": lambda q: index.search(q, k=args.k, method="bm25"),
            "dense": lambda q: index.search(q, k=args.k, method="dense"),
            "hybrid": lambda q: index.search(q, k=args.k, method="hybrid"),
        }
        if args.torch_threads > 0:
            import torch

            torch.set_num_threads(args.torch_threads)
        if index.has_graph:
            from graphseek.tools.higra import HiGraConfig, HiGraRetriever
            from graphseek.tools.progressive import ProgressiveConfig, ProgressiveRetriever

            t0 = time.perf_counter()
            higra = HiGraRetriever.from_index(index, HiGraConfig())
            prog = ProgressiveRetriever.from_index(index, ProgressiveConfig())
            print(f"whole graph loaded in {time.perf_counter() - t0:.1f} s")
            methods["higra"] = lambda q: higra.hits(higra.retrieve(q), args.k)
            methods["progressive"] = lambda q: prog.retrieve(q, args.k).hits
            if args.neighbourhood:
                from graphseek.tools.graph_retrievers import higra_retriever, progressive_retriever

                reads = Index.open(path, graph_reads="neighbourhood", embedder=embedder)
                t0 = time.perf_counter()
                nb_higra, nb_prog = higra_retriever(reads), progressive_retriever(reads)
                print(f"neighbourhood catalogue read in {time.perf_counter() - t0:.1f} s")
                methods[f"higra {NB}"] = lambda q: nb_higra.hits(nb_higra.retrieve(q), args.k)
                methods[f"progressive {NB}"] = lambda q: nb_prog.retrieve(q, args.k).hits
            if args.exact_ppr:
                exact = exact_ppr_progressive(prog)
                methods["progressive (exact PPR)"] = lambda q: exact.retrieve(q, args.k).hits

        if args.methods:
            keep = set(args.methods.split(","))
            methods = {name: fn for name, fn in methods.items() if name in keep}

        def recall_of(results: list[Any]) -> float | None:
            values = []
            for hits, gold in zip(results, golds, strict=True):
                if not gold:
                    continue
                if hits and isinstance(hits[0], Hit):
                    got = {h.passage.title for h in hits[: args.k]}
                else:
                    got = {index.passages[i].title for i in hits[: args.k]}
                values.append(len(got & gold) / len(gold))
            return statistics.mean(values) if values else None

        rows: dict[str, tuple[np.ndarray, np.ndarray, float | None]] = {}
        outputs: dict[str, list[Any]] = {}
        if not args.no_reference:
            t0 = time.perf_counter()
            reference = Reference(index, index.has_graph)
            print(f"reference prepared in {time.perf_counter() - t0:.1f} s")
            wall, cpu, out = measure(lambda q: reference.search(q, args.k), queries)
            name = "ref: rank_bm25" + (" + networkx PPR" if index.has_graph else "")
            rows[name] = (wall, cpu, recall_of(out))
        for name, fn in methods.items():
            if "cached" in name:  # every question encoded once untimed, then timed again
                for q in queries:
                    fn(q)
                wall, cpu, out = measure(fn, queries)
            else:
                wall, cpu, out = measure(fn, queries, before=cold)
            rows[name] = (wall, cpu, None if name.startswith("encode") else recall_of(out))
            outputs[name] = out

        if "progressive (exact PPR)" in rows and "progressive" in outputs:
            same = sum(
                [h.passage.id for h in a] == [h.passage.id for h in b]
                for a, b in zip(
                    outputs["progressive"], outputs["progressive (exact PPR)"], strict=True
                )
            )
            print(f"progressive top-{args.k} identical to exact PPR's: {same}/{len(queries)}")
        for name in ("higra", "progressive"):
            if name in outputs and f"{name} {NB}" in outputs:
                pairs = list(zip(outputs[name], outputs[f"{name} {NB}"], strict=True))
                ids = sum([h.passage.id for h in a] == [h.passage.id for h in b] for a, b in pairs)
                scored = sum(
                    [(h.passage.id, h.score) for h in a] == [(h.passage.id, h.score) for h in b]
                    for a, b in pairs
                )
                print(
                    f"{name} {NB}: top-{args.k} ids identical to the whole graph's {ids}/"
                    f"{len(pairs)}, ids and scores {scored}/{len(pairs)}"
                )
        if f"higra {NB}" in outputs:  # (untimed) the relation context, the named difference
            same_context = 0
            for q in queries:
                whole_rel, nb_rel = higra.retrieve(q).relations, nb_higra.retrieve(q).relations
                same_context += [r.id for r in whole_rel] == [r.id for r in nb_rel]
            print(
                f"higra {NB}: relation context (ids, in order) identical to the whole graph's "
                f"{same_context}/{len(queries)}"
            )
        ref_p50 = next((float(np.median(w)) for n, (w, _, _) in rows.items() if "ref" in n), None)
        print(f"\nembedder backend: {backend}; load average now: {load_avg()}")
        print(
            f"{'method':30} {'p50 ms':>8} {'p95 ms':>8} {'CPU p50':>8} {'CPU p95':>8} "
            f"{f'R@{args.k}':>6} {'x ref':>7} {'target':>8}"
        )
        for name, (wall, cpu, rec) in rows.items():
            p50 = float(np.median(wall))
            ratio = f"{ref_p50 / p50:6.1f}x" if ref_p50 and "ref" not in name else ""
            target = f"<= {TARGETS_MS[name]:g}" if name in TARGETS_MS else ""
            print(
                f"{name:30} {p50:8.1f} {np.percentile(wall, 95):8.1f} {np.median(cpu):8.1f} "
                f"{np.percentile(cpu, 95):8.1f} {'' if rec is None else f'{rec:.3f}':>6} "
                f"{ratio:>7} {target:>8}"
            )
        print(f"(load average at the end: {load_avg()})")
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
