"""Graph retrieval benchmark: Recall@2/@5 and latency of bm25, dense, hybrid, higra, progressive,
bridge and doc_hop.

Dev slices, all with the offline graph (spaCy extraction, no LLM):

- 2WikiMultiHopQA: `2wikimultihopqa_corpus.json`, questions 0-199 of `questions.json`; gold =
  the corpus titles equal to the subjects of the question's evidence triples (exact match, else
  case-insensitive); subjects with no such title are left out.
- MuSiQue: `musique_train.json` (100 questions) over `musique_train_corpus.json`; gold = the
  paragraphs marked `is_supporting`, matched on (title, text).
- HotpotQA: `hotpotqa_train.json` (100) over its corpus; gold = the supporting titles
  (`graphseek.evaluation.datasets`).
- The documentation genres of `benchmarks/devsets/` (``pkgdocs``, ``manpages``, ``configref``,
  ``changelogs``): every answerable question (gold = the passages holding the supporting
  quotes), and for the two-hop ones the share whose second-hop passage (a quote of a document
  other than the first one named) is in the top 5 ("2nd-hop@5").

For each slice it prints the build time of the index and of the graph, the graph's size on disk
with and without its sentence files, and the sentence layer's own seconds (from the graph
manifest). ``--sentences none|pooled|encoded`` chooses how the graph is built (a separate cache
directory per choice is wise: a cached graph is reused whatever it holds).

The index and the graph are built once under ``--cache-dir`` (default
``$GRAPHSEEK_CACHE_DIR/bench-graph`` or ``~/.cache/graphseek/bench-graph``) and reused while
they hold the slice's passages (a changed corpus is built again). Latency is per query, after one warm-up query, everything in one process; higra runs offline (no LLM
seed step). The embedder keeps recent query vectors, so only the first method's latency includes
encoding the question, unless ``--cold-queries`` empties that cache before every query. A
second part times the personalised PageRank against ``networkx.pagerank`` on the 2Wiki entity
graph.

``doc_hop`` (`graphseek.tools.doc_hop`) is the second hop through the corpus's own document
names; ``--set doc_hop.keep=2 doc_hop.base=hybrid ...`` changes its `DocHopConfig`. ``--logo``
(with the genres in ``--datasets``) prints its leave-one-genre-out instead of the rows: each
setting of `LOGO_GRID` on every genre, and for each genre the setting best on the others
(`leave_one_genre_out`) measured on it ("held out").

``--index-dir DIR [DIR ...]`` times the methods on indexes already built (opened as they are,
never built, their passages not checked against the slice's corpus), each with the questions of
each slice of ``--datasets``, in this one process: the 2Wiki index beside a larger one (the
100K synthetic store of `benchmarks/bounded_build.py --one 100000 --index`) gives the latency
ratio in one run. Recall means something only on an index of the slice's own corpus.

``--bridge-seeds`` adds the rows ``higra+bridge`` and ``progressive+bridge`` (after ``higra`` and
``progressive``, for those in ``--methods``): the same retrievers seeded also on the entities
semantic bridging reaches (`Context.bridge_seeds`: at most ``MAX_BRIDGE_SEEDS``, from a bridge
retriever with the ``bridge.`` settings of ``--set``); the bridging is in their latency.

    .venv/bin/python benchmarks/graph_retrieval.py [--data-dir ../shared/data]
        [--datasets 2wiki,musique,hotpotqa,pkgdocs,manpages,configref,changelogs]
        [--questions 0:200] [--cache-dir DIR] [--build-only] [--methods hybrid,higra,bridge]
        [--sentences pooled] [--cold-queries] [--no-ppr-bench] [--bridge-seeds] [--logo]
        [--set higra.rrf_ppr_k=10 bridge.rounds=2 ...] [--index-dir DIR [DIR ...]]
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Hit, Passage, passage_id
from graphseek.tools.bridge import BridgeConfig, BridgeRetriever
from graphseek.tools.doc_hop import DocHop, DocHopConfig
from graphseek.tools.graph_access import graph_view
from graphseek.tools.graph_retrievers import MAX_BRIDGE_SEEDS
from graphseek.tools.higra import HiGraConfig, HiGraRetriever
from graphseek.tools.progressive import ProgressiveConfig, ProgressiveRetriever

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("bm25", "dense", "hybrid", "higra", "progressive", "bridge", "doc_hop")
#: the rows `--bridge-seeds` adds, each after the method it seeds
SEEDED = {"higra": "higra+bridge", "progressive": "progressive+bridge"}
GENRES = ("pkgdocs", "manpages", "configref", "changelogs")


@dataclass
class Question:
    id: str
    text: str
    gold: set[str]  # 2wiki: titles; musique: passage ids
    second: set[str] = field(default_factory=set)  # a genre's two-hop: second-hop passage ids


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


def load_named(name: str, data: Path) -> Slice:
    """A dataset of `graphseek.evaluation.datasets` (HotpotQA train, a documentation genre): its
    answerable questions with gold passage ids; a genre's two-hop ones with their second hop."""
    from graphseek.evaluation.datasets import (
        DEVSETS,
        _document_passages,
        _quoted_passage,
        load_dataset,
    )

    ds = load_dataset(name, data_dir=data, questions=None)
    passages = _dedupe(list(ds.corpus))
    out = []
    for q in ds.questions:
        if not q.answerable or not q.gold_passage_ids:
            continue
        second: set[str] = set()
        supporting = q.metadata.get("supporting") or []
        if name in DEVSETS and q.type == "two_hop" and supporting:
            first = supporting[0]["doc"]
            for s in supporting:
                if s["doc"] != first:
                    found = _quoted_passage(_document_passages(passages, s["doc"]), s["quote"])
                    if found is not None:
                        second.add(found.id)
        out.append(Question(q.id, q.question, set(q.gold_passage_ids), second))
    return Slice(name, passages, out, "id")


def dir_bytes(path: Path, names: tuple[str, ...] = ()) -> int:
    """Bytes of the files under `path` (only those named `names`, when given)."""
    return sum(
        f.stat().st_size for f in path.rglob("*") if f.is_file() and (not names or f.name in names)
    )


def ensure_index(sl: Slice, cache: Path, show_progress: bool, sentences: str) -> Index:
    """Open (or build) the slice's index and offline graph under the cache directory; print
    the build times and sizes."""
    from graphseek.knowledge.graph.build import build_graph
    from graphseek.knowledge.graph.settings import GraphSettings, RunOptions

    path = cache / sl.name / "index"
    try:
        index = Index.open(path)
        if [p.id for p in index.passages] != [p.id for p in sl.passages]:
            raise ValueError("stale index")  # the corpus changed since: build it again
    except Exception:
        t = time.perf_counter()
        index = Index.build(sl.passages, path, show_progress=show_progress)
        print(f"[{sl.name}] index built in {time.perf_counter() - t:.1f} s -> {path}", flush=True)
    assert isinstance(index, Index), "the benchmark reads a directory index's graph folder"
    graph_dir = index.dir_for("graph")
    if not (graph_dir / "manifest.json").exists():
        t = time.perf_counter()
        build_graph(
            index.passages,
            graph_dir,
            extractor="offline",
            run=RunOptions(show_progress=show_progress),
            settings=GraphSettings(sentences=sentences),
        )
        print(f"[{sl.name}] graph built in {time.perf_counter() - t:.1f} s -> {graph_dir}")
        index = Index.open(path)
        assert isinstance(index, Index)
    describe_graph(sl.name, graph_dir)
    return index


def describe_graph(name: str, graph_dir: Path) -> None:
    """Print the graph's size on disk with and without its sentence files and its build
    timings (from its manifest)."""
    from graphseek.knowledge.graph.store.sentences import SENTENCE_FILES

    manifest = json.loads((graph_dir / "manifest.json").read_text())
    total = dir_bytes(graph_dir)
    own = dir_bytes(graph_dir, SENTENCE_FILES)
    timing = manifest.get("timings", {})
    print(
        f"[{name}] graph: {total / 1e6:.1f} MB on disk, {own / 1e6:.1f} MB of it sentence "
        f"files ({(total - own) / 1e6:.1f} MB without); build "
        f"{timing.get('total_before_write', {}).get('seconds')} s before the write, passage pass "
        f"{timing.get('embed_passages', {}).get('seconds')} s, sentence layer "
        f"{timing.get('sentence_layer', {}).get('seconds')} s; sentences: "
        f"{manifest.get('sentences')}",
        flush=True,
    )


def print_load() -> None:
    """`--index-dir`: the machine's load average and this process's peak RSS so far."""
    import resource

    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"load average (1/5/15 min) {load}; peak RSS so far {peak:,.0f} MB", flush=True)


def open_existing(path: Path) -> Index:
    """`--index-dir`: the index at `path` as it is (never built); print its sizes on disk."""
    t = time.perf_counter()
    index = Index.open(path)
    assert isinstance(index, Index), "the benchmark reads a directory index's graph folder"
    print(
        f"[{path}] opened in {time.perf_counter() - t:.1f} s: {len(index)} passages, "
        f"{dir_bytes(path) / 1e6:.1f} MB on disk",
        flush=True,
    )
    if (index.dir_for("graph") / "manifest.json").exists():
        describe_graph(str(path), index.dir_for("graph"))
    return index


def recall(hits: list[Hit], gold: set[str], kind: str, k: int) -> float:
    got = {h.passage.title if kind == "title" else h.passage.id for h in hits[:k]}
    return len(got & gold) / len(gold)


def run_method(
    name: str, fn: Callable[[str], list[Hit]], sl: Slice, cold: bool = False
) -> dict[str, float]:
    """Recall and latency of one method over the slice's questions; `cold`: the embedder's
    cache of recent query vectors is emptied before each query, so every method's latency
    includes encoding the question (otherwise only the first method's does)."""
    from graphseek.knowledge.embedder import get_embedder

    questions = [q for q in sl.questions if q.gold]
    fn(questions[0].text)  # warm up lazy loads
    latencies, r2, r5, second = [], [], [], []
    for q in questions:
        if cold:
            get_embedder().clear_query_cache()
        t = time.perf_counter()
        hits = fn(q.text)
        latencies.append((time.perf_counter() - t) * 1000.0)
        r2.append(recall(hits, q.gold, sl.gold_kind, 2))
        r5.append(recall(hits, q.gold, sl.gold_kind, 5))
        if q.second:
            second.append(float(bool({h.passage.id for h in hits[:5]} & q.second)))
    ms = np.asarray(latencies)
    return {
        "R@2": statistics.mean(r2),
        "R@5": statistics.mean(r5),
        "p50": float(np.percentile(ms, 50)),
        "p95": float(np.percentile(ms, 95)),
        "n": len(questions),
        "2nd@5": statistics.mean(second) if second else float("nan"),
        "n2": len(second),
    }


def _overrides(pairs: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {"higra": {}, "progressive": {}, "bridge": {}, "doc_hop": {}}
    classes = {
        "higra": HiGraConfig,
        "progressive": ProgressiveConfig,
        "bridge": BridgeConfig,
        "doc_hop": DocHopConfig,
    }
    for pair in pairs:
        key, _, value = pair.partition("=")
        which, _, name = key.partition(".")
        kinds = {f.name: f.type for f in fields(classes.get(which, HiGraConfig))}
        if which not in classes or name not in kinds:
            raise SystemExit(f"unknown setting {key!r}")
        if value in ("True", "False"):
            out[which][name] = value == "True"
        elif value.replace(".", "", 1).lstrip("-").isdigit():
            out[which][name] = float(value) if "." in value else int(value)
        else:
            out[which][name] = value
    return out


def bench_slice(
    sl: Slice,
    index: Index,
    overrides: dict[str, dict[str, Any]],
    methods: list[str],
    cold: bool = False,
) -> None:
    t = time.perf_counter()
    view = graph_view(index)
    print(f"[{sl.name}] graph view loaded in {time.perf_counter() - t:.1f} s: {view}")
    k = 5
    table = method_table(index, overrides, k)
    rows = {}
    for name in methods:
        t = time.perf_counter()
        fn = table[name]()
        if name == "bridge":
            print(f"[{sl.name}] bridge retriever loaded in {time.perf_counter() - t:.1f} s")
        rows[name] = run_method(name, fn, sl, cold)
    n = next(iter(rows.values()))["n"]
    print(f"\n{sl.name}: {n} questions with gold, {len(index)} passages")
    print(f"{'method':18} {'R@2':>6} {'R@5':>6} {'p50 ms':>8} {'p95 ms':>8} {'2nd-hop@5':>10}")
    for name, row in rows.items():
        second = f"{row['2nd@5']:6.3f} /{row['n2']}" if row["n2"] else ""
        print(
            f"{name:18} {row['R@2']:6.3f} {row['R@5']:6.3f} {row['p50']:8.1f} {row['p95']:8.1f}"
            f" {second:>10}"
        )
    print(flush=True)


def method_table(
    index: Index, overrides: dict[str, dict[str, Any]], k: int
) -> dict[str, Callable[[], Callable[[str], list[Hit]]]]:
    """Each method's name -> a maker of its `fn(question) -> hits` (top `k`); the ``+bridge``
    rows add what `_bridged` reaches (with the bridge overrides) to their seeds."""
    reach = _bridged(index, overrides["bridge"])
    return {
        "bm25": lambda: lambda q: index.search(q, k, "bm25"),
        "dense": lambda: lambda q: index.search(q, k, "dense"),
        "hybrid": lambda: lambda q: index.search(q, k, "hybrid"),
        "higra": lambda: _higra(index, overrides["higra"], k),
        "progressive": lambda: _progressive(index, overrides["progressive"], k),
        "bridge": lambda: _bridge(index, overrides["bridge"], k),
        "doc_hop": lambda: _doc_hop(index, overrides["doc_hop"], k),
        "higra+bridge": lambda: _higra(index, overrides["higra"], k, reach),
        "progressive+bridge": lambda: _progressive(index, overrides["progressive"], k, reach),
    }


def with_seeded(methods: list[str]) -> list[str]:
    """`methods` with ``higra+bridge`` after ``higra`` and ``progressive+bridge`` after
    ``progressive`` (`--bridge-seeds`)."""
    out: list[str] = []
    for name in methods:
        out += [name] if name not in SEEDED or SEEDED[name] in methods else [name, SEEDED[name]]
    return out


def _bridged(index: Index, changes: dict[str, Any]) -> Callable[[str], list[tuple[str, float]]]:
    """`bridged(question)`: what `Context.bridge_seeds` adds to the seeds (at most
    `MAX_BRIDGE_SEEDS` entities with their activations), from a bridge retriever with
    `changes`, built on first use."""
    made: list[BridgeRetriever] = []

    def bridged(q: str) -> list[tuple[str, float]]:
        if not made:
            made.append(BridgeRetriever.from_index(index, replace(BridgeConfig(), **changes)))
        return made[0].bridged(q, MAX_BRIDGE_SEEDS)

    return bridged


def _higra(
    index: Index,
    changes: dict[str, Any],
    k: int,
    bridged: Callable[[str], list[tuple[str, float]]] | None = None,
) -> Callable[[str], list[Hit]]:
    higra = HiGraRetriever.from_index(index, replace(HiGraConfig(), **changes))
    if bridged is None:
        return lambda q: higra.hits(higra.retrieve(q), k)
    return lambda q: higra.hits(higra.retrieve(q, extra_seeds=bridged(q)), k)


def _progressive(
    index: Index,
    changes: dict[str, Any],
    k: int,
    bridged: Callable[[str], list[tuple[str, float]]] | None = None,
) -> Callable[[str], list[Hit]]:
    prog = ProgressiveRetriever.from_index(index, replace(ProgressiveConfig(), **changes))
    if bridged is None:
        return lambda q: prog.retrieve(q, k).hits
    return lambda q: prog.retrieve(q, k, extra_seeds=[e for e, _ in bridged(q)]).hits


def _bridge(index: Index, changes: dict[str, Any], k: int) -> Callable[[str], list[Hit]]:
    bridge = BridgeRetriever.from_index(index, replace(BridgeConfig(), **changes))
    return lambda q: bridge.retrieve(q, k).hits


def _doc_hop(index: Index, changes: dict[str, Any], k: int) -> Callable[[str], list[Hit]]:
    hop = DocHop.from_index(index, replace(DocHopConfig(), **changes))
    return lambda q: hop.retrieve(q, k)


#: `--logo`'s grid: each `DocHopConfig` field and the values it tries (1,728 settings)
LOGO_GRID: dict[str, tuple[Any, ...]] = {
    "base": ("bm25", "hybrid"),
    "source_depth": (3, 5, 10),
    "keep": (1, 2, 3),
    "max_docs": (1, 2),
    "per_doc": (1, 2),
    "order": ("sentence", "question"),
    "query": ("question", "residual", "question+sentence", "residual+sentence"),
    "within": ("bm25", "sentence", "both"),
}


def sweep_doc_hop(
    sl: Slice, index: Index, settings: list[dict[str, Any]], base: dict[str, Any]
) -> list[tuple[float, float]]:
    """(second-hop share of the two-hop questions, R@5 of all) of doc_hop with each setting
    (over `base`, the ``doc_hop.`` overrides) on a genre; the first hop is searched once."""
    from functools import lru_cache

    from graphseek.tools.doc_hop import shared_names

    index.search = lru_cache(maxsize=None)(index.search)  # type: ignore[method-assign]
    hop = DocHop.from_index(index, replace(DocHopConfig(), **base))
    hop.shared = shared_names(index, hop.names, hop.config.max_holders)  # once, not per setting
    questions = [q for q in sl.questions if q.gold]
    out = []
    for setting in settings:
        h = hop.with_config(**setting)
        r5, second = [], []
        for q in questions:
            hits = h.retrieve(q.text, 5)
            r5.append(recall(hits, q.gold, sl.gold_kind, 5))
            if q.second:
                second.append(float(bool({x.passage.id for x in hits} & q.second)))
        out.append((statistics.mean(second), statistics.mean(r5)))
    return out


def leave_one_genre_out(
    settings: list[dict[str, Any]], results: dict[str, list[tuple[float, float]]]
) -> None:
    """Print, for each genre, the setting with the best mean second-hop share on the others
    (ties: the best mean R@5 there, then the first in grid order) and its figures on the genre
    ("held out"), then the same choice over every genre (the default's)."""

    def choose(genres: list[str]) -> int:
        def key(i: int) -> tuple[float, float, int]:
            share = statistics.mean(results[g][i][0] for g in genres)
            return (
                round(share, 9),
                round(statistics.mean(results[g][i][1] for g in genres), 9),
                -i,
            )

        return max(range(len(settings)), key=key)

    genres = list(results)
    print(f"\nleave one genre out over {len(settings)} doc_hop settings: held out R@5 / 2nd-hop@5")
    for g in genres:
        i = choose([o for o in genres if o != g])
        print(
            f"  {g:12} {results[g][i][1]:6.3f} / {results[g][i][0]:4.0%}  (chosen: {settings[i]})"
        )
    i = choose(genres)
    print(f"all genres' choice: {settings[i]}")
    for g in genres:
        print(f"  {g:12} {results[g][i][1]:6.3f} / {results[g][i][0]:4.0%}")


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
    parser.add_argument(
        "--logo", action="store_true",
        help="doc_hop leave one genre out over LOGO_GRID on the genres of --datasets (with the "
        "doc_hop. overrides of --set); no other row",
    )  # fmt: skip
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument(
        "--cold-queries", action="store_true",
        help="encode every question again for every method (latency includes encoding)",
    )  # fmt: skip
    parser.add_argument(
        "--sentences", default="pooled", choices=("pooled", "encoded", "none"),
        help="how a graph built here makes its sentence nodes",
    )  # fmt: skip
    parser.add_argument(
        "--bridge-seeds", action="store_true",
        help="add the rows higra+bridge and progressive+bridge: seeded also on the entities "
        "semantic bridging reaches (Context.bridge_seeds)",
    )  # fmt: skip
    parser.add_argument(
        "--index-dir", type=Path, nargs="+", default=[], metavar="DIR",
        help="time on these existing indexes (never built) with each slice's questions; recall "
        "means something only on an index of the slice's corpus",
    )  # fmt: skip
    args = parser.parse_args()
    if args.index_dir and (args.logo or args.build_only):
        raise SystemExit("--index-dir times existing indexes: no --logo or --build-only")
    logging.basicConfig(level=logging.WARNING)
    overrides = _overrides(args.set)
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS) - set(SEEDED.values())
    if unknown:
        known = (*METHODS, *SEEDED.values())
        raise SystemExit(f"unknown methods {sorted(unknown)}; choose from {known}")
    if args.bridge_seeds:
        methods = with_seeded(methods)

    loaders: dict[str, Callable[[], Slice]] = {
        "2wiki": lambda: load_2wiki(args.data_dir / "2wikimultihopqa", parse_slice(args.questions)),
        "musique": lambda: load_musique(args.data_dir / "musique", slice(None)),
        "hotpotqa": lambda: load_named("hotpotqa-train", args.data_dir),
    }
    for genre in GENRES:
        loaders[genre] = lambda genre=genre: load_named(genre, args.data_dir)  # type: ignore[misc]
    grid = [dict(zip(LOGO_GRID, v, strict=True)) for v in itertools.product(*LOGO_GRID.values())]
    sweeps: dict[str, list[tuple[float, float]]] = {}
    for name in args.datasets.split(","):
        sl = loaders[name]()
        for path in args.index_dir:
            print_load()
            bench_slice(
                replace(sl, name=f"{name} @ {path}"),
                open_existing(path),
                overrides,
                methods,
                args.cold_queries,
            )
        if args.index_dir:
            print_load()
            continue
        index = ensure_index(sl, args.cache_dir, not args.no_progress, args.sentences)
        if args.build_only:
            continue
        if args.logo:
            sweeps[name] = sweep_doc_hop(sl, index, grid, overrides["doc_hop"])
            print(f"[{name}] {len(grid)} doc_hop settings", flush=True)
            continue
        bench_slice(sl, index, overrides, methods, args.cold_queries)
        if name == "2wiki" and not args.no_ppr_bench:
            bench_ppr(index)
    if sweeps:
        leave_one_genre_out(grid, sweeps)


if __name__ == "__main__":
    main()
