"""The on-disk index: round trip, no re-embedding on open, atomic rebuilds, clear errors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from graphseek.errors import CorpusError, IndexFormatError, IndexNotFoundError
from graphseek.knowledge import Index, Passage
from graphseek.knowledge import embedder as embedder_module
from graphseek.knowledge import index as index_module
from graphseek.knowledge.dense import DenseIndex, TextEncoder
from graphseek.knowledge.index import SearchMethod
from graphseek.knowledge.sparse import BM25Index


class HashEncoder:
    """A deterministic stand-in for MiniLM: bag-of-words hashed into 32 dims, normalised."""

    def __init__(self, name: str = "hash-encoder", dim: int = 32) -> None:
        self.name = name
        self.dim = dim
        self.calls: list[int] = []

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class CountingEncoder:
    """Wraps the real embedder and records how many texts each `encode` call gets."""

    def __init__(self, inner: TextEncoder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.calls: list[int] = []

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.encode(texts, batch_size=batch_size)


@pytest.fixture
def fake_encoder(monkeypatch: pytest.MonkeyPatch) -> HashEncoder:
    encoder = HashEncoder()
    monkeypatch.setattr(embedder_module, "get_embedder", lambda: encoder)
    return encoder


def corpus(*texts: str) -> list[Passage]:
    return [Passage.from_title_text(f"Doc {i}", t) for i, t in enumerate(texts)]


CORPUS_A = corpus("red apples grow on trees", "green pears are sweet", "blue berries are small")
CORPUS_B = corpus("the moon orbits the earth", "mars has two moons")


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


# ---------------------------------------------------------------------------- round trip


def test_open_round_trip_gives_the_same_results(tiny_index: Index) -> None:
    reopened = Index.open(tiny_index.path)
    assert reopened.passages == tiny_index.passages
    assert reopened.manifest == tiny_index.manifest
    assert len(reopened) == len(tiny_index) == 8
    methods: list[SearchMethod] = ["bm25", "dense", "hybrid"]
    for method in methods:
        for query in ("Where did Ada Lovelace's father die?", "capital of Poland"):
            before = tiny_index.search(query, k=4, method=method)
            after = reopened.search(query, k=4, method=method)
            assert [h.passage for h in after] == [h.passage for h in before]
            np.testing.assert_allclose(
                [h.score for h in after], [h.score for h in before], rtol=1e-5
            )
    np.testing.assert_array_equal(reopened.embeddings, tiny_index.embeddings)


def test_open_never_embeds_passages(tiny_index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingEncoder(embedder_module.get_embedder())
    monkeypatch.setattr(embedder_module, "get_embedder", lambda: counting)
    reopened = Index.open(tiny_index.path)
    reopened.search("Lord Byron", method="bm25")
    assert counting.calls == []  # opening and BM25 search load no embedder at all
    reopened.search("Lord Byron", method="dense")
    reopened.search_many(["Lord Byron", "Warsaw"], method="hybrid")
    assert counting.calls == [1, 2]  # only the queries are embedded, in one batch


def test_manifest_records_the_build(tiny_index: Index) -> None:
    from graphseek import __version__

    manifest = json.loads((tiny_index.path / "manifest.json").read_text())
    assert manifest == tiny_index.manifest
    assert manifest["format"] == "graphseek-index"
    assert manifest["format_version"] == 1
    assert manifest["graphseek_version"] == __version__
    assert manifest["counts"]["passages"] == 8
    assert manifest["embedder"] == {"name": "all-MiniLM-L6-v2", "dim": 384}
    assert manifest["bm25"]["implementation"] == "bm25s"
    assert {k: manifest["bm25"][k] for k in ("method", "k1", "b")} == {
        "method": "lucene",
        "k1": 1.5,
        "b": 0.75,
    }
    assert datetime.fromisoformat(manifest["created"]).tzinfo is not None
    assert sorted(p.name for p in tiny_index.path.iterdir()) == [
        "bm25",
        "dense",
        "manifest.json",
        "passages.jsonl",
    ]


def test_get_position_and_contains(tiny_index: Index) -> None:
    assert tiny_index.get("byron").title == "Lord Byron"
    assert tiny_index.position("byron") == 1
    assert "ada" in tiny_index and "nobody" not in tiny_index
    with pytest.raises(KeyError, match="No passage with id 'nobody'"):
        tiny_index.get("nobody")


def test_dir_for_other_stores(tiny_index: Index) -> None:
    assert tiny_index.dir_for("graph") == tiny_index.path / "graph"
    for bad in ("bm25", "manifest.json", "", "../graph", "a/b", ".hidden"):
        with pytest.raises(ValueError):
            tiny_index.dir_for(bad)


def test_other_stores_in_the_directory_are_left_alone(
    tmp_path: Path, fake_encoder: HashEncoder
) -> None:
    index = Index.build(CORPUS_A, tmp_path / "idx", show_progress=False)
    graph = index.dir_for("graph")
    graph.mkdir()
    (graph / "nodes.json").write_text("[]")
    reopened = Index.open(tmp_path / "idx")
    assert len(reopened.search("apples", method="hybrid")) > 0
    assert (graph / "nodes.json").read_text() == "[]"


# ------------------------------------------------------------------------------ building


def test_build_from_a_corpus_path(tmp_path: Path, fake_encoder: HashEncoder) -> None:
    source = tmp_path / "corpus.json"
    source.write_text(json.dumps([{"title": "A", "text": "alpha"}, {"title": "B", "text": "beta"}]))
    index = Index.build(source, tmp_path / "idx", show_progress=False)
    assert [p.title for p in index.passages] == ["A", "B"]
    assert index.manifest["source"] == str(source)
    assert index.manifest["embedder"] == {"name": "hash-encoder", "dim": 32}
    assert [h.passage.title for h in index.search("beta", k=1, method="bm25")] == ["B"]
    assert fake_encoder.calls == [2]


def test_rebuild_replaces_the_index_and_leaves_no_temp_dirs(
    tmp_path: Path, fake_encoder: HashEncoder
) -> None:
    target = tmp_path / "idx"
    Index.build(CORPUS_A, target, show_progress=False)
    Index.build(CORPUS_B, target, show_progress=False)
    assert Index.open(target).passages == CORPUS_B
    assert siblings(target) == ["idx"]


def _raise(*args: object, **kwargs: object) -> None:
    raise RuntimeError("simulated failure")


@pytest.mark.parametrize(
    "where",
    ["bm25_save", "encode", "dense_save", "manifest", "swap"],
)
def test_failure_mid_build_keeps_the_previous_index(
    tmp_path: Path,
    fake_encoder: HashEncoder,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    target = tmp_path / "idx"
    before = Index.build(CORPUS_A, target, show_progress=False)
    real_rename = os.rename

    def failing_rename(src: str | Path, dst: str | Path) -> None:
        if ".building-" in str(src):  # moving the new index into place
            raise OSError("simulated rename failure")
        real_rename(src, dst)

    patches = {
        "bm25_save": (BM25Index, "save", _raise),
        "encode": (fake_encoder, "encode", _raise),
        "dense_save": (DenseIndex, "save", _raise),
        "manifest": (index_module, "_write_json", _raise),
        "swap": (index_module.os, "rename", failing_rename),
    }
    monkeypatch.setattr(*patches[where])
    with pytest.raises((RuntimeError, OSError), match="simulated"):
        Index.build(CORPUS_B, target, show_progress=False)
    monkeypatch.undo()
    after = Index.open(target)
    assert after.passages == CORPUS_A
    assert after.manifest == before.manifest
    assert siblings(target) == ["idx"]


def test_failure_on_a_fresh_path_leaves_nothing(
    tmp_path: Path, fake_encoder: HashEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DenseIndex, "save", _raise)
    with pytest.raises(RuntimeError):
        Index.build(CORPUS_A, tmp_path / "idx", show_progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_corpus_path_or_a_stream_is_spooled_and_gives_the_index_of_its_list(
    tmp_path: Path, fake_encoder: HashEncoder
) -> None:
    """A corpus path or an iterator goes to a `PassageSpool` (the build holds none of its
    passages); the index is the one the list of the same passages gives, file for file, and
    reads its passages back from its passage file when first used."""
    from graphseek.knowledge.graph.memory.spool import PassageSpool
    from graphseek.knowledge.index import read_passages
    from graphseek.knowledge.loaders import load_corpus

    source = tmp_path / "corpus.json"
    records = [{"title": f"T{k}", "text": f"text number {k} about apples"} for k in range(40)]
    source.write_text(json.dumps(records))
    listed = load_corpus(source)
    assert isinstance(read_passages(source, False)[0], PassageSpool)
    assert isinstance(read_passages(iter(listed), False)[0], PassageSpool)
    assert type(read_passages(listed, False)[0]) is list  # a list: kept as a list
    from_path = Index.build(source, tmp_path / "a", show_progress=False)
    assert "_passages" not in from_path.__dict__  # not read back yet
    from_stream = Index.build(iter(listed), tmp_path / "b", show_progress=False)
    from_list = Index.build(listed, tmp_path / "c", show_progress=False)
    for built in (from_path, from_stream):
        assert built.passages == listed and built.get(listed[7].id) == listed[7]
        assert len(built) == 40 and listed[39].id in built
        assert built.search("apples", k=3, method="bm25") == from_list.search(
            "apples", k=3, method="bm25"
        )
    for name in ("passages.jsonl", "bm25", "dense"):
        a, b, c = (tmp_path / d / name for d in "abc")
        if a.is_file():
            assert a.read_bytes() == b.read_bytes() == c.read_bytes()
        else:
            files = sorted(f.name for f in a.iterdir())
            assert files == sorted(f.name for f in c.iterdir())
            for f in files:
                assert (a / f).read_bytes() == (b / f).read_bytes() == (c / f).read_bytes()


# -------------------------------------------------------------------------------- errors


def test_build_rejects_bad_input(tmp_path: Path, fake_encoder: HashEncoder) -> None:
    with pytest.raises(CorpusError, match="Empty corpus"):
        Index.build([], tmp_path / "idx")
    with pytest.raises(CorpusError, match="not found"):
        Index.build(tmp_path / "missing.json", tmp_path / "idx")
    with pytest.raises(CorpusError, match="Duplicate passage id"):
        Index.build([CORPUS_A[0], CORPUS_A[0]], tmp_path / "idx")
    with pytest.raises(TypeError, match="Passage"):
        Index.build(["just a string"], tmp_path / "idx")  # type: ignore[list-item]
    # the same checks on a stream (spooled as it is read)
    with pytest.raises(CorpusError, match="Empty corpus"):
        Index.build(iter([]), tmp_path / "idx")
    with pytest.raises(CorpusError, match=r"Duplicate passage id .*\(item 2\)"):
        Index.build(iter([CORPUS_A[0], CORPUS_A[1], CORPUS_A[0]]), tmp_path / "idx")
    with pytest.raises(TypeError, match="item 1 is str"):
        Index.build(iter([CORPUS_A[0], "just a string"]), tmp_path / "idx")  # type: ignore[list-item]
    assert fake_encoder.calls == []
    assert list(tmp_path.iterdir()) == []


def test_build_refuses_to_replace_something_that_is_not_an_index(
    tmp_path: Path, fake_encoder: HashEncoder
) -> None:
    precious = tmp_path / "documents"
    precious.mkdir()
    (precious / "thesis.txt").write_text("years of work")
    with pytest.raises(IndexFormatError, match="not a graphseek index"):
        Index.build(CORPUS_A, precious)
    assert [p.name for p in precious.iterdir()] == ["thesis.txt"]
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(IndexFormatError, match="not a directory"):
        Index.build(CORPUS_A, a_file)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert len(Index.build(CORPUS_A, empty, show_progress=False)) == 3


def test_open_missing_index(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError, match="graphseek index"):
        Index.open(tmp_path / "nowhere")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "passages.jsonl").write_text("")
    with pytest.raises(IndexNotFoundError, match="manifest.json is missing.*graphseek index"):
        Index.open(tmp_path / "half")


@pytest.fixture
def index_copy(tiny_index: Index, tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(tiny_index.path, copy)
    return copy


def _edit_manifest(path: Path, **changes: object) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


def test_open_malformed_manifest(index_copy: Path) -> None:
    (index_copy / "manifest.json").write_text("{not json")
    with pytest.raises(IndexFormatError, match="Malformed index manifest"):
        Index.open(index_copy)
    (index_copy / "manifest.json").write_text("[1, 2]")
    with pytest.raises(IndexFormatError, match="not a graphseek index manifest"):
        Index.open(index_copy)


def test_open_unknown_format_version(index_copy: Path) -> None:
    _edit_manifest(index_copy, format_version=99)
    with pytest.raises(IndexFormatError, match="version 99 .* not supported"):
        Index.open(index_copy)


def test_open_inconsistent_files(index_copy: Path) -> None:
    _edit_manifest(index_copy, counts={"passages": 9})
    with pytest.raises(IndexFormatError, match="counts 9 passages"):
        Index.open(index_copy)
    _edit_manifest(index_copy, counts={"passages": 8})
    index = Index.open(index_copy)  # dense files are read on first dense search
    shutil.rmtree(index_copy / "dense")
    assert index.search("Byron", method="bm25")
    with pytest.raises(IndexFormatError, match="dense index"):
        index.search("Byron", method="dense")
    # missing when the index opens: named then (tests/test_damaged_files.py has every file)
    with pytest.raises(IndexFormatError, match="dense/embeddings.npy is missing"):
        Index.open(index_copy)


def test_dense_search_with_a_different_embedder_is_refused(
    index_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedder_module, "get_embedder", lambda: HashEncoder("other", 384))
    index = Index.open(index_copy)
    assert index.search("Byron", method="bm25")
    with pytest.raises(IndexFormatError, match="embedded with all-MiniLM-L6-v2.*other"):
        index.search("Byron", method="hybrid")


# ------------------------------------------------------------------------- storage registry


def test_the_registry_chooses_the_backend_by_uri_scheme(tmp_path: Path) -> None:
    from graphseek.knowledge import storage

    assert storage.backend_for(tmp_path) is storage.DIRECTORY
    assert storage.backend_for("relative/idx") is storage.DIRECTORY
    assert storage.backend_for(f"file://{tmp_path}") is storage.DIRECTORY
    assert storage.backend_for("postgresql://u@h/db?schema=x") is storage.POSTGRES
    assert storage.backend_for("POSTGRES://h/db") is storage.POSTGRES
    assert storage.local_path(f"file://{tmp_path}/idx") == tmp_path / "idx"
    assert storage.POSTGRES.index_class().__name__ == "PostgresIndex"


def test_an_unknown_scheme_is_one_line_naming_the_accepted_ones() -> None:
    from graphseek.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError) as err:
        Index.open("postgresq://localhost/db")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("Unknown index URI scheme 'postgresq'; did you mean 'postgresql'")
    assert "a directory path, file://PATH or postgresql://" in message
    with pytest.raises(InvalidRequestError, match="known index URI schemes: file, postgresql"):
        Index.build(CORPUS_A, "s3://bucket/idx", show_progress=False)


def test_a_file_uri_opens_the_directory_index(tiny_index: Index) -> None:
    from graphseek.knowledge.storage import open_index

    reopened = open_index(f"file://{tiny_index.path}")
    assert type(reopened) is Index and reopened.path == tiny_index.path
    assert [p.id for p in reopened.passages] == [p.id for p in tiny_index.passages]


def test_both_backends_have_every_member_of_the_storage_protocol() -> None:
    from graphseek.knowledge.postgres.index import PostgresIndex
    from graphseek.knowledge.postgres.neighbourhood import PostgresNeighbourhood
    from graphseek.knowledge.storage import IndexStore, NeighbourhoodReads

    def members(protocol: type) -> set[str]:
        return {
            n for n in vars(protocol) if not n.startswith("_") or n in ("__len__", "__contains__")
        } - {"__annotations__"}

    for cls in (Index, PostgresIndex):
        assert all(hasattr(cls, m) for m in members(IndexStore)), cls
    assert all(hasattr(PostgresNeighbourhood, m) for m in members(NeighbourhoodReads))
