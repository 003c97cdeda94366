"""Rebuild `docs/` of the manpages dev set from the man pages installed on the machine.

Run from the repository root: `python3 benchmarks/devsets/manpages/make_docs.py`.
Each document is a section 1 or 8 man page rendered to plain text the way a user would save
it, `MANWIDTH=80 man -l /usr/share/man/manN/NAME.N.gz 2>/dev/null | col -bx > docs/NAME.txt`,
under `LANG=C.UTF-8` (groff then writes UTF-8 quotes, bullets, box lines and U+2010 at
hyphenated line ends; option dashes stay ASCII). A text over 20 KB is cut at the last paragraph
boundary (blank line) before 20 KB, with a trailing section heading or lead-in line dropped;
SOURCES.md names the cut files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devset_docs import man_text, write_docs  # noqa: E402

LIMIT = 20480
HERE = Path(__file__).resolve().parent
MAN = Path("/usr/share/man")

# (tool, man section) of every document; the file is docs/<tool>.txt
PAGES = [
    ("dpkg-query", 1),
    ("dpkg-deb", 1),
    ("update-alternatives", 1),
    ("apt-cache", 8),
    ("apt-get", 8),
    ("objdump", 1),
    ("readelf", 1),
    ("nm", 1),
    ("strip", 1),
    ("addr2line", 1),
    ("ar", 1),
    ("strings", 1),
    ("ctest", 1),
    ("cpack", 1),
    ("bc", 1),
    ("bzip2", 1),
    ("xz", 1),
    ("zstd", 1),
    ("lsblk", 8),
    ("findmnt", 8),
    ("flock", 1),
    ("getopt", 1),
    ("hexdump", 1),
    ("script", 1),
    ("timeout", 1),
    ("stdbuf", 1),
    ("envsubst", 1),
    ("pkg-config", 1),
    ("ldd", 1),
    ("ldconfig", 8),
]


def render(name: str, section: int) -> str:
    """The man page as plain text: `MANWIDTH=80 man -l PAGE 2>/dev/null | col -bx`."""
    page = MAN / f"man{section}" / f"{name}.{section}.gz"
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8")
    env.pop("LC_ALL", None)
    return man_text(page, env)


def _leads_on(paragraph: str) -> bool:
    """A section heading (an unindented last line) or a line ending in ':' that introduces
    what the cut left out."""
    lines = [line for line in paragraph.splitlines() if line.strip()]
    if not lines:
        return True
    last = lines[-1]
    return not last[0].isspace() or last.rstrip().endswith(":")


def main() -> int:
    docs = ((f"{name}.txt", render(name, section)) for name, section in PAGES)
    return write_docs(HERE / "docs", docs, LIMIT, _leads_on)


if __name__ == "__main__":
    raise SystemExit(main())
