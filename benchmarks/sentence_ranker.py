"""Fit the sentence ranker's weights leave-one-genre-out and print how often the answer is shown.

The ranker (`graphseek.agents.reading.sentences`) scores every sentence of the retrieved passages
by a linear function of its `FEATURES`. Here, for each documentation genre (a dev set: docqa dev,
and the folders under `benchmarks/devsets/`), every answerable question retrieves its top `--k`
passages (hybrid, as `graphseek ask` does), every sentence gets its features, and a sentence is
right when it holds a gold answer. The weights maximise, per question, the softmax probability
of its right sentences against the others (a listwise log-linear model, L2-regularised, L-BFGS);
questions with no right sentence among the hits say nothing about ranking and are left out of the
fit (they count in the figures).

Printed per genre, each ranker judged **leave-one-genre-out** (fitted on the other genres only):

- `first passage`: the share of answerable questions whose first hybrid passage holds the answer
  (the floor the shown sentences must reach);
- `top-5 passages`: ... whose top `--k` passages hold it (the ceiling of anything read from them);
- `visible@3` for the hand-set weights, the similarity alone and the fitted weights: the share
  whose answer is in the first three shown sentences (`top_sentences`) with their context and
  their passage's title (document and section), as the CLI prints them.

`--write` fits on every genre and stores the weights in the package's `sentence_model.json`.
`--write-logo DIR` stores each held genre's weights (fitted on the others) as
`DIR/sentence_model-<genre>.json`: `benchmarks/calibrate.py --reader-models DIR` shows a held
genre's evidence with them, so that its *visible* share is judged leave-one-genre-out too.

    .venv/bin/python benchmarks/sentence_ranker.py                 # builds missing indexes once
    .venv/bin/python benchmarks/sentence_ranker.py --write
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphseek.agents.reading.reader import get_reader  # noqa: E402
from graphseek.agents.reading.sentences import (  # noqa: E402
    FEATURES,
    HAND_WEIGHTS,
    MODEL_FILE,
    RankedSentence,
    sentence_features,
    top_sentences,
)
from graphseek.agents.text import contains  # noqa: E402
from graphseek.evaluation.datasets import load_dataset  # noqa: E402
from graphseek.evaluation.index_cache import cached_index  # noqa: E402

GENRES = ("docqa", "pkgdocs", "manpages", "configref", "changelogs")
SHOWN = 3
L2 = 0.01
TIMES: list[tuple[float, float]] = []  # (parse, rank) CPU seconds per question


@dataclass
class Question:
    genre: str
    qid: str
    answers: list[str]
    sentences: list[RankedSentence]
    labels: np.ndarray  # 1.0 where the sentence holds an answer
    first_passage: bool
    in_hits: bool


def collect(genre: str, k: int) -> list[Question]:
    dataset = load_dataset(genre, questions=None)  # docqa, or a genre of `DEVSETS`
    index = cached_index(dataset, show_progress=False)
    reader = get_reader()
    out = []
    for q in dataset.questions:
        answers = [a for a in q.answers if a.strip()]
        if not answers:
            continue
        hits = index.search(q.question, k=k, method="hybrid")

        def holds(text: str, answers: list[str] = answers) -> bool:
            return any(contains(text, a) for a in answers)

        start = time.process_time()
        reader.parse([h.passage for h in hits])  # what the reader pays anyway (cached after)
        parsed = time.process_time()
        sents = sentence_features(q.question, hits, reader)
        TIMES.append((parsed - start, time.process_time() - parsed))
        out.append(
            Question(
                genre=genre,
                qid=q.id,
                answers=answers,
                sentences=sents,
                labels=np.array([float(holds(f"{s.passage.title}: {s.text}")) for s in sents]),
                first_passage=bool(hits) and holds(hits[0].passage.text),
                in_hits=any(holds(h.passage.text) for h in hits),
            )
        )
    return out


def _matrix(q: Question) -> np.ndarray:
    return np.array([s.features for s in q.sentences], dtype=np.float64).reshape(-1, len(FEATURES))


def fit(questions: list[Question]) -> np.ndarray:
    """Listwise softmax weights (see the module docstring)."""
    data = [(_matrix(q), q.labels > 0) for q in questions if q.labels.any()]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = L2 * float(w @ w), 2 * L2 * w
        for x, pos in data:
            z = x @ w
            z = z - z.max()
            p = np.exp(z)
            p /= p.sum()
            pp = p[pos].sum()
            total -= float(np.log(pp + 1e-12))
            # d(-log sum_pos p)/dw = E_p[x] - E_{p | pos}[x]
            grad += p @ x - (p[pos] / (pp + 1e-12)) @ x[pos]
        return total / len(data), grad / len(data)

    w0 = np.asarray(HAND_WEIGHTS, dtype=np.float64) * 10
    return minimize(loss, w0, jac=True, method="L-BFGS-B").x  # type: ignore[no-any-return]


def visible(q: Question, w: np.ndarray) -> bool:
    if not q.sentences:
        return False
    scores = _matrix(q) @ w
    order = sorted(range(len(q.sentences)), key=lambda i: (-scores[i], i))
    ranked = [q.sentences[i] for i in order]
    shown = [f"{s.passage.title}: {s.context}" for s in top_sentences(ranked, SHOWN)]
    return any(contains(text, a) for text in shown for a in q.answers)


def _record(w: np.ndarray, genres: list[str], k: int) -> dict:
    """A `sentence_model.json` record of weights `w` fitted on `genres`."""
    return {
        "weights": dict(zip(FEATURES, np.round(w, 4).tolist(), strict=True)),
        "genres": genres,
        "k": k,
        "source": "benchmarks/sentence_ranker.py --write",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--genres", default=",".join(GENRES))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="store the all-genre fit")
    parser.add_argument(
        "--misses",
        action="store_true",
        help="print the questions whose top passages hold the "
        "answer but whose shown sentences do not (fitted leave-one-genre-out)",
    )
    parser.add_argument(
        "--write-logo",
        type=Path,
        default=None,
        help="store each held genre's weights (fitted on the others) in this folder",
    )
    args = parser.parse_args()
    genres = [g for g in args.genres.split(",") if g]
    data = {g: collect(g, args.k) for g in genres}
    hand = np.asarray(HAND_WEIGHTS)
    sim_only = np.eye(len(FEATURES))[0]
    print(
        f"{'genre':<12}{'n':>4}{'first passage':>15}{'top-5 passages':>16}"
        f"{'hand @3':>9}{'similarity @3':>15}{'fitted (LOGO) @3':>18}"
    )
    rows = []
    for g in genres:
        held = data[g]
        train = [q for h in genres if h != g for q in data[h]]
        w = fit(train) if len(genres) > 1 else hand
        if args.write_logo is not None and len(genres) > 1:
            args.write_logo.mkdir(parents=True, exist_ok=True)
            (args.write_logo / f"sentence_model-{g}.json").write_text(
                json.dumps(_record(w, [h for h in genres if h != g], args.k), indent=1) + "\n"
            )
        n = len(held) or 1
        row = (
            sum(q.first_passage for q in held) / n,
            sum(q.in_hits for q in held) / n,
            sum(visible(q, hand) for q in held) / n,
            sum(visible(q, sim_only) for q in held) / n,
            sum(visible(q, w) for q in held) / n,
        )
        rows.append(row)
        if args.misses:
            for q in held:
                if q.in_hits and not visible(q, w):
                    best = sorted(q.sentences, key=lambda s: -float(np.dot(s.features, w)))[:3]
                    print(
                        f"  miss {q.qid} {q.answers[0]!r}: " + " | ".join(s.text[:60] for s in best)
                    )
        print(
            f"{g:<12}{len(held):>4}"
            + "".join(f"{x:>{c}.0%}" for x, c in zip(row, (15, 16, 9, 15, 18), strict=True))
        )
    means = np.mean(np.array(rows), axis=0)
    print(
        f"{'mean':<16}"
        + "".join(f"{x:>{c}.0%}" for x, c in zip(means, (15, 16, 9, 15, 18), strict=True))
    )
    parse, rank = (float(np.mean(x)) for x in zip(*TIMES, strict=True))
    sentences = np.mean([len(q.sentences) for g in genres for q in data[g]])
    print(
        f"CPU per question: parsing its passages {parse * 1000:.0f} ms (spaCy and MiniLM, cached "
        f"for the reader), ranking {sentences:.0f} sentences {rank * 1000:.1f} ms"
    )
    w_all = fit([q for g in genres for q in data[g]])
    print(
        "weights fitted on every genre:",
        dict(zip(FEATURES, np.round(w_all, 3).tolist(), strict=True)),
    )
    if args.write:
        path = REPO / "graphseek" / "agents" / "reading" / MODEL_FILE
        path.write_text(json.dumps(_record(w_all, genres, args.k), indent=1) + "\n")
        print("wrote", path)


if __name__ == "__main__":
    main()
