"""Answer accuracy and cost per topology, measured in one run with the same model.

For the bundled demo corpus (all demo questions) and a slice of a dataset (default: the first 20
questions of the 2Wiki dev slice), runs each topology and prints, per topology, the answers
correct (EM over gold aliases), mean F1, abstentions, and per question the LLM calls, tokens and
seconds. Indexes come from the evaluation's cache (`graphseek eval` builds the same ones), with
the knowledge graph added when a topology other than naive/dual_agent is run.

    .venv/bin/python benchmarks/qa_topologies.py [--llm offline] [--questions 0:20]
        [--topology naive --topology dual_agent ...] [--skip-demo] [--json out.json]

`benchmarks/offline_reasoner.py` measures the offline topologies through the evaluation runner,
dev and held-out side by side, with right / wrong / abstained and CPU seconds per question.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]


def _dataset_index(
    name: str, questions: str, data_dir: Path, index_dir: Path, graph: bool
) -> tuple[Any, Any]:
    from graphseek.evaluation.datasets import load_dataset
    from graphseek.evaluation.index_cache import cached_index

    dataset = load_dataset(name, data_dir=data_dir, questions=questions)
    index = cached_index(dataset, index_dir, graph=graph)
    items = [(q.question, q.answers) for q in dataset.questions]
    return index, items


def _demo_index() -> tuple[Any, Any]:
    from graphseek.cli import demo_files, demo_index

    index = demo_index(quiet=True)
    questions = json.loads(demo_files()[1].read_text())
    return index, [(q["question"], [q["answer"]]) for q in questions]


def run(index: Any, items: list[tuple[str, list[str]]], topology: str, llm: str) -> dict[str, Any]:
    from graphseek.api import ask
    from graphseek.evaluation.metrics import exact_match, token_f1

    em = f1 = abstained = calls = tokens = 0.0
    seconds = 0.0
    for question, answers in items:
        result = ask(index, question, topology=topology, llm=llm)
        em += exact_match(result.answer, answers)
        f1 += token_f1(result.answer, answers)
        abstained += result.abstained
        calls += result.usage.llm_calls
        tokens += result.usage.prompt_tokens + result.usage.completion_tokens
        seconds += result.usage.seconds
    n = max(len(items), 1)
    return {
        "topology": topology,
        "questions": len(items),
        "correct": int(em),
        "em": em / n,
        "f1": f1 / n,
        "abstained": int(abstained),
        "llm_calls_per_q": calls / n,
        "tokens_per_q": tokens / n,
        "seconds_per_q": seconds / n,
    }


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(
        "| topology | correct | EM | F1 | abstained | LLM calls/q | tokens/q | s/q |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        print(
            f"| {r['topology']} | {r['correct']}/{r['questions']} | {r['em']:.3f} | {r['f1']:.3f} "
            f"| {r['abstained']} | {r['llm_calls_per_q']:.1f} | {r['tokens_per_q']:.0f} "
            f"| {r['seconds_per_q']:.2f} |"
        )


def main(argv: list[str] | None = None, defaults: dict[str, Any] | None = None) -> None:
    from graphseek.graphs import topology_names

    d = defaults or {}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default="offline")
    parser.add_argument("--dataset", default="2wiki")
    parser.add_argument("--questions", default=d.get("questions", "0:20"))
    parser.add_argument("--topology", action="append", default=None)
    parser.add_argument("--skip-demo", action="store_true", default=d.get("skip_demo", False))
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument(
        "--index-dir", type=Path, default=None, help="index cache (default: the eval cache)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    topologies = args.topology or d.get("topologies") or topology_names()
    out: dict[str, list[dict[str, Any]]] = {}
    targets = []
    if not args.skip_demo:
        targets.append(("demo corpus", *_demo_index()))
    targets.append(
        (
            f"{args.dataset} questions {args.questions}",
            *_dataset_index(
                args.dataset,
                args.questions,
                args.data_dir,
                args.index_dir,
                graph=any(t not in ("naive", "dual_agent") for t in topologies),
            ),
        )
    )
    for title, index, items in targets:
        rows = [run(index, items, t, args.llm) for t in topologies]
        print_table(f"{title} — llm={args.llm}", rows)
        out[title] = rows
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
