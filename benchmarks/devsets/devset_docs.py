"""What the `make_docs.py` scripts of the documentation dev sets share.

Each script keeps its own choices (its document list, its size limit, how it renders or reads a
document, and which trailing paragraph counts as a lead-in to drop after a cut); this module
holds the steps they do alike: reading a long description from `.venv`, rendering a manual page
to plain text, cutting a text at the last paragraph boundary (blank line) before a size limit,
and writing the documents.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def site_packages() -> Path:
    """The site-packages folder of the repository's `.venv`."""
    return next((REPO / ".venv" / "lib").glob("python3*/site-packages"))


def metadata_body(dist_info: str) -> tuple[Path, str]:
    """The METADATA file of a distribution in `.venv` and its body (after the first blank line)."""
    metadata = next(site_packages().glob(f"{dist_info}-*.dist-info")) / "METADATA"
    return metadata, metadata.read_text(encoding="utf-8").split("\n\n", 1)[1]


def man_text(page: Path, env: dict[str, str]) -> str:
    """A manual page as `man -l PAGE 2>/dev/null | col -bx` prints it under `env`."""
    man = subprocess.run(["man", "-l", str(page)], env=env, capture_output=True, check=True).stdout
    col = subprocess.run(["col", "-bx"], input=man, env=env, capture_output=True, check=True)
    return col.stdout.decode("utf-8")


def trim(
    text: str, limit: int, leads_on: Callable[[str], bool], fence: str | None = None
) -> tuple[str, bool]:
    """The text cut at the last paragraph boundary (blank line) before `limit` bytes.

    With `fence` (e.g. "```"), the cut is also outside a fenced block: a paragraph with an odd
    count of `fence` opens or closes one. Trailing paragraphs for which `leads_on` is true (a
    heading or lead-in whose body the cut left out) are dropped. Returns the text and whether it
    was cut.
    """
    if len(text.encode()) <= limit:
        return text, False
    kept: list[str] = []
    size, in_fence, last_safe = 0, False, 0
    for paragraph in text.split("\n\n"):
        size += len((paragraph + "\n\n").encode())
        if size > limit:
            break
        kept.append(paragraph)
        if fence is not None and paragraph.count(fence) % 2:
            in_fence = not in_fence
        if not in_fence:
            last_safe = len(kept)
    kept = kept[:last_safe]
    while kept and leads_on(kept[-1]):
        kept.pop()
    return "\n\n".join(kept).rstrip() + "\n", True


def write_docs(
    out: Path,
    docs: Iterable[tuple[str, str]],
    limit: int,
    leads_on: Callable[[str], bool],
    fence: str | None = None,
) -> int:
    """Write each (file name, text) to `out`, cut by `trim`, and print its size; returns 0."""
    out.mkdir(exist_ok=True)
    for name, text in docs:
        text, cut = trim(text, limit, leads_on, fence)
        (out / name).write_text(text, encoding="utf-8")
        sys.stdout.write(f"{name}: {len(text.encode())} bytes{' (trimmed)' if cut else ''}\n")
    return 0
