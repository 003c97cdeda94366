"""Calibrate a reading profile's operating point on its dev slices (offline, no model).

Runs a topology (default `dual_agent`) over each dev slice at every threshold of a sweep, scores
every answer (`graphseek.evaluation.scoring`: right / wrong / abstained), and applies the one
rule of `graphseek.evaluation.calibration`: the lowest threshold whose cross-validated
wrong-answer rate is at most 10%. Prints, per threshold, right / wrong / abstained and the
wrong-answer rate over the pooled dev questions, the threshold each fold chose, the
cross-validated figures, and the operating point; `--write` stores it (with the figures) in
`graphseek/agents/profiles/operating_points.json`, which the profile reads.

    .venv/bin/python benchmarks/calibrate.py --profile general \\
        --dataset docqa --dataset benchmarks/devsets/pkgdocs/questions.json [--write]
    .venv/bin/python benchmarks/calibrate.py --profile wikipedia --dataset 2wiki \\
        --questions 0:200 [--write]
    .venv/bin/python benchmarks/calibrate.py --profile general --by-genre \\
        --dataset docqa --dataset pkgdocs --dataset manpages --dataset configref \\
        --dataset changelogs --thresholds 0.3,0.4,0.5,0.6,0.7

`--readers RUN.json ...` calibrates the model readers of an escalation cascade instead, from
the runs `benchmarks/local_model.py --out` saved (rows `cascade[:topology]`): each model reading
is scored against the question's gold answers (right / wrong; "abstained" where it failed a check
other than its confidence) and the same rule, cross-validated, picks the confidence at or above
which the model's grounded answer stands. `--write` stores it per model name (the benchmark's
per-run suffix ``-rN`` removed) in `graphseek/agents/reader_points.json`:

    .venv/bin/python benchmarks/calibrate.py --readers /tmp/lm_cascade.json [--write]

`--reader-models DIR` reads each dataset with the reader fitted without it (the models
`benchmarks/fit_reader.py --write-logo DIR` stores), and ranks its evidence sentences with the
ranker fitted without it where DIR holds one (`benchmarks/sentence_ranker.py --write-logo DIR`),
so that with `--by-genre` the reader's weights, the evidence ranker's and the threshold are all
chosen on the other genres; use its own `--out`.

`--by-genre` judges the rule leave-one-genre-out: for each dataset (a genre of documents) the
threshold is chosen on the other datasets' questions, and the held one is scored at it: right,
wrong, abstained, unanswerable questions abstained, and **visible** (the share of answerable
questions whose gold answer is in what the user was shown: the answer, or the first three
evidence sentences with their context, `scoring.answer_in_evidence`).
`--context KEY=VALUE` sets a run setting for every question (``retriever=doc_hop``), so that a
retrieval or reading option is judged by the same leave-one-genre-out rule.

Tune on dev slices only (2Wiki 0-199, MuSiQue train, HotpotQA train, docqa dev, the pkgdocs
dev set). Records go to `--out` (JSONL, one line per threshold and question) and are reused
when the same run is repeated.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from datetime import date
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
POINTS = ROOT / "graphseek" / "agents" / "profiles" / "operating_points.json"
READER_POINTS = ROOT / "graphseek" / "agents" / "reader_points.json"
DEFAULT_SWEEP = "0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.6"


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", choices=["general", "wikipedia"])
    p.add_argument("--dataset", action="append", help="dataset name or file")
    p.add_argument("--readers", nargs="+", metavar="RUN_JSON", default=None,
                   help="calibrate model readers from benchmarks/local_model.py --out runs")  # fmt: skip
    p.add_argument("--questions", default="all", help="question slice for every dataset")
    p.add_argument("--topology", default="dual_agent")
    p.add_argument("--thresholds", default=DEFAULT_SWEEP)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--target", type=float, default=0.10)
    p.add_argument("--out", default="eval-out/calibrate")
    p.add_argument("--write", action="store_true", help="store the operating point")
    p.add_argument("--by-genre", action="store_true", help="leave-one-dataset-out figures")
    p.add_argument("--context", action="append", metavar="KEY=VALUE", default=None,
                   help="a run setting for every question (as `graphseek eval --context`), e.g. "
                   "retriever=bridge; repeatable; the log file is named after the settings")  # fmt: skip
    p.add_argument(
        "--reader-models",
        default=None,
        help="a folder of reader_model-<dataset>.json (benchmarks/fit_reader.py --write-logo): "
        "each dataset is read by the reader fitted without it",
    )
    return p.parse_args()


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        return out.stdout.strip()
    except OSError:
        return ""


def print_sweep(sweep: dict[float, list[str]], abstained: str = "abst.") -> None:
    """Right / wrong / `abstained` and the wrong-answer rate at each threshold of `sweep`."""
    from graphseek.evaluation.calibration import Rates

    print(f"{'threshold':>9} {'right':>6} {'wrong':>6} {abstained:>6} {'wrong rate':>10}")
    for t in sorted(sweep):
        r = Rates.of(sweep[t])
        print(f"{t:>9.2f} {r.right:>6} {r.wrong:>6} {r.abstained:>6} {r.wrong_rate:>10.1%}")


def calibrate_readers(args: argparse.Namespace) -> int:
    """The operating point of each model reader in the saved cascade runs (see the module
    docstring)."""
    import re

    from graphseek.evaluation.calibration import (
        choose_threshold,
        cross_validate,
        reader_sweep,
    )
    from graphseek.evaluation.datasets import EvalQuestion
    from graphseek.evaluation.judge import Judge
    from graphseek.evaluation.scoring import score_answer

    judge = Judge()
    by_model: dict[str, list[tuple[float, str]]] = {}
    for path in args.readers:
        for row in json.loads(Path(path).read_text())["runs"]:
            if not str(row["topology"]).startswith("cascade"):
                continue
            q = EvalQuestion(id=row["qid"], question=row["question"], answers=row["gold"])
            for line in (row.get("diagnostics") or {}).get("readings", []):
                name = re.sub(r"-r\d+$", "", line["reader"].partition(":")[2])
                if line["reader"] == "offline" or not name:
                    continue
                reason = line.get("reason") or ""
                if reason and "below its point" not in reason:
                    outcome = "abstained"
                else:
                    _, _, outcome = score_answer(q, line["answer"], False, judge)
                by_model.setdefault(name, []).append((float(line["confidence"]), outcome))
    if not by_model:
        print("no model readings in the runs given (rows cascade[:topology])")
        return 1
    thresholds = sorted(float(t) for t in args.thresholds.split(","))
    stored: dict[str, Any] = (
        json.loads(READER_POINTS.read_text()) if READER_POINTS.exists() else {"models": {}}
    )
    for name, readings in sorted(by_model.items()):
        sweep = reader_sweep(readings, thresholds)
        print(f"\n{name}: {len(readings)} readings")
        print_sweep(sweep, "passed")
        point = choose_threshold(sweep, args.target)
        cv, chosen = cross_validate(sweep, args.folds, args.target)
        print(f"fold thresholds: {chosen}; cross-validated right {cv.right_rate:.1%}, wrong "
              f"{cv.wrong_rate:.1%}; operating point {point}")  # fmt: skip
        stored.setdefault("models", {})[name] = point
    if args.write:
        READER_POINTS.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n")
        print(f"stored in {READER_POINTS.relative_to(ROOT)}")
    return 0


def _read_with(path: Path) -> None:
    """Every extractive reader (the process-wide one, and those the Librarians make) uses the
    model stored at `path` (which must exist) instead of the package's."""
    from graphseek.agents.reading import reader

    if not path.is_file():
        raise SystemExit(f"calibrate.py: no reader model {path}")
    model = reader.load_model(path)
    reader.get_reader().model = model
    reader.load_model = lambda path=None: model  # type: ignore[assignment]
    # the evidence ranker fitted without the same genre, where the folder holds one
    # (`benchmarks/sentence_ranker.py --write-logo`): the sentences the reply shows
    ranker = path.with_name(path.name.replace("reader_model-", "sentence_model-"))
    if ranker.is_file():
        from graphseek.agents.reading import sentences

        fitted = sentences.load_weights(ranker)
        sentences.weights = lambda: fitted  # type: ignore[assignment]
        print(f"showing evidence with {ranker.name}", flush=True)
    from graphseek.agents import registry

    registry._OFFLINE_CACHE.clear()  # the cached Librarians made their readers with the last one
    print(f"reading with {path.name}", flush=True)


def main() -> int:
    args = _args()
    if args.readers:
        return calibrate_readers(args)
    if not args.profile or not args.dataset:
        raise SystemExit("calibrate.py: --profile and --dataset are needed (or --readers RUN_JSON)")
    from graphseek import ask
    from graphseek.evaluation import cached_index
    from graphseek.evaluation.calibration import (
        Rates,
        choose_threshold,
        cross_validate,
        leave_groups_out,
    )
    from graphseek.evaluation.cli import _parse_context
    from graphseek.evaluation.datasets import load_dataset
    from graphseek.evaluation.judge import Judge
    from graphseek.evaluation.scoring import answer_in_evidence, score_answer

    settings = _parse_context(args.context)
    thresholds = sorted(float(t) for t in args.thresholds.split(","))
    questions = None if args.questions == "all" else args.questions
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "".join(f"-{k}={v}" for k, v in sorted(settings.items()))
    log = out / f"{args.profile}-{args.topology}{tag}.jsonl"
    done: dict[tuple[str, str, float], str] = {}
    seen: dict[tuple[str, str, float], bool | None] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            r = json.loads(line)
            done[(r["dataset"], r["id"], r["threshold"])] = r["outcome"]
            seen[(r["dataset"], r["id"], r["threshold"])] = r.get("visible")
    judge = Judge()
    sweep: dict[float, list[str]] = {t: [] for t in thresholds}
    shown: dict[float, list[bool | None]] = {t: [] for t in thresholds}
    groups: list[str] = []
    unanswerable: list[bool] = []
    names: list[str] = []
    cpu_start, wall_start, asked = time.process_time(), time.perf_counter(), 0
    with log.open("a") as sink:
        for name in args.dataset:
            dataset = load_dataset(name, questions=questions)
            names.append(dataset.name)
            if args.reader_models:
                _read_with(Path(args.reader_models) / f"reader_model-{dataset.name}.json")
            index = cached_index(dataset, graph=True)
            for q in dataset.questions:  # every threshold of a question in turn: its
                for t in thresholds:  # passages stay in the reader's cache
                    key = (dataset.name, q.id, t)
                    if key not in done:
                        result = ask(
                            index,
                            q.question,
                            topology=args.topology,
                            profile=args.profile,
                            abstain_threshold=t,
                            **settings,
                        )
                        _, _, outcome = score_answer(q, result.answer, result.abstained, judge)
                        done[key] = outcome
                        seen[key] = answer_in_evidence(
                            q.answers, result.answer, result.evidence, result.abstained
                        )
                        asked += 1
                        row = {"dataset": dataset.name, "id": q.id, "threshold": t}
                        line = {**row, "outcome": outcome, "visible": seen[key]}
                        sink.write(json.dumps(line) + "\n")
                        sink.flush()
                    sweep[t].append(done[key])
                    shown[t].append(seen.get(key))
                groups.append(dataset.name)
                unanswerable.append(not q.answerable)
            print(f"{dataset.name}: {len(dataset.questions)} questions", flush=True)
    if asked:
        cpu = (time.process_time() - cpu_start) / asked
        wall = (time.perf_counter() - wall_start) / asked
        print(f"asked {asked} times: {cpu:.2f} CPU s, {wall:.2f} s per question")

    print(
        f"\n{args.profile} / {args.topology} over {', '.join(names)} ({len(sweep[thresholds[0]])} q)"
    )
    print_sweep(sweep)
    point = choose_threshold(sweep, args.target)
    cv, chosen = cross_validate(sweep, args.folds, args.target)
    at = Rates.of(sweep[point])
    print(f"\nfold thresholds: {chosen}")
    print(
        f"cross-validated ({args.folds} folds): right {cv.right_rate:.1%}, wrong "
        f"{cv.wrong_rate:.1%}, abstained {cv.abstained / cv.n:.1%}"
    )
    print(
        f"operating point: {point} (lowest threshold with a wrong-answer rate <= "
        f"{args.target:.0%}): right {at.right}/{at.n}, wrong {at.wrong}, abstained {at.abstained}"
    )
    if args.by_genre:
        print(f"\nleave one genre out (threshold chosen on the others, target {args.target:.0%})")
        print(
            f"{'held genre':<12}{'n':>4}{'threshold':>10}{'right':>8}{'wrong':>8}{'abst.':>8}"
            f"{'unans. abst.':>13}{'visible':>9}"
        )
        for name, (t, r) in leave_groups_out(sweep, groups, args.target).items():
            rows = [i for i, g in enumerate(groups) if g == name]
            answerable = [i for i in rows if not unanswerable[i]]
            held_out = [i for i in rows if unanswerable[i]]
            abst = sum(sweep[t][i] == "right" for i in held_out) / max(1, len(held_out))
            vis = [shown[t][i] for i in answerable if shown[t][i] is not None]
            right = sum(sweep[t][i] == "right" for i in answerable) / max(1, len(answerable))
            print(
                f"{name:<12}{r.n:>4}{t:>10.2f}{right:>8.0%}"
                f"{r.wrong_rate:>8.0%}{r.abstained / r.n:>8.0%}{abst:>13.0%}"
                f"{(sum(vis) / len(vis) if vis else float('nan')):>9.0%}"
            )
        print("(right and visible: of answerable questions; wrong and abstained: of all)")
    if args.write:
        stored: dict[str, Any] = json.loads(POINTS.read_text()) if POINTS.exists() else {}
        stored[args.profile] = {
            "threshold": point,
            "rule": f"lowest threshold whose {args.folds}-fold cross-validated wrong-answer rate "
            f"is at most {args.target:.0%} (benchmarks/calibrate.py)",
            "topology": args.topology,
            "dev": names,
            "questions": at.n,
            "at_threshold": {"right": at.right, "wrong": at.wrong, "abstained": at.abstained},
            "cross_validated": {
                "right": round(cv.right_rate, 4),
                "wrong": round(cv.wrong_rate, 4),
                "abstained": round(cv.abstained / cv.n, 4),
                "fold_thresholds": chosen,
            },
            "measured": f"{date.today().isoformat()} at commit {_commit()}",
        }
        POINTS.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n")
        print(f"stored in {POINTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
