"""The LLM path's cost per question, per topology, against any OpenAI-compatible endpoint.

For every topology (``naive`` first: the reference row) and every question, runs
`graphseek.ask` with the model and prints per question: LLM calls (failed ones included),
prompt and completion tokens (``~`` when the server sent no usage and they were estimated),
seconds in the model (``llm_seconds``) and wall seconds, and the answers given; then the
published anchors beside them: A2RAG reports 2.0–2.3 LLM calls and 16–18K tokens per multi-hop
question for its own and the compared graph-RAG pipelines, HiGraAgent about 25K tokens.

The endpoint comes from the environment, as for every graphseek run:

    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 \\
        .venv/bin/python benchmarks/llm_path.py --llm openai:qwen2.5-1.5b-instruct
    # corpus and questions: the bundled demo corpus (default), or
    #   --corpus docs/ --question "..." --question "..."   (an index is built in a temp dir)
    # options: --topology T (repeatable; knowledge_aware:competitive / :collaborative run two
    #   tool-calling suggesters), --timeout S, --max-reply-tokens N, --json out.json

``--fake`` serves the tests' fake OpenAI-compatible server (``tests/fake_openai.py``, which plays
every role for the tests' tiny corpus) on 127.0.0.1 and runs against it: the figures then count
the calls and tokens of the workflows' own prompts with scripted replies, not a model's quality.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's graphseek, whichever one is installed
TOPOLOGIES = [
    "naive",
    "higra_retriever",
    "dual_agent",
    "adaptive",
    "deep_search",
    "react",
    "knowledge_aware",
    "knowledge_aware:competitive",
]
#: settings of the topology variants ("name:variant")
VARIANTS: dict[str, dict[str, Any]] = {
    "knowledge_aware:competitive": {"agents": 2, "mode": "competitive"},
    "knowledge_aware:collaborative": {"agents": 2, "mode": "collaborative"},
}
ANCHORS = [
    "A2RAG (Table III): 2.0-2.3 LLM calls and 16-18K tokens per multi-hop question",
    "HiGraAgent: about 25K tokens per multi-hop question",
]


def _demo() -> tuple[Any, list[str]]:
    from graphseek.cli import demo_files, demo_index

    questions = json.loads(demo_files()[1].read_text())
    return demo_index(quiet=True), [q["question"] for q in questions]


def _corpus(path: str, questions: list[str], tmp: Path) -> tuple[Any, list[str]]:
    from graphseek.knowledge.index import Index
    from graphseek.knowledge.loaders import load_corpus

    index = Index.build(load_corpus(path), tmp / "index", show_progress=False, graph=True)
    return index, questions


def _tiny(tmp: Path) -> tuple[Any, list[str]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import TINY_CORPUS  # the tests' corpus, which the fake server knows
    from fake_openai import QUESTION

    from graphseek.knowledge.index import Index
    from graphseek.knowledge.passages import Passage

    passages = [Passage(id=i, title=t, text=x, source="tiny") for i, t, x in TINY_CORPUS]
    return Index.build(passages, tmp / "tiny", show_progress=False), [QUESTION]


def measure(index: Any, questions: list[str], topology: str, llm: str, **settings: Any) -> dict:
    from graphseek.api import ask

    rows = []
    name = topology.split(":", 1)[0]
    settings = {**VARIANTS.get(topology, {}), **settings}
    for question in questions:
        result = ask(index, question, topology=name, llm=llm, **settings)
        u = result.usage
        rows.append(
            {
                "question": question,
                "answer": result.answer,
                "abstain_reason": result.abstain_reason,
                "llm_calls": u.llm_calls,
                "failed_calls": u.failed_calls,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "estimated": u.tokens_estimated,
                "llm_seconds": u.llm_seconds,
                "seconds": u.seconds,
            }
        )
    n = max(1, len(rows))

    def mean(key: str) -> float:
        return sum(float(r[key]) for r in rows) / n

    return {
        "topology": topology,
        "questions": len(rows),
        "answered": sum(1 for r in rows if r["answer"]),
        "calls": mean("llm_calls"),
        "failed": mean("failed_calls"),
        "prompt": mean("prompt_tokens"),
        "completion": mean("completion_tokens"),
        "estimated": any(r["estimated"] for r in rows),
        "llm_seconds": mean("llm_seconds"),
        "seconds": mean("seconds"),
        "rows": rows,
    }


def report(results: list[dict], llm: str, endpoint: str) -> str:
    lines = [
        f"model {llm} at {endpoint or '(OpenAI)'}; per question, means over the questions",
        "",
        "| topology | q | answered | LLM calls | failed | prompt tok | completion tok "
        "| total tok | x naive | LLM s | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = next((r for r in results if r["topology"] == "naive"), None)
    base_total = (base["prompt"] + base["completion"]) if base else 0.0
    for r in results:
        total = r["prompt"] + r["completion"]
        mark = "~" if r["estimated"] else ""
        ratio = f"{total / base_total:.1f}" if base_total else "-"
        lines.append(
            f"| {r['topology']} | {r['questions']} | {r['answered']} | {r['calls']:.1f} "
            f"| {r['failed']:.1f} | {mark}{r['prompt']:.0f} | {mark}{r['completion']:.0f} "
            f"| {mark}{total:.0f} | {ratio} | {r['llm_seconds']:.2f} | {r['seconds']:.2f} |"
        )
    lines += ["", "Published anchors (their models and corpora, for scale):"]
    lines += [f"- {a}" for a in ANCHORS]
    lines.append("~ = estimated tokens (the server sent no usage)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm", default=os.environ.get("GRAPHSEEK_LLM", ""))
    parser.add_argument("--topology", action="append", default=None)
    parser.add_argument("--corpus", default=None, help="corpus path (default: the demo corpus)")
    parser.add_argument("--question", action="append", default=[], help="with --corpus")
    parser.add_argument("--questions", type=int, default=None, help="use the first N questions")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per model request")
    parser.add_argument("--max-reply-tokens", type=int, default=None)
    parser.add_argument("--fake", action="store_true", help="run against the tests' fake server")
    parser.add_argument("--json", default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    topologies = args.topology or TOPOLOGIES
    if "naive" in topologies:  # the reference row first
        topologies = ["naive", *(t for t in topologies if t != "naive")]
    settings = {"llm_timeout": args.timeout, "max_reply_tokens": args.max_reply_tokens}
    settings = {k: v for k, v in settings.items() if v is not None}
    with tempfile.TemporaryDirectory() as tmp:
        server = None
        if args.fake:
            sys.path.insert(0, str(ROOT / "tests"))
            from fake_openai import FakeOpenAIServer, TinyWorld

            server = FakeOpenAIServer(TinyWorld()).__enter__()
            os.environ["OPENAI_BASE_URL"] = server.base_url
            args.llm = args.llm or "openai:tiny-world"
            index, questions = _tiny(Path(tmp))
        elif args.corpus:
            index, questions = _corpus(args.corpus, args.question, Path(tmp))
        else:
            index, questions = _demo()
        if not args.llm or args.llm == "offline":
            parser.error("give a model spec: --llm openai:<model> (or set GRAPHSEEK_LLM)")
        questions = questions[: args.questions] if args.questions else questions
        try:
            started = time.perf_counter()
            results = [measure(index, questions, t, args.llm, **settings) for t in topologies]
            took = time.perf_counter() - started
        finally:
            if server is not None:
                server.__exit__(None, None, None)
    print(report(results, args.llm, os.environ.get("OPENAI_BASE_URL", "")))
    print(f"\n{len(questions)} question(s) x {len(topologies)} topologies in {took:.1f} s; "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
