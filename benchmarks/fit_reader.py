"""Fit the general reader's weights on the dev slices and write `reader_model.json`.

The reader (`graphseek.agents.reading.reader`) scores every candidate span by a linear function of
`FEATURES`. This script fits those weights, the per-sentence support bonus and the score of "no
answer" by maximising, per question, the softmax probability of the right candidates (any span
matching a gold answer) against all others and against answering nothing (the target when no
candidate is right: retrieval missed, or nothing of the asked kind is there). That is a listwise
log-linear model with a null option, as in SQuAD 2.0 readers; L2-regularised, fitted with L-BFGS.

Only dev slices are read (the rule of this project):

- MuSiQue train (`musique_train.json`): every hop of every question's decomposition, `#N`
  filled with the gold answer of hop N; its hits are the item's own paragraphs ranked by MiniLM
  similarity, top `--k`;
- docqa dev (`docqa_dev.json`): the single-hop and unanswerable questions, and both steps of each
  two-hop question the general decomposer splits in two (step 2 with the gold bridge filled in),
  with the hits of the docqa index (hybrid retrieval, top `--k`);
- the documentation genres of `benchmarks/devsets/` (`--genres`, default pkgdocs, manpages,
  configref, changelogs), read as docqa is, over each genre's own index;
- with `--hotpotqa`, HotpotQA train (`hotpotqa_train.json`): every question not answered yes/no,
  whole, over its own paragraphs ranked by MiniLM similarity, top `--k`.

It first prints the fit judged **leave one genre out**: for each documentation source, weights
and threshold fitted on every other source (MuSiQue always among them), scored on the held one.

It prints, by 5-fold cross-validation over questions, top-1 accuracy and the wrong-answer rate at
the chosen abstention threshold for the hand-set weights and the fitted ones, then fits on all and
writes the model (`--out`, default the package's `reader_model.json`).

    .venv/bin/python benchmarks/fit_reader.py            # ~2-4 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graphseek.agents.offline.decomposer import decompose_question  # noqa: E402
from graphseek.agents.reading.reader import (  # noqa: E402
    FEATURES,
    HAND_MODEL,
    MODEL_FILE,
    ExtractiveReader,
    confidence,
    sentence_score,
)
from graphseek.agents.text import normalize  # noqa: E402
from graphseek.knowledge.passages import Hit, Passage  # noqa: E402

DATA = REPO.parent / "shared" / "data"
N_COLS = len(FEATURES) + 2  # features, support, null indicator


@dataclass
class Example:
    source: str
    question: str
    golds: list[str]
    X: np.ndarray  # (candidates + 1, N_COLS); the last row is "no answer"
    positive: np.ndarray  # bool per row
    texts: list[str]


def token_f1(a: str, b: str) -> float:
    ta, tb = normalize(a).split(), normalize(b).split()
    common = sum((Counter(ta) & Counter(tb)).values())
    if not common:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def matches(candidate: str, golds: list[str]) -> bool:
    return any(normalize(candidate) == normalize(g) or token_f1(candidate, g) >= 0.8 for g in golds)


def example(
    reader: ExtractiveReader, source: str, question: str, golds: list[str], hits: list[Hit]
) -> Example:
    ranked = reader.rank(question, hits)
    rows = []
    positive = []
    for c in ranked:
        support = min(c.support - 1, 3)
        rows.append([*c.features, support, 0.0])
        positive.append(bool(golds) and matches(c.text, golds))
    rows.append([0.0] * (N_COLS - 1) + [1.0])
    positive.append(not any(positive))
    return Example(
        source,
        question,
        golds,
        np.asarray(rows, dtype=np.float64),
        np.asarray(positive),
        [c.text for c in ranked],
    )


def fill(question: str, answers: dict[str, str]) -> str:
    """`#N` replaced by the gold answer of hop N."""
    return re.sub(r"#(\d+)", lambda m: answers.get(m.group(1), m.group(0)), question)


def natural(question: str) -> str:
    """MuSiQue writes some hops as knowledge-base queries ("Hello Love >> performer"); the
    decomposer never does, so they are read as the question they stand for."""
    if ">>" not in question:
        return question
    subject, _, relation = question.partition(">>")
    return f"What is the {relation.strip()} of {subject.strip()}?"


def musique_examples(reader: ExtractiveReader, k: int) -> list[Example]:
    items = json.loads((DATA / "musique" / "musique_train.json").read_text())
    out = []
    for item in items:
        paras = [
            Passage(id=f"{item['id']}-{i}", title=p.get("title", ""), text=p["paragraph_text"])
            for i, p in enumerate(item["paragraphs"])
        ]
        vecs = reader.embedder.encode([f"{p.title}. {p.text}" for p in paras])
        answers: dict[str, str] = {}
        for n, step in enumerate(item["question_decomposition"], start=1):
            q = fill(step["question"], answers)
            q = natural(" ".join(q.replace(" ?", "?").split()))
            answers[str(n)] = step["answer"]
            hits = ranked_hits(reader, q, paras, vecs, k)
            out.append(example(reader, "musique-train", q, [step["answer"]], hits))
    return out


def ranked_hits(
    reader: ExtractiveReader, question: str, paras: list[Passage], vecs: np.ndarray, k: int
) -> list[Hit]:
    """The `k` paragraphs most similar to `question` (MiniLM cosine), as ranked hits."""
    qv = reader.embedder.encode([question])[0]
    order = np.argsort(-(vecs @ qv))[:k]
    return [
        Hit(passage=paras[j], score=float(vecs[j] @ qv), rank=r + 1) for r, j in enumerate(order)
    ]


def hotpotqa_examples(reader: ExtractiveReader, k: int) -> list[Example]:
    """HotpotQA train: each question whole (yes/no answers left out), read over its own ten
    paragraphs ranked by MiniLM similarity, top `k`."""
    items = json.loads((DATA / "hotpotqa" / "hotpotqa_train.json").read_text())
    out = []
    for item in items:
        if normalize(item["answer"]) in {"yes", "no"}:
            continue
        paras = [
            Passage(id=f"{item['_id']}-{i}", title=title, text="".join(sents).strip())
            for i, (title, sents) in enumerate(item["context"])
        ]
        vecs = reader.embedder.encode([f"{p.title}. {p.text}" for p in paras])
        q = item["question"]
        hits = ranked_hits(reader, q, paras, vecs, k)
        out.append(example(reader, "hotpotqa-train", q, [item["answer"]], hits))
    return out


def docqa_examples(
    reader: ExtractiveReader, k: int, index_dir: Path | None, retriever: str = "hybrid"
) -> list[Example]:
    from graphseek.knowledge.index import Index

    items = json.loads((DATA / "docqa" / "docqa_dev.json").read_text())
    if index_dir is None:
        root = Path(os.environ.get("GRAPHSEEK_CACHE_DIR") or Path.home() / ".cache" / "graphseek")
        found = sorted((root / "indexes").glob("docqa-*"))
        if not found:
            print(
                "no docqa index cached: run `graphseek eval --dataset docqa` once; skipping docqa"
            )
            return []
        index_dir = found[0]
    return document_examples(reader, "docqa-dev", items, Index.open(index_dir), k, retriever)


def genre_examples(
    reader: ExtractiveReader, k: int, name: str, retriever: str = "hybrid"
) -> list[Example]:
    """A documentation genre of `benchmarks/devsets/` (its index built once, then cached)."""
    from graphseek.evaluation.datasets import DEVSETS, load_dataset
    from graphseek.evaluation.index_cache import cached_index

    items = json.loads((REPO / DEVSETS[name]).read_text())
    index = cached_index(load_dataset(name, questions=None), show_progress=False)
    return document_examples(reader, name, items, index, k, retriever)


def document_examples(
    reader: ExtractiveReader,
    source: str,
    items: list[dict],
    index: object,
    k: int,
    retriever: str = "hybrid",
) -> list[Example]:
    """The single-hop and unanswerable questions whole, and both steps of each two-hop question
    the general decomposer splits in two (step 2 with the gold bridge filled in), each over the
    top `k` of `retriever` (a `Context.retriever` name: the ranks a workflow reads)."""
    from graphseek.tools.retrievers import get_retriever

    retrieve = get_retriever(retriever)

    def search(query: str, k: int) -> list:
        return retrieve(index, query, k)

    out = []
    for item in items:
        golds = [a for a in [item.get("answer", ""), *item.get("answer_aliases", [])] if a]
        if item.get("type") == "two_hop":
            bridge = item.get("bridge") or ""
            plan = decompose_question(item["question"], "general")
            if not bridge or len(plan) != 2 or plan[1].depends_on != [plan[0].id]:
                continue
            second = fill(plan[1].question, {str(plan[0].id): bridge})
            for q, g in ((plan[0].question, [bridge]), (second, golds)):
                out.append(example(reader, source, q, g, search(q, k=k)))
            continue
        hits = search(item["question"], k=k)
        out.append(example(reader, source, item["question"], golds, hits))
    return out


# -- the model -----------------------------------------------------------------------------------


def loss_grad(theta: np.ndarray, data: list[Example], l2: float) -> tuple[float, np.ndarray]:
    """Mean negative log-likelihood, each source weighing the same (the documentation set is
    small beside MuSiQue, and a reader for documents must not be a MuSiQue reader only)."""
    total = 0.0
    grad = np.zeros_like(theta)
    counts = Counter(ex.source for ex in data)
    for ex in data:
        weight = len(data) / (len(counts) * counts[ex.source])
        s = ex.X @ theta
        top = s.max()
        e = np.exp(s - top)
        z = e.sum()
        pos = e * ex.positive
        zp = pos.sum()
        total += -weight * (math.log(zp) - math.log(z))
        g = e / z - pos / zp
        grad += weight * (ex.X.T @ g)
    n = max(1, len(data))
    reg = theta.copy()
    reg[-1] = 0.0  # the null score is not shrunk
    return total / n + l2 * float(reg @ reg), grad / n + 2 * l2 * reg


def fit(data: list[Example], l2: float = 0.01) -> np.ndarray:
    theta0 = np.asarray([*HAND_MODEL.weights, HAND_MODEL.support, 0.6])
    res = minimize(loss_grad, theta0, args=(data, l2), jac=True, method="L-BFGS-B")
    return np.asarray(res.x)


def sizes_of(data: list[Example]) -> Counter[str]:
    return Counter(ex.source for ex in data)


def hand_theta() -> np.ndarray:
    return np.asarray([*HAND_MODEL.weights, HAND_MODEL.support, float("-inf")])


def decide(theta: np.ndarray, ex: Example, fitted: bool) -> tuple[str, float]:
    """The answer (empty: none) and its confidence under `theta`."""
    if len(ex.texts) == 0:
        return "", 0.0
    s = ex.X[:-1] @ np.nan_to_num(theta, neginf=0.0)
    best = int(np.argmax(s))
    if not fitted:
        order = np.argsort(-s)
        second = float(s[order[1]]) if len(order) > 1 else 0.0
        coverage = sentence_score(ex.X[best])  # as the reader computes it
        return ex.texts[best], confidence(float(s[best]), second, coverage)
    full = ex.X @ theta
    top = full.max()
    e = np.exp(full - top)
    return ex.texts[best], float(e[best] / e.sum())


def report(
    theta: np.ndarray, data: list[Example], fitted: bool, threshold: float
) -> dict[str, float]:
    right = wrong = abstained = top1 = 0
    for ex in data:
        answer, conf = decide(theta, ex, fitted)
        ok = bool(ex.golds) and bool(answer) and matches(answer, ex.golds)
        top1 += ok
        if not answer or conf < threshold:
            right += not ex.golds
            abstained += bool(ex.golds)
        elif ok:
            right += 1
        else:
            wrong += 1
    n = max(1, len(data))
    return {"top1": top1 / n, "right": right / n, "wrong": wrong / n, "abstained": abstained / n}


def threshold_for(theta: np.ndarray, data: list[Example], max_wrong: float) -> float:
    """The lowest probability threshold whose wrong-answer rate is at most `max_wrong` in every
    source of `data` (the rule of the operating point)."""
    for t in [round(0.05 * i, 2) for i in range(20)]:
        sources = {ex.source for ex in data}
        if all(
            report(theta, [ex for ex in data if ex.source == s], True, t)["wrong"] <= max_wrong
            for s in sources
        ):
            return t
    return 0.95


def model_json(theta: np.ndarray, data: list[Example], k: int, l2: float, point: float) -> dict:
    """The reader model file's content for weights `theta` fitted on `data`."""
    return {
        "weights": {name: round(float(w), 5) for name, w in zip(FEATURES, theta, strict=False)},
        "support": round(float(theta[len(FEATURES)]), 5),
        "null": round(float(theta[-1]), 5),
        "bias": 0.0,
        "operating_point": point,
        "fitted_on": f"{len(data)} dev questions: "
        + ", ".join(f"{n} {s}" for s, n in Counter(ex.source for ex in data).items())
        + f"; top {k} passages; l2 {l2}; benchmarks/fit_reader.py",
    }


def leave_one_genre_out(
    data: list[Example], l2: float, max_wrong: float, write: Path | None = None, k: int = 5
) -> None:
    """For each documentation source (docqa and the genres; MuSiQue is always fitted on): the
    weights and the threshold fitted on every other source, scored on the held one. `write`: a
    folder to store each held source's model in (`reader_model-<source>.json`), for
    `benchmarks/calibrate.py --reader-models`."""
    held_sources = [s for s in dict.fromkeys(ex.source for ex in data) if s != "musique-train"]
    if len(held_sources) < 2:
        return
    print("\nleave one genre out (weights and threshold fitted on the other sources):")
    print(
        f"{'held':<12} {'n':>4} {'thresh':>6} {'top-1':>7} {'right':>7} {'wrong':>7} {'abstain':>8}"
    )
    for held in held_sources:
        train = [ex for ex in data if ex.source != held]
        test = [ex for ex in data if ex.source == held]
        theta = fit(train, l2)
        t = threshold_for(theta, train, max_wrong)
        r = report(theta, test, True, t)
        if write is not None:
            write.mkdir(parents=True, exist_ok=True)
            name = held.removesuffix("-dev")
            text = json.dumps(model_json(theta, train, k, l2, t), indent=2) + "\n"
            (write / f"reader_model-{name}.json").write_text(text)
        print(
            f"{held:<12} {len(test):>4} {t:>6.2f} {r['top1']:>7.1%} {r['right']:>7.1%} "
            f"{r['wrong']:>7.1%} {r['abstained']:>8.1%}"
        )
    print("(per question or step read over its top passages; right counts abstained unanswerables)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=5, help="passages read per question (Context.top_k)")
    ap.add_argument("--l2", type=float, default=0.01)
    ap.add_argument("--max-wrong", type=float, default=0.10, help="wrong-answer rate allowed")
    ap.add_argument(
        "--index-dir", type=Path, default=None, help="the docqa index (default: the eval cache)"
    )
    ap.add_argument(
        "--out", type=Path, default=REPO / "graphseek" / "agents" / "reading" / MODEL_FILE
    )
    ap.add_argument("--cache", default="", help="pickle the examples here and reuse them")
    ap.add_argument(
        "--retriever",
        default="hybrid",
        help="the retriever whose top k the documentation questions are read over (a "
        "Context.retriever name; default hybrid)",
    )
    ap.add_argument(
        "--hotpotqa", action="store_true", help="also fit on HotpotQA train (whole questions)"
    )
    ap.add_argument("--sources", default="", help="comma-separated sources to fit on (default all)")
    ap.add_argument("--dry-run", action="store_true", help="report only; write nothing")
    ap.add_argument(
        "--without",
        default="",
        help="comma-separated FEATURES held at 0: the same examples fitted without them, an "
        "ablation against a baseline of the same examples (e.g. --cache F, then --without heading)",
    )
    ap.add_argument(
        "--write-logo",
        type=Path,
        default=None,
        help="store each held genre's model (fitted on the others) in this folder",
    )
    ap.add_argument(
        "--genres",
        default="pkgdocs,manpages,configref,changelogs",
        help="documentation genres of benchmarks/devsets/ to fit on ('' for none)",
    )
    args = ap.parse_args()

    import pickle

    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.is_file():
        data = pickle.loads(cache.read_bytes())
    else:
        reader = ExtractiveReader(model=HAND_MODEL)
        data = musique_examples(reader, args.k) + docqa_examples(
            reader, args.k, args.index_dir, args.retriever
        )
        for genre in [g for g in args.genres.split(",") if g]:
            data += genre_examples(reader, args.k, genre, args.retriever)
        if args.hotpotqa:
            data += hotpotqa_examples(reader, args.k)
        if cache is not None:
            cache.write_bytes(pickle.dumps(data))
    if args.sources:
        data = [ex for ex in data if ex.source in set(args.sources.split(","))]
    for name in [f for f in args.without.split(",") if f]:
        if name not in FEATURES:
            raise SystemExit(f"fit_reader.py: --without: no feature {name!r} in {FEATURES}")
        column = FEATURES.index(name)
        for ex in data:  # the same examples, the feature held at 0 (its weight then fits to 0)
            ex.X[:, column] = 0.0
        print(f"without {name}")
    print(f"{len(data)} questions: {dict(Counter(ex.source for ex in data))}")
    print(
        f"questions with a right candidate among the top {args.k} passages: "
        f"{sum(not ex.positive[-1] for ex in data) / len(data):.1%}"
    )

    leave_one_genre_out(data, args.l2, args.max_wrong, args.write_logo, args.k)

    rng = np.random.default_rng(0)
    folds = rng.permutation(len(data)) % 5
    thresholds = [round(0.05 * i, 2) for i in range(15)]
    worst: dict[float, float] = {}
    print("\n5-fold cross-validation (held-out folds), by abstention threshold:")
    print(
        f"{'weights':<10} {'thresh':>6} {'top-1':>7} {'right':>7} {'wrong':>7} {'abstain':>8}"
        "  per source: right/wrong"
    )
    for name, fitted in (("hand-set", False), ("fitted", True)):
        thetas = [
            fit([ex for ex, g in zip(data, folds, strict=True) if g != f], args.l2)
            if fitted
            else hand_theta()
            for f in range(5)
        ]
        for t in thresholds:
            agg: Counter[str] = Counter()
            per_source: dict[str, Counter[str]] = {}
            for f in range(5):
                test = [ex for ex, g in zip(data, folds, strict=True) if g == f]
                for key, value in report(thetas[f], test, fitted, t).items():
                    agg[key] += value * len(test)
                for src in {ex.source for ex in test}:
                    part = [ex for ex in test if ex.source == src]
                    for key, value in report(thetas[f], part, fitted, t).items():
                        per_source.setdefault(src, Counter())[key] += value * len(part)
            r = {k: v / len(data) for k, v in agg.items()}
            if fitted:  # the worst source's wrong-answer rate
                sizes = Counter(ex.source for ex in data)
                worst[t] = max(c["wrong"] / sizes[src] for src, c in per_source.items())
            print(
                f"{name:<10} {t:>6.2f} {r['top1']:>7.1%} {r['right']:>7.1%} {r['wrong']:>7.1%} "
                f"{r['abstained']:>8.1%}  "
                + "  ".join(
                    f"{src}: {c['right'] / sizes_of(data)[src]:.0%}/{c['wrong'] / sizes_of(data)[src]:.0%}"
                    for src, c in sorted(per_source.items())
                )
            )

    # the operating point: the lowest threshold whose cross-validated wrong-answer rate is at
    # most `--max-wrong` in every source (a user trusts an abstention, not a confident error)
    point = min((t for t, w in worst.items() if w <= args.max_wrong), default=max(worst))
    print(
        f"\noperating point (lowest threshold with wrong <= {args.max_wrong:.0%} in every "
        f"source, cross-validated): {point}"
    )
    theta = fit(data, args.l2)
    print("\nfitted on all:")
    for name, w in zip([*FEATURES, "support", "null"], theta, strict=True):
        print(f"  {name:<18} {w:+.3f}")
    if args.dry_run:
        return 0
    model = model_json(theta, data, args.k, args.l2, point)
    args.out.write_text(json.dumps(model, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
