"""A user's trial of ``graphseek add --delta`` on the pkgdocs dev documents, against the exact add.

The 40 package documents of `benchmarks/devsets/pkgdocs/docs` are split by a fixed rule (the
first 30 by file name, then the last 10); the first 30 are indexed with ``graphseek index``, and
the last 10 added to one copy of that index with ``graphseek add`` and to another with
``graphseek add --delta``. Then the dev questions whose supporting documents include one of
the added ones are asked on both copies (`graphseek.api.ask`, the default offline workflow),
and each answer, abstention and evidence titles are printed side by side with how many of them
agree, beside the two adds' wall seconds (each a fresh ``graphseek`` process: model loads
included).

    .venv/bin/python benchmarks/delta_user_trial.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
PKGDOCS = ROOT / "benchmarks" / "devsets" / "pkgdocs"
ADDED = 10
"""How many documents, last by file name, are added after the others are indexed."""


def graphseek(work: Path, *args: str) -> tuple[float, str]:
    """Run the CLI in `work`; its wall seconds and first line of output (exit on failure)."""
    started = time.perf_counter()
    script = Path(sys.executable).with_name("graphseek")  # the console script beside Python
    command = str(script) if script.exists() else (shutil.which("graphseek") or "graphseek")
    done = subprocess.run([command, *args], cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"graphseek {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - started, (done.stdout.strip().splitlines() or [""])[0]


def answer_of(result: Any) -> tuple[str, bool, list[str]]:
    """(answer, abstained, evidence titles) of an `ask` result."""
    evidence = getattr(result, "evidence", None) or []
    titles = sorted({str(getattr(e, "title", "")) for e in evidence})
    return (
        str(getattr(result, "answer", "") or ""),
        bool(getattr(result, "abstained", False)),
        titles,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="graphseek-delta-trial-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        names = sorted(p.name for p in (PKGDOCS / "docs").iterdir())
        first, added = names[:-ADDED], names[-ADDED:]
        for folder, group in (("docs", first), ("more", added)):
            shutil.rmtree(work / folder, ignore_errors=True)
            (work / folder).mkdir()
            for name in group:
                shutil.copy(PKGDOCS / "docs" / name, work / folder / name)
        for name in ("idx", "idx-exact", "idx-delta"):
            shutil.rmtree(work / name, ignore_errors=True)
        seconds, said = graphseek(work, "index", "docs", "--out", "idx", "--quiet")
        print(f"index of {len(first)} documents: {seconds:.1f} s ({said})")
        shutil.copytree(work / "idx", work / "idx-exact")
        shutil.copytree(work / "idx", work / "idx-delta")
        for name, extra in (("idx-exact", []), ("idx-delta", ["--delta"])):
            seconds, said = graphseek(work, "add", name, "more", "--quiet", *extra)
            print(f"add {' '.join(extra) or '(exact)':8} {seconds:5.1f} s ({said})")

        from graphseek.api import ask
        from graphseek.knowledge.index import Index

        questions = [
            q
            for q in json.loads((PKGDOCS / "questions.json").read_text())
            if any(s["doc"] in added for s in q.get("supporting") or [])
        ]
        indexes = {name: Index.open(work / name) for name in ("idx-exact", "idx-delta")}
        same = right = 0
        for q in questions:
            rows = {name: answer_of(ask(index, q["question"])) for name, index in indexes.items()}
            agree = rows["idx-exact"] == rows["idx-delta"]
            same += agree
            gold = q["answer"].lower()
            for name, (answer, abstained, titles) in rows.items():
                right += bool(answer) and gold in answer.lower()
                shown = "(abstains)" if abstained else repr(answer[:50])
                print(f"  {q['_id']:7} {name:9} {shown:52} evidence {titles[:3]}")
            print(f"  {'':7} {'same' if agree else 'DIFFERENT'}; gold {q['answer']!r}")
        print(
            f"\n{len(questions)} questions on the added documents: the two indexes agree on "
            f"{same} (answer, abstention, evidence titles); right answers {right} in all "
            f"(both indexes counted)"
        )
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
