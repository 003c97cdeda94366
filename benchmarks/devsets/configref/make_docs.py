"""Rebuild `docs/` of the configref dev set from the manual pages installed on the machine.

Run from the repository root: `python3 benchmarks/devsets/configref/make_docs.py`.
Each document is a section-5 manual page rendered to plain text the way a user would save it:
`MANWIDTH=80 man -l /usr/share/man/man5/NAME.5.gz | col -bx` (C.UTF-8 locale, so the text keeps
man's typographic quotes, U+2010 hyphens at line breaks and justified spacing). A text over
20 KB is cut at the last paragraph boundary (blank line) before 20 KB, with a trailing heading or
lead-in line dropped; SOURCES.md names the cut files. The rendering depends on the installed
man-db and groff (here man-db 2.11.2, groff 1.22.4, Debian 12).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devset_docs import man_text, write_docs  # noqa: E402

LIMIT = 20480
HERE = Path(__file__).resolve().parent
MAN5 = Path("/usr/share/man/man5")

# (file in docs/, manual page file under /usr/share/man/man5)
PAGES = [
    ("adduser.conf.txt", "adduser.conf.5.gz"),
    ("deluser.conf.txt", "deluser.conf.5.gz"),
    ("apt.conf.txt", "apt.conf.5.gz"),
    ("apt_preferences.txt", "apt_preferences.5.gz"),
    ("sources.list.txt", "sources.list.5.gz"),
    ("deb-control.txt", "deb-control.5.gz"),
    ("deb-changelog.txt", "deb-changelog.5.gz"),
    ("deb-symbols.txt", "deb-symbols.5.gz"),
    ("dpkg.cfg.txt", "dpkg.cfg.5.gz"),
    ("passwd.txt", "passwd.5.gz"),
    ("shadow.txt", "shadow.5.gz"),
    ("group.txt", "group.5.gz"),
    ("gshadow.txt", "gshadow.5.gz"),
    ("login.defs.txt", "login.defs.5.gz"),
    ("fstab.txt", "fstab.5.gz"),
    ("nsswitch.conf.txt", "nsswitch.conf.5.gz"),
    ("hosts.txt", "hosts.5.gz"),
    ("host.conf.txt", "host.conf.5.gz"),
    ("resolv.conf.txt", "resolv.conf.5.gz"),
    ("limits.conf.txt", "limits.conf.5.gz"),
    ("sysctl.conf.txt", "sysctl.conf.5.gz"),
    ("pam.conf.txt", "pam.conf.5.gz"),
    ("gitignore.txt", "gitignore.5.gz"),
    ("gitattributes.txt", "gitattributes.5.gz"),
    ("gitmodules.txt", "gitmodules.5.gz"),
    ("ldap.conf.txt", "ldap.conf.5.gz"),
    ("config.5ssl.txt", "config.5ssl.gz"),
    ("journald.conf.txt", "journald.conf.5.gz"),
    ("timesyncd.conf.txt", "timesyncd.conf.5.gz"),
]


def render(page: str) -> str:
    """The page as `MANWIDTH=80 man -l PAGE | col -bx` prints it."""
    env = dict(os.environ, MANWIDTH="80", LANG="C.UTF-8", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    return man_text(MAN5 / page, env)


def _leads_on(paragraph: str) -> bool:
    """A lone heading line or a line ending in ':' that introduces what the cut left out."""
    lines = [line for line in paragraph.splitlines() if line.strip()]
    if not lines:
        return True
    last = lines[-1].rstrip()
    lone_heading = len(lines) == 1 and len(last) - len(last.lstrip()) <= 4
    return lone_heading or last.endswith(":")


def main() -> int:
    docs = ((name, render(page)) for name, page in PAGES)
    return write_docs(HERE / "docs", docs, LIMIT, _leads_on)


if __name__ == "__main__":
    raise SystemExit(main())
