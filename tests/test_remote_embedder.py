"""Embedders other than the packaged MiniLM: an OpenAI-compatible ``/v1/embeddings`` endpoint
(a fake server on 127.0.0.1, started here) and a local sentence-transformers folder; the
embedder recorded in the index manifest, and refused when another one queries the index.

Sockets are allowed for this module only, and only to 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_postgres_store import uri_for

from graphseek.errors import IndexFormatError, LLMError, LLMTransportError, ModelSpecError
from graphseek.knowledge import embedders
from graphseek.knowledge.embedder import model_dir
from graphseek.knowledge.index import Index
from graphseek.knowledge.passages import Passage

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

DIM = 256
REPO = Path(__file__).resolve().parents[1]


def word_vector(text: str, dim: int = DIM) -> list[float]:
    """A bag of hashed lower-case words (unnormalised): texts sharing words are near."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    vector[0] += 0.5  # never all zeros
    return vector


Handler = Callable[[str, dict[str, Any]], tuple[int, Any, dict[str, str]]]


class FakeModelServer:
    """``POST /v1/embeddings`` (hashed-word vectors) and ``/v1/rerank`` / ``/rerank`` (a
    scorer given per test) on 127.0.0.1. `faults` is a queue of (status, message) replies
    given before the real ones; `requests` records (path, body)."""

    def __init__(
        self,
        scorer: Callable[[str, str], float] | None = None,
        *,
        rerank_paths: tuple[str, ...] = ("/v1/rerank",),
        rerank_shape: str = "cohere",
        dim: int = DIM,
    ) -> None:
        self.scorer = scorer or (lambda query, text: 0.0)
        self.rerank_paths = rerank_paths
        self.rerank_shape = rerank_shape
        self.dim = dim
        self.faults: list[tuple[int, str, dict[str, str]]] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, reply, headers = owner.answer(self.path, body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        with self._lock:
            self.requests.append((path, body))
            if self.faults:
                status, message, headers = self.faults.pop(0)
                return status, {"error": {"message": message}}, headers
        if path == "/v1/embeddings":
            rows = [
                {"object": "embedding", "index": i, "embedding": word_vector(t, self.dim)}
                for i, t in enumerate(body["input"])
            ]
            rows.reverse()  # the client must order rows by their index
            return 200, {"object": "list", "data": rows, "model": body.get("model")}, {}
        if path in self.rerank_paths:
            texts = body.get("documents") or body.get("texts") or []
            scored = [(i, self.scorer(body["query"], t)) for i, t in enumerate(texts)]
            scored.sort(key=lambda pair: -pair[1])
            if self.rerank_shape == "tei":
                return 200, [{"index": i, "score": s} for i, s in scored], {}
            results = [{"index": i, "relevance_score": s} for i, s in scored]
            return 200, {"model": body.get("model"), "results": results}, {}
        return 404, {"error": {"message": f"no route {path}"}}, {}

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def embed_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No backoff, two transport retries; no endpoint from the environment; fresh embedders."""
    for name in (
        "GRAPHSEEK_EMBED_BASE_URL",
        "GRAPHSEEK_EMBED_API_KEY",
        "GRAPHSEEK_EMBED_BATCH",
        "GRAPHSEEK_BASE_URL",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "2")
    embedders.clear_embedders()
    yield
    embedders.clear_embedders()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeModelServer]:
    with FakeModelServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        yield fake


def expected(texts: list[str]) -> np.ndarray:
    raw = np.asarray([word_vector(t) for t in texts], dtype=np.float32)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


# -- specs ------------------------------------------------------------------------------------


def test_specs_parse_and_bad_ones_get_one_line() -> None:
    assert embedders.parse_embedder_spec(None) == ("minilm", "", "")
    assert embedders.parse_embedder_spec(" MiniLM ") == ("minilm", "", "")
    assert embedders.parse_embedder_spec("openai:nomic-embed-text:latest") == (
        "openai",
        "nomic-embed-text:latest",
        "",
    )
    assert embedders.parse_embedder_spec("openai:bge-m3@http://127.0.0.1:8080/v1/") == (
        "openai",
        "bge-m3",
        "http://127.0.0.1:8080/v1",
    )
    assert embedders.parse_embedder_spec("st:/models/e5") == ("st", "/models/e5", "")
    for bad in ("cohere:x", "openai:", "st:", "openai:@http://h/v1"):
        with pytest.raises(ModelSpecError) as info:
            embedders.parse_embedder_spec(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(ModelSpecError, match="OPENAI_API_KEY"):
        embedders.embedder_for("openai:text-embedding-3-small")  # no key and no URL


def test_st_folder_errors_name_the_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="does not exist"):
        embedders.embedder_for(f"st:{tmp_path / 'missing'}")
    with pytest.raises(ModelSpecError, match="not a model folder"):
        embedders.embedder_for(f"st:{tmp_path}")


# -- the HTTP embedder ------------------------------------------------------------------------


def test_texts_go_in_batches_and_rows_keep_their_order(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAPHSEEK_EMBED_BATCH", "4")
    encoder = embedders.embedder_for("openai:fake-embed")
    texts = [f"passage number {i} about topic {i % 3}" for i in range(10)] + [""]
    vectors = encoder.encode(texts)
    assert [len(body["input"]) for _, body in server.requests] == [4, 4, 3]
    assert {body["model"] for _, body in server.requests} == {"fake-embed"}
    assert {body["encoding_format"] for _, body in server.requests} == {"float"}
    assert server.requests[-1][1]["input"][-1] == " "  # an empty text is sent as a space
    np.testing.assert_allclose(vectors, expected(texts[:-1] + [" "]), atol=1e-6)
    assert vectors.dtype == np.float32 and encoder.dim == DIM
    assert encoder.name == "openai:fake-embed"


def test_a_server_error_then_a_reply_is_retried(server: FakeModelServer) -> None:
    server.faults = [(503, "loading model", {}), (429, "slow down", {"retry-after": "0"})]
    vectors = embedders.embedder_for("openai:fake-embed").encode(["Lord Byron"])
    np.testing.assert_allclose(vectors, expected(["Lord Byron"]), atol=1e-6)
    assert server.paths() == ["/v1/embeddings"] * 3


def test_a_server_that_keeps_failing_gives_one_clear_line(server: FakeModelServer) -> None:
    server.faults = [(503, "model is loading", {})] * 3
    with pytest.raises(LLMTransportError) as info:
        embedders.embedder_for("openai:fake-embed").encode(["a", "b"])
    message = str(info.value)
    assert "\n" not in message
    assert "HTTP 503" in message and "model is loading" in message
    assert "openai:fake-embed" in message and "3 attempt(s)" in message
    assert len(server.requests) == 3


def test_a_refused_request_is_not_retried(server: FakeModelServer) -> None:
    server.faults = [(400, "unknown model fake-embed", {})]
    with pytest.raises(LLMError, match="HTTP 400.*unknown model"):
        embedders.embedder_for("openai:fake-embed").encode(["a"])
    assert len(server.requests) == 1


def test_the_base_url_in_the_spec_wins_over_the_environment(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    encoder = embedders.embedder_for(f"openai:fake-embed@{server.base_url}")
    assert encoder.encode(["x"]).shape == (1, DIM)
    assert embedders.embedder_spec(encoder) == f"openai:fake-embed@{server.base_url}"


def test_repeated_queries_are_served_from_the_cache(server: FakeModelServer) -> None:
    encoder = embedders.embedder_for("openai:fake-embed")
    first = encoder.encode(["Where did Lord Byron die?"])
    again = encoder.encode(["Where did Lord Byron die?"])
    np.testing.assert_array_equal(first, again)
    assert len(server.requests) == 1


# -- the manifest -----------------------------------------------------------------------------


def test_an_index_records_its_embedder_and_queries_with_it(
    server: FakeModelServer, tmp_path: Path, tiny_passages: list[Passage]
) -> None:
    index = Index.build(
        tiny_passages, tmp_path / "idx", show_progress=False, embedder="openai:fake-embed"
    )
    record = {"name": "openai:fake-embed", "dim": DIM, "spec": "openai:fake-embed"}
    assert index.manifest["embedder"] == record
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["embedder"] == record
    np.testing.assert_allclose(
        index.embeddings, expected([p.content for p in tiny_passages]), atol=1e-6
    )
    embedders.clear_embedders()
    server.requests.clear()
    reopened = Index.open(tmp_path / "idx")  # the recorded embedder, nothing asked of the user
    hits = reopened.search("Missolonghi municipality Greece", k=1, method="dense")
    assert hits[0].passage.id == "missolonghi"
    assert [b["input"] for _, b in server.requests] == [["Missolonghi municipality Greece"]]


def test_updates_embed_only_new_documents_with_the_recorded_embedder(
    server: FakeModelServer, tmp_path: Path, tiny_passages: list[Passage]
) -> None:
    Index.build(
        tiny_passages[:5], tmp_path / "idx", show_progress=False, embedder="openai:fake-embed"
    )
    embedders.clear_embedders()
    server.requests.clear()
    index = Index.open(tmp_path / "idx").add_documents(tiny_passages[5:])
    assert index.manifest["embedder"]["spec"] == "openai:fake-embed"
    (only,) = [b["input"] for _, b in server.requests]  # only the new passages, one request
    assert sorted(only) == sorted(p.content for p in tiny_passages[5:])
    np.testing.assert_allclose(
        index.embeddings, expected([p.content for p in tiny_passages]), atol=1e-6
    )
    server.requests.clear()
    index.delete_documents(["ada"])  # the rows kept are not embedded again
    assert server.requests == []
    np.testing.assert_allclose(
        index.embeddings, expected([p.content for p in tiny_passages[1:]]), atol=1e-6
    )


def test_an_index_refuses_another_embedder_naming_both(
    server: FakeModelServer, tmp_path: Path, tiny_passages: list[Passage], tiny_index: Index
) -> None:
    Index.build(tiny_passages, tmp_path / "idx", show_progress=False, embedder="openai:fake-embed")
    server.requests.clear()
    with pytest.raises(IndexFormatError) as info:
        Index.open(tmp_path / "idx", embedder="minilm")
    message = str(info.value)
    assert "\n" not in message
    assert f"embedded with openai:fake-embed (dim {DIM}), not all-MiniLM-L6-v2 (dim 384)" in message
    with pytest.raises(IndexFormatError, match="with all-MiniLM-L6-v2 .*not openai:other-model"):
        Index.open(tiny_index.path, embedder="openai:other-model")
    assert server.requests == []  # refused from the names alone, before any request
    same = Index.open(tmp_path / "idx", embedder="openai:fake-embed")
    assert same.search("Lord Byron", k=1, method="dense")


def test_a_server_model_of_another_size_is_refused(
    server: FakeModelServer, tmp_path: Path, tiny_passages: list[Passage]
) -> None:
    Index.build(tiny_passages, tmp_path / "idx", show_progress=False, embedder="openai:fake-embed")
    embedders.clear_embedders()
    server.dim = 64  # the same model name now serves other vectors
    index = Index.open(tmp_path / "idx")
    with pytest.raises(IndexFormatError, match=f"dim 64, expected {DIM}"):
        index.search("Lord Byron", method="dense")


def test_the_graph_build_keeps_its_own_vectors_with_a_remote_embedder(
    server: FakeModelServer, tmp_path: Path, tiny_passages: list[Passage]
) -> None:
    index = Index.build(
        tiny_passages,
        tmp_path / "idx",
        show_progress=False,
        graph=True,
        embedder="openai:fake-embed",
    )
    assert index.has_graph and index.graph.manifest  # the graph was built
    assert index.embeddings.shape == (len(tiny_passages), DIM)  # passages: the remote vectors
    np.testing.assert_allclose(
        index.embeddings, expected([p.content for p in tiny_passages]), atol=1e-6
    )
    hits = Index.open(tmp_path / "idx").search("Lord Byron poet", k=3)
    assert "byron" in [h.passage.id for h in hits]
    with pytest.raises(ValueError, match="graph vectors 'minilm'.*openai:fake-embed"):
        Index.build(
            tiny_passages,
            tmp_path / "other",
            show_progress=False,
            graph=True,
            graph_options={"vectors": "minilm"},
            embedder="openai:fake-embed",
        )


def test_a_postgres_index_records_its_embedder_and_refuses_another(
    server: FakeModelServer,
    pg_server: Any,  # conftest.py's embedded PostgreSQL
    tiny_passages: list[Passage],
) -> None:
    from graphseek.knowledge.postgres.index import PostgresIndex

    uri = uri_for(pg_server, "remote_embedder")
    index = Index.build(tiny_passages, uri, show_progress=False, embedder="openai:fake-embed")
    assert isinstance(index, PostgresIndex)
    assert index.manifest["embedder"] == {
        "name": "openai:fake-embed",
        "dim": DIM,
        "spec": "openai:fake-embed",
    }
    embedders.clear_embedders()
    reopened = Index.open(uri)
    hits = reopened.search("Missolonghi municipality Greece", k=1, method="dense")
    assert hits[0].passage.id == "missolonghi"
    with pytest.raises(IndexFormatError, match="embedded with openai:fake-embed .*not all-MiniLM"):
        Index.open(uri, embedder="minilm")
    reopened.close()


def test_cli_index_records_the_embedder_and_ask_uses_it(
    server: FakeModelServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conftest import TINY_CORPUS

    from graphseek.cli import main

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": i, "title": t, "text": x} for i, t, x in TINY_CORPUS]))
    out = tmp_path / "idx"
    argv = ["index", str(corpus), "--out", str(out), "--no-graph", "--quiet"]
    assert main([*argv, "--embedder", "openai:fake-embed"]) == 0
    assert json.loads((out / "manifest.json").read_text())["embedder"]["name"] == (
        "openai:fake-embed"
    )
    embedders.clear_embedders()
    server.requests.clear()
    question = "Where did Lord Byron die?"
    assert main(["ask", str(out), question, "--topology", "naive", "--json"]) == 0
    reply = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "byron" in [e["passage_id"] for e in reply["evidence"]]
    assert any(question in b["input"] for _, b in server.requests)  # the query was embedded there


def test_cli_refuses_a_bad_embedder_spec_before_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphseek.cli import main

    missing = tmp_path / "no-such-corpus"  # not read: the spec is checked first
    code = main(["index", str(missing), "--out", str(tmp_path / "idx"), "--embedder", "nope:x"])
    err = capsys.readouterr().err
    assert code == 2
    assert "unknown embedder spec 'nope:x'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


# -- a local sentence-transformers folder -----------------------------------------------------


@pytest.mark.slow
def test_st_with_the_packaged_folder_gives_the_default_vectors(
    tiny_passages: list[Passage],
) -> None:
    from graphseek.knowledge.embedder import Embedder, get_embedder

    encoder = embedders.embedder_for(f"st:{model_dir()}")
    texts = [p.content for p in tiny_passages] + [f"short text {i}" for i in range(12)]
    got = encoder.encode(texts)
    # the same model through sentence-transformers (the default's torch backend): equal
    torch_vectors = Embedder(backend="torch").encode(texts)
    np.testing.assert_allclose(got, torch_vectors, atol=1e-5)
    # the default (ONNX export of the same model): the tolerance its own tests hold to torch
    default = get_embedder().encode(texts)
    assert (got * default).sum(axis=1).min() >= 0.9999
    np.testing.assert_allclose(got, default, atol=1e-3)
    assert encoder.dim == 384
    assert encoder.name.startswith("st:model-")
    assert embedders.embedder_record(encoder)["spec"] == f"st:{model_dir()}"


def test_default_path_imports_no_http_or_sentence_transformers() -> None:
    script = (
        "import sys\n"
        "import graphseek.knowledge.index, graphseek.knowledge.embedders\n"
        "import graphseek.knowledge.rerank, graphseek.tools.retrievers\n"
        "print('httpx' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert out.stdout.split() == ["False", "False"], out.stderr
