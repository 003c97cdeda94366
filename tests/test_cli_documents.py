"""`graphseek add` / `graphseek remove` (documents in and out of an index, atomically and under the
index's lock, like `graphseek index`) and a closed output pipe (`graphseek stats IDX | head -1`)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TINY_CORPUS

from graphseek.cli import main
from graphseek.errors import IndexBusyError
from graphseek.knowledge.index import Index, select_passages
from graphseek.knowledge.passages import Passage

REPO = Path(__file__).resolve().parents[1]


def digest(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def write_docs(folder: Path, ids: list[str]) -> Path:
    """One .txt file per tiny-corpus passage id (title = the id, the file stem)."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = {pid: text for pid, _, text in TINY_CORPUS}
    for pid in ids:
        (folder / f"{pid}.txt").write_text(texts[pid], encoding="utf-8")
    return folder


def titles(index_dir: Path) -> list[str]:
    return sorted(p.title for p in Index.open(index_dir).passages)


@pytest.fixture
def docs_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An index (no graph) of docs/{ada,byron,babbage}.txt, built from tmp_path as the working
    directory, so the passages' sources are the relative paths docs/<id>.txt."""
    monkeypatch.chdir(tmp_path)
    write_docs(Path("docs"), ["ada", "byron", "babbage"])
    assert main(["index", "docs", "--out", "idx", "--quiet", "--no-graph"]) == 0
    return tmp_path / "idx"


def test_add_reads_paths_and_adds_only_new_passages(
    docs_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    more = write_docs(Path("more"), ["curie", "warsaw"])
    write_docs(Path("docs"), ["milbanke"])
    assert main(["add", "idx", str(more), "docs", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Added 3 passages (3 already there) to {docs_index}; it holds 6."
    assert sorted(out[1:]) == [
        "  + docs/milbanke.txt: 1 passage (milbanke)",
        "  + more/curie.txt: 1 passage (curie)",
        "  + more/warsaw.txt: 1 passage (warsaw)",
    ]
    assert titles(docs_index) == ["ada", "babbage", "byron", "curie", "milbanke", "warsaw"]
    hits = Index.open(docs_index).search("capital of Poland on the Vistula", k=1, method="bm25")
    assert hits[0].passage.title == "warsaw"
    # again: nothing new, nothing written
    before = digest(docs_index)
    assert main(["add", "idx", "more"]) == 0
    assert capsys.readouterr().out == f"Nothing to add: 2 passages already in {docs_index}.\n"
    assert digest(docs_index) == before


def test_remove_by_source_title_and_id(
    docs_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_docs(Path("more"), ["curie", "warsaw", "milbanke"])
    assert main(["add", "idx", "more", "--quiet"]) == 0
    capsys.readouterr()
    curie = next(p.id for p in Index.open(docs_index).passages if p.title == "curie")
    # a file by its path from here (absolute), a title, an id
    assert main(["remove", "idx", "--source", str(Path("docs/ada.txt").absolute())]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Removed 1 passage from {docs_index}; 5 left.",
        "  - docs/ada.txt: 1 passage (ada)",
    ]
    assert main(["remove", "idx", "--title", "warsaw", "--id", curie, "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"Removed 2 passages from {docs_index}; 3 left.")
    assert titles(docs_index) == ["babbage", "byron", "milbanke"]
    # a folder: every file under it; search no longer returns what was removed
    assert main(["remove", "idx", "--source", "more"]) == 0
    index = Index.open(docs_index)
    assert sorted(p.title for p in index.passages) == ["babbage", "byron"]
    for method in ("bm25", "dense", "hybrid"):
        assert {h.passage.title for h in index.search("Ada Lovelace", k=5, method=method)} <= {
            "babbage",
            "byron",
        }


def test_bad_remove_requests_change_nothing(
    docs_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    before = digest(docs_index)
    cases = [
        (["--source", "docs/adda.txt"], "Unknown document source 'docs/adda.txt'; did you mean "),
        (["--title", "ada", "--title", "Byronn"], "Unknown document title 'Byronn'; did you mean"),
        (["--id", "nope"], "Unknown passage id 'nope'; known ids: p-"),
        ([], "Name what to remove: --source PATH, --title TITLE or --id PASSAGE_ID."),
        (["--source", "docs"], "Deleting these passages would leave the index empty."),
    ]
    for extra, message in cases:
        assert main(["remove", "idx", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"graphseek: error: {message}") and err.count("\n") == 1, err
    assert "'docs/ada.txt'" in unknown_source_message(docs_index)
    assert digest(docs_index) == before


def unknown_source_message(index_dir: Path) -> str:
    with pytest.raises(ValueError) as err:
        select_passages(Index.open(index_dir).passages, sources=["docs/adda.txt"])
    return str(err.value)


def test_add_and_remove_take_the_index_lock(
    docs_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphseek.knowledge.atomic import hold

    write_docs(Path("more"), ["curie"])
    before = digest(docs_index)
    with hold(docs_index):  # another writer (`graphseek index --out idx`, say) is under way
        assert main(["add", "idx", "more", "--quiet"]) == 2
        assert "is being written by another graphseek process" in capsys.readouterr().err
        assert main(["remove", "idx", "--title", "ada", "--quiet"]) == 2
        assert "is being written by another graphseek process" in capsys.readouterr().err
    assert digest(docs_index) == before


def test_an_update_from_a_stale_copy_is_refused(docs_index: Path) -> None:
    """Two writers that opened the same index: the second one's update, made from what it read,
    would drop the first one's change; it is refused under the lock instead."""
    first, second = Index.open(docs_index), Index.open(docs_index)
    extra = Passage.from_title_text("curie", "Marie Curie won two Nobel Prizes.", "x")
    first.add_documents([extra])
    with pytest.raises(IndexBusyError, match="changed by another writer after it was opened"):
        second.delete_documents([second.passages[0].id])
    assert extra.id in Index.open(docs_index)
    Index.open(docs_index).delete_documents([extra.id])  # a fresh copy may


def test_add_and_remove_update_the_knowledge_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_docs(Path("docs"), ["ada", "byron", "milbanke"])
    write_docs(Path("more"), ["curie", "warsaw"])
    assert main(["index", "docs", "--out", "idx", "--quiet"]) == 0
    assert main(["add", "idx", "more", "--quiet"]) == 0
    graph = Index.open("idx").graph
    by_title = {p.title: p.id for p in graph.passages()}
    assert set(by_title) == {"ada", "byron", "milbanke", "curie", "warsaw"}
    assert any(by_title["warsaw"] in e.passage_ids for e in graph.entities())
    graph.close()
    assert main(["remove", "idx", "--source", "more", "--title", "byron", "--quiet"]) == 0
    index = Index.open("idx")
    assert sorted(p.title for p in index.graph.passages()) == ["ada", "milbanke"]
    kept = {by_title["ada"], by_title["milbanke"]}
    assert all(set(e.passage_ids) <= kept for e in index.graph.entities())
    assert {e.name for e in index.graph.entities()}.isdisjoint({"Warsaw", "Marie Curie"})
    index.graph.close()


# -- a closed output pipe ------------------------------------------------------------------------


def run_into_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """`graphseek ARGS` writing into a pipe whose reader has gone (as `| head -1` leaves it)."""
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    try:
        return subprocess.run(
            [sys.executable, "-m", "graphseek.cli", *args],
            cwd=REPO,
            env=env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
        )
    finally:
        os.close(write)


def test_a_closed_pipe_ends_quietly() -> None:
    """No "Broken pipe" error and no "Exception ignored" at Python's exit: exit 1, stderr empty."""
    proc = run_into_closed_pipe("topologies")
    assert proc.stderr == "" and proc.returncode == 1, proc.stderr


def test_ask_into_a_closed_pipe_ends_quietly(
    tiny_index: Index, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    for extra in ([], ["--json"]):
        read, write = os.pipe()
        os.close(read)
        with open(write, "w") as closed:  # a stdout whose reader has gone
            monkeypatch.setattr(sys, "stdout", closed)
            question = "Who was Ada's father?"
            try:
                status = main(["ask", str(tiny_index.path), question, "-t", "naive", *extra])
            except SystemExit as exit_:  # rich's own closed-pipe handling: the same recipe
                status = exit_.code
            assert status == 1
            monkeypatch.undo()
    assert capsys.readouterr().err == ""


def test_add_with_delta_changes_only_what_the_new_documents_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_docs(Path("docs"), ["ada", "byron", "babbage"])
    assert main(["index", "docs", "--out", "idx", "--quiet"]) == 0
    write_docs(Path("more"), ["curie", "warsaw"])
    capsys.readouterr()
    assert main(["add", "idx", "more", "--delta", "--quiet"]) == 0
    assert capsys.readouterr().out.startswith(f"Added 2 passages to {tmp_path / 'idx'}")
    index = Index.open(tmp_path / "idx")
    assert titles(tmp_path / "idx") == ["ada", "babbage", "byron", "curie", "warsaw"]
    assert index.graph.manifest["delta"]["passages_added"] == 2
    assert index.graph.find_entities("Warsaw")


def test_an_exact_add_to_a_large_graph_index_mentions_delta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import graphseek.cli as cli

    monkeypatch.chdir(tmp_path)
    write_docs(Path("docs"), ["ada", "byron", "babbage"])
    assert main(["index", "docs", "--out", "idx", "--quiet"]) == 0
    write_docs(Path("more"), ["curie"])
    monkeypatch.setattr(cli, "DELTA_HINT_PASSAGES", 3)
    capsys.readouterr()
    assert main(["add", "idx", "more", "--quiet"]) == 0
    assert "`graphseek add --delta`" in capsys.readouterr().err
    write_docs(Path("more"), ["warsaw"])
    assert main(["add", "idx", "more", "--quiet", "--delta"]) == 0
    assert "--delta" not in capsys.readouterr().err
