"""What the build tests share (test_bounded_build.py, test_sharded_build.py): a corpus of a few
hundred passages made from the packaged demo corpus, and a store's files and manifest as two
builds are compared (the manifest less its timings and write time): byte for byte when both
builds compute the same floats the same way, by content (`assert_same_store`) when they come
from other kernels or batches."""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from floats import HALF_STEPS, RTOL, assert_close

from graphseek.knowledge.passages import Passage


def demo_copies(copies: int, source: str) -> list[Passage]:
    """The packaged demo corpus (34 passages) `copies` times: copy c > 0 retitled
    ``"<title> [c]"`` with its sentences rotated by c (new contexts for the same names)."""
    records = json.loads(
        resources.files("graphseek.knowledge.demo").joinpath("demo_corpus.json").read_text()
    )
    out = []
    for c in range(copies):
        for r in records:
            sentences = [s.strip() for s in r["text"].split(". ") if s.strip()]
            turn = c % len(sentences)
            text = ". ".join(sentences[turn:] + sentences[:turn])
            title = r["title"] if c == 0 else f"{r['title']} [{c}]"
            out.append(Passage.from_title_text(title, text, source=source))
    return out


def store_files(path: Path) -> dict[str, bytes]:
    """Every file under `path` but its manifest, by relative path."""
    return {
        p.relative_to(path).as_posix(): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def store_manifest(path: Path) -> dict[str, Any]:
    """The manifest of the store at `path` less what differs between equal builds (its
    timings, write time and memory plan: how it ran)."""
    data = json.loads((path / "manifest.json").read_text())
    for key in ("timings", "written", "memory"):
        data.pop(key, None)
    return dict(data)


SUMMED_FROM_HALVES = {"base_vectors.npy"}
"""A store's float32 arrays summed from its float16 mention vectors (`floats.HALF_STEPS`)."""


def assert_same_store(got: Path, want: Path) -> None:
    """The stores at `got` and `want` hold the same files (`store_files`) with the same content,
    compared with `floats.assert_close`: arrays (``.npy``; the arrays of an ``.npz``, so a
    sparse matrix's structure exactly and its weights within the tolerance) and SQLite tables
    (the schema, and every row in table order); any other file byte for byte. For builds whose
    floats come from other kernels or batches (a sharded build's workers), whose bytes can
    differ in a float's last bit where everything else is the same."""
    mine, theirs = store_files(got), store_files(want)
    assert sorted(mine) == sorted(theirs)
    for name in theirs:
        if name.endswith(".npy"):
            rtol = HALF_STEPS if name in SUMMED_FROM_HALVES else RTOL
            assert_close(np.load(got / name), np.load(want / name), rtol=rtol, where=name)
        elif name.endswith(".npz"):
            with np.load(got / name) as a, np.load(want / name) as b:
                assert_close(dict(a), dict(b), where=name)
        elif name.endswith(".sqlite"):
            assert_close(sqlite_rows(got / name), sqlite_rows(want / name), where=name)
        else:
            assert mine[name] == theirs[name], name


def sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """A SQLite file's schema and every table's rows, in table (rowid) order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        schema = con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        out: dict[str, list[tuple[Any, ...]]] = {"": schema.fetchall()}
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            out[table] = con.execute(f'SELECT * FROM "{table}"').fetchall()
        return out
    finally:
        con.close()
