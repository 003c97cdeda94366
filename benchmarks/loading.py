"""Corpus loading with the markup converters against the same files read as plain text.

Gathers real Markdown, reStructuredText and HTML documents found on this machine: the files under
/usr/share/doc (`.md`, `.rst`, `.html`, `.htm`, also gzipped) and the long descriptions of the
packages installed in the running Python environment (their METADATA bodies, by
Description-Content-Type). Each document is written twice into a temporary folder: once under its
markup suffix, once as `.txt`. `load_corpus` (default chunking) then loads each folder `--repeat`
times, alternating; the best time of each is kept. Prints the times per format and for all
documents together, and the ratio markup / plain (the target: at most 2x).

    .venv/bin/python benchmarks/loading.py [--repeat 5] [--max-docs 400] [--keep DIR]
"""

from __future__ import annotations

import argparse
import email
import gzip
import os
import shutil
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from graphseek.knowledge.loaders import load_corpus

DOC_ROOT = Path("/usr/share/doc")
FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".html": "html",
    ".htm": "html",
}
SUFFIX = {"markdown": ".md", "rst": ".rst", "html": ".html"}
MIN_CHARS = 300


def _read(path: Path) -> str | None:
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None


def system_docs() -> list[tuple[str, str, str]]:
    """(name, format, text) of the markup files under /usr/share/doc."""
    found = []
    for path in sorted(DOC_ROOT.rglob("*")) if DOC_ROOT.is_dir() else []:
        name = path.name[:-3] if path.name.endswith(".gz") else path.name
        fmt = FORMATS.get(Path(name).suffix.lower())
        if fmt is None or not path.is_file():
            continue
        text = _read(path)
        if text and len(text) >= MIN_CHARS:
            stem = "_".join(path.relative_to(DOC_ROOT).with_name(Path(name).stem).parts)
            found.append((f"doc_{stem}", fmt, text))
    return found


def package_descriptions() -> list[tuple[str, str, str]]:
    """(name, format, text) of the Markdown / reStructuredText long descriptions installed."""
    found = []
    seen = set()
    for dist in metadata.distributions():
        meta = dist.read_text("METADATA")
        if not meta:
            continue
        message = email.message_from_string(meta)
        kind = (message.get("Description-Content-Type") or "").lower()
        fmt = "markdown" if "markdown" in kind else "rst" if "rst" in kind else None
        body = message.get_payload()
        name = (message.get("Name") or "").lower()
        if fmt and isinstance(body, str) and len(body) >= MIN_CHARS and name not in seen:
            seen.add(name)
            found.append((f"pkg_{name}", fmt, body))
    return sorted(found)


def timed_load(folder: Path) -> tuple[float, int]:
    start = time.perf_counter()
    passages = load_corpus(folder)
    return time.perf_counter() - start, len(passages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="loads of each folder (best kept)")
    parser.add_argument("--max-docs", type=int, default=0, help="at most this many (0: all)")
    parser.add_argument("--keep", type=Path, help="write the folders here and keep them")
    args = parser.parse_args()

    docs = system_docs() + package_descriptions()
    if args.max_docs:
        docs = docs[: args.max_docs]
    if not docs:
        sys.exit("no Markdown / reStructuredText / HTML documents found on this machine")
    root = args.keep or Path(tempfile.mkdtemp(prefix="graphseek-loading-"))
    print(f"load average (1/5/15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    try:
        rows = []
        groups = {fmt: [d for d in docs if d[1] == fmt] for fmt in SUFFIX}
        groups["all"] = docs
        for group, members in groups.items():
            if not members:
                continue
            markup, plain = root / group / "markup", root / group / "plain"
            for folder in (markup, plain):
                folder.mkdir(parents=True, exist_ok=True)
            for name, fmt, text in members:
                (markup / f"{name}{SUFFIX[fmt]}").write_text(text, encoding="utf-8")
                (plain / f"{name}.txt").write_text(text, encoding="utf-8")
            best = {"markup": float("inf"), "plain": float("inf")}
            counts = {}
            for _ in range(args.repeat):
                for kind, folder in (("plain", plain), ("markup", markup)):
                    seconds, counts[kind] = timed_load(folder)
                    best[kind] = min(best[kind], seconds)
            chars = sum(len(d[2]) for d in members)
            rows.append((group, len(members), chars, counts, best))
        print(
            f"{'format':9} {'docs':>5} {'MB':>6} {'plain s':>8} {'markup s':>9} {'ratio':>6} "
            f"{'passages plain/markup':>22}"
        )
        for group, n, chars, counts, best in rows:
            print(
                f"{group:9} {n:5d} {chars / 1e6:6.2f} {best['plain']:8.3f} {best['markup']:9.3f} "
                f"{best['markup'] / best['plain']:5.2f}x {counts['plain']:>11d} / {counts['markup']}"
            )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
