"""Every code block of README.md runs.

The README's fenced blocks follow one convention, checked here:

- ```python: executed, in order, in a scratch folder;
- ```bash: every line is a `graphseek` command, run in-process through `graphseek.cli.main`
  (exit status 0 expected);
- ```bash no-test: not run (the set-up commands, servers, remote models, PostgreSQL), visibly
  marked in the README itself;
- ```text: a diagram or listing, not code; ```text output: what the block before it prints,
  checked against what it printed (each line in order, whitespace-insensitive, "…" eliding).

The Python examples of docs/python-api.md run after them, over the README's `my-index`.
The scratch folder holds what the examples name: `my_docs/` (libpng.md, zlib.md),
`more_docs/xz.md` and `my_eval/` (a pkgdocs-style question file beside its `docs/`), written here.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt  # rich's Markdown parser (a dependency of rich)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PYTHON_API = ROOT / "docs" / "python-api.md"  # its examples open the README's my-index
MAX_LINES = 300
SETUP_COMMANDS = (
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/graphseek demo",
    'python3 -m venv .venv && .venv/bin/pip install -e ".[dev]" && .venv/bin/python -m pytest -q',
)
KINDS = {"python", "bash", "bash no-test", "text", "text output"}

LIBPNG = """# libpng

libpng is the official reference library for reading and writing PNG images.
It relies on the zlib compression library to compress and decompress image data.
"""
ZLIB = """# zlib

zlib is a general-purpose lossless data-compression library written by Jean-loup Gailly and Mark Adler.
It implements the deflate format, which is defined in RFC 1951.
"""
XZ = """# XZ Utils

XZ Utils compresses files in the .xz format. LZMA2 is the primary filter of the .xz format.
"""
EVAL_QUESTIONS = [
    {
        "_id": "my-1",
        "type": "single",
        "question": "Which compression library does libpng rely on?",
        "answer": "zlib",
        "answer_aliases": [],
        "bridge": None,
        "supporting": [{"doc": "libpng.md", "quote": "relies on the zlib compression library"}],
    },
    {
        "_id": "my-2",
        "type": "unanswerable",
        "question": "Which licence does libpng use?",
        "answer": "",
        "answer_aliases": [],
        "bridge": None,
        "supporting": [],
    },
]


@dataclass(frozen=True)
class Block:
    kind: str  # one of KINDS
    code: str
    line: int  # 1-based line of the opening fence


def readme_blocks(text: str | None = None) -> list[Block]:
    text = README.read_text(encoding="utf-8") if text is None else text
    fences = [t for t in MarkdownIt().parse(text) if t.type == "fence"]
    return [
        Block(" ".join(t.info.split()), t.content, (t.map[0] if t.map else 0) + 1) for t in fences
    ]


def commands(code: str) -> list[list[str]]:
    """The shell commands of a block: continued lines joined, comments and blank lines left out."""
    out = []
    for line in code.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            out.append(argv)
    return out


def _normal(text: str) -> str:
    return " ".join(text.split())


def missing_output(expected: str, printed: str) -> list[str]:
    """Lines of an expected-output block that `printed` lacks (fragments between "…" in order)."""
    seen = _normal(printed)
    missing = []
    for line in expected.splitlines():
        at = 0
        for fragment in (_normal(f) for f in line.split("…")):
            found = seen.find(fragment, at) if fragment else at
            if found < 0:
                missing.append(line)
                break
            at = found + len(fragment)
    return missing


# -- the convention itself (no models) -----------------------------------------------------------


def test_readme_is_short_and_keeps_the_two_commands_first() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    blocks = readme_blocks(text)
    assert [b.code.strip() for b in blocks[:2]] == list(SETUP_COMMANDS)
    # .ci/run runs the second one verbatim
    assert SETUP_COMMANDS[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_block_has_a_known_kind_and_bash_blocks_are_graphseek_commands() -> None:
    blocks = readme_blocks()
    assert {b.kind for b in blocks} <= KINDS, [(b.line, b.kind) for b in blocks]
    assert {"python", "bash", "bash no-test"} <= {b.kind for b in blocks}
    for block in blocks:
        if block.kind == "bash":
            assert all(argv[0] == "graphseek" for argv in commands(block.code)), block.line
        if block.kind == "text output":
            before = blocks[blocks.index(block) - 1]
            assert before.kind in {"python", "bash"}, block.line


def test_linked_documents_exist() -> None:
    for page in [README, *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_missing_output_reads_lines_in_order_with_elisions() -> None:
    printed = "Answer: zlib\n  [p-1] libpng: It relies on the zlib\ncompression library."
    assert missing_output("Answer: zlib\n[p-1] libpng: It relies on … library.", printed) == []
    assert missing_output("Answer: zstd", printed) == ["Answer: zstd"]
    assert missing_output("library … Answer", printed) == ["library … Answer"]


def test_commands_join_continued_lines_and_drop_comments() -> None:
    code = 'graphseek ask idx "a question" \\\n  --json   # one object\n\n# a note\n'
    assert commands(code) == [["graphseek", "ask", "idx", "a question", "--json"]]


# -- the blocks, run ----------------------------------------------------------------------------


def _scratch(root: Path) -> None:
    for folder, files in {
        "my_docs": {"libpng.md": LIBPNG, "zlib.md": ZLIB},
        "more_docs": {"xz.md": XZ},
        "my_eval/docs": {"libpng.md": LIBPNG, "zlib.md": ZLIB},
    }.items():
        (root / folder).mkdir(parents=True)
        for name, text in files.items():
            (root / folder / name).write_text(text, encoding="utf-8")
    (root / "my_eval" / "questions.json").write_text(json.dumps(EVAL_QUESTIONS), encoding="utf-8")


def _run(block: Block) -> str:
    from graphseek.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if block.kind == "python":
            exec(compile(block.code, f"README.md:{block.line}", "exec"), {"__name__": "readme"})
        else:
            for argv in commands(block.code):
                assert main(argv[1:]) == 0, f"README.md:{block.line}: {shlex.join(argv)}"
    return printed.getvalue()


@pytest.mark.slow
def test_every_readme_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from graphseek.knowledge.embedder import cache_dir

    _scratch(tmp_path)
    monkeypatch.chdir(tmp_path)
    # the evaluation's index cache goes to the scratch folder; the model caches every test
    # shares (the ONNX export, the static token table) are reused where they exist
    cache = tmp_path / "cache"
    cache.mkdir()
    for shared in ("onnx", "static"):
        if (cache_dir() / shared).is_dir():
            (cache / shared).symlink_to(cache_dir() / shared, target_is_directory=True)
    monkeypatch.setenv("GRAPHSEEK_CACHE_DIR", str(cache))
    monkeypatch.setenv("COLUMNS", "100")
    blocks = readme_blocks()
    ran, printed = [], ""
    for block in blocks:
        if block.kind in {"python", "bash"}:
            printed = _run(block)
            ran.append(block.line)
        elif block.kind == "text output":
            assert missing_output(block.code, printed) == [], f"README.md:{block.line}"
    assert ran == [b.line for b in blocks if b.kind in {"python", "bash"}]
    assert (tmp_path / "my-eval" / "table.md").exists()
    api = [b for b in readme_blocks(PYTHON_API.read_text(encoding="utf-8")) if b.kind == "python"]
    assert len(api) == 2
    streamed, checkpointed = (_run(b) for b in api)
    assert "ask_librarian" in streamed and "finalize_answer" in streamed
    assert checkpointed.startswith("('decide_action',)")
    assert (tmp_path / "runs.sqlite").exists()
