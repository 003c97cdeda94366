"""Answer accuracy and cost per topology, measured in one run with the same model.

For the bundled demo corpus (all demo questions) and a slice of a dataset (default: the first 20
questions of the 2Wiki dev slice), runs each topology through the evaluation runner
(`graphseek.evaluation.run_evaluation`: the records and scoring of `graphseek eval`) and prints,
per topology, the answers right (of n), EM, F1, wrong and abstained, and per question the LLM
calls, tokens, seconds and CPU seconds. Indexes come from the evaluation's cache (`graphseek
eval` builds the same ones), with the knowledge graph added when a topology other than
naive/dual_agent is run.

    .venv/bin/python benchmarks/qa_topologies.py [--llm offline] [--dataset 2wiki]
        [--questions 0:20] [--topology naive --topology dual_agent ...] [--skip-demo]
        [--out DIR] [--json out.json]

`benchmarks/offline_reasoner.py` measures the offline topologies through the same runner, dev
and held-out side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's graphseek


def _demo_dataset() -> Any:
    """The bundled demo questions; gold passages are their `gold_titles` in the demo corpus."""
    from graphseek.cli import demo_files
    from graphseek.evaluation import Dataset, EvalQuestion
    from graphseek.knowledge.passages import Passage

    corpus_file, questions_file = demo_files()
    corpus = [
        Passage.from_title_text(p["title"], p["text"]) for p in json.loads(corpus_file.read_text())
    ]
    by_title = {p.title: p.id for p in corpus}
    questions = json.loads(questions_file.read_text())
    return Dataset(
        name="demo",
        questions=[
            EvalQuestion(
                id=f"demo-{i}",
                question=q["question"],
                answers=[q["answer"]],
                gold_passage_ids=[by_title[t] for t in q.get("gold_titles", []) if t in by_title],
                gold_titles=q.get("gold_titles", []),
            )
            for i, q in enumerate(questions)
        ],
        corpus=corpus,
        source=str(questions_file),
    )


def _row(summary: dict[str, Any], config: str, dataset: str) -> dict[str, Any]:
    cell = summary["cells"][config][dataset]

    def mean(key: str) -> float:
        return float((cell.get(key) or {}).get("mean") or 0.0)

    def count(key: str) -> int:
        return int((cell.get(key) or {}).get("count") or 0)

    cpu = (cell.get("cpu_seconds") or {}).get("mean")
    return {
        "topology": summary["config_specs"][config]["topology"],
        "questions": int(mean("n")),
        "right": count("right"),
        "wrong": count("wrong"),
        "abstained": count("abstained"),
        "em": mean("em"),
        "f1": mean("f1"),
        "wrong_answer_rate": mean("wrong_answer_rate"),
        "llm_calls_per_q": mean("llm_calls"),
        "tokens_per_q": mean("tokens"),
        "seconds_per_q": mean("seconds"),
        "cpu_seconds_per_q": cpu,
    }


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{title}")
    print(
        "| topology | right | EM | F1 | wrong | abstained | LLM calls/q | tokens/q | s/q "
        "| CPU s/q |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        cpu = "–" if r["cpu_seconds_per_q"] is None else f"{r['cpu_seconds_per_q']:.2f}"
        print(
            f"| {r['topology']} | {r['right']}/{r['questions']} | {r['em']:.3f} | {r['f1']:.3f} "
            f"| {r['wrong']} | {r['abstained']} | {r['llm_calls_per_q']:.1f} "
            f"| {r['tokens_per_q']:.0f} | {r['seconds_per_q']:.2f} | {cpu} |"
        )


def main(argv: list[str] | None = None) -> None:
    from graphseek.cli import demo_index
    from graphseek.evaluation import load_dataset, make_configs, run_evaluation, summarise
    from graphseek.evaluation.index_cache import cached_index, needs_graph
    from graphseek.graphs import topology_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default="offline")
    parser.add_argument("--dataset", default="2wiki")
    parser.add_argument("--questions", default="0:20")
    parser.add_argument("--topology", action="append", default=None)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--data-dir", type=Path, default=None, help="data directory")
    parser.add_argument(
        "--index-dir", type=Path, default=None, help="index cache (default: the eval cache)"
    )
    parser.add_argument("--out", type=Path, default=None, help="records (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    topologies = args.topology or topology_names()
    configs = make_configs(topologies, ["hybrid"], llm=args.llm)
    graph = needs_graph(configs)
    datasets = [] if args.skip_demo else [_demo_dataset()]
    datasets.append(load_dataset(args.dataset, data_dir=args.data_dir, questions=args.questions))

    def index_for(ds: Any) -> Any:
        if ds.name == "demo":
            return demo_index(quiet=True)
        return cached_index(ds, args.index_dir, graph=graph)

    with tempfile.TemporaryDirectory(prefix="qa-topologies-") as tmp:
        out = args.out or Path(tmp)
        records = run_evaluation(datasets, configs, out, index_factory=index_for)
        summary = summarise(records)
    result: dict[str, list[dict[str, Any]]] = {}
    for ds in datasets:
        title = "demo corpus" if ds.name == "demo" else f"{ds.name} questions {args.questions}"
        rows = [_row(summary, c.name, ds.name) for c in configs]
        print_table(f"{title} — llm={args.llm}", rows)
        result[title] = rows
    print("\nload average: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
