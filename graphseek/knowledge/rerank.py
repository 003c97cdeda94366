"""Rerankers: reorder retrieved passages by a cross-encoder's score of (query, passage).

Specs (`reranker_for(spec)`):

- ``"http:URL"`` (or the URL alone), ``"http:MODEL@URL"``: a rerank endpoint in the
  vLLM / TEI / Jina / Cohere shape. The request is ``{model, query, documents, texts, top_n}``
  (``documents`` for vLLM, Jina and Cohere, ``texts`` for TEI; ``model`` only when named); the
  reply is ``{"results": [{index, relevance_score | score}]}`` (or ``data``, or TEI's bare
  list). A URL whose path ends in ``rerank`` is used as it is; otherwise ``/rerank`` is added
  to a URL ending in ``/v1`` and ``/v1/rerank`` to any other, falling back to ``/rerank`` when
  that one answers 404. The key is ``$GRAPHSEEK_RERANK_API_KEY``, else ``$OPENAI_API_KEY``.
  Failures are retried like the chat models' (`graphseek.knowledge.embedders.post_json`).
- ``"ce:PATH"``: a local cross-encoder folder (sentence-transformers ``CrossEncoder``, CPU).

`rerank_hits(hits, query, reranker, k)` orders hits by the reranker's scores (ties keep the
retrieval order), keeps the best `k` and numbers their ranks again. Each hit keeps its
retrieval `score` (the adaptive coverage gate reads cosine similarities from it): the reranker
decides the order, not the scores. `graphseek.tools.retrievers.retrieve` applies the run's
``Context.reranker`` over a deeper candidate list (`rerank_depth`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from graphseek.errors import LLMOutputError, ModelSpecError, redact
from graphseek.knowledge.embedders import HttpClientOwner, close_all
from graphseek.knowledge.passages import Hit

ACCEPTED = "'http:<url>' (or 'http:<model>@<url>'), 'ce:<cross-encoder folder>'"
API_KEY_ENV = "GRAPHSEEK_RERANK_API_KEY"
TIMEOUT_ENV = "GRAPHSEEK_RERANK_TIMEOUT"
DEFAULT_TIMEOUT = 60.0


class Reranker(Protocol):
    """Scores passages for a query (higher: more relevant)."""

    name: str

    def scores(self, query: str, texts: Sequence[str]) -> list[float]: ...


def rerank_depth(k: int) -> int:
    """How many retrieved candidates a reranker reorders for a top-`k` result."""
    return max(3 * k, 20)


def parse_reranker_spec(spec: str) -> tuple[str, str, str]:
    """``(kind, target, model)``: ``("http", url, model or "")`` or ``("ce", folder, "")``;
    ``("", "", "")`` for an empty spec (no reranker). Raises `ModelSpecError`."""
    if not isinstance(spec, str):
        raise ModelSpecError(
            f"a reranker spec must be a string, got {type(spec).__name__}; use {ACCEPTED}"
        )
    text = spec.strip()
    if not text:
        return "", "", ""
    lowered = text.lower()
    if lowered.startswith(("http://", "https://")):
        return "http", text.rstrip("/"), ""
    kind, _, rest = text.partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if kind == "http" and rest:
        from graphseek.knowledge.embedders import split_url

        if rest.lower().startswith(("http://", "https://")):
            return "http", rest.rstrip("/"), ""
        model, url = split_url(rest)
        if url and model:
            return "http", url, model
    elif kind == "ce" and rest:
        return "ce", rest, ""
    raise ModelSpecError(f"unknown reranker spec {spec!r}; use {ACCEPTED}")


_MADE: dict[str, Reranker] = {}
_MADE_LOCK = threading.Lock()


def reranker_for(spec: str) -> Reranker | None:
    """The reranker of `spec` (one per spec and process), or None for an empty spec."""
    kind, target, model = parse_reranker_spec(spec)
    if not kind:
        return None
    key = spec.strip()
    with _MADE_LOCK:
        made = _MADE.get(key)
        if made is None:
            made = HttpReranker(target, model) if kind == "http" else CrossEncoderReranker(target)
            _MADE[key] = made
    return made


def clear_rerankers() -> None:
    """Forget the rerankers made by `reranker_for`."""
    close_all(_MADE, _MADE_LOCK)


def rerank_hits(hits: Sequence[Hit], query: str, reranker: Reranker, k: int) -> list[Hit]:
    """`hits` ordered by `reranker`'s scores of (query, passage text), best first (ties: the
    retrieval order), cut to `k`, ranks from 1; each keeps its retrieval score."""
    if not hits:
        return []
    texts = [_passage_text(h) for h in hits]
    scores = reranker.scores(query, texts)
    if len(scores) != len(hits):
        raise LLMOutputError(
            f"reranker {reranker.name}: {len(hits)} passages sent, {len(scores)} scores returned"
        )
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))[:k]
    return [hits[i].model_copy(update={"rank": r}) for r, i in enumerate(order, start=1)]


def _passage_text(hit: Hit) -> str:
    passage = hit.passage
    title = passage.title.strip()
    return f"{title}\n{passage.text}" if title else passage.text


# -- a rerank endpoint ----------------------------------------------------------------------------


class HttpReranker(HttpClientOwner):
    """A ``/v1/rerank`` or ``/rerank`` endpoint (see the module docstring)."""

    def __init__(self, url: str, model: str = "", *, timeout: float | None = None) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.name = f"http:{model + '@' if model else ''}{self.url}"
        from graphseek.llm.errors import env_number  # a bad value is named, not repeated

        self.timeout = timeout or env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT)
        self._key = (
            os.environ.get(API_KEY_ENV, "").strip() or os.environ.get("OPENAI_API_KEY", "").strip()
        )
        self._client: Any = None
        self._lock = threading.Lock()
        self._endpoint = self.url if self.url.lower().endswith("rerank") else ""

    def __repr__(self) -> str:
        return f"HttpReranker({self.name!r})"

    def _candidates(self) -> list[str]:
        if self._endpoint:
            return [self._endpoint]
        if self.url.endswith("/v1"):
            return [f"{self.url}/rerank", f"{self.url[:-3]}/rerank"]
        return [f"{self.url}/v1/rerank", f"{self.url}/rerank"]

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        from graphseek.errors import LLMRequestError
        from graphseek.knowledge.embedders import post_json

        body: dict[str, Any] = {
            "query": query,
            "documents": list(texts),
            "texts": list(texts),
            "top_n": len(texts),
        }
        if self.model:
            body["model"] = self.model
        who = f"reranker {self.name}"
        candidates = self._candidates()
        for n, url in enumerate(candidates):
            try:
                reply = post_json(self.client(), url, body, who)
            except LLMRequestError as exc:  # a 404 at /v1/rerank: the server may serve /rerank
                if n + 1 < len(candidates) and "HTTP 404" in str(exc):
                    continue
                raise
            self._endpoint = url
            return _scores_of(reply, len(texts), who)
        raise AssertionError("unreachable")  # pragma: no cover


def _scores_of(reply: Any, n: int, who: str) -> list[float]:
    """The per-document scores of a rerank reply (documents it left out score -inf)."""
    rows = reply
    if isinstance(reply, dict):
        rows = reply.get("results", reply.get("data"))
    if not isinstance(rows, list):
        shown = redact(str(reply))[:120]  # secrets out before the cut
        raise LLMOutputError(f"{who}: the reply has no results list: {shown!r}")
    scores = [float("-inf")] * n
    try:
        for row in rows:
            value = row.get("relevance_score", row.get("score"))
            scores[int(row["index"])] = float(value)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError) as exc:
        raise LLMOutputError(
            f"{who}: a result lacks a usable index and relevance_score/score "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return scores


# -- a local cross-encoder ------------------------------------------------------------------------


class CrossEncoderReranker:
    """A cross-encoder model folder on this machine (sentence-transformers ``CrossEncoder``)."""

    def __init__(self, path: str, device: str = "cpu") -> None:
        from graphseek.knowledge.embedders import folder_fingerprint, model_folder

        directory = model_folder(path, "cross-encoder")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        self.path = directory
        self.model = CrossEncoder(str(directory), device=device, local_files_only=True)
        self.name = f"ce:{directory.name}-{folder_fingerprint(directory)}"
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({str(self.path)!r})"

    def scores(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        with self._lock:  # one model, one run at a time
            values = self.model.predict(
                [(query, t) for t in texts], show_progress_bar=False, convert_to_numpy=True
            )
        return [float(v) for v in values.reshape(len(texts), -1)[:, -1]]
