"""A delta add's stored reference (``tests/snapshots/delta_add.json``, checked by
test_graph_delta.py): two delta adds onto a store of three passages, and what the store holds
afterwards, in a form that compares across machines (`contents`).

This module uses only the build's public functions, so the reference can be written by any
version of the delta add. It was written by the delta add as it was before its stages moved into
the stage modules (commit 3b76258, `graphseek/knowledge/graph/delta.py` of 1,452 lines), and is
rewritten only by a change that means to change what a delta add stores (say so in its commit):

    .venv/bin/python tests/delta_reference.py
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from demo_builds import sqlite_rows  # noqa: E402
from test_graph_store import CORPUS, build  # noqa: E402

from graphseek.knowledge.graph import add_passages  # noqa: E402
from graphseek.knowledge.graph.settings import QUIET  # noqa: E402
from graphseek.knowledge.passages import Passage  # noqa: E402

REFERENCE = Path(__file__).parent / "snapshots" / "delta_add.json"

GOLDEN = Passage.from_title_text(
    "Golden State", "The Golden State Warriors, also called the Dubs, won in 2015."
)
FORD_AGAIN = Passage.from_title_text(
    "The Searchers",
    "The Searchers is a 1956 American western film directed by John Ford. It stars John Wayne.",
)
BASE = CORPUS[:3]
ADDS = [[GOLDEN, CORPUS[3], CORPUS[4]], [FORD_AGAIN, CORPUS[5], CORPUS[0]]]
"""Stored entities joined by name and by the merge decision, one that gains aliases (its vector
made again), new entities, relations that gain weight, matcher links; a passage already stored
(``CORPUS[0]``) is not added again."""


def delta_store(root: Path) -> Path:
    """The store of `BASE` with `ADDS` added to it as delta adds, one after the other."""
    base, out = root / "base", root / "delta"
    build(BASE, base).close()
    shutil.copytree(base, out)
    for passages in ADDS:
        add_passages(out, passages, run=QUIET, delta=True).close()
    return out


def contents(store: Path) -> dict[str, Any]:
    """What the store at `store` holds, as JSON values: every SQLite row in table order, the
    node ids, the matcher's words, the sentence layer, the matrices (their arrays) and the
    manifest's counts and ``delta`` section (less its timings); of each ``.npy``, its dtype,
    shape and row sums (vectors from other CPUs differ in their last bits)."""
    manifest = json.loads((store / "manifest.json").read_text())
    delta = {k: v for k, v in manifest["delta"].items() if k != "timings"}
    out: dict[str, Any] = {
        "sqlite": sqlite_rows(store / "graph.sqlite"),
        "manifest": {"counts": manifest["counts"], "delta": delta},
        "json": {
            p.name: json.loads(p.read_text())
            for p in sorted(store.glob("*.json"))
            if p.name != "manifest.json"
        },
        "matrices": {},
        "arrays": {},
    }
    for path in sorted(store.glob("*.npz")):
        with np.load(path) as arrays:
            out["matrices"][path.name] = {k: arrays[k].tolist() for k in sorted(arrays.files)}
    for path in sorted(store.glob("*.npy")):
        rows = np.load(path)
        out["arrays"][path.name] = {
            "dtype": str(rows.dtype),
            "shape": list(rows.shape),
            "row_sums": rows.astype(np.float64).sum(axis=1).tolist() if rows.ndim == 2 else [],
        }
    assert sorted(p.name for p in store.iterdir()) == sorted(
        [*out["json"], "manifest.json", "graph.sqlite", *out["matrices"], *out["arrays"]]
    ), "a file the reference does not cover"
    # tuples as lists and bytes (a matrix's format, BLOB columns) as hex, as the JSON reads
    return dict(json.loads(json.dumps(out, default=bytes.hex)))


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        reference = contents(delta_store(Path(tmp)))
    REFERENCE.write_text(json.dumps(reference, indent=1, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}")
