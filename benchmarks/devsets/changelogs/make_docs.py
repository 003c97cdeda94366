"""Rebuild `docs/` of the changelogs dev set from the release notes installed on the machine.

Run from the repository root: `.venv/bin/python benchmarks/devsets/changelogs/make_docs.py`.
Debian packages: an upstream `NEWS` / `changelog` (or a Debian `NEWS.Debian`) under
`/usr/share/doc`, gunzipped; Python packages: the changelog section of the long description
(the body of `*.dist-info/METADATA`) of the package in `.venv`, from its changelog heading to
the end. The text is kept as shipped (a file that is not UTF-8 is read as Latin-1 and written as
UTF-8). A text over 20 KB keeps its newest part: every file here lists its newest release
first, so it is cut at the last blank line before 20 KB, with a trailing heading, one-line
paragraph or lead-in line (ending in ':') dropped; SOURCES.md names the cut files.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devset_docs import metadata_body, write_docs  # noqa: E402

LIMIT = 20480
HERE = Path(__file__).resolve().parent
DOC = Path("/usr/share/doc")

# (file in docs/, path under /usr/share/doc) for Debian packages
DEBIAN_DOCS = [
    ("bash-NEWS.txt", "bash/NEWS.gz"),
    ("bc-NEWS.txt", "bc/NEWS.gz"),
    ("binutils-NEWS.txt", "binutils/NEWS.gz"),
    ("coreutils-NEWS.txt", "coreutils/NEWS.gz"),
    ("diffutils-NEWS.txt", "diffutils/NEWS.gz"),
    ("findutils-NEWS.txt", "findutils/NEWS.gz"),
    ("grep-NEWS.txt", "grep/NEWS.gz"),
    ("gzip-NEWS.txt", "gzip/NEWS.gz"),
    ("sed-NEWS.txt", "sed/NEWS.gz"),
    ("tar-NEWS.txt", "tar/NEWS.gz"),
    ("xz-utils-NEWS.txt", "xz-utils/NEWS.gz"),
    ("less-NEWS.txt", "less/NEWS.gz"),
    ("make-NEWS.txt", "make/NEWS.gz"),
    ("gnupg-NEWS.txt", "gnupg/NEWS.gz"),
    ("libgcrypt-NEWS.txt", "libgcrypt20/NEWS.gz"),
    ("dbus-NEWS.txt", "dbus/NEWS.gz"),
    ("openssh-NEWS.txt", "openssh-client/NEWS.Debian.gz"),
    ("git-NEWS.txt", "git/NEWS.Debian.gz"),
    ("zstd-NEWS.txt", "zstd/changelog.gz"),
    ("tmux-NEWS.txt", "tmux/changelog.gz"),
    ("zlib-NEWS.txt", "zlib1g/changelog.gz"),
    ("expat-NEWS.txt", "libexpat1/changelog.gz"),
    ("pkgconf-NEWS.txt", "pkgconf/changelog.gz"),
    ("openssl-NEWS.txt", "openssl/NEWS.md.gz"),
]

# (file in docs/, dist-info name in .venv, the changelog heading line) for Python packages
PYTHON_DOCS = [
    ("fonttools-NEWS.txt", "fonttools", "Changelog"),
    ("tblib-NEWS.txt", "tblib", "Changelog"),
    ("requests-toolbelt-NEWS.txt", "requests_toolbelt", "History"),
]


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def debian_text(path: str) -> str:
    raw = (DOC / path).read_bytes()
    return decode(gzip.decompress(raw) if path.endswith(".gz") else raw)


def changelog_section(dist_info: str, heading: str) -> str:
    """The long description of a distribution from its changelog heading line to the end."""
    metadata, body = metadata_body(dist_info)
    lines = body.splitlines(keepends=True)
    for i, line in enumerate(lines[:-1]):
        underline = lines[i + 1].strip()
        if line.strip() == heading and underline and set(underline) <= set("=-~^"):
            return "".join(lines[i:])
    raise ValueError(f"no {heading!r} heading in {metadata}")


def _leads_on(paragraph: str) -> bool:
    """A heading, a one-line paragraph or a line ending in ':' whose body the cut left out."""
    lines = [line for line in paragraph.strip().splitlines() if line.strip()]
    if not lines:
        return True
    last = lines[-1].strip()
    underline = len(lines) >= 2 and set(last) <= set("=-~^")
    lone = len(lines) == 1 and not last.startswith(("*", "-", "#"))
    return underline or lone or last.endswith(":")


def main() -> int:
    """Every text is newest-first, so the cut keeps its newest part."""
    sources = [(name, debian_text(path)) for name, path in DEBIAN_DOCS]
    sources += [(name, changelog_section(d, h)) for name, d, h in PYTHON_DOCS]
    return write_docs(HERE / "docs", sources, LIMIT, _leads_on)


if __name__ == "__main__":
    raise SystemExit(main())
