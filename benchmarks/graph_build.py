"""Benchmark: offline HiGra graph construction on 2WikiMultiHopQA and MuSiQue (train) corpora.

For each corpus it builds the offline graph (spaCy extraction, MiniLM alignment, linking,
hyperedges and topics, SQLite store) and prints, per phase, seconds and passages/s; entity
counts before alignment, after exact merging and after semantic merging (reduction %);
connected components before and after alignment; the graph statistics table (HiGraAgent
Tables 2, 15-18); and how long the cached adjacency takes to load. For MuSiQue train it also
imports HippoRAG's OpenIE file (checking its triple count) and prints the same for that graph.

    .venv/bin/python benchmarks/graph_build.py                      # both corpora
    .venv/bin/python benchmarks/graph_build.py --datasets musique --limit 300
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from graphseek.knowledge.graph import (  # noqa: E402
    OfflineExtractor,
    OpenIEImporter,
    SQLiteGraphStore,
    build_graph,
    format_stats,
    graph_stats,
)
from graphseek.knowledge.loaders import load_corpus  # noqa: E402

DATA = Path("/work/shared/data")
CORPORA = {
    "2wiki": "2wikimultihopqa/2wikimultihopqa_corpus.json",
    "musique": "musique/musique_train_corpus.json",
}
OPENIE = "musique/openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
EXPECTED_OPENIE_TRIPLES = 17_419


def report(name: str, store: SQLiteGraphStore) -> None:
    manifest = store.manifest
    print(f"\n== {name} (load average now {os.getloadavg()[0]:.1f}) ==")
    print(f"{'phase':<22}{'seconds':>10}{'passages/s':>12}{'CPU s':>10}{'passages/CPU s':>16}")
    for phase, t in manifest["timings"].items():
        rate = t.get("passages_per_s", "")
        cpu = t.get("cpu_seconds")
        if cpu is None:
            print(f"{phase:<22}{t['seconds']:>10.2f}{rate!s:>12}")
            continue
        n = manifest["counts"]["passages"] if phase != "extract" else t.get("passages", 0)
        per_cpu = f"{n / cpu:,.1f}" if cpu > 0 else "-"
        print(f"{phase:<22}{t['seconds']:>10.2f}{rate!s:>12}{cpu:>10.2f}{per_cpu:>16}")
    a = manifest["alignment"]
    c = manifest["components"]
    print(
        f"entities: {a['mentions']:,} mentions -> {a['before_alignment']:,} before alignment -> "
        f"{a['after_exact']:,} after exact merge -> {a['after_semantic']:,} after semantic merge "
        f"(reduction {a['reduction_pct']:.1f}%; {a['merged_pairs']:,} of "
        f"{a['candidate_pairs']:,} candidate pairs merged)"
    )
    print(
        f"connected components: {c['before_alignment']:,} before alignment -> "
        f"{c['after_alignment']:,} after"
    )
    print(f"passage matcher: {json.dumps(manifest['passage_matcher'])}")
    print(format_stats(graph_stats(store)))
    started = time.perf_counter()
    reopened = SQLiteGraphStore.open(store.dir)
    entity_adj, _ = reopened.adjacency()
    full_adj, _ = reopened.adjacency(include_passages=True)
    seconds = time.perf_counter() - started
    print(
        f"adjacency load (open + both CSR): {seconds * 1000:.0f} ms for "
        f"{entity_adj.nnz:,} + {full_adj.nnz:,} stored entries"
    )
    reopened.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path("/tmp/graphseek-graph-bench"))
    parser.add_argument("--datasets", nargs="+", default=list(CORPORA), choices=list(CORPORA))
    parser.add_argument("--limit", type=int, default=0, help="first N passages only (0: all)")
    parser.add_argument(
        "--n-process",
        type=int,
        default=None,
        help="extraction worker processes (default: one per core, up to 4)",
    )
    parser.add_argument("--no-openie", action="store_true")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=0,
        help="torch intra-op threads for MiniLM (0: torch's default); 1 is faster on a busy host",
    )
    args = parser.parse_args()
    import torch

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    print(
        f"host: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
        f"torch threads {torch.get_num_threads()}, extraction processes {args.n_process or 'auto'}"
    )

    for name in args.datasets:
        passages = load_corpus(args.data / CORPORA[name], chunk_size=0)
        if args.limit:
            passages = passages[: args.limit]
        print(f"\n### {name}: {len(passages):,} passages", flush=True)
        store = build_graph(
            passages,
            args.out / name,
            extractor=OfflineExtractor(n_process=args.n_process, show_progress=True),
        )
        report(f"{name} offline graph", store)
        store.close()

        if name == "musique" and not args.no_openie:
            started = time.perf_counter()
            importer = OpenIEImporter(args.data / OPENIE)
            seconds = time.perf_counter() - started
            s = importer.stats
            print(f"\nOpenIE import: {seconds:.2f} s ({s.docs / seconds:,.0f} docs/s)")
            ok = "OK" if s.triples_total == EXPECTED_OPENIE_TRIPLES else "MISMATCH"
            print(
                f"OpenIE file: {s.docs:,} docs, {s.entities_total:,} entities, "
                f"{s.triples_total:,} triples ({ok}: expected {EXPECTED_OPENIE_TRIPLES:,}) = "
                f"{s.triples_valid:,} valid + {s.triples_malformed:,} malformed "
                f"({s.malformed_arity:,} not 3 items, {s.malformed_empty:,} with an empty item)"
            )
            docs = importer.passages()
            if args.limit:
                docs = docs[: args.limit]
            covered = sum(importer.covers(p) for p in passages)
            print(f"corpus passages covered by the OpenIE file: {covered:,} of {len(passages):,}")
            store = build_graph(docs, args.out / f"{name}-openie", extractor=importer)
            report(f"{name} OpenIE graph", store)
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
