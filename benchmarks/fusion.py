"""How the index's hybrid search fuses BM25 and dense: rank fusion against score fusion, one run.

For every question of each data set, BM25 and dense each rank their best `hybrid_depth(5)`
passages (what `Index.search(method="hybrid")` fuses for a top 5), and each fusion below ranks
their union:

- ``rrf``: reciprocal rank fusion, k = 60 (the index's hybrid search before this script's
  figures; the baseline);
- ``rrf wb=W``: the same with BM25 weighted W against dense's 1;
- ``convex a=A``: A times BM25's min-max normalised score plus (1 - A) times dense's
  (`graphseek.knowledge.fusion.convex`; the index's hybrid search is ``convex a=0.5``);
- ``bm25`` and ``dense`` alone.

Printed per data set, two figures per fusion:

- the documentation dev genres (docqa dev and `benchmarks/devsets/`; answerable questions):
  how many questions' first passage holds a gold answer (title included), and how many of
  their top 5 do;
- the encyclopedia dev slices (MuSiQue train 0-99, HotpotQA train 0-99, 2Wiki 0-199): Recall@2
  and Recall@5 of the gold passages, in percent.

Then the sum over the genres and each fusion's difference to ``rrf``. Only dev data is read;
indexes are built once into the evaluation cache (no graph).

    .venv/bin/python benchmarks/fusion.py [--datasets docqa,pkgdocs,...,2wiki]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphseek.agents.text import contains  # noqa: E402
from graphseek.evaluation.datasets import load_dataset  # noqa: E402
from graphseek.evaluation.index_cache import cached_index  # noqa: E402
from graphseek.evaluation.metrics import recall_at_k  # noqa: E402
from graphseek.knowledge.fusion import convex, rrf  # noqa: E402
from graphseek.knowledge.index_common import hybrid_depth  # noqa: E402

GENRES = ("docqa", "pkgdocs", "manpages", "configref", "changelogs")
SLICES = {"musique-train": "0:100", "hotpotqa-train": "0:100", "2wiki": "0:200"}
K = 5

Scored = list[tuple[str, float]]


def fusions() -> dict[str, object]:
    """Each fusion's name and a function of (BM25's, dense's) scored lists to a ranking."""

    def by_rank(wb: float, k: int = 60):  # type: ignore[no-untyped-def]
        return lambda b, d: [p for p, _ in rrf([[p for p, _ in b], [p for p, _ in d]], k, [wb, 1])]

    def by_score(a: float):  # type: ignore[no-untyped-def]
        return lambda b, d: [p for p, _ in convex([b, d], [a, 1 - a])]

    out: dict[str, object] = {
        "bm25": lambda b, d: [p for p, _ in b],
        "dense": lambda b, d: [p for p, _ in d],
        "rrf": by_rank(1.0),
    }
    out.update({f"rrf wb={w}": by_rank(w) for w in (1.5, 2.0)})
    out.update({f"convex a={a}": by_score(a) for a in (0.4, 0.5, 0.6)})
    return out


def measure(name: str) -> tuple[int, dict[str, list[float]]]:
    dataset = load_dataset(name, questions=SLICES.get(name))  # a genre: all its questions
    index = cached_index(dataset, show_progress=False)
    genre = name not in SLICES
    depth = hybrid_depth(K)
    ways = fusions()
    table = {f: [0.0, 0.0] for f in ways}
    n = 0
    for q in dataset.questions:
        answers = [a for a in q.answers if a.strip()]
        if (genre and not answers) or (not genre and not q.gold_passage_ids):
            continue
        n += 1
        b: Scored = [(h.passage.id, h.score) for h in index.search(q.question, depth, "bm25")]
        d: Scored = [(h.passage.id, h.score) for h in index.search(q.question, depth, "dense")]
        for f, fuse in ways.items():
            ranked = fuse(b, d)  # type: ignore[operator]
            if genre:

                def holds(pid: str, answers: list[str] = answers) -> bool:
                    p = index.get(pid)
                    return any(contains(f"{p.title}: {p.text}", a) for a in answers)

                table[f][0] += bool(ranked) and holds(ranked[0])
                table[f][1] += any(holds(p) for p in ranked[:K])
            else:
                table[f][0] += 100 * (recall_at_k(ranked, q.gold_passage_ids, 2) or 0.0)
                table[f][1] += 100 * (recall_at_k(ranked, q.gold_passage_ids, K) or 0.0)
    if not genre:
        table = {f: [v / max(n, 1) for v in vs] for f, vs in table.items()}
    return n, table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join((*GENRES, *SLICES)))
    args = ap.parse_args()
    names = [x for x in args.datasets.split(",") if x]
    rows = {name: measure(name) for name in names}
    cols = list(fusions())
    print(f"{'data set':<16}{'n':>4}  " + "".join(f"{c:>14}" for c in cols))
    print(f"{'':<22}" + "".join(f"{'top1/top5':>14}" for _ in cols) + "   (genres: questions)")
    print(f"{'':<22}" + "".join(f"{'R@2/R@5':>14}" for _ in cols) + "   (slices: percent)")
    for name, (n, table) in rows.items():
        digits = 1 if name in SLICES else 0
        cells = "".join(f"{f'{table[c][0]:.{digits}f}/{table[c][1]:.{digits}f}':>14}" for c in cols)
        print(f"{name:<16}{n:>4}  {cells}")
    genres = [rows[g][1] for g in names if g not in SLICES]
    if genres:
        total = {c: [sum(t[c][i] for t in genres) for i in (0, 1)] for c in cols}
        print(
            f"{'genres, sum':<22}"
            + "".join(f"{f'{v[0]:.0f}/{v[1]:.0f}':>14}" for v in total.values())
        )
        base = total["rrf"]
        print(
            f"{'  minus rrf':<22}"
            + "".join(
                f"{f'{v[0] - base[0]:+.0f}/{v[1] - base[1]:+.0f}':>14}" for v in total.values()
            )
        )
    for name in (x for x in names if x in SLICES):
        table = rows[name][1]
        base = table["rrf"]
        print(
            f"{name + ' minus rrf':<22}"
            + "".join(
                f"{f'{table[c][0] - base[0]:+.1f}/{table[c][1] - base[1]:+.1f}':>14}" for c in cols
            )
        )


if __name__ == "__main__":
    main()
