"""Reports of an evaluation run: a markdown table, a JSON summary and PNG plots.

`write_report(records, out_dir)` writes

- `table.md`: one table per dataset and one of averages over datasets; rows are configurations,
  columns EM, F1, SubEM, judge accuracy, the outcomes right / wrong / abstained (counts and
  rates, see `graphseek.evaluation.scoring`), the wrong-answer rate, the unanswerable questions
  abstained on, Recall@2/5, retrieval F1 (evidence ids), LLM calls, tokens, seconds and CPU
  seconds per question;
- `summary.json`: the same numbers with the count each mean is over, plus notes;
- `plots/accuracy_vs_tokens.png`: judge accuracy against tokens per question;
- `plots/recall_at_k.png`: Recall@k curves per configuration (and `recall_at_k_retrievers.png`
  per retriever when retrieval-only results are given);
- `plots/adaptive_stages.png`: for `adaptive` configurations, the distribution of the stage
  where questions ended (`diagnostics["stage_reached"]`, A2RAG Fig. 4), skipped with a note when
  no record has one.

Answer metrics average over every question; retrieval metrics skip flagged questions (gold
passages incomplete), so their `n` can be smaller.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from graphseek.evaluation.metrics import aggregate
from graphseek.evaluation.records import RECALL_KS
from graphseek.evaluation.retrieval import RetrievalReport
from graphseek.evaluation.scoring import OUTCOMES, outcome_metrics

__all__ = ["COLUMNS", "render_table", "summarise", "write_report"]

# (key in the summary, column header, kind): kind "pct" (x100), "num" (1 decimal), "int", "sec",
# "count" (count and rate: "12 (30%)"), "frac" (count of n: "5/5")
COLUMNS: list[tuple[str, str, str]] = [
    ("n", "n", "int"),
    ("em", "EM", "pct"),
    ("f1", "F1", "pct"),
    ("subem", "SubEM", "pct"),
    ("judge", "Acc", "pct"),
    ("right", "right", "count"),
    ("wrong", "wrong", "count"),
    ("abstained", "abstained", "count"),
    ("wrong_answer_rate", "wrong-answer rate", "pct"),
    ("unanswerable_abstained", "unans. abstained", "frac"),
    ("answer_in_evidence", "ans. in evidence", "pct"),
    ("recall@2", "R@2", "pct"),
    ("recall@5", "R@5", "pct"),
    ("ret_f1", "RetF1", "pct"),
    ("llm_calls", "calls/q", "num"),
    ("tokens", "tokens/q", "int"),
    ("seconds", "s/q", "sec"),
    ("cpu_seconds", "CPU s/q", "sec"),
]

COUNTED = (*OUTCOMES, "unanswerable_abstained")
"""Summary keys that also carry `count` (how many questions the rate is of)."""

_STAGE_ORDER = ["local", "bridge", "ppr", "global", "failed", "abstain", "abstained"]


def _per_question(record: Mapping[str, Any]) -> dict[str, Any]:
    usage = record.get("usage") or {}
    row = dict(record.get("metrics") or {})
    row["llm_calls"] = usage.get("llm_calls", 0)
    row["tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    row["prompt_tokens"] = usage.get("prompt_tokens", 0)
    row["completion_tokens"] = usage.get("completion_tokens", 0)
    row["seconds"] = usage.get("seconds", 0.0)
    row["cpu_seconds"] = usage.get("cpu_seconds")
    row.update(outcome_metrics(record))
    row["error"] = float(record.get("error") is not None)
    return row


def _add_counts(cell: dict[str, Any]) -> None:
    for key in COUNTED:
        stat = cell.get(key)
        if stat is not None and stat.get("mean") is not None:
            stat["count"] = round(stat["mean"] * stat["n"])


def _ordered(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def summarise(
    records: Sequence[Mapping[str, Any]],
    retrieval: Sequence[RetrievalReport] | None = None,
) -> dict[str, Any]:
    """The numbers of the report: {configs, datasets, cells, averages, judge, notes, ...}.

    `cells[config][dataset][metric] = {"mean", "n"}`; `averages[config][metric]` is the mean
    over datasets of the per-dataset means (datasets weigh equally, as in HiGraAgent Table 1).
    """
    configs = _ordered([r["config"] for r in records])
    datasets = _ordered([r["dataset"] for r in records])
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["config"], r["dataset"])].append(r)

    cells: dict[str, dict[str, dict[str, Any]]] = {c: {} for c in configs}
    for (cfg, ds), recs in groups.items():
        agg = aggregate([_per_question(r) for r in recs], [bool(r.get("flagged")) for r in recs])
        agg["n"] = {"mean": len(recs), "n": len(recs)}
        agg["n_flagged"] = {"mean": sum(bool(r.get("flagged")) for r in recs), "n": len(recs)}
        _add_counts(agg)
        cells[cfg][ds] = agg

    averages: dict[str, dict[str, Any]] = {}
    for cfg in configs:
        per_ds = [cells[cfg][ds] for ds in datasets if ds in cells[cfg]]
        avg: dict[str, Any] = {}
        for key in {k for cell in per_ds for k in cell}:
            means = [
                cell[key]["mean"] for cell in per_ds if cell.get(key, {}).get("mean") is not None
            ]
            avg[key] = {
                "mean": sum(means) / len(means) if means else None,
                "n": sum(cell.get(key, {}).get("n", 0) for cell in per_ds),
            }
        for key in ("n", "n_flagged"):  # counts add up rather than average
            if key in avg:
                avg[key]["mean"] = avg[key]["n"]
        for key in COUNTED:
            if key in avg:
                avg[key]["count"] = sum(cell.get(key, {}).get("count", 0) for cell in per_ds)
        avg["datasets"] = {"mean": len(per_ds), "n": len(per_ds)}
        averages[cfg] = avg

    kinds = {(r.get("judge") or {}).get("kind") for r in records} - {None}
    judge = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "none")
    specs = {r["config"]: r.get("config_spec", {"name": r["config"]}) for r in records}
    notes: list[str] = []
    if judge in ("rule", "mixed"):
        notes.append(
            "Acc is the offline judge rule (SubEM or token F1 >= 0.8) where no judge model "
            "was given" + (" for some records" if judge == "mixed" else "") + "."
        )
    flagged_ids: dict[str, set[str]] = defaultdict(set)
    unanswerable_ids: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if r.get("flagged"):
            answerable = outcome_metrics(r)["unanswerable_abstained"] is None
            (flagged_ids if answerable else unanswerable_ids)[r["dataset"]].add(r["question_id"])
    n_flagged = {ds: len(flagged_ids[ds]) for ds in datasets}
    if any(n_flagged.values()):
        notes.append(
            "Retrieval metrics skip flagged questions (gold passages not all found): "
            + ", ".join(f"{ds}: {n}" for ds, n in n_flagged.items() if n)
            + "."
        )
    n_unanswerable = {ds: len(unanswerable_ids[ds]) for ds in datasets}
    if any(n_unanswerable.values()):
        notes.append(
            "Unanswerable questions (no gold answer, no gold passages) count in the answer "
            "metrics and outcomes, not in the retrieval metrics: "
            + ", ".join(f"{ds}: {n}" for ds, n in n_unanswerable.items() if n)
            + "."
        )
    notes.append(
        "right: judged correct (Acc) on an answerable question, or an abstention on an "
        "unanswerable one (empty gold answer); wrong: any other answer; abstained: an "
        "abstention on an answerable question. right + wrong + abstained = n; wrong-answer "
        "rate = wrong / n. Unanswerable questions score EM = F1 = 1 when abstained on, "
        "0 when answered (SQuAD 2.0)."
    )
    if any(r.get("usage", {}).get("cpu_seconds") is None for r in records):
        notes.append("CPU s/q is left out for records run with --concurrency > 1 or older runs.")
    errors = sum(r.get("error") is not None for r in records)
    if errors:
        notes.append(f"{errors} record(s) ended with a system error (scored as abstentions).")
    return {
        "configs": configs,
        "datasets": datasets,
        "config_specs": specs,
        "judge": judge,
        "cells": cells,
        "averages": averages,
        "retrieval": [r.model_dump(mode="json", exclude={"per_question"}) for r in retrieval or []],
        "notes": notes,
    }


def _fmt_stat(stat: Mapping[str, Any] | None, kind: str) -> str:
    stat = stat or {}
    value = stat.get("mean")
    if kind == "count":
        if value is None:
            return "–"
        count = stat.get("count", round(value * stat.get("n", 0)))
        return f"{count} ({100 * value:.0f}%)"
    if kind == "frac":
        if not stat.get("n"):
            return "–"
        return f"{stat.get('count', 0)}/{stat['n']}"
    return _fmt(value, kind)


def _fmt(value: Any, kind: str) -> str:
    if value is None:
        return "–"
    if kind == "pct":
        return f"{100 * value:.1f}"
    if kind == "int":
        return f"{value:,.0f}"
    if kind == "sec":
        return f"{value:.2f}"
    return f"{value:.1f}"


def _table(
    rows: Mapping[str, Mapping[str, Any]],
    configs: Sequence[str],
    acc: str,
    n_datasets: int = 0,
) -> list[str]:
    """Markdown rows; `n_datasets` > 0 marks average rows that cover fewer datasets."""
    headers = ["config"] + [acc if key == "judge" else head for key, head, _ in COLUMNS]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join(["---"] + ["---:"] * len(COLUMNS)) + "|",
    ]
    for cfg in configs:
        cell = rows.get(cfg)
        if cell is None:
            continue
        values = [_fmt_stat(cell.get(key), kind) for key, _, kind in COLUMNS]
        label = cfg
        covered = (cell.get("datasets") or {}).get("mean")
        if n_datasets and covered is not None and covered < n_datasets:
            label = f"{cfg} ({covered} of {n_datasets} datasets)"
        lines.append("| " + " | ".join([label, *values]) + " |")
    return lines


def render_table(summary: Mapping[str, Any]) -> str:
    """The markdown report: a table per dataset, the averages, retrieval-only results, notes."""
    acc = {"llm": "Acc (LLM)", "rule": "Acc (rule)"}.get(summary["judge"], "Acc")
    configs, datasets = summary["configs"], summary["datasets"]
    lines = ["# graphseek evaluation", ""]
    if datasets:
        lines.append(
            "EM, F1, SubEM, Acc, wrong-answer rate, R@k and RetF1 are percentages; right, wrong "
            "and abstained are counts (rate); unans. abstained counts the unanswerable questions "
            "abstained on; ans. in evidence is the share of answerable questions where a gold "
            "answer string occurs in what the user was shown (the answer and its evidence "
            "sentences, or an abstention's three most relevant sentences); R@k is Recall@k of "
            "the ranked retrieved passages, RetF1 the passage-level F1 of the evidence ids; "
            "costs are per question."
        )
        lines.append("")
    for ds in datasets:
        lines += [f"## {ds}", ""]
        rows = {cfg: summary["cells"][cfg][ds] for cfg in configs if ds in summary["cells"][cfg]}
        lines += _table(rows, configs, acc)
        lines.append("")
    if len(datasets) > 1:
        lines += ["## Average over datasets", ""]
        lines += _table(summary["averages"], configs, acc, len(datasets))
        lines.append("")
    for rep in summary.get("retrieval") or []:
        f1_k = rep["f1_k"]
        ks = rep["k_values"]
        lines += [f"## Retrieval only: {rep['dataset']}", ""]
        lines.append(
            f"{rep['n_questions'] - rep['n_flagged']} of {rep['n_questions']} questions scored "
            f"(flagged ones skipped). R@k: Recall@k; P@{f1_k} and F1@{f1_k}: passage-level "
            f"precision and F1 of the top {f1_k}, in percent."
        )
        lines.append("")
        head = ["retriever", *[f"R@{k}" for k in ks], f"P@{f1_k}", f"F1@{f1_k}", "ms/query"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        for s in rep["scores"]:
            vals = [_fmt(s["recall"].get(str(k), s["recall"].get(k)), "pct") for k in ks]
            vals += [_fmt(s["precision_at_k"], "pct"), _fmt(s["f1_at_k"], "pct")]
            vals.append(f"{1000 * s['seconds_per_query']:.1f}")
            lines.append("| " + " | ".join([s["retriever"], *vals]) + " |")
        lines.append("")
    if summary.get("notes"):
        lines += ["## Notes", ""]
        lines += [f"- {n}" for n in summary["notes"]]
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# plots


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _plot_accuracy_vs_tokens(summary: Mapping[str, Any], path: Path) -> None:
    """Judge accuracy against tokens per question: colour = configuration, marker = dataset.

    When no configuration used any tokens (the offline reasoner), seconds per question go on
    the x axis instead, and the axis label says so.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.8, 4.6))
    markers = "osD^vP*X"
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    cells = summary["cells"]
    tokens = [
        (cell.get("tokens") or {}).get("mean") or 0.0
        for per_ds in cells.values()
        for cell in per_ds.values()
    ]
    use_tokens = any(t > 0 for t in tokens)
    x_key = "tokens" if use_tokens else "seconds"
    for i, cfg in enumerate(summary["configs"]):
        for j, ds in enumerate(summary["datasets"]):
            cell = cells[cfg].get(ds)
            y = (cell.get("judge") or {}).get("mean") if cell else None
            if cell is None or y is None:
                continue
            x = (cell.get(x_key) or {}).get("mean") or 0.0
            ax.scatter(
                [x],
                [100 * y],
                marker=markers[j % len(markers)],
                color=colours[i % len(colours)],
                s=60,
                alpha=0.85,
                label=f"{cfg} / {ds}",
            )
    if use_tokens:
        ax.set_xlabel("tokens per question (prompt + completion)")
    else:
        ax.set_xlabel("seconds per question (no LLM tokens were used)")
    judge = {"llm": "LLM judge", "rule": "rule judge"}.get(summary["judge"], "judge")
    ax.set_ylabel(f"accuracy (%, {judge})")
    ax.set_ylim(0, 100)
    ax.set_title("Accuracy vs cost per question")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _recall_curves_from_records(records: Sequence[Mapping[str, Any]]) -> dict[str, dict]:
    """{dataset: {config: [(k, mean Recall@k)]}} over non-flagged records."""
    curves: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        if not r.get("flagged"):
            groups[(r["dataset"], r["config"])].append(r)
    for (ds, cfg), recs in groups.items():
        points = []
        for k in RECALL_KS:
            vals = [r["metrics"].get(f"recall@{k}") for r in recs]
            vals = [v for v in vals if v is not None]
            if vals:
                points.append((k, sum(vals) / len(vals)))
        if points:
            curves[ds][cfg] = points
    return curves


def _plot_curves(
    curves: Mapping[str, Mapping[str, list[tuple[int, Any]]]], path: Path, title: str
) -> None:
    plt = _pyplot()
    datasets = list(curves)
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 4.2), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        for label, points in curves[ds].items():
            xs = [k for k, _ in points]
            ys = [100 * v for _, v in points]
            ax.plot(xs, ys, marker="o", label=label)
        ax.set_title(ds)
        ax.set_xticks(sorted({k for points in curves[ds].values() for k, _ in points}))
        ax.set_xlabel("k")
        ax.set_ylabel("Recall@k (%)")
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _stage_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for r in records:
        spec = r.get("config_spec") or {}
        if spec.get("topology") != "adaptive":
            continue
        stage = (r.get("diagnostics") or {}).get("stage_reached")
        if stage is None:
            continue
        counts[f"{r['config']} ({r['dataset']})"][str(stage)] += 1
    return counts


def _plot_stages(counts: Mapping[str, Counter[str]], path: Path) -> None:
    plt = _pyplot()
    stages = sorted(
        {s for c in counts.values() for s in c},
        key=lambda s: (_STAGE_ORDER.index(s) if s in _STAGE_ORDER else len(_STAGE_ORDER), s),
    )
    groups = list(counts)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(groups) + 3), 4.2))
    width = 0.8 / max(1, len(stages))
    for j, stage in enumerate(stages):
        xs = [i + j * width for i in range(len(groups))]
        ys = [100 * counts[g][stage] / max(1, sum(counts[g].values())) for g in groups]
        ax.bar(xs, ys, width=width, label=stage)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))])
    ax.set_xticklabels(groups, fontsize=7)
    ax.set_ylabel("questions (%)")
    ax.set_title("Stage where adaptive retrieval ended")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(
    records: Sequence[Mapping[str, Any]],
    out_dir: str | Path,
    *,
    retrieval: Sequence[RetrievalReport] | None = None,
    plots: bool = True,
) -> dict[str, Any]:
    """Write table.md, summary.json and plots/*.png under out_dir; return the summary.

    The summary gets `files` (paths written, relative to out_dir) and, for skipped plots, notes.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(records, retrieval)
    files: list[str] = []
    if plots:
        plot_dir = out / "plots"
        plot_dir.mkdir(exist_ok=True)
        if records:
            _plot_accuracy_vs_tokens(summary, plot_dir / "accuracy_vs_tokens.png")
            files.append("plots/accuracy_vs_tokens.png")
        curves = _recall_curves_from_records(records)
        if curves:
            _plot_curves(curves, plot_dir / "recall_at_k.png", "Recall@k by configuration")
            files.append("plots/recall_at_k.png")
        if retrieval:
            by_ret = {
                rep.dataset: {
                    s.retriever: [(k, v) for k, v in sorted(s.recall.items()) if v is not None]
                    for s in rep.scores
                }
                for rep in retrieval
            }
            _plot_curves(by_ret, plot_dir / "recall_at_k_retrievers.png", "Recall@k by retriever")
            files.append("plots/recall_at_k_retrievers.png")
        stages = _stage_counts(records)
        if stages:
            _plot_stages(stages, plot_dir / "adaptive_stages.png")
            files.append("plots/adaptive_stages.png")
        elif records:
            summary["notes"].append(
                "No adaptive-stage plot: no record of an `adaptive` configuration has "
                'diagnostics["stage_reached"].'
            )
    summary["files"] = ["table.md", "summary.json", *files]
    (out / "table.md").write_text(render_table(summary), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary
