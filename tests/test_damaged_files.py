"""Damaged index files (issue 56): each file of an index truncated, emptied, its head overwritten
or deleted ends in one line naming the file and the command that rebuilds the index, when the
index opens (`Index.open`) and at the CLI; a byte changed in the middle is found by
`graphseek stats --verify`. An index written before its files were recorded is checked by its
layout.

Every case works on a copy of one index of the tiny corpus, with its graph, built once here.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from graphseek.cli import main
from graphseek.errors import GraphseekError, IndexFormatError
from graphseek.knowledge import integrity
from graphseek.knowledge.graph import SQLiteGraphStore
from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Passage

FILES = (
    "manifest.json",
    "passages.jsonl",
    "bm25/data.csc.index.npy",
    "bm25/indices.csc.index.npy",
    "bm25/indptr.csc.index.npy",
    "bm25/params.index.json",
    "bm25/tokens.npz",
    "bm25/vocab.index.json",
    "dense/embeddings.npy",
    "dense/faiss.index",
    "graph/adjacency_entity.npz",
    "graph/adjacency_full.npz",
    "graph/base_vectors.npy",
    "graph/entity_passage.npz",
    "graph/entity_vectors.npy",
    "graph/graph.sqlite",
    "graph/hyperedge_vectors.npy",
    "graph/manifest.json",
    "graph/matcher.json",
    "graph/mention_vectors.npy",
    "graph/nodes.json",
    "graph/relation_vectors.npy",
    "graph/sentence_vectors.npy",
    "graph/sentences.json",
    "graph/sentences.npz",
)
"""Every file of an index with a graph (a test keeps this equal to what a build writes)."""

OPTIONAL = {f"graph/{name}" for name in integrity.GRAPH_LATER} | set(integrity.INDEX_LATER)
"""Files an index written before they existed lacks (not missed in an index without records)."""

QUESTION = "Where did Ada Lovelace's father die?"


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Path:
    path = tmp_path_factory.mktemp("damaged") / "index"
    Index.build(tiny_passages, path, show_progress=False, graph=True)
    return path


@pytest.fixture
def copy(graph_index: Path, tmp_path: Path) -> Path:
    target = tmp_path / "idx"
    shutil.copytree(graph_index, target)
    return target


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "emptied":
        path.write_bytes(b"")
    elif how == "overwritten":  # its head: the same size
        path.write_bytes(b"\x00" * 16 + data[16:])
    elif how == "flipped":  # one byte in the middle: the same size, the same head
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1 :])
    elif how == "deleted":
        path.unlink()
    else:  # pragma: no cover
        raise ValueError(how)


def drop_records(index: Path) -> None:
    """Make `index` look written before files were recorded (its manifest without them)."""
    manifest = json.loads((index / "manifest.json").read_text())
    del manifest[integrity.INTEGRITY]
    (index / "manifest.json").write_text(json.dumps(manifest, indent=2))


def assert_one_line_naming(message: str, path: Path, index: Path) -> None:
    assert "\n" not in message.strip()
    assert str(path) in message
    assert f"rebuild it with `graphseek index CORPUS --out {index}`" in message


def test_the_files_damaged_here_are_every_file_the_build_writes(graph_index: Path) -> None:
    written = {p.relative_to(graph_index).as_posix() for p in graph_index.rglob("*") if p.is_file()}
    assert written == set(FILES)
    manifest = json.loads((graph_index / "manifest.json").read_text())
    records = manifest[integrity.INTEGRITY]["files"]
    assert set(records) == set(FILES) - {"manifest.json"}
    assert records["dense/embeddings.npy"]["shape"] == [8, 384]
    assert records["dense/embeddings.npy"]["dtype"] == "<f4"
    assert all(len(r["sha256"]) == 64 and r["bytes"] > 0 for r in records.values())
    # the layouts an index without records is checked against are what a build writes
    assert set(integrity.INDEX_FILES) <= set(FILES)
    assert {f"graph/{name}" for name in integrity.GRAPH_FILES} <= set(FILES)
    assert set(FILES) - set(integrity.INDEX_FILES) - {
        f"graph/{name}" for name in integrity.GRAPH_FILES
    } == OPTIONAL | {"manifest.json"}


def test_the_graph_tables_checked_are_the_stores_schema(graph_index: Path) -> None:
    con = sqlite3.connect(graph_index / "graph" / "graph.sqlite")
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()
    assert tables == set(integrity.GRAPH_TABLES)


@pytest.mark.parametrize("how", ["truncated", "emptied", "overwritten", "deleted"])
@pytest.mark.parametrize("name", FILES)
def test_a_damaged_file_is_one_line_naming_it_when_the_index_opens(
    copy: Path, name: str, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    damage(copy / name, how)
    with pytest.raises(GraphseekError) as raised:
        Index.open(copy)
    assert_one_line_naming(str(raised.value), copy / name, copy)
    assert main(["ask", str(copy), QUESTION]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("graphseek: error: ") and err.count("\n") == 1
    assert_one_line_naming(err, copy / name, copy)


@pytest.mark.parametrize("name", [f for f in FILES if f != "manifest.json"])
def test_verify_names_a_file_changed_in_the_middle(
    copy: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    damage(copy / name, "flipped")
    assert main(["stats", str(copy), "--verify"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("graphseek: error: ") and err.count("\n") == 1
    assert name in err and "rebuild it with `graphseek index" in err


def test_verify_reports_every_damaged_file_of_an_index_that_opens(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("dense/embeddings.npy", "graph/entity_vectors.npy"):
        damage(copy / name, "flipped")
    assert len(Index.open(copy)) == 8  # the same sizes and headers: only checksums tell
    assert main(["stats", str(copy), "--verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "2 files are damaged in the index at" in err
    assert "dense/embeddings.npy (sha256 differs" in err
    assert "graph/entity_vectors.npy (sha256 differs" in err


def test_verify_of_a_whole_index(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(copy), "--verify"]) == 0
    out = capsys.readouterr().out
    assert f"Verified {len(FILES) - 1} files" in out
    assert "every checksum matches" in out and "entities" in out
    assert main(["stats", str(copy), "--verify", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["verified"]["files"] == len(FILES) - 1
    assert stats["verified"]["bytes"] == sum(
        (copy / name).stat().st_size for name in FILES if name != "manifest.json"
    )


def test_verify_without_records_says_so(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    drop_records(copy)
    assert main(["stats", str(copy)]) == 0  # opens: checked by its layout
    capsys.readouterr()
    assert main(["stats", str(copy), "--verify"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "records no checksums" in err


@pytest.mark.parametrize("how", ["truncated", "overwritten", "deleted"])
@pytest.mark.parametrize("name", FILES[1:])  # (the manifest: as with records)
def test_an_index_without_records_is_checked_by_its_layout(copy: Path, name: str, how: str) -> None:
    drop_records(copy)
    assert len(Index.open(copy)) == 8
    damage(copy / name, how)
    if how == "deleted" and name in OPTIONAL:  # not required of an older index: opens
        assert len(Index.open(copy)) == 8
        return
    with pytest.raises(GraphseekError) as raised:
        Index.open(copy)
    assert_one_line_naming(str(raised.value), copy / name, copy)


def test_counts_the_files_disagree_with(copy: Path) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["embedder"]["dim"] = 256
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="embeddings.npy is damaged: it holds 8x384 <f4"):
        Index.open(copy)
    manifest["embedder"]["dim"] = 384
    manifest["counts"]["passages"] = 7
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="counts 7 passages"):
        Index.open(copy)


def test_a_manifest_whose_record_was_edited_is_refused(copy: Path) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest[integrity.INTEGRITY]["files"]["dense/embeddings.npy"] = "big"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="Malformed index manifest .*'integrity' record"):
        Index.open(copy)


def test_the_graph_stores_open_checks_its_files(copy: Path) -> None:
    store = copy / "graph"
    alone = copy.parent / "store"  # a store outside an index
    shutil.copytree(store, alone)
    for directory in (store, alone):
        damage(directory / "hyperedge_vectors.npy", "truncated")
    with pytest.raises(IndexFormatError) as raised:
        SQLiteGraphStore.open(store)
    assert_one_line_naming(str(raised.value), store / "hyperedge_vectors.npy", copy)
    with pytest.raises(IndexFormatError, match="hyperedge_vectors.npy is damaged.*build_graph"):
        SQLiteGraphStore.open(alone)


def test_graph_counts_the_vectors_disagree_with(copy: Path) -> None:
    path = copy / "graph" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["counts"]["entities"] += 1
    path.write_text(json.dumps(manifest))
    with pytest.raises(
        IndexFormatError, match="entity_vectors.npy is damaged: it holds .* graph counts"
    ):
        SQLiteGraphStore.open(copy / "graph")


def test_writes_record_the_files_they_leave(
    copy: Path, tiny_index: Index, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = Index.open(copy)
    index.delete_documents(["curie"])  # rewritten with its graph
    assert integrity.verify_index(copy, Index.open(copy).manifest).damaged == []
    older = tmp_path / "older"  # an index without records, given a graph: all recorded
    shutil.copytree(tiny_index.path, older)
    drop_records(older)
    Index.open(older).ensure_graph()
    records = integrity.recorded_files(Index.open(older).manifest) or {}
    assert set(records) == set(FILES) - {"manifest.json"}
    assert main(["stats", str(older), "--verify"]) == 0
    assert "Verified 24 files" in capsys.readouterr().out
