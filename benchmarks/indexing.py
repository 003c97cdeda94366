"""Indexing benchmark: whole-index time against the raw encoder time, passages/s, peak RSS.

For each size N (default 1000 and 10000) it makes N synthetic passages from the 2Wiki corpus
(the corpus repeated, each copy with new titles, so every passage is a distinct string) and, in
a fresh child process (so peak RSS is per size):

1. **raw encoder**: `Embedder.encode` over the passages' contents, nothing else (the baseline
   measured in the same run);
2. **index**: `Index.build(..., graph=True)`: passages, BM25, embeddings, and the offline graph
   (extraction, alignment, linking, hyperedges and topics, store), with its stage times.

It prints passages/s, the ratio index / raw encoder (target <= 2x; wall, and CPU time of the
process and its extraction workers, which a host shared with other work inflates far less), the
offline extraction rate (target >= 100 passages/s; wall, and per CPU second), peak RSS of the
process (the extraction workers are forked from it and share its pages; each adds
spaCy's working set), the tokens the build embedded (passages vs graph strings: the encoder
alone needs about (all tokens / passage tokens) x the raw encoder time; the short graph strings
cost somewhat less per token than passages), then how each stage grows with size: seconds per
1,000 passages, and the peak RSS at each graph stage's end (the graph clock records it in the
manifest's timings) with the growth of the whole run's peak between sizes, MB per 1,000.
``--text-mb X`` also indexes one plain-text file of X MB (default chunking) the same way.
The graph's entities, relations and hyperedges get static vectors (`GraphSettings.vectors`, the
default; the table is distilled once, outside the timings, as the ONNX export is; the tokens line
counts those strings as static lookups); ``--graph-vectors minilm`` runs MiniLM on them instead.
Semantic merging compares contextual mention vectors pooled from the passage pass
(`GraphSettings.alignment`, the default: the build encodes passages once, inside the graph build,
stage ``embed_passages``); ``--alignment records`` encodes each base entity's record string.
Base entities with no mention vector (every mention past the encoder's window) merge by name
(``GraphSettings.outside_window``, the default); ``--outside-window records`` embeds their
record strings with MiniLM instead.
``--raw-max N``: sizes above N skip the raw encoder pass (at 100K passages it alone takes about
25 minutes here); their raw encoder time is the largest measured size's, scaled by passage tokens
(encoding is linear in tokens), and the row says so (``raw enc s`` marked ``~``).
``--raw-twice`` runs the raw encoder again after the index and takes the mean of the two as the
baseline (on a shared host whose speed drifts, one run before the index moved the ratio by
several percent). ``--in-memory`` hands `Index.build` the passages as a list instead of a
`PassageSpool` (the spool is imported only without it, so this script also runs on commits that
predate the spool).

    .venv/bin/python benchmarks/indexing.py [--sizes 1000,10000] [--text-mb 5] [--no-graph]
        [--raw-max 10000] [--raw-twice] [--in-memory] [--graph-vectors static|minilm]
        [--alignment contextual|records] [--outside-window names|records]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
CORPUS = "2wikimultihopqa/2wikimultihopqa_corpus.json"


def synthetic(data_dir: Path, n: int) -> list[Any]:
    """N passages: the 2Wiki corpus in order, copy c > 0 retitled ``"<title> [c]"``."""
    return list(synthetic_stream(data_dir, n))


def synthetic_stream(data_dir: Path, n: int) -> Iterator[Any]:
    """`synthetic`'s passages one at a time (for a `PassageSpool`, which holds none of them)."""
    from graphseek.knowledge.passages import Passage

    corpus = json.loads((data_dir / CORPUS).read_text())
    for i in range(n):
        record = corpus[i % len(corpus)]
        copy = i // len(corpus)
        title = record["title"] if copy == 0 else f"{record['title']} [{copy}]"
        yield Passage.from_title_text(title, record["text"], source="synthetic")


def text_file(data_dir: Path, megabytes: float, path: Path) -> Path:
    """A plain-text file of about `megabytes` MB: 2Wiki paragraphs, repeated as needed."""
    corpus = json.loads((data_dir / CORPUS).read_text())
    target = int(megabytes * 1_000_000)
    written = 0
    with open(path, "w", encoding="utf-8") as f:
        i = 0
        while written < target:
            record = corpus[i % len(corpus)]
            block = f"{record['title']} ({i // len(corpus)})\n{record['text']}\n\n"
            f.write(block)
            written += len(block.encode())
            i += 1
    return path


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (forked extraction workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def embedded_tokens(index: Any, passages: list[Any]) -> dict[str, int]:
    """Tokens the build sent to the encoder, by kind: each distinct string once (the build's
    vector cache), counted with the model's tokenizer (256-token truncation, [CLS] and [SEP]).
    Passages vs graph strings is the floor of index time / raw encoder time."""
    from graphseek.knowledge.embedder import load_tokenizer, model_dir
    from graphseek.knowledge.graph.algorithms.vectors import (
        entity_text,
        hyperedge_text,
        relation_text,
    )

    tokenizer = load_tokenizer(model_dir())

    def count(texts: list[str]) -> int:
        return sum(len(e.ids) for e in tokenizer.encode_batch(texts))

    out = {"passages": count([p.content for p in passages])}
    if not index.has_graph:
        return out
    store = index.graph
    seen: set[str] = set()

    def fresh(texts: list[str]) -> list[str]:
        new = [t for t in dict.fromkeys(texts) if t not in seen]
        seen.update(new)
        return new

    base_ids, base_texts, _, _ = store.alignment_state()
    settings = store.manifest.get("settings", {})
    if settings.get("alignment") == "contextual" and settings.get("outside_window") == "names":
        base_texts = []  # no record strings: base entities without a mention vector have none
    elif settings.get("alignment") == "contextual":
        # only base entities none of whose mentions got a contextual vector embed their record
        embedded = set(store.mention_embeddings()[1])
        with sqlite3.connect(store.dir / "graph.sqlite") as con:
            covered = {
                base
                for base, mention in con.execute("SELECT base_id, id FROM mentions")
                if mention in embedded
            }
        base_texts = [t for b, t in zip(base_ids, base_texts, strict=True) if b not in covered]
    entities = store.entities()
    names = {e.id: e.name for e in entities}
    _, relation_ids = store.relation_embeddings()
    by_id = {r.id: r for r in store.relations()}
    out["alignment records"] = count(fresh(list(base_texts)))
    out["entities (new texts)"] = count(fresh([entity_text(e) for e in entities]))
    out["hyperedges"] = count(fresh([hyperedge_text(h) for h in store.hyperedges()]))
    out["relations"] = count(
        fresh([relation_text(by_id[r], names) for r in relation_ids if r in by_id])
    )
    return out


def child(args: argparse.Namespace) -> None:
    """One measurement in this process; prints one JSON line."""
    from graphseek.knowledge.dense import encode_texts
    from graphseek.knowledge.embedder import get_embedder
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.loaders import load_corpus

    work = Path(tempfile.mkdtemp(prefix="graphseek-indexing-"))
    try:
        t = time.perf_counter()
        if args.text_mb:
            source: Any = text_file(args.data_dir, args.text_mb, work / "big.txt")
            passages = load_corpus(source)
        else:
            passages = synthetic(args.data_dir, args.size)
        reading = time.perf_counter() - t
        embedder = get_embedder()  # loaded (and exported once) outside both timings
        embedder.encode(["warm up"])
        if args.graph_vectors == "static" and not args.no_graph:
            # the distilled table: made once per machine (like the ONNX export), loaded here
            from graphseek.knowledge.static_embedder import get_static_encoder

            get_static_encoder()
        rss_before = peak_rss_mb()
        raw = raw_cpu = 0.0
        if not args.skip_raw:
            t, c = time.perf_counter(), cpu_seconds()
            encode_texts(embedder, [p.content for p in passages], batch_size=args.batch_size)
            raw, raw_cpu = time.perf_counter() - t, cpu_seconds() - c
        if not args.in_memory:
            # the corpus in a temporary file, as `Index.build` reads a corpus path: the build
            # holds none of its passages (made before the timing: reading is not the build's)
            from graphseek.knowledge.graph.memory.spool import PassageSpool

            passages = PassageSpool.of(passages)
        t, c = time.perf_counter(), cpu_seconds()
        index = Index.build(
            passages,
            work / "index",
            show_progress=args.progress,
            graph=not args.no_graph,
            batch_size=args.batch_size,
            graph_options={
                "vectors": args.graph_vectors,
                "alignment": args.alignment,
                "outside_window": args.outside_window,
            },
        )
        total, total_cpu = time.perf_counter() - t, cpu_seconds() - c
        raws = [raw]
        if args.raw_twice and not args.skip_raw:
            # the baseline again after the index: the row's is the mean of the two, so a host
            # whose speed drifts during the run moves both sides of the ratio alike
            t, c = time.perf_counter(), cpu_seconds()
            encode_texts(embedder, [p.content for p in passages], batch_size=args.batch_size)
            raws.append(time.perf_counter() - t)
            raw, raw_cpu = (raw + raws[1]) / 2, (raw_cpu + cpu_seconds() - c) / 2
        stages: dict[str, float] = {}
        stage_rss: dict[str, float] = {}
        extract_rate = None
        extract_cpu = None
        if index.has_graph:
            timings = index.graph.manifest.get("timings", {})
            for name, row in timings.items():
                if name != "total_before_write":
                    stages[name] = float(row["seconds"])
                    if row.get("peak_rss_mb") is not None:
                        stage_rss[name] = float(row["peak_rss_mb"])
            if "extract" in timings:
                extract_rate = float(timings["extract"]["passages_per_s"])
                extract_cpu = timings["extract"].get("cpu_seconds")
        graph_total = sum(stages.values())
        # passages are encoded inside the graph build with contextual alignment ("embed_passages")
        stages = {"rest: bm25, dense, writes": max(0.0, total - graph_total), **stages}
        print(
            json.dumps(
                {
                    "n": len(passages),
                    "reading_s": reading,
                    "raw_encoder_s": raw,
                    "raw_encoder_runs_s": raws,
                    "index_s": total,
                    "raw_encoder_cpu_s": raw_cpu,
                    "index_cpu_s": total_cpu,
                    "stages": stages,
                    "stage_peak_rss_mb": stage_rss,
                    "extract_rate": extract_rate,
                    "extract_cpu_s": extract_cpu,
                    "peak_rss_mb": peak_rss_mb(),
                    "tokens": embedded_tokens(index, passages),
                    "rss_before_index_mb": rss_before,
                    "backend": getattr(embedder, "backend", "?"),
                    "graph_vectors": args.graph_vectors,
                    "alignment": args.alignment,
                    "outside_window": args.outside_window,
                }
            ),
            flush=True,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_child(extra: list[str], base: argparse.Namespace, skip_raw: bool = False) -> dict[str, Any]:
    command = [
        sys.executable,
        "-m",
        "benchmarks.indexing",
        "--child",
        "--data-dir",
        str(base.data_dir),
        "--batch-size",
        str(base.batch_size),
        "--graph-vectors",
        base.graph_vectors,
        "--alignment",
        base.alignment,
        "--outside-window",
        base.outside_window,
        *extra,
    ]
    if base.no_graph:
        command.append("--no-graph")
    if skip_raw:
        command.append("--skip-raw")
    if base.progress:
        command.append("--progress")
    if base.raw_twice:
        command.append("--raw-twice")
    if base.in_memory:
        command.append("--in-memory")
    # run from the repository root, so the child imports this checkout's graphseek
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"child failed ({' '.join(extra)}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def scale_raw(row: dict[str, Any], measured: dict[str, Any]) -> None:
    """Give `row` (run with --skip-raw) the raw encoder time of `measured`, scaled by the
    passages' token counts."""
    factor = row["tokens"]["passages"] / measured["tokens"]["passages"]
    row["raw_encoder_s"] = measured["raw_encoder_s"] * factor
    row["raw_encoder_cpu_s"] = measured["raw_encoder_cpu_s"] * factor
    row["raw_scaled_from"] = measured["n"]


def show(label: str, row: dict[str, Any]) -> None:
    ratio = row["index_s"] / row["raw_encoder_s"] if row["raw_encoder_s"] else float("inf")
    cpu_ratio = row["index_cpu_s"] / row["raw_encoder_cpu_s"] if row["raw_encoder_cpu_s"] else 0
    rate = row["extract_rate"]
    cpu = row.get("extract_cpu_s")
    cpu_rate = f"{row['n'] / cpu:.0f}" if cpu else "-"
    raw = f"{'~' if row.get('raw_scaled_from') else ''}{row['raw_encoder_s']:.1f}"
    print(
        f"{label:>10} {row['n']:>8} {raw:>9} {row['index_s']:>9.1f} "
        f"{row['n'] / row['index_s']:>9.1f} {ratio:>7.2f}x {cpu_ratio:>7.2f}x "
        f"{(f'{rate:.0f}' if rate else '-'):>9} {cpu_rate:>9} {row['peak_rss_mb']:>9.0f}",
        flush=True,
    )
    tokens = row.get("tokens") or {}
    if tokens:
        passages = tokens["passages"]
        static = row.get("graph_vectors") == "static"
        # with static graph vectors only alignment's records still run through MiniLM (with
        # contextual alignment, only those of base entities without a mention vector)
        minilm = {
            k: v for k, v in tokens.items() if not static or k in ("passages", "alignment records")
        }
        lookups = {k: v for k, v in tokens.items() if k not in minilm}
        floor = sum(minilm.values()) / passages if passages else 0.0

        def listed(part: dict[str, int]) -> str:
            return ", ".join(f"{k} {v:,}" for k, v in part.items() if k != "passages")

        print(
            f"{'':>10} tokens through MiniLM: passages {passages:,}"
            + (f"; graph strings: {listed(minilm)}" if listed(minilm) else "")
            + (f"; static lookups instead: {listed(lookups)}" if lookups else "")
            + f" -> MiniLM tokens / passage tokens {floor:.2f}x (the encoder-bound part of "
            "idx/raw)",
            flush=True,
        )


def main() -> None:
    from graphseek.knowledge.graph.algorithms.contextual import ALIGNMENT_VECTORS
    from graphseek.knowledge.graph.settings import OUTSIDE_WINDOW

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated passage counts")
    parser.add_argument("--text-mb", type=float, default=0.0, help="also index a text file")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-graph", action="store_true")
    parser.add_argument(
        "--graph-vectors",
        choices=("static", "minilm"),
        default="static",
        help="the graph's vector space (GraphSettings.vectors)",
    )
    parser.add_argument(
        "--alignment",
        choices=ALIGNMENT_VECTORS,
        default="contextual",
        help="how semantic merging embeds base entities (GraphSettings.alignment)",
    )
    parser.add_argument(
        "--outside-window",
        choices=OUTSIDE_WINDOW,
        default="names",
        help="base entities without a contextual vector (GraphSettings.outside_window)",
    )
    parser.add_argument("--progress", action="store_true", help="show the stage bars")
    parser.add_argument(
        "--raw-max",
        type=int,
        default=0,
        help="sizes above this skip the raw encoder pass (scaled from the largest measured)",
    )
    parser.add_argument(
        "--raw-twice",
        action="store_true",
        help="run the raw encoder before and after the index; the ratio uses their mean",
    )
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="hand Index.build the passages as a list (as a caller holding its corpus does), "
        "not spooled to a temporary file as a corpus path is",
    )
    parser.add_argument("--skip-raw", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    print(f"load average (1/5/15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    graph = (
        "no"
        if args.no_graph
        else f"yes (offline, {args.graph_vectors} vectors, {args.alignment} alignment)"
    )
    print(f"graph: {graph}; cores: {os.cpu_count()}")
    print(
        f"{'input':>10} {'passages':>8} {'raw enc s':>9} {'index s':>9} {'pass/s':>9} "
        f"{'idx/raw':>8} {'CPU i/r':>8} {'extract/s':>9} {'ext/CPU s':>9} {'peak MB':>9}"
    )
    rows: list[dict[str, Any]] = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        measured = [r for r in rows if not r.get("raw_scaled_from")]
        skip = bool(args.raw_max) and size > args.raw_max and bool(measured)
        row = run_child(["--size", str(size)], args, skip_raw=skip)
        if skip:
            scale_raw(row, measured[-1])
        rows.append(row)
        show(f"{size}", row)
        if skip:
            print(f"{'':>10} ~ raw encoder time scaled from {row['raw_scaled_from']:,} passages")
        elif len(row.get("raw_encoder_runs_s", [])) > 1:
            runs = " and ".join(f"{s:.1f}" for s in row["raw_encoder_runs_s"])
            print(f"{'':>10} raw encoder before and after the index: {runs} s (their mean above)")
    if args.text_mb:
        row = run_child(["--text-mb", str(args.text_mb)], args)
        show(f"{args.text_mb:g} MB txt", row)
        print(
            f"  {args.text_mb:g} MB text file: {row['n']} chunks read in {row['reading_s']:.1f} s"
        )
    print(f"load average now: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("targets: index <= 2x raw encoder time; offline extraction >= 100 passages/s")

    if rows:
        print("\nstage seconds per 1,000 passages (growth with size):")
        names = list(rows[-1]["stages"])
        print(f"{'stage':<28}" + "".join(f"{r['n']:>10}" for r in rows))
        for name in ["raw encoder", *names]:
            cells = []
            for r in rows:
                seconds = r["raw_encoder_s"] if name == "raw encoder" else r["stages"].get(name)
                cells.append("-" if seconds is None else f"{seconds * 1000 / r['n']:.2f}")
            print(f"{name:<28}" + "".join(f"{c:>10}" for c in cells))
        print_memory(rows)


def print_memory(rows: list[dict[str, Any]]) -> None:
    """Peak RSS (MB) of the build process at the end of each graph stage, the whole run's, and
    its growth between sizes (MB per 1,000 passages; the target is a flat build)."""
    print("\npeak RSS MB at each stage's end (the process; forked extraction workers not counted):")
    print(f"{'stage':<28}" + "".join(f"{r['n']:>10}" for r in rows))
    names = list(rows[-1].get("stage_peak_rss_mb", {}))
    for name in names:
        cells = [r.get("stage_peak_rss_mb", {}).get(name) for r in rows]
        print(f"{name:<28}" + "".join(f"{'-' if c is None else f'{c:.0f}':>10}" for c in cells))
    print(f"{'whole run':<28}" + "".join(f"{r['peak_rss_mb']:>10.0f}" for r in rows))
    for a, b in zip(rows, rows[1:], strict=False):
        if b["n"] > a["n"]:
            slope = (b["peak_rss_mb"] - a["peak_rss_mb"]) * 1000 / (b["n"] - a["n"])
            print(f"peak RSS growth {a['n']:,} -> {b['n']:,} passages: {slope:.0f} MB per 1,000")


if __name__ == "__main__":
    main()
