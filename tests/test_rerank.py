"""Rerankers over the retrieved passages: a rerank endpoint (a fake server on 127.0.0.1 in the
vLLM/Jina/Cohere and TEI shapes) and a local cross-encoder folder, applied by `retrieve` and by
a run's ``Context.reranker``.

Sockets are allowed for this module only, and only to 127.0.0.1.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_remote_embedder import FakeModelServer

from graphseek.errors import ContextError, ModelSpecError
from graphseek.knowledge import rerank
from graphseek.knowledge.index import Index
from graphseek.state.context import Context
from graphseek.tools.retrievers import retrieve

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUESTION = "Where did Ada Lovelace's father die?"


def prefer(*words: str):  # type: ignore[no-untyped-def]
    """A scorer: how many of `words` the passage holds (the fake reranker's opinion)."""
    return lambda query, text: float(sum(w.lower() in text.lower() for w in words))


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "1")
    for name in ("GRAPHSEEK_RERANK_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    rerank.clear_rerankers()
    yield
    rerank.clear_rerankers()


def test_specs_parse_and_bad_ones_are_refused() -> None:
    assert rerank.parse_reranker_spec("") == ("", "", "")
    assert rerank.parse_reranker_spec("http://127.0.0.1:8080/") == (
        "http",
        "http://127.0.0.1:8080",
        "",
    )
    assert rerank.parse_reranker_spec("http:http://h:1/v1/rerank") == (
        "http",
        "http://h:1/v1/rerank",
        "",
    )
    assert rerank.parse_reranker_spec("http:BAAI/bge-reranker-base@https://h/v1") == (
        "http",
        "https://h/v1",
        "BAAI/bge-reranker-base",
    )
    assert rerank.parse_reranker_spec("ce:/models/ms-marco") == ("ce", "/models/ms-marco", "")
    for bad in ("cohere:x", "http:", "http:model-without-url", "ce:"):
        with pytest.raises(ModelSpecError, match="unknown reranker spec"):
            rerank.parse_reranker_spec(bad)
    assert rerank.reranker_for("") is None
    assert Context(reranker="http://127.0.0.1:1").reranker == "http://127.0.0.1:1"
    with pytest.raises(ContextError, match="reranker must be"):
        Context(reranker="bge-reranker")


def test_the_endpoint_order_is_applied(tiny_index: Index) -> None:
    query = "Greek War of Independence"
    with FakeModelServer(prefer("Romantic poet")) as server:
        spec = f"http:tiny-reranker@{server.base_url}"
        hits = tiny_index.search(query, k=8, method="bm25")
        reordered = rerank.rerank_hits(hits, query, rerank.reranker_for(spec), k=2)
    assert [h.passage.id for h in hits][:2] == ["missolonghi", "byron"]
    assert [h.passage.id for h in reordered] == ["byron", "missolonghi"]  # ties: retrieval order
    assert [h.rank for h in reordered] == [1, 2]
    # each hit keeps its retrieval score: the reranker decides the order only
    by_id = {h.passage.id: h.score for h in hits}
    assert all(h.score == by_id[h.passage.id] for h in reordered)
    (path, body), *_ = server.requests
    assert path == "/v1/rerank"
    assert body["model"] == "tiny-reranker" and body["query"] == query
    assert body["documents"] == body["texts"] and len(body["documents"]) == len(hits)
    assert body["top_n"] == len(hits)


def test_a_tei_server_at_rerank_is_found_after_a_404(tiny_index: Index) -> None:
    with FakeModelServer(prefer("Warsaw"), rerank_paths=("/rerank",), rerank_shape="tei") as server:
        reranker = rerank.reranker_for(f"http:{server.root_url}")
        assert reranker is not None
        hits = retrieve(tiny_index, "Marie Curie", 2, "bm25", reranker=f"http:{server.root_url}")
        assert hits[0].passage.id == "warsaw"
        assert server.paths() == ["/v1/rerank", "/rerank"]
        retrieve(tiny_index, "Marie Curie", 2, "bm25", reranker=f"http:{server.root_url}")
        assert server.paths()[-1] == "/rerank"  # remembered


def test_retrieve_reranks_a_deeper_candidate_list(tiny_index: Index) -> None:
    plain = retrieve(tiny_index, "Lord Byron poet", 2, "hybrid")
    with FakeModelServer(prefer("Curie")) as server:
        hits = retrieve(tiny_index, "Lord Byron poet", 2, "hybrid", reranker=server.base_url)
    sent = server.requests[0][1]["documents"]
    assert len(sent) == min(len(tiny_index), rerank.rerank_depth(2)) == len(tiny_index)
    assert hits[0].passage.id in ("curie", "warsaw")  # from below the plain top 2
    assert {h.passage.id for h in plain}.isdisjoint({"curie", "warsaw"})
    assert len(hits) == 2


def test_a_run_applies_its_context_reranker(
    tiny_index: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.api import ask

    with FakeModelServer(prefer("Missolonghi")) as server:
        result = ask(
            tiny_index, QUESTION, topology="naive", llm="offline", reranker=server.base_url
        )
    assert server.requests and server.requests[0][1]["query"] == QUESTION
    assert result.evidence

    def must_not_rerank(spec: str) -> None:
        raise AssertionError(f"reranked with {spec!r} though no reranker was set")

    monkeypatch.setattr(rerank, "reranker_for", must_not_rerank)
    assert ask(tiny_index, QUESTION, topology="naive", llm="offline").evidence  # off by default


def test_a_failing_reranker_keeps_the_retrieval_order(
    tiny_index: Index, caplog: pytest.LogCaptureFixture
) -> None:
    plain = retrieve(tiny_index, "Lord Byron", 3, "bm25")
    with FakeModelServer(prefer("Curie")) as server:
        server.faults = [(503, "overloaded", {})] * 2
        with caplog.at_level(logging.WARNING, logger="graphseek.tools.retrievers"):
            hits = retrieve(tiny_index, "Lord Byron", 3, "bm25", reranker=server.base_url)
    assert [h.passage.id for h in hits] == [h.passage.id for h in plain]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert "reranking skipped" in caplog.text and "HTTP 503" in caplog.text


@pytest.mark.slow
def test_a_local_cross_encoder_folder(tiny_index: Index, tmp_path: Path) -> None:
    """A cross-encoder made from the packaged MiniLM weights (its scoring head is new, so the
    scores mean nothing; the folder is what a user's ms-marco model would be)."""
    import torch
    from sentence_transformers import CrossEncoder

    from graphseek.knowledge.embedder import model_dir

    torch.manual_seed(0)
    folder = tmp_path / "ce"
    made = CrossEncoder(str(model_dir()), num_labels=1, local_files_only=True)
    made.save(str(folder))
    hits = tiny_index.search("Lord Byron", k=8, method="bm25")
    texts = [rerank._passage_text(h) for h in hits]
    want = made.predict([("Lord Byron", t) for t in texts])
    reranker = rerank.reranker_for(f"ce:{folder}")  # loaded from the folder
    assert isinstance(reranker, rerank.CrossEncoderReranker)
    assert reranker.scores("Lord Byron", texts) == pytest.approx([float(v) for v in want], abs=1e-5)
    reordered = retrieve(tiny_index, "Lord Byron", 2, "bm25", reranker=f"ce:{folder}")
    best = sorted(range(len(hits)), key=lambda i: -want[i])[:2]
    assert [h.passage.id for h in reordered] == [hits[i].passage.id for i in best]
    with pytest.raises(ModelSpecError, match="not a model folder"):
        rerank.reranker_for(f"ce:{tmp_path}")


def test_eval_retrieval_only_applies_the_context_reranker(
    tiny_index: Index, tmp_path: Path
) -> None:
    """`graphseek eval --retrieval-only --context reranker=SPEC` scores every retriever with the
    reranker over its candidates, as a run does, in rows named `+rerank`; without it the rows
    and rankings are the plain retrievers'."""
    from graphseek.evaluation.cli import run_eval
    from graphseek.evaluation.datasets import Dataset, EvalQuestion

    question = EvalQuestion(
        id="byron", question="Lord Byron poet", answers=["x"], gold_passage_ids=["curie"]
    )
    dataset = Dataset(name="tiny", questions=[question], corpus=tiny_index.passages)

    def report(context: dict[str, str] | None, out: str):  # type: ignore[no-untyped-def]
        return run_eval(
            [dataset],
            retrieval_only=True,
            retrievers=["dense", "hybrid"],
            context=context,
            out=tmp_path / out,
            progress=False,
            index_factory=lambda ds: tiny_index,
        )["retrieval"][0]

    plain = report(None, "plain")
    with FakeModelServer(prefer("Curie")) as server:
        ranked = report({"reranker": server.base_url}, "ranked")
    assert [s.retriever for s in plain.scores] == ["dense", "hybrid"]
    assert [s.retriever for s in ranked.scores] == ["dense+rerank", "hybrid+rerank"]
    first = {row["retriever"]: row["ranked"][0] for row in ranked.per_question}
    assert first == {"dense+rerank": "curie", "hybrid+rerank": "curie"}
    assert all(row["ranked"][0] != "curie" for row in plain.per_question)
    # the reranker saw each retriever's deeper candidate list
    assert {len(body["documents"]) for _, body in server.requests} == {len(tiny_index)}
    with pytest.raises(ContextError):  # a bad spec is refused before anything is scored
        report({"reranker": "nonsense:x"}, "bad")
