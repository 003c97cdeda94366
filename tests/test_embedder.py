"""The embedder's ONNX Runtime backend against the sentence-transformers (torch) reference:
same vectors (cosine >= 0.99 per text; in practice > 0.9999 in bulk), the int8 query model
within 0.99 too, rows in input order whatever the batching and threads, the exports cached and
reused, bad backend names refused."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphseek.knowledge import embedder as embedder_module
from graphseek.knowledge.embedder import Embedder, get_embedder

TEXTS = [
    "Where did Ada Lovelace's father die?",
    "Lord Byron",
    "Lord Byron; George Gordon Byron; PERSON",
    "Ada Lovelace was an English mathematician and writer, chiefly known for her work on "
    "Charles Babbage's Analytical Engine. She was the only legitimate child of the poet Lord "
    "Byron and Annabella Milbanke.",
    "",
    "x",
    "In which country was the woman who won the Nobel Prize twice born?",
    "Missolonghi",
    "Warsaw is the capital of Poland. " * 60,  # longer than the 256-token window
    "Ünïcödé — names: Pelé, São Paulo, Kraków",
    "The Analytical Engine was a proposed mechanical general-purpose computer.",
    "1824",
]


@pytest.fixture(scope="module")
def onnx_embedder() -> Embedder:
    embedder = get_embedder()
    if embedder.backend != "onnx":
        pytest.fail("onnxruntime is a dependency; the default embedder must use it")
    return embedder


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(backend="torch")


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers(
    onnx_embedder: Embedder, torch_embedder: Embedder
) -> None:
    got = onnx_embedder.encode(TEXTS)
    want = torch_embedder.encode(TEXTS)
    assert got.shape == want.shape == (len(TEXTS), 384)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= 0.99, cosines


@pytest.mark.slow
def test_int8_query_model_stays_within_cosine_099_of_sentence_transformers(
    onnx_embedder: Embedder, torch_embedder: Embedder
) -> None:
    assert onnx_embedder._onnx is not None and onnx_embedder._onnx.query_session is not None
    onnx_embedder.clear_query_cache()
    queries = np.vstack([onnx_embedder.encode([t]) for t in TEXTS])  # the small (query) path
    fp32 = np.vstack([onnx_embedder._onnx.run_one(t) for t in TEXTS])
    want = torch_embedder.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-4)
    cosines = (queries * want).sum(axis=1)
    assert cosines.min() >= 0.99, cosines
    assert not np.allclose(queries, fp32, atol=1e-6)  # the int8 model did run
    # a query's vector does not depend on the other texts of its call
    onnx_embedder.clear_query_cache()
    together = onnx_embedder.encode(TEXTS[:4])
    np.testing.assert_allclose(together, queries[:4], atol=1e-6)


def test_query_model_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHSEEK_QUERY_MODEL", "fp32")
    embedder = Embedder(backend="onnx", workers=1)
    assert embedder._onnx is not None and embedder._onnx.query_session is None
    np.testing.assert_allclose(
        embedder.encode(["Lord Byron"]), embedder._onnx.run_one("Lord Byron"), atol=1e-6
    )


@pytest.mark.slow
def test_onnx_rows_follow_input_order_across_batches_and_threads(onnx_embedder: Embedder) -> None:
    assert onnx_embedder._onnx is not None
    single = np.vstack([onnx_embedder._onnx.run_one(t) for t in TEXTS])  # fp32, unpadded
    parallel = Embedder(backend="onnx", workers=2)
    batched = parallel.encode(TEXTS * 3, batch_size=4)  # > SMALL_BATCH: sorted, threaded
    for copy in range(3):
        rows = batched[copy * len(TEXTS) : (copy + 1) * len(TEXTS)]
        assert ((rows * single).sum(axis=1) >= 0.9999).all()


@pytest.mark.slow
def test_onnx_export_is_cached_and_reused(
    onnx_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = embedder_module.onnx_path()
    assert path.is_file()
    before = path.stat().st_mtime_ns

    def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("the cached export must be reused")

    monkeypatch.setattr(embedder_module, "export_onnx", no_export)
    monkeypatch.setattr(embedder_module, "make_apart", no_export)
    again = Embedder(backend="onnx")
    assert again.backend == "onnx"
    assert path.stat().st_mtime_ns == before


_FRESH_EMBEDDER = """
import sys
from graphseek.knowledge.embedder import Embedder, onnx_path, query_model_path
embedder = Embedder(backend="onnx")
vector = embedder.encode(["Lord Byron"])[0]
print(embedder.backend, "torch" in sys.modules, onnx_path().is_file(),
      query_model_path().is_file(), " ".join(f"{x:.6f}" for x in vector[:4]))
"""


@pytest.mark.slow
def test_a_first_export_runs_apart_and_leaves_torch_out_of_the_process(
    onnx_embedder: Embedder, tmp_path: Path
) -> None:
    """On a fresh cache the export and the query model are made in a child interpreter: the
    embedding process never imports torch (560 MB it kept to its end), and the files are those
    the session's cache holds, byte for byte."""
    env = {**os.environ, "GRAPHSEEK_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_EMBEDDER],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    backend, torch_loaded, exported, quantised, *head = done.stdout.split()
    assert (backend, torch_loaded, exported, quantised) == ("onnx", "False", "True", "True")
    expected = onnx_embedder.encode(["Lord Byron"])[0][:4]
    assert np.allclose([float(x) for x in head], expected, atol=1e-5)
    made = sorted((tmp_path / "onnx").iterdir())
    cached = embedder_module.onnx_path().parent
    assert [p.name for p in made] == sorted(
        p.name for p in (embedder_module.onnx_path(), embedder_module.query_model_path())
    )
    for path in made:
        assert path.read_bytes() == (cached / path.name).read_bytes()


def test_a_step_that_fails_apart_says_why(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"quantize step failed .*: .*missing\.onnx"):
        embedder_module.make_apart("quantize", tmp_path / "missing.onnx", tmp_path / "q.onnx")
    assert not (tmp_path / "q.onnx").exists()
    with pytest.raises(ValueError, match="unknown step 'train'"):
        embedder_module.make_apart("train", tmp_path)


def test_without_a_child_interpreter_the_step_runs_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Path] = []
    monkeypatch.setattr(embedder_module, "export_onnx", made.append)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))  # OSError
    embedder_module._made("export", tmp_path / "model.onnx")
    monkeypatch.setattr(sys, "executable", "/bin/false")  # starts, and fails
    embedder_module._made("export", tmp_path / "again.onnx")
    assert made == [tmp_path / "model.onnx", tmp_path / "again.onnx"]


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown embedder backend"):
        Embedder(backend="tensorflow")


def test_encode_empty_list_gives_an_empty_matrix(onnx_embedder: Embedder) -> None:
    assert onnx_embedder.encode([]).shape == (0, 384)


def test_query_vectors_are_cached_and_bounded(
    onnx_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = Embedder(backend="onnx", workers=1)
    monkeypatch.setattr(embedder_module, "QUERY_CACHE", 3)
    calls: list[list[str]] = []
    real, real_queries = embedder._encode, embedder._encode_queries

    def counting(texts: list[str], batch_size: int) -> np.ndarray:
        calls.append(list(texts))
        return real(texts, batch_size)

    def counting_queries(texts: list[str], batch_size: int) -> np.ndarray:
        calls.append(list(texts))
        return real_queries(texts, batch_size)

    monkeypatch.setattr(embedder, "_encode", counting)
    monkeypatch.setattr(embedder, "_encode_queries", counting_queries)
    first = embedder.encode(["Lord Byron", "Missolonghi"])
    first[:] = 0.0  # a caller may write into its result: the cache keeps its own copy
    again = embedder.encode(["Missolonghi", "Lord Byron", "1824"])
    assert calls == [["Lord Byron", "Missolonghi"], ["1824"]]
    want = onnx_embedder.encode(["Lord Byron", "Missolonghi"])
    np.testing.assert_allclose(again[[1, 0]], want, atol=1e-5)
    embedder.encode(["x", "Warsaw"])  # 5 distinct texts seen, at most 3 kept
    assert len(embedder._recent) == 3 and "Lord Byron" not in embedder._recent
    embedder.clear_query_cache()
    embedder.encode(["1824"])
    assert calls[-1] == ["1824"]
    bulk = embedder.encode(TEXTS)  # more than SMALL_BATCH texts: not through the cache
    assert calls[-1] == TEXTS and bulk.shape == (len(TEXTS), 384)


@pytest.mark.slow
def test_query_model_is_made_quietly(
    onnx_embedder: Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The quantiser's root-logger hint is muted, and the root logger's handlers are kept."""
    root = logging.getLogger()
    handlers = list(root.handlers)
    with caplog.at_level(logging.DEBUG):
        target = embedder_module.quantize_query_model(
            embedder_module.onnx_path(), tmp_path / "query.onnx"
        )
    assert target.is_file()
    assert root.handlers == handlers
    assert logging.root.manager.disable == logging.NOTSET
    assert not [r for r in caplog.records if "quantization" in r.getMessage()]
