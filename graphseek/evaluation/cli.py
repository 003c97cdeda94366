"""`graphseek eval`: argument definitions and the command, for `graphseek/cli.py` to register.

    parser = subparsers.add_parser("eval", help="evaluate on multi-hop QA datasets")
    add_eval_arguments(parser)
    parser.set_defaults(func=run_eval_command)

It also runs standalone: `python -m graphseek.evaluation --dataset 2wiki --questions 0:200`.
Python callers use `run_eval(...)`, which returns the records and the summary.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphseek.errors import GraphseekError
from graphseek.evaluation.configs import EvalConfig, baseline_configs
from graphseek.evaluation.datasets import DATASETS, Dataset, load_dataset
from graphseek.evaluation.index_cache import cached_index
from graphseek.evaluation.judge import Judge
from graphseek.evaluation.report import write_report
from graphseek.evaluation.retrieval import (
    RetrievalReport,
    configured_retrievers,
    evaluate_retrieval,
    registered_retrievers,
)
from graphseek.evaluation.runner import run_evaluation
from graphseek.evaluation.system import SystemFn

__all__ = ["add_eval_arguments", "eval_main", "make_configs", "run_eval", "run_eval_command"]

DEFAULT_TOPOLOGIES = ("naive", "dual_agent")
DEFAULT_RETRIEVERS = ("hybrid",)
RETRIEVAL_ONLY_DEFAULT = ("bm25", "dense", "hybrid")


def _split(values: Sequence[str] | None) -> list[str]:
    """Repeatable options that also accept comma-separated lists."""
    out: list[str] = []
    for v in values or []:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return list(dict.fromkeys(out))


def _parse_context(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--context expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def add_eval_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the `graphseek eval` options to `parser` (returned for chaining)."""
    parser.add_argument(
        "--dataset",
        action="append",
        metavar="NAME|PATH",
        help=f"dataset name ({', '.join(DATASETS)}), question file, or NAME=FILE (held-out "
        "sets kept outside the repo, e.g. docqa-heldout=FILE); repeatable",
    )
    parser.add_argument(
        "--questions",
        default="0:200",
        metavar="START:STOP",
        help="question index range, e.g. 0:200 (default), 50:, :20, or 'all'",
    )
    parser.add_argument(
        "--topology",
        action="append",
        metavar="T",
        help="topology to evaluate; repeatable or comma-separated (default: naive,dual_agent)",
    )
    parser.add_argument(
        "--retriever",
        action="append",
        metavar="R",
        help="retriever for each topology, repeatable (default: hybrid; with --retrieval-only: "
        "bm25,dense,hybrid)",
    )
    parser.add_argument("--llm", default="offline", metavar="SPEC", help="model spec (offline)")
    parser.add_argument(
        "--judge",
        default=None,
        metavar="SPEC",
        help="judge model spec; default: the offline rule (SubEM or F1 >= 0.8)",
    )
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="also run naive with bm25, dense and hybrid retrieval as reference rows",
    )
    parser.add_argument(
        "--retrieval-only",
        action="store_true",
        help="score the retrievers alone (Recall@k, P/R/F1 at k=5); no answering",
    )
    parser.add_argument(
        "--k", default="2,5,10", metavar="K,K", help="Recall@k values for --retrieval-only"
    )
    parser.add_argument(
        "--context",
        action="append",
        metavar="KEY=VALUE",
        help="extra setting passed to every run, e.g. top_k=5 or max_turns=4; repeatable. With "
        "--retrieval-only, the retriever settings: bridge_seeds=true scores higra and "
        "progressive seeded by semantic bridging (rows higra+bridge, progressive+bridge)",
    )
    parser.add_argument(
        "--llm-context",
        type=int,
        default=None,
        metavar="N",
        help="the model's context window in tokens (default: what the server reports, else the "
        "model family's); same as --context context_window=N",
    )
    parser.add_argument("--out", default="eval-out", metavar="DIR", help="output directory")
    parser.add_argument(
        "--concurrency", type=int, default=1, metavar="N", help="questions in flight (default 1)"
    )
    parser.add_argument("--data-dir", default=None, metavar="DIR", help="dataset directory")
    parser.add_argument(
        "--index-dir",
        default=None,
        metavar="DIR",
        help="index cache (default $GRAPHSEEK_CACHE_DIR/indexes or ~/.cache/graphseek/indexes); "
        "the knowledge graph is built into it when a topology or retriever needs one",
    )
    parser.add_argument(
        "--index",
        default=None,
        metavar="PATH|URI",
        help="evaluate against this index (a directory or a postgresql://...?schema= URI built "
        "from the dataset's corpus) instead of the cached one",
    )
    parser.add_argument(
        "--llm-cache",
        default=None,
        metavar="PATH",
        help="LLM response cache (OUT/llm_cache.sqlite)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def make_configs(
    topologies: Sequence[str] = DEFAULT_TOPOLOGIES,
    retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
    *,
    llm: Any = "offline",
    baselines: bool = False,
    context: dict[str, Any] | None = None,
) -> list[EvalConfig]:
    """One configuration `<topology>-<retriever>` per pair, plus the baselines, names unique."""
    configs = [
        EvalConfig(name=f"{t}-{r}", topology=t, retriever=r, llm=llm, context=dict(context or {}))
        for t in topologies
        for r in retrievers
    ]
    if baselines:
        configs += baseline_configs(llm)
    unique: dict[str, EvalConfig] = {}
    for c in configs:
        unique.setdefault(c.name, c)
    return list(unique.values())


def _check_names(topologies: Sequence[str], retrievers: Sequence[str]) -> None:
    """Unknown topology or retriever names fail at once, before any data or model is loaded,
    naming the closest known ones."""
    from graphseek.graphs import check_topology
    from graphseek.state.validation import check_name

    for topology in topologies:
        check_topology(topology)
    known = registered_retrievers()
    for retriever in retrievers:
        check_name("retriever", retriever, known)


def run_eval(
    datasets: Sequence[str | Dataset],
    *,
    questions: str | None = "0:200",
    topologies: Sequence[str] = DEFAULT_TOPOLOGIES,
    retrievers: Sequence[str] | None = None,
    llm: Any = "offline",
    judge: Any = None,
    baselines: bool = False,
    retrieval_only: bool = False,
    k_values: Sequence[int] = (2, 5, 10),
    context: dict[str, Any] | None = None,
    out: str | Path = "eval-out",
    concurrency: int = 1,
    data_dir: str | Path | None = None,
    index_dir: str | Path | None = None,
    llm_cache: str | Path | None = None,
    progress: bool = True,
    system: SystemFn | None = None,
    index_factory: Callable[[Dataset], Any] | None = None,
) -> dict[str, Any]:
    """Load the datasets, run (or resume) the evaluation and write the report under `out`.

    Returns {"out", "records", "summary", "retrieval"}. With `retrieval_only` the retrievers
    are scored alone (`evaluate_retrieval`) and written to `retrieval.json` and the report;
    of `context` they take only the retriever settings (`configured_retrievers`).
    `system` and `index_factory` replace `graphseek.api.ask` and the cached index (tests).
    """
    out_dir = Path(out)
    if system is None and not retrieval_only:
        _check_names(topologies, retrievers or DEFAULT_RETRIEVERS)
    elif retrieval_only and index_factory is None:
        _check_names([], retrievers or RETRIEVAL_ONLY_DEFAULT)
    loaded = [
        d if isinstance(d, Dataset) else load_dataset(d, data_dir=data_dir, questions=questions)
        for d in datasets
    ]
    if not loaded:
        raise ValueError("no dataset given: pass at least one --dataset NAME|PATH")
    records: list[dict[str, Any]] = []
    reports: list[RetrievalReport] = []
    if retrieval_only:
        names = list(retrievers or RETRIEVAL_ONLY_DEFAULT)
        graph = any(name not in ("bm25", "dense", "hybrid") for name in names)
        fns = configured_retrievers(names, context)
        for ds in loaded:
            if index_factory is not None:
                index = index_factory(ds)
            else:
                index = cached_index(ds, index_dir, graph=graph)
            reports.append(evaluate_retrieval(ds, fns, k_values, index=index, progress=progress))
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "retrieval.json").write_text(
            json.dumps([r.model_dump(mode="json") for r in reports], indent=1), encoding="utf-8"
        )
    else:
        configs = make_configs(
            topologies,
            retrievers or DEFAULT_RETRIEVERS,
            llm=llm,
            baselines=baselines,
            context=context,
        )
        cache = str(llm_cache) if llm_cache else str(out_dir / "llm_cache.sqlite")
        records = run_evaluation(
            loaded,
            configs,
            out_dir,
            system=system,
            index_factory=index_factory,
            judge=Judge(judge, cache=cache),
            concurrency=concurrency,
            index_dir=index_dir,
            llm_cache=cache,
            progress=progress,
        )
    summary = write_report(records, out_dir, retrieval=reports)
    return {"out": out_dir, "records": records, "summary": summary, "retrieval": reports}


def _given_index(target: str) -> Callable[[Dataset], Any]:
    """An index factory opening `target` (checked to hold the dataset's corpus)."""

    def open_index(ds: Dataset) -> Any:
        from graphseek.knowledge.index import Index

        index = Index.open(target)
        corpus = {p.id for p in ds.corpus}
        if len(index) != len(corpus) or any(p.id not in corpus for p in index.passages):
            raise ValueError(
                f"The index at {target} does not hold the corpus of {ds.name} "
                f"({len(index)} passages, the corpus has {len(corpus)}); build it from that corpus."
            )
        return index

    return open_index


def _error_line(console: Any, text: str) -> None:
    """One red line whatever the terminal width; brackets in `text` are not rich markup."""
    console.print(text, style="red", markup=False, highlight=False, soft_wrap=True)


def run_eval_command(args: argparse.Namespace) -> int:
    """Run `graphseek eval` from parsed arguments; print the table; return the exit status."""
    from rich.console import Console

    console = Console(stderr=False)
    try:
        k_values = tuple(int(k) for k in _split([args.k]))
        outcome = run_eval(
            _split(args.dataset),
            questions=args.questions,
            topologies=_split(args.topology) or DEFAULT_TOPOLOGIES,
            retrievers=_split(args.retriever) or None,
            llm=args.llm,
            judge=args.judge,
            baselines=args.baselines,
            retrieval_only=args.retrieval_only,
            k_values=k_values,
            context=_parse_context(args.context)
            | ({"context_window": args.llm_context} if args.llm_context is not None else {}),
            out=args.out,
            concurrency=args.concurrency,
            data_dir=args.data_dir,
            index_dir=args.index_dir,
            llm_cache=args.llm_cache,
            progress=not args.no_progress,
            index_factory=_given_index(args.index) if args.index else None,
        )
    except (GraphseekError, ValueError, KeyError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        known = f"; known retrievers: {', '.join(registered_retrievers())}"
        # one line on stderr, as every other command's error (stdout is the table's)
        _error_line(
            Console(stderr=True),
            f"graphseek eval: {msg}{known if isinstance(exc, KeyError) else ''}",
        )
        return 2
    out_dir = outcome["out"]
    # the markdown source, not a rendering: tables stay readable at any terminal width
    console.print(
        (out_dir / "table.md").read_text(encoding="utf-8"),
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    console.print(f"\nwrote {', '.join(str(out_dir / f) for f in outcome['summary']['files'])}")
    if outcome["records"]:
        console.print(f"records: {out_dir / 'records.jsonl'}")
    return 0


def eval_main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `python -m graphseek.evaluation` (argv: the `graphseek eval` options)."""
    parser = argparse.ArgumentParser(prog="graphseek eval", description=__doc__.splitlines()[0])
    add_eval_arguments(parser)
    return run_eval_command(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(eval_main())
