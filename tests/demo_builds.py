"""What the build tests share (test_bounded_build.py, test_sharded_build.py): a corpus of a few
hundred passages made from the packaged demo corpus, and a store's files and manifest as two
builds are compared (the manifest less its timings and write time)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

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
