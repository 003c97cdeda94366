"""The `graphseek` command line: demo, index, add, remove, ask, topologies, stats, eval."""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphseek.errors import GraphseekError, IndexBusyError

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

GRAPH_VECTORS = ("static", "minilm")
"""`graphseek index --graph-vectors` choices, default first: `GraphSettings.vectors` and
`VECTOR_SPACES` of graphseek.knowledge.graph.settings (not imported here, so the CLI starts fast;
a test keeps them equal)."""

ALIGNMENT_VECTORS = ("contextual", "records")
"""`graphseek index --alignment` choices, default first: `GraphSettings.alignment` and
`ALIGNMENT_VECTORS` of graphseek.knowledge.graph.algorithms.contextual (a test keeps them equal)."""

DEMO_PACKAGE = "graphseek.knowledge.demo"


def _cache_dir() -> Path:
    """$GRAPHSEEK_CACHE_DIR, else ~/.cache/graphseek (the evaluation's index cache lives there too)."""
    base = os.environ.get("GRAPHSEEK_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "graphseek"
    )
    return Path(base).expanduser()


def demo_files() -> tuple[Path, Path]:
    root = resources.files(DEMO_PACKAGE)
    return Path(str(root / "demo_corpus.json")), Path(str(root / "demo_questions.json"))


def demo_index(rebuild: bool = False, quiet: bool = False) -> Any:
    """Build (once) or reuse the index of the bundled demo corpus, keyed by the corpus content."""
    from graphseek.knowledge.index import Index

    corpus, _ = demo_files()
    digest = hashlib.sha1(corpus.read_bytes()).hexdigest()[:10]
    path = _cache_dir() / f"demo-index-{digest}"
    if path.exists() and not rebuild:
        try:
            return Index.open(path)
        except GraphseekError:
            pass
    try:
        return Index.build(corpus, path, show_progress=not quiet, graph=True)
    except IndexBusyError:  # another `graphseek demo` is building it: wait for that one
        from graphseek.knowledge.atomic import hold

        with hold(path, timeout=-1):
            pass
        return Index.open(path)


#: how many passages the text of an abstention shows (`--json` has every evidence item)
SHOWN_ON_ABSTENTION = 3


def _marked(text: str, span: str) -> str:
    """`text` as rich markup with `span` (where it occurs) in bold."""
    from rich.markup import escape

    at = text.find(span) if span else -1
    if at < 0:
        return escape(text)
    end = at + len(span)
    return f"{escape(text[:at])}[bold]{escape(text[at:end])}[/bold]{escape(text[end:])}"


def _snippet(e: Any) -> str:
    """An evidence item's sentence with its context (the neighbouring sentences dimmed), else
    the start of its passage, as rich markup with the candidate answer span in bold."""
    from rich.markup import escape

    if not e.sentence:
        return escape(e.text[:200] + ("…" if len(e.text) > 200 else ""))
    context = e.context or e.sentence
    at = context.find(e.sentence)
    if at < 0:
        return _marked(e.sentence, e.span)
    before, after = context[:at].strip(), context[at + len(e.sentence) :].strip()
    span = "" if e.span and e.span in e.sentence else e.span  # bold once, where it is
    return (
        (f"[dim]{_marked(before, span)}[/dim] " if before else "")
        + _marked(e.sentence, e.span)
        + (f" [dim]{_marked(after, span)}[/dim]" if after else "")
    )


def _readers_line(readings: list[dict[str, Any]], diagnostics: dict[str, Any]) -> str:
    """One line on an escalation cascade: how many drafts each reader settled and passed on,
    with its model calls, and which reader gave the answer."""
    parts = []
    for name, cost in (diagnostics.get("reader_usage") or {}).items():
        mine = [r for r in readings if r.get("reader") == name]
        settled = sum(r.get("outcome") == "answered" for r in mine)
        calls = f", {cost.get('llm_calls', 0)} model calls" if name != "offline" else ""
        parts.append(f"{name} settled {settled} of {len(mine)}{calls}")
    by = diagnostics.get("answered_by")
    return "readers: " + "; ".join(parts) + (f"; answered by {by}" if by else "")


def _print_result(result: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.to_public_dict(), ensure_ascii=False))
        return
    from rich.console import Console
    from rich.markup import escape

    console = Console()
    console.print(f"[bold]Question:[/bold] {escape(result.question)}")
    evidence, related = result.evidence, []
    if result.abstained:
        console.print(
            f"[bold yellow]No confident answer[/bold yellow] "
            f"({escape(result.abstain_reason.rstrip('.'))})."
            + (" Most relevant:" if evidence else " Nothing relevant was retrieved.")
        )
        evidence = evidence[:SHOWN_ON_ABSTENTION]
    else:
        console.print(f"[bold green]Answer:[/bold green] {escape(result.answer)}")
        # the grounding first; the other sentences the run found most relevant after it
        related = [e for e in evidence if not e.supports_answer]
        evidence = [e for e in evidence if e.supports_answer]
    for group, header in ((evidence, ""), (related, "  [dim]Also relevant:[/dim]")):
        if group and header:
            console.print(header)
        for e in group:
            console.print(f"  [cyan]{escape(f'[{e.passage_id}] {e.title}')}[/cyan]: {_snippet(e)}")
    readings = result.diagnostics.get("readings") or []
    if readings:
        console.print(f"[dim]{escape(_readers_line(readings, result.diagnostics))}[/dim]")
    u = result.usage
    console.print(
        f"[dim]trace: {' → '.join(result.trace)}\n"
        f"usage: {u.llm_calls} LLM calls"
        + (f" ({u.failed_calls} failed)" if u.failed_calls else "")
        + f", {u.prompt_tokens}+{u.completion_tokens} tokens"
        + (" (estimated)" if u.tokens_estimated else "")
        + f", {u.llm_seconds:.2f} s in the model, {u.seconds:.2f} s in all[/dim]"
    )


def _ask_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "topology": args.topology,
        "llm": args.llm,
        "retriever": args.retriever,
        "bridge_seeds": args.bridge_seeds,
        "agents": args.agents,
        "mode": args.mode,
        "top_k": args.top_k,
        "max_turns": args.max_turns,
        "max_llm_calls": args.max_llm_calls,
        "max_tokens": args.max_tokens,
        "llm_timeout": args.llm_timeout,
        "context_window": args.llm_context,
        "on_model_failure": args.on_model_failure,
        "profile": args.profile,
        "abstain_threshold": args.abstain_threshold,
        "max_question_chars": args.max_question_chars,
        "reranker": args.reranker,
        "readers": args.readers,
        "read_by": args.read_by,
    }


def _checked_question(args: argparse.Namespace, question: str) -> str:
    """Every argument of an `ask` / `demo` run checked before an index or a model loads."""
    from graphseek.api import check_settings
    from graphseek.state.validation import check_question

    kwargs = _ask_kwargs(args)
    limit = kwargs.pop("max_question_chars")
    text = check_question(question, limit)
    check_settings(kwargs.pop("topology"), kwargs.pop("llm"), **kwargs)
    return text


def cmd_demo(args: argparse.Namespace) -> int:

    _, questions_file = demo_files()
    questions = json.loads(questions_file.read_text())
    if args.profile is None:
        args.profile = "wikipedia"  # the bundled demo corpus is a set of encyclopedia articles
    question = args.question or questions[0]["question"]
    return _answer(args, question, lambda: demo_index(rebuild=args.rebuild, quiet=args.json))


def _answer(args: argparse.Namespace, question: str, load_index: Callable[[], IndexStore]) -> int:
    """Check the arguments, open the index, ask, print. With --json exactly one object is printed
    whatever happens (an error also goes to stderr, exit 2)."""
    from graphseek.api import ask

    try:
        text = _checked_question(args, question)
        result = ask(load_index(), text, **_ask_kwargs(args))
    except Exception as exc:
        if not args.json:
            raise
        _print_error_json(exc)
        print(f"graphseek: error: {_error_line(exc)}", file=sys.stderr)
        return 2
    _print_result(result, args.json)
    return 0


def _report_skipped(skipped: list[Any]) -> None:
    """One summary line of what --on-bad-file skip left out, then one line per item (10 at most)."""
    if not skipped:
        return
    noun = "input" if len(skipped) == 1 else "inputs"
    print(f"graphseek: skipped {len(skipped)} bad {noun}:", file=sys.stderr)
    for item in skipped[:10]:
        print(f"  {item}", file=sys.stderr)
    if len(skipped) > 10:
        print(f"  … and {len(skipped) - 10} more", file=sys.stderr)


def cmd_index(args: argparse.Namespace) -> int:
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.loaders import Skipped, iter_corpus

    if args.chunk_size < 0:
        raise ValueError(f"--chunk-size must be 0 (no chunking) or more, got {args.chunk_size}.")
    if args.graph_llm:
        from graphseek.llm.factory import resolve_spec

        resolve_spec(args.graph_llm, "extractor")
    from graphseek.knowledge.embedders import parse_embedder_spec

    parse_embedder_spec(args.embedder)  # a bad spec fails before the corpus is read
    from graphseek.knowledge.sharded import sharding_for

    sharding_for(args.workers, args.scheduler)  # so does a sharded build without Dask
    if args.memory_budget is not None:
        if args.no_graph:
            raise ValueError(
                "--memory-budget bounds the knowledge graph's build; --no-graph has none"
            )
        from graphseek.knowledge.graph.memory.budget import parse_size

        parse_size(args.memory_budget)
    from graphseek.knowledge.graph.memory.spool import PassageSpool
    from graphseek.knowledge.progress import bar as progress_bar

    skipped: list[Skipped] = []
    with progress_bar("reading", None, not args.quiet) as bar:
        # into a temporary file as it is read: the build holds none of the passages
        passages = PassageSpool.of(
            iter_corpus(
                args.corpus,
                chunk_size=args.chunk_size,
                on_bad_file=args.on_bad_file,
                skipped=skipped,
            )
        )
        bar.update(len(passages))
    _report_skipped(skipped)
    options: dict[str, Any] = {"vectors": args.graph_vectors, "alignment": args.alignment}
    if args.graph_llm:
        options["llm"] = args.graph_llm
    if args.memory_budget is not None:
        options["memory_budget"] = args.memory_budget
    index = Index.build(
        passages,
        args.out,
        show_progress=not args.quiet,
        graph=not args.no_graph,
        graph_options=options,
        embedder=args.embedder,
        workers=args.workers,
        scheduler=args.scheduler,
    )
    graph = " and its knowledge graph" if index.has_graph else ""
    print(f"Indexed {len(index)} passages{graph} into {index.location_text}")
    return 0


DELTA_HINT_PASSAGES = 20_000
"""From this many passages, an exact `add` says that `--delta` exists: an exact add re-assembles
the whole graph, which takes minutes at this size, while a delta add's time grows little with
the store (docs/scale.md gives both, with the command that measures them)."""


def cmd_add(args: argparse.Namespace) -> int:
    """Read the paths (as `index` reads a corpus) and add the passages the index lacks: only
    they are embedded and, with a graph, extracted and aligned; the index is rewritten
    atomically under its lock, like `index`."""
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.loaders import read_corpus

    if args.chunk_size < 0:
        raise ValueError(f"--chunk-size must be 0 (no chunking) or more, got {args.chunk_size}.")
    read: dict[str, Any] = {}
    for path in args.paths:
        loaded = read_corpus(path, chunk_size=args.chunk_size, on_bad_file=args.on_bad_file)
        _report_skipped(loaded.skipped)
        for passage in loaded.passages:
            read.setdefault(passage.id, passage)
    index = Index.open(args.index_dir)
    new = [p for p in read.values() if p.id not in index]
    if not new:
        print(f"Nothing to add: {_count(len(read))} already in {index.location_text}.")
        return 0
    options = {"delta": True} if args.delta else None
    if args.delta and not index.has_graph:
        print("(--delta changes a knowledge graph; this index has none: added as usual)")
    elif not args.delta and index.has_graph and len(index) >= DELTA_HINT_PASSAGES:
        print(
            f"(re-assembling the graph of {len(index):,} passages takes minutes; "
            "`graphseek add --delta` changes only what the new documents reach)",
            file=sys.stderr,
        )
    index.add_documents(new, show_progress=not args.quiet, graph_options=options)
    there = f" ({len(read) - len(new)} already there)" if len(read) > len(new) else ""
    print(f"Added {_count(len(new))}{there} to {index.location_text}; it holds {len(index)}.")
    _print_documents(new, "+")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove the passages of the documents named by source, title or passage id (each name
    must match), and from the graph what only they supported; atomically, like `index`."""
    from graphseek.knowledge.index import Index, select_passages

    if not (args.source or args.title or args.id):
        raise ValueError("Name what to remove: --source PATH, --title TITLE or --id PASSAGE_ID.")
    index = Index.open(args.index_dir)
    chosen = select_passages(
        index.passages, sources=args.source or (), titles=args.title or (), ids=args.id or ()
    )
    index.delete_documents([p.id for p in chosen], show_progress=not args.quiet)
    print(f"Removed {_count(len(chosen))} from {index.location_text}; {len(index)} left.")
    _print_documents(chosen, "-")
    return 0


#: documents `add` / `remove` list, one line each
DOCUMENTS_SHOWN = 20


def _count(n: int) -> str:
    return f"{n} passage" if n == 1 else f"{n} passages"


def _print_documents(passages: list[Any], sign: str) -> None:
    """One line per document (source) of `passages`: its passage count and first titles."""
    by_source: dict[str, list[Any]] = {}
    for p in passages:
        by_source.setdefault(p.source or "(no source)", []).append(p)
    for shown, (source, items) in enumerate(by_source.items()):
        if shown == DOCUMENTS_SHOWN:
            print(f"  … and {len(by_source) - shown} more documents")
            break
        titles = list(dict.fromkeys(p.title for p in items if p.title))
        named = ", ".join(titles[:3]) + (", …" if len(titles) > 3 else "")
        print(f"  {sign} {source}: {_count(len(items))}" + (f" ({named})" if named else ""))


def cmd_stats(args: argparse.Namespace) -> int:
    """Graph statistics; with --verify, first every file's checksum against the manifest's."""
    from graphseek.knowledge.index import Index

    index = Index.open(args.index_dir)  # sizes, headers and counts checked here
    verified = _verify(index) if args.verify else None
    if verified is not None and not index.has_graph:  # the files are what was asked about
        if args.json:
            print(json.dumps({"verified": verified}))
        else:
            print(f"Index {index.location_text}: {len(index)} passages, no knowledge graph")
            print(_verified_line(verified))
        return 0
    from graphseek.knowledge.graph import format_stats, graph_stats

    stats = graph_stats(index.graph)
    if args.json:
        print(json.dumps(stats if verified is None else {**stats, "verified": verified},
                         default=str))  # fmt: skip
    else:
        print(f"Index {index.location_text}: {len(index)} passages")
        if verified is not None:
            print(_verified_line(verified))
        print(format_stats(stats))
    return 0


def _verify(index: IndexStore) -> dict[str, int]:
    """`stats --verify`: every recorded file's SHA-256 against the manifest's record; the
    damaged files named in one line (`IndexFormatError`)."""
    from graphseek.errors import IndexFormatError
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.integrity import rebuild_hint, verify_index

    if not isinstance(index, Index):
        raise ValueError(
            "--verify checks the files of a directory index; a PostgreSQL index has none "
            "(PostgreSQL checks its own pages: data checksums)."
        )
    result = verify_index(index.path, index.manifest)
    if result.damaged:
        named = ", ".join(f"{rel} ({why})" for rel, why in result.damaged)
        noun = "file is" if len(result.damaged) == 1 else "files are"
        raise IndexFormatError(
            f"{len(result.damaged)} {noun} damaged in the index at {index.path}: {named}; "
            f"{rebuild_hint(index.path, index.manifest)}."
        )
    return {"files": result.files, "bytes": result.bytes}


def _verified_line(verified: dict[str, int]) -> str:
    return (
        f"Verified {verified['files']} files ({verified['bytes'] / 1e6:,.1f} MB): every "
        "checksum matches the one recorded when the index was written"
    )


def cmd_eval(args: argparse.Namespace) -> int:
    from graphseek.evaluation.cli import run_eval_command

    return run_eval_command(args)


def cmd_ask(args: argparse.Namespace) -> int:
    from graphseek.knowledge.index import Index

    return _answer(
        args, args.question, lambda: Index.open(args.index_dir, graph_reads=args.graph_reads)
    )


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, GraphseekError | ValueError | FileNotFoundError):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc} (run with -v for details)"


def _print_error_json(exc: BaseException) -> None:
    """The `--json` object of a run that could not even start or that failed outright."""
    from graphseek.api import public_usage
    from graphseek.state.models import Usage

    usage = getattr(exc, "usage", None)
    print(
        json.dumps(
            {
                "answer": "",
                "abstained": True,
                "abstain_reason": f"error: {_error_line(exc)}",
                "evidence": [],
                "trace": [],
                "usage": public_usage(usage if isinstance(usage, Usage) else Usage()),
                "diagnostics": {"errors": [_error_line(exc)]},
                "error": type(exc).__name__,
            },
            ensure_ascii=False,
        )
    )


def cmd_topologies(args: argparse.Namespace) -> int:
    from graphseek.graphs import TOPOLOGIES

    width = max(len(n) for n in TOPOLOGIES)
    for t in TOPOLOGIES.values():
        print(f"{t.name:<{width}}  {t.description}")
    return 0


def _add_load_options(p: argparse.ArgumentParser) -> None:
    """How `index` and `add` read a corpus: passage size, progress bars, unreadable files."""
    p.add_argument("--chunk-size", type=int, default=1200, help="max characters per passage")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument(
        "--on-bad-file",
        choices=("fail", "skip"),
        default="fail",
        help="a file (or record) that is not UTF-8 text: stop (default) or skip it and say so",
    )


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--topology", "-t", default="dual_agent", help="workflow name (see `topologies`)"
    )
    p.add_argument("--llm", default=None, help="model spec: offline (default), openai:<model>")
    p.add_argument(
        "--readers",
        default=None,
        metavar="SPECS",
        help="escalation cascade of readers for every draft, cheapest first, e.g. "
        "offline,openai:small-model,openai:large-model: a reader whose answer is ungrounded, "
        "'unknown' or below its calibrated confidence passes the question to the next",
    )
    p.add_argument(
        "--read-by",
        choices=("sentences", "passages"),
        default=None,
        help="what a model reads to draft or check an answer: the passages' best sentences "
        "with their neighbours (default) or whole passages",
    )
    p.add_argument("--retriever", default=None, help="bm25, dense, hybrid (default), higra, …")
    p.add_argument(
        "--bridge-seeds",
        action="store_true",
        default=None,
        help="higra and progressive: add the entities semantic bridging reaches from the "
        "question's entities to their seeds (needs sentence nodes; default off)",
    )
    p.add_argument("--top-k", type=int, default=None, help="passages per retrieval")
    p.add_argument("--max-turns", type=int, default=None, help="Seeker turn budget")
    p.add_argument("--max-llm-calls", type=int, default=None, help="LLM-call budget (default 60)")
    p.add_argument("--max-tokens", type=int, default=None, help="token budget (default 400000)")
    p.add_argument(
        "--llm-timeout",
        type=float,
        default=None,
        help="seconds per model request (default $GRAPHSEEK_LLM_TIMEOUT, else 300)",
    )
    p.add_argument(
        "--llm-context",
        type=int,
        default=None,
        metavar="N",
        help="the model's context window in tokens (default: what the server reports, else the "
        "model family's)",
    )
    p.add_argument(
        "--on-model-failure",
        choices=("abstain", "offline"),
        default=None,
        help="when a role's model call still fails after its retries: abstain (default) or let "
        "the role's offline policy take the step (noted in diagnostics.degraded)",
    )
    p.add_argument("--agents", type=int, default=None, help="suggesters (knowledge_aware)")
    p.add_argument("--mode", default=None, help="single, competitive or collaborative")
    p.add_argument(
        "--profile",
        default=None,
        help="offline reader: general (any documents; `ask` default) or wikipedia "
        "(Wikipedia-style articles; `demo` default, its corpus is one)",
    )
    p.add_argument(
        "--abstain-threshold",
        type=float,
        default=None,
        help="confidence below which the offline reader abstains (default: the profile's "
        "calibrated operating point)",
    )
    p.add_argument(
        "--max-question-chars",
        type=int,
        default=None,
        help="longest question accepted (default 2000, or $GRAPHSEEK_MAX_QUESTION_CHARS)",
    )
    p.add_argument(
        "--reranker",
        default=None,
        help="rerank retrieved passages: http:URL or http:MODEL@URL (a /v1/rerank or /rerank "
        "endpoint) or ce:FOLDER (a local cross-encoder); default off",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphseek", description="Multi-hop question answering over your own documents."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="answer a question on the bundled demo corpus (offline)")
    p.add_argument("--question", "-q", default=None, help="ask this instead of the demo question")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached demo index")
    _add_run_options(p)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("index", help="index a corpus (JSON/JSONL, .txt/.md/.rst/.html or a folder)")
    p.add_argument("corpus", help="corpus file or folder")
    p.add_argument(
        "--out",
        "-o",
        required=True,
        help="index directory to write, or a postgresql://…?schema=NAME URI",
    )
    _add_load_options(p)
    p.add_argument(
        "--no-graph", action="store_true", help="skip the knowledge graph (passage search only)"
    )
    p.add_argument(
        "--graph-llm", default=None, help="model spec for graph extraction (default: offline)"
    )
    p.add_argument(
        "--embedder",
        default=None,
        help="passage and query embedder, recorded in the index: minilm (the packaged default), "
        "openai:MODEL[@BASE_URL] (an OpenAI-compatible /v1/embeddings) or st:FOLDER (a local "
        "sentence-transformers model)",
    )
    p.add_argument(
        "--graph-vectors",
        choices=GRAPH_VECTORS,
        default=GRAPH_VECTORS[0],
        help="how the graph embeds entities, relations and hyperedges: minilm (the passage "
        "encoder on every string) or static (token vectors distilled from it, much faster)",
    )
    p.add_argument(
        "--alignment",
        choices=ALIGNMENT_VECTORS,
        default=ALIGNMENT_VECTORS[0],
        help="how entity alignment compares entities: contextual (their mentions' token "
        "states from the passage pass, no second encoder pass) or records (the encoder on "
        "each entity's name, aliases and types)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="sharded build: extraction and embedding run as Dask tasks on N local worker "
        'processes (needs pip install "graphseek[distributed]")',
    )
    p.add_argument(
        "--memory-budget",
        default=None,
        metavar="SIZE",
        help="memory the graph build may use, e.g. 4G or 2500M (default: half the machine's): "
        "it runs fewer extraction processes and encoder threads, and a smaller write cache, to "
        "fit (the same index, more time), and warns when the corpus needs more",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="URL",
        help="sharded build on the Dask cluster of this scheduler (tcp://HOST:8786) instead "
        "of local workers",
    )
    p.set_defaults(func=cmd_index)

    p = sub.add_parser(
        "add", help="add documents to an index (files or folders, read as `index` reads them)"
    )
    p.add_argument("index_dir", help="index directory or postgresql:// URI")
    p.add_argument("paths", nargs="+", metavar="PATH", help="corpus files or folders to add")
    p.add_argument(
        "--delta",
        action="store_true",
        help="change only what the new passages reach in the graph (fast on a large index; "
        "equal retrieval, not byte for byte a rebuild: topics and merges between stored "
        "entities wait for the next `index`)",
    )
    _add_load_options(p)
    p.set_defaults(func=cmd_add)

    p = sub.add_parser(
        "remove", help="remove documents from an index by source, title or passage id"
    )
    p.add_argument("index_dir", help="index directory or postgresql:// URI")
    p.add_argument(
        "--source",
        action="append",
        metavar="PATH",
        help="a file as it was indexed, or a folder (every file under it); repeatable",
    )
    p.add_argument("--title", action="append", help="a document title; repeatable")
    p.add_argument("--id", action="append", metavar="PASSAGE_ID", help="a passage id; repeatable")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("ask", help="answer a question over an index")
    p.add_argument(
        "index_dir", help="index directory or postgresql:// URI (from `graphseek index`)"
    )
    p.add_argument("question", help="the question")
    p.add_argument(
        "--graph-reads",
        choices=("whole", "neighbourhood"),  # graphseek.knowledge.storage.GRAPH_READS
        default=None,
        help="how the graph retrievers read a directory index's graph: whole (the default: "
        "loaded once) or neighbourhood (each query reads its own from the store)",
    )
    _add_run_options(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("topologies", help="list the workflows")
    p.set_defaults(func=cmd_topologies)

    p = sub.add_parser("stats", help="knowledge-graph statistics of an index")
    p.add_argument("index_dir", help="index directory")
    p.add_argument("--json", action="store_true", help="print the statistics as JSON")
    p.add_argument(
        "--verify",
        action="store_true",
        help="also read every file of the index and compare its SHA-256 with the one recorded "
        "when it was written (opening checks only sizes and headers); a damaged file is named",
    )
    p.set_defaults(func=cmd_stats)

    from graphseek.evaluation.cli import add_eval_arguments

    p = sub.add_parser(
        "eval",
        help="evaluate topologies and retrievers on HotpotQA / 2Wiki / MuSiQue files",
        description="Evaluate topologies (QA accuracy, cost) or retrievers (--retrieval-only).",
    )
    add_eval_arguments(p)
    p.set_defaults(func=cmd_eval)
    return parser


#: exit status of a run ended by Ctrl-C (SIGINT), as shells report it (128 + 2)
EXIT_INTERRUPTED = 130


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, raised by the CLI's own SIGINT handler.

    A subclass on purpose: CPython marks a *bare* `KeyboardInterrupt` that escapes any nested
    `exec()` of a string (scipy's lazy numpy clone does one while bm25s imports) as unhandled and
    then kills the process with SIGINT at exit, even after `main` caught it and returned 130.
    The flag tests the exact type, so a subclass keeps the exit status ours; every
    `except KeyboardInterrupt` / `except BaseException` cleanup still sees it."""


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted


def main(argv: list[str] | None = None) -> int:
    """Run one command; bad input is one line on stderr and exit 2, Ctrl-C one line and 130,
    an output pipe closed early (`graphseek stats IDX | head -1`) nothing and 1."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, _raise_interrupted)
    try:
        return _run(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _run(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        logging.basicConfig(
            level=logging.INFO if args.verbose else logging.WARNING,
            format="%(levelname)s %(name)s: %(message)s",
        )
        if not args.verbose:  # a PostgreSQL restart: psycopg's warnings (the pool's tries to
            # reconnect, a COPY it could not end) are not the command's one line: each read
            # waits for the server, then the command ends in one line of its own
            logging.getLogger("psycopg").setLevel(logging.ERROR)
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in Python's flush at exit
        return code
    except BrokenPipeError:
        _stdout_to_devnull()
        return 1
    except KeyboardInterrupt:
        print("graphseek: interrupted; nothing was left half-written.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (GraphseekError, ValueError, OSError) as exc:
        print(f"graphseek: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # no traceback for a user; -v logs it
        logging.getLogger("graphseek").debug("unexpected error", exc_info=True)
        print(f"graphseek: error: {_error_line(exc)}", file=sys.stderr)
        return 1


def _stdout_to_devnull() -> None:
    """After a reader closed the pipe: what is still buffered, and Python's flush at exit, go
    to /dev/null instead of failing again ("Exception ignored ... BrokenPipeError"); the recipe
    of the Python docs (signal module, "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
