"""Offline reasoner: dev and held-out figures side by side, per data set and topology.

With no generative model (`llm="offline"`), runs each topology over each data set's dev slice
and, unless `--skip-heldout`, its held-out questions, through the evaluation runner
(`graphseek.evaluation.run_evaluation`: the same records, scoring and resume as `graphseek eval`)
and prints, per data set and topology, EM, F1, right / wrong / abstained, the wrong-answer rate
and CPU seconds per question for dev and held-out next to each other.

    .venv/bin/python benchmarks/offline_reasoner.py [--dataset 2wiki --dataset docqa ...]
        [--topology naive --topology dual_agent ...] [--dev SLICE] [--heldout SLICE]
        [--profile general --profile wikipedia] [--skip-heldout] [--docqa-heldout FILE]
        [--graph-reads whole|neighbourhood] [--out DIR] [--json FILE]

Data sets (dev -> held-out, default slices):

    2wiki    2wiki 0:200                  -> 2wiki 200:400
    musique  musique-train (100)          -> musique-dev100 (100)
    hotpotqa hotpotqa-train (100)         -> none
    docqa    docqa (dev, 40)              -> docqa-heldout (a file kept outside the repository:
                                             --docqa-heldout FILE or $GRAPHSEEK_DOCQA_HELDOUT)

`--dev` / `--heldout` take one slice for every data set (`0:50`) or `NAME=SLICE`, repeatable
(`--dev 2wiki=0:50 --dev docqa=all`). The 2Wiki dev slice must lie within questions 0-199 and its
held-out slice outside them. Tune on dev only: the held-out questions are meant to be run once,
at the end, for the note; so `--skip-heldout` leaves them out.

Records go under `--out` (default `eval-out/offline_reasoner`), `dev/` and `heldout/`, so an
interrupted run resumes. CPU seconds are the process CPU time of each question (one question at
a time); every topology first answers one untimed warm-up question so that loading the models is
not charged to the first question. The load average is printed with the timings: the machine is
shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's graphseek

TWOWIKI_DEV_STOP = 200


@dataclass(frozen=True)
class Family:
    dev: str
    dev_slice: str
    heldout: str | None
    heldout_slice: str


FAMILIES: dict[str, Family] = {
    "2wiki": Family("2wiki", "0:200", "2wiki", "200:400"),
    "musique": Family("musique-train", "all", "musique-dev100", "all"),
    "hotpotqa": Family("hotpotqa-train", "all", None, "all"),
    "docqa": Family("docqa", "all", "docqa-heldout", "all"),
}

METRICS = ("n", "em", "f1", "right", "wrong", "abstained", "wrong_answer_rate", "cpu_seconds")


def _split(values: Sequence[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip() for p in v.split(",") if p.strip()]
    return list(dict.fromkeys(out))


def _slices(values: Sequence[str] | None, families: Sequence[str], attr: str) -> dict[str, str]:
    """Per data set slice: the family default, overridden by SLICE (all) or NAME=SLICE."""
    chosen = {name: getattr(FAMILIES[name], attr) for name in families}
    for value in values or []:
        name, sep, spec = value.partition("=")
        if not sep:
            chosen = dict.fromkeys(chosen, value)
        elif name in chosen:
            chosen[name] = spec
        else:
            raise SystemExit(f"offline_reasoner: {name!r} is not among --dataset {families}")
    return chosen


def _check_twowiki(dev: str | None, heldout: str | None) -> None:
    """The 2Wiki dev slice lies within 0-199, the held-out one outside it."""
    from graphseek.evaluation.datasets import parse_slice

    if dev is not None:
        s = parse_slice(dev)
        if s.stop is None or s.stop > TWOWIKI_DEV_STOP or (s.start or 0) < 0:
            raise SystemExit(
                f"offline_reasoner: the 2Wiki dev slice must lie within 0:{TWOWIKI_DEV_STOP}, "
                f"got {dev!r}"
            )
    if heldout is not None and (parse_slice(heldout).start or 0) < TWOWIKI_DEV_STOP:
        raise SystemExit(
            f"offline_reasoner: the 2Wiki held-out slice must start at {TWOWIKI_DEV_STOP} or "
            f"later, got {heldout!r}"
        )


class WarmIndexes:
    """The runner's index factory: one cached index per corpus for both splits, and one untimed
    warm-up question per configuration before the first timed one (model loading)."""

    def __init__(
        self,
        configs: Sequence[Any],
        index_dir: Path | None,
        graph: bool,
        graph_reads: str | None = None,
    ) -> None:
        self.configs = configs
        self.index_dir = index_dir
        self.graph = graph
        self.graph_reads = graph_reads
        self.indexes: dict[str, Any] = {}
        self.warm = False

    def __call__(self, dataset: Any) -> Any:
        from graphseek.evaluation import ApiSystem, EvalQuestion, cached_index

        key = dataset.corpus_hash()
        if key not in self.indexes:
            index = cached_index(dataset, self.index_dir, graph=self.graph)
            if self.graph_reads is not None:  # the same index, its graph read as asked
                from graphseek.knowledge.index import Index

                index = Index.open(index.path, graph_reads=self.graph_reads)
            self.indexes[key] = index
        index = self.indexes[key]
        if not self.warm and dataset.questions:
            system = ApiSystem()
            warmup = EvalQuestion(id="warm-up", question=dataset.questions[0].question, answers=[])
            for config in self.configs:
                system(index, warmup, config)
            self.warm = True
        return index


def _run_split(
    datasets: list[Any],
    configs: Sequence[Any],
    out: Path,
    factory: WarmIndexes,
    progress: bool,
) -> dict[str, Any]:
    from graphseek.evaluation import run_evaluation, summarise

    if not datasets:
        return {"cells": {}}
    records = run_evaluation(
        datasets, configs, out, index_factory=factory, progress=progress, concurrency=1
    )
    return summarise(records)


def _cell(summary: dict[str, Any], config: str, dataset: str) -> dict[str, Any] | None:
    cell = summary.get("cells", {}).get(config, {}).get(dataset)
    if cell is None:
        return None
    out: dict[str, Any] = {}
    for key in METRICS:
        stat = cell.get(key) or {}
        out[key] = stat.get("mean")
        if "count" in stat:
            out[f"{key}_count"] = stat["count"]
    return out


def _fmt(cell: dict[str, Any] | None) -> list[str]:
    if cell is None:
        return ["–"] * 6

    def pct(key: str) -> str:
        v = cell.get(key)
        return "–" if v is None else f"{100 * v:.1f}"

    def count(key: str) -> str:
        c = cell.get(f"{key}_count")
        return "–" if c is None else str(c)

    cpu = cell.get("cpu_seconds")
    return [
        f"{cell.get('n') or 0:.0f}",
        pct("em"),
        pct("f1"),
        f"{count('right')}/{count('wrong')}/{count('abstained')}",
        pct("wrong_answer_rate"),
        "–" if cpu is None else f"{cpu:.2f}",
    ]


def _print_table(rows: list[dict[str, Any]], load: str) -> None:
    head = ["n", "EM", "F1", "right/wrong/abst.", "wrong-ans. rate", "CPU s/q"]
    print(f"\nOffline reasoner (llm=offline), load average {load}")
    print("EM, F1 and the wrong-answer rate in percent; CPU s/q: process CPU seconds per question.")
    print(
        "| data set | topology | profile | "
        + " | ".join(f"dev {h}" for h in head)
        + " | "
        + " | ".join(f"held-out {h}" for h in head)
        + " |"
    )
    print("|---|---|---|" + "---:|" * (2 * len(head)))
    for r in rows:
        dev = _fmt(r["dev"])
        held = _fmt(r["heldout"]) if r["heldout_name"] else ["n/a"] + ["–"] * 5
        print(
            f"| {r['family']} | {r['topology']} | {r['profile']} | " + " | ".join(dev + held) + " |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset",
        action="append",
        metavar="NAME",
        help=f"data set, repeatable or comma-separated: {', '.join(FAMILIES)} (default: docqa)",
    )
    parser.add_argument(
        "--topology",
        action="append",
        metavar="T",
        help="topology, repeatable or comma-separated (default: naive,dual_agent)",
    )
    parser.add_argument("--retriever", default="hybrid", help="retriever (default hybrid)")
    parser.add_argument(
        "--profile",
        action="append",
        metavar="P",
        help="reading profile, repeatable or comma-separated: general (default), wikipedia; "
        "several profiles give one row each, to compare a data set with and without its profile",
    )
    parser.add_argument("--dev", action="append", metavar="[NAME=]SLICE", help="dev slice")
    parser.add_argument("--heldout", action="append", metavar="[NAME=]SLICE", help="held-out slice")
    parser.add_argument("--skip-heldout", action="store_true", help="run the dev slices only")
    parser.add_argument(
        "--docqa-heldout",
        type=Path,
        default=None,
        metavar="FILE",
        help="docqa held-out questions (default $GRAPHSEEK_DOCQA_HELDOUT)",
    )
    parser.add_argument("--data-dir", type=Path, default=None, help="data directory")
    parser.add_argument("--index-dir", type=Path, default=None, help="index cache")
    parser.add_argument(
        "--graph-reads",
        choices=("whole", "neighbourhood"),
        default=None,
        help="how the graph retrievers read each index's graph (Index.open's graph_reads; "
        "default: the index's own, whole for a directory)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("eval-out/offline_reasoner"), help="records directory"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    from graphseek.agents.profiles import PROFILES
    from graphseek.errors import GraphseekError
    from graphseek.evaluation import load_dataset, make_configs
    from graphseek.evaluation.index_cache import needs_graph
    from graphseek.graphs import topology_names

    families = _split(args.dataset) or ["docqa"]
    unknown = [f for f in families if f not in FAMILIES]
    topologies = _split(args.topology) or ["naive", "dual_agent"]
    bad = [t for t in topologies if t not in topology_names()]
    profiles = _split(args.profile) or ["general"]
    bad_profiles = [p for p in profiles if p not in PROFILES]
    if bad_profiles:
        print(
            f"offline_reasoner: unknown profile(s) {bad_profiles} (use {sorted(PROFILES)})",
            file=sys.stderr,
        )
        return 2
    if unknown or bad:
        print(
            f"offline_reasoner: unknown data set(s) {unknown} (use {list(FAMILIES)}) or "
            f"topology(ies) {bad} (use {topology_names()})",
            file=sys.stderr,
        )
        return 2
    dev_slices = _slices(args.dev, families, "dev_slice")
    held_slices = _slices(args.heldout, families, "heldout_slice")
    if "2wiki" in families:
        _check_twowiki(dev_slices["2wiki"], None if args.skip_heldout else held_slices["2wiki"])
    configs = [
        # one configuration per topology and profile; the profile is named when several are run
        c.model_copy(update={"name": c.name if len(profiles) == 1 else f"{c.name}@{p}"})
        for p in profiles
        for c in make_configs(topologies, [args.retriever], llm="offline", context={"profile": p})
    ]
    factory = WarmIndexes(configs, args.index_dir, needs_graph(configs), args.graph_reads)
    docqa_file = args.docqa_heldout or os.environ.get("GRAPHSEEK_DOCQA_HELDOUT")

    try:
        dev_sets = [
            load_dataset(FAMILIES[f].dev, data_dir=args.data_dir, questions=dev_slices[f])
            for f in families
        ]
        held_sets: list[Any] = []
        held_names: dict[str, str | None] = {}
        notes: list[str] = []
        for f in families:
            name = FAMILIES[f].heldout
            if args.skip_heldout or name is None:
                held_names[f] = None
                continue
            spec = name
            if name == "docqa-heldout":
                if not docqa_file:
                    notes.append(
                        "docqa held-out skipped: pass --docqa-heldout FILE or set "
                        "GRAPHSEEK_DOCQA_HELDOUT (the questions are kept outside the repository)"
                    )
                    held_names[f] = None
                    continue
                spec = f"docqa-heldout={docqa_file}"
            held_sets.append(load_dataset(spec, data_dir=args.data_dir, questions=held_slices[f]))
            held_names[f] = name
        load_before = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
        dev = _run_split(dev_sets, configs, args.out / "dev", factory, not args.no_progress)
        held = _run_split(held_sets, configs, args.out / "heldout", factory, not args.no_progress)
    except (GraphseekError, ValueError, OSError) as exc:
        print(f"offline_reasoner: {exc}", file=sys.stderr)
        return 2
    load_after = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())

    rows = []
    for f, ds in zip(families, dev_sets, strict=True):
        for cfg in configs:
            held_name = held_names[f]
            rows.append(
                {
                    "family": f,
                    "topology": cfg.topology,
                    "profile": cfg.context.get("profile", "general"),
                    "config": cfg.name,
                    "dev_name": f"{ds.name} {dev_slices[f]}",
                    "heldout_name": held_name and f"{held_name} {held_slices[f]}",
                    "dev": _cell(dev, cfg.name, ds.name),
                    "heldout": _cell(held, cfg.name, held_name) if held_name else None,
                }
            )
    _print_table(rows, f"{load_before} (start), {load_after} (end)")
    for r in rows[:: len(configs)]:
        print(f"- {r['family']}: dev = {r['dev_name']}; held-out = {r['heldout_name'] or 'none'}")
    for note in notes:
        print(f"- {note}")
    print(
        f"- records: {args.out / 'dev'}"
        + ("" if args.skip_heldout else f", {args.out / 'heldout'}")
    )
    if args.json:
        args.json.write_text(
            json.dumps({"load": [load_before, load_after], "rows": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
