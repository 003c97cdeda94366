"""Which embedder an index uses: the packaged MiniLM (default), an OpenAI-compatible
``/v1/embeddings`` endpoint, or a local sentence-transformers folder.

Specs (`embedder_for(spec)`):

- ``"minilm"`` (or ``""``): the packaged all-MiniLM-L6-v2 (`graphseek.knowledge.embedder`).
- ``"openai:MODEL"``: any OpenAI-compatible ``POST {base}/embeddings`` (vLLM, TEI, Ollama, a
  llama.cpp server, OpenAI). The model is everything after the first colon (``openai:
  nomic-embed-text:latest`` names an Ollama model); ``openai:MODEL@http://host:port/v1`` gives
  the base URL in the spec. Otherwise the base URL is ``$GRAPHSEEK_EMBED_BASE_URL``, else the chat
  factory's (``$GRAPHSEEK_BASE_URL``, ``$OPENAI_BASE_URL``, ``$OPENAI_API_BASE``), else OpenAI;
  the key is ``$GRAPHSEEK_EMBED_API_KEY``, else ``$OPENAI_API_KEY`` (none sent without one).
  Texts go ``$GRAPHSEEK_EMBED_BATCH`` (default 64) per request, as floats
  (``encoding_format="float"``); vectors are L2-normalised. Transport errors, HTTP 5xx and 429
  are retried with the chat models' policy (`graphseek.llm.errors.call_with_retries`:
  ``$GRAPHSEEK_LLM_MAX_RETRIES``, ``$GRAPHSEEK_LLM_BACKOFF``, ``Retry-After``); then an
  `LLMError` with one line naming the endpoint, the status and the attempts (a workflow turns it
  into an abstention). ``$GRAPHSEEK_EMBED_TIMEOUT``: seconds per request (default 120).
- ``"st:PATH"``: a sentence-transformers model folder, loaded from disk (never from a hub),
  normalised vectors.

A small httpx client rather than langchain-openai's ``OpenAIEmbeddings``: that one tokenises
with tiktoken by default (whose encodings download on first use), and through the ``openai``
client asks for base64 vectors unless told otherwise, which some compatible servers mishandle;
both can be switched off, but its module imports tiktoken and its client retries on its own,
while here every attempt follows graphseek's one retry policy and error taxonomy.

The index manifest records `embedder_record(encoder)` (name, dim, spec); an index opened later
uses the recorded embedder (`embedder_for_record`), and refuses another one whose name differs
(`check_embedder`). Nothing here imports httpx or sentence-transformers until such an embedder
is made, so the default path costs nothing more.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from graphseek.errors import IndexFormatError, ModelSpecError
from graphseek.knowledge import embedder as embedder_module
from graphseek.knowledge.dense import Rows, TextEncoder, encode_texts
from graphseek.knowledge.passages import Passage

DEFAULT_SPEC = "minilm"
ACCEPTED = "'minilm' (the packaged default), 'openai:<model>[@<base url>]', 'st:<folder>'"
BASE_URL_ENV = "GRAPHSEEK_EMBED_BASE_URL"
API_KEY_ENV = "GRAPHSEEK_EMBED_API_KEY"
BATCH_ENV = "GRAPHSEEK_EMBED_BATCH"
TIMEOUT_ENV = "GRAPHSEEK_EMBED_TIMEOUT"
OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_BATCH = 64
DEFAULT_TIMEOUT = 120.0
QUERY_CACHE = 1024
"""Vectors of the last this many texts embedded in small calls (queries) are kept: a workflow
embeds one question in several tools, and each repeat would be another request."""
SMALL_CALL = 8


# -- specs ----------------------------------------------------------------------------------------


def parse_embedder_spec(spec: str | None) -> tuple[str, str, str]:
    """``(kind, value, base_url)``: ``("minilm", "", "")``, ``("openai", model, url or "")`` or
    ``("st", folder, "")``. Raises `ModelSpecError` naming the accepted forms."""
    if spec is None:
        return DEFAULT_SPEC, "", ""
    if not isinstance(spec, str):
        raise ModelSpecError(
            f"an embedder spec must be a string, got {type(spec).__name__}; use {ACCEPTED}"
        )
    text = spec.strip()
    if text.lower() in ("", DEFAULT_SPEC, "default", embedder_module.MODEL_NAME.lower()):
        return DEFAULT_SPEC, "", ""
    kind, sep, rest = text.partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if kind == "openai" and rest:
        model, url = split_url(rest)
        if not model:
            raise ModelSpecError(f"embedder spec {spec!r} names no model; write 'openai:<model>'")
        return "openai", model, url
    if kind == "st" and rest:
        return "st", rest, ""
    raise ModelSpecError(f"unknown embedder spec {spec!r}; use {ACCEPTED}")


def split_url(rest: str) -> tuple[str, str]:
    """``MODEL@http(s)://…`` -> (MODEL, URL); a model name without such a tail -> (name, "")."""
    for marker in ("@http://", "@https://"):
        at = rest.find(marker)
        if at >= 0:
            return rest[:at].strip(), rest[at + 1 :].strip().rstrip("/")
    return rest, ""


def is_default(encoder: Any) -> bool:
    """Whether `encoder` is the packaged MiniLM, the embedder whose passage pass the graph build
    shares (`embedder_module.get_embedder()`, or what stands in for it: an encoder without a
    `spec`)."""
    return embedder_spec(encoder) == DEFAULT_SPEC


_MADE: dict[tuple[str, str, str], TextEncoder] = {}
_MADE_LOCK = threading.Lock()


def embedder_for(spec: str | None = None, *, dim: int | None = None) -> TextEncoder:
    """The embedder of `spec` (one instance per spec and process). `dim`: the vector size the
    caller expects (an index's recorded one), so a remote embedder need not ask the server."""
    kind, value, url = parse_embedder_spec(spec)
    if kind == DEFAULT_SPEC:
        return embedder_module.get_embedder()
    key = (kind, value, url)
    with _MADE_LOCK:
        made = _MADE.get(key)
        if made is None:
            # (their `dim` is a read-only property: a `TextEncoder` for every reader)
            made = cast(
                TextEncoder,
                OpenAIEmbedder(value, base_url=url or None, dim=dim)
                if kind == "openai"
                else SentenceTransformerEmbedder(value),
            )
            _MADE[key] = made
    return made


def clear_embedders() -> None:
    """Forget the embedders made by `embedder_for` (tests change the environment between)."""
    close_all(_MADE, _MADE_LOCK)


def close_all(made: dict[Any, Any], lock: threading.Lock) -> None:
    """Close every object of a made-once cache (`close()` where it has one) and empty it."""
    with lock:
        for obj in made.values():
            close = getattr(obj, "close", None)
            if close is not None:
                close()
        made.clear()


def embedder_spec(encoder: Any) -> str:
    """The spec that makes `encoder` again."""
    return str(getattr(encoder, "spec", "") or DEFAULT_SPEC)


def embedder_record(encoder: Any) -> dict[str, Any]:
    """What an index manifest records of its embedder: name (what must match at query time),
    dim, and for any but the default the spec that makes it again (a default index's manifest
    is as it always was)."""
    record: dict[str, Any] = {"name": str(encoder.name), "dim": int(encoder.dim)}
    if not is_default(encoder):
        record["spec"] = embedder_spec(encoder)
    return record


def embedder_for_record(recorded: Mapping[str, Any]) -> TextEncoder:
    """The embedder an index was built with (manifests from before specs were recorded name
    the packaged MiniLM)."""
    spec = recorded.get("spec") or DEFAULT_SPEC
    return embedder_for(str(spec), dim=int(recorded["dim"]))


def check_embedder(recorded: Mapping[str, Any], encoder: Any, where: str) -> None:
    """Refuse `encoder` for an index built with `recorded` (another name or dim) with one
    line naming both."""
    name, dim = str(recorded["name"]), int(recorded["dim"])
    if str(encoder.name) != name or (_known_dim(encoder) not in (None, dim)):
        raise IndexFormatError(
            f"The index at {where} was embedded with {name} (dim {dim}), not "
            f"{encoder.name} (dim {_known_dim(encoder) or '?'}): query it with its own embedder "
            f"({recorded.get('spec') or DEFAULT_SPEC}) or rebuild it with --embedder "
            f"{embedder_spec(encoder)}."
        )


def _known_dim(encoder: Any) -> int | None:
    """`encoder`'s vector size where known without a request (a remote one may not know yet)."""
    if hasattr(encoder, "known_dim"):
        return encoder.known_dim  # type: ignore[no-any-return]
    return int(encoder.dim)


# -- OpenAI-compatible /v1/embeddings -------------------------------------------------------------


class _HTTPStatus(Exception):
    """A non-2xx reply: carries what `graphseek.llm.errors.classify` reads (status, headers)."""

    def __init__(self, status_code: int, message: str, response: Any) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.response = response


def post_json(client: Any, url: str, body: Mapping[str, Any], who: str) -> Any:
    """POST `body` to `url` and return the parsed JSON reply, retrying transport errors, HTTP
    5xx and 429 (`call_with_retries`); raises an `LLMError` (one line) when it keeps failing,
    or when the reply is not JSON."""
    from graphseek.errors import LLMOutputError, redact
    from graphseek.llm.errors import call_with_retries

    def call() -> Any:
        response = client.post(url, json=dict(body))
        if response.status_code >= 400:
            # secrets out before the cut: a key cut in two would no longer be recognised
            detail = redact(" ".join(response.text.split()))[:200] or response.reason_phrase
            raise _HTTPStatus(response.status_code, f"{detail} ({url})", response)
        try:
            return response.json()
        except ValueError:
            raise LLMOutputError(
                f"{who}: the reply from {url} is not JSON: {redact(response.text)[:120]!r}"
            ) from None

    return call_with_retries(call, who=who)


def _first_env(names: Sequence[str]) -> str:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return ""


class HttpClientOwner:
    """One lazily made `httpx.Client` per object (the embedder's and the reranker's), with the
    object's bearer key and timeout; `close` lets it go. The owner sets `timeout`, `_key`,
    `_client` (None) and `_lock` in its constructor."""

    timeout: float
    _key: str
    _client: Any
    _lock: threading.Lock

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
                self._client = httpx.Client(timeout=self.timeout, headers=headers)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


class OpenAIEmbedder(HttpClientOwner):
    """Vectors from an OpenAI-compatible ``/v1/embeddings`` endpoint (see the module
    docstring). `dim` is learnt from the first reply (or given); every reply is checked
    against it."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int | None = None,
        timeout: float | None = None,
    ) -> None:
        from graphseek.llm.errors import env_number
        from graphseek.llm.factory import API_KEY_ENV as CHAT_KEY_ENV
        from graphseek.llm.factory import BASE_URL_ENVS

        self.model = model
        explicit = bool(base_url)
        url = base_url or _first_env((BASE_URL_ENV, *BASE_URL_ENVS))
        key = api_key or _first_env((API_KEY_ENV, CHAT_KEY_ENV))
        if not url and not key:
            raise ModelSpecError(
                f"embedder 'openai:{model}' needs {CHAT_KEY_ENV}, or an OpenAI-compatible server "
                f"URL in {BASE_URL_ENV} (or {', '.join(BASE_URL_ENVS)}), or the URL in the spec "
                f"('openai:{model}@http://host:port/v1')"
            )
        self.base_url = (url or OPENAI_URL).rstrip("/")
        self._key = key
        self.name = f"openai:{model}"
        self.spec = f"openai:{model}@{self.base_url}" if explicit else self.name
        self.known_dim: int | None = dim
        # a bad variable is named, its value not repeated (env_number)
        self.batch_size = batch_size or int(
            env_number(BATCH_ENV, DEFAULT_BATCH, whole=True, minimum=1)
        )
        self.timeout = timeout or env_number(TIMEOUT_ENV, DEFAULT_TIMEOUT)
        if self.batch_size < 1:
            raise ModelSpecError(f"batch_size must be >= 1, got {self.batch_size}")
        self._client: Any = None
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model!r}, base_url={self.base_url!r})"

    @property
    def who(self) -> str:
        return f"embedder {self.name} at {self.base_url}"

    @property
    def dim(self) -> int:
        """The vector size; asks the server once (one short text) when not known yet."""
        if self.known_dim is None:
            self._request(["dimension probe"])
        assert self.known_dim is not None
        return self.known_dim

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """L2-normalised float32 vectors of `texts` (rows in order), `self.batch_size` texts
        per request. Calls of a few texts (queries) go through a cache of recent vectors."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) > SMALL_CALL:
            return self._encode(texts)
        with self._lock:
            cached = [self._recent.get(t) for t in texts]
        missing = [i for i, v in enumerate(cached) if v is None]
        if missing:
            fresh = self._encode([texts[i] for i in missing])
            with self._lock:
                for i, vector in zip(missing, fresh, strict=True):
                    cached[i] = vector
                    self._recent[texts[i]] = vector
                while len(self._recent) > QUERY_CACHE:
                    self._recent.popitem(last=False)
        return np.vstack([v for v in cached if v is not None]).astype(np.float32)

    def _encode(self, texts: list[str]) -> np.ndarray:
        parts = [
            self._request(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(parts)

    def _request(self, texts: list[str]) -> np.ndarray:
        from graphseek.errors import LLMOutputError

        # an empty input string is refused by some servers (OpenAI): a space embeds the same
        body = {
            "model": self.model,
            "input": [t if t.strip() else " " for t in texts],
            "encoding_format": "float",
        }
        reply = post_json(self.client(), f"{self.base_url}/embeddings", body, self.who)
        try:
            data = sorted(reply["data"], key=lambda row: int(row.get("index", 0)))
            vectors = np.asarray([row["embedding"] for row in data], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise LLMOutputError(
                f"{self.who}: the reply has no usable data[].embedding ({type(exc).__name__}: "
                f"{exc})"
            ) from None
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise LLMOutputError(
                f"{self.who}: {len(texts)} texts sent, {len(vectors)} vectors returned"
            )
        if self.known_dim is None:
            self.known_dim = int(vectors.shape[1])
        elif vectors.shape[1] != self.known_dim:
            raise IndexFormatError(
                f"{self.who} returned vectors of dim {vectors.shape[1]}, expected "
                f"{self.known_dim} (the index was built with another model?)"
            )
        return _normalised(vectors)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


# -- a local sentence-transformers folder ---------------------------------------------------------


def folder_fingerprint(directory: Path) -> str:
    """Identifies a model folder's content (configs, tokenizer, weight sizes), not its path:
    an index finds its model again after the folder moved."""
    digest = hashlib.sha1()
    for name in (
        "modules.json",
        "config.json",
        "sentence_bert_config.json",
        "tokenizer.json",
        "config_sentence_transformers.json",
    ):
        path = directory / name
        if path.is_file():
            digest.update(name.encode() + path.read_bytes())
    for weights in sorted(directory.glob("*.safetensors")) + sorted(directory.glob("*.bin")):
        digest.update(f"{weights.name}:{weights.stat().st_size}".encode())
    return digest.hexdigest()[:10]


def model_folder(path: str, what: str) -> Path:
    """`path` as a local model folder, or a one-line `ModelSpecError`."""
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise ModelSpecError(f"{what} folder {path!r} does not exist (a local model folder)")
    if not any((directory / n).is_file() for n in ("modules.json", "config.json")):
        raise ModelSpecError(
            f"{what} folder {path!r} holds no modules.json or config.json: not a model folder"
        )
    return directory.resolve()


class SentenceTransformerEmbedder:
    """A sentence-transformers model folder on this machine, on the CPU; vectors normalised.
    Named by the folder's name and content fingerprint (`folder_fingerprint`)."""

    def __init__(self, path: str, device: str = "cpu") -> None:
        directory = model_folder(path, "sentence-transformers model")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.path = directory
        self.model = SentenceTransformer(str(directory), device=device, local_files_only=True)
        getter = getattr(self.model, "get_embedding_dimension", None) or (
            self.model.get_sentence_embedding_dimension
        )
        self.dim = int(getter() or 0)
        self.name = f"st:{directory.name}-{folder_fingerprint(directory)}"
        self.spec = f"st:{directory}"

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({str(self.path)!r})"

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.asarray(vectors, dtype=np.float32)


def passage_vectors(
    encoder: TextEncoder,
    passages: Sequence[Passage],
    computed: Rows | None,
    batch_size: int,
    show_progress: bool,
) -> Rows:
    """Vectors of `passages`: `computed` when it has one row per passage (vectors already at
    hand: the rows kept by an update, or the passage pass of a graph build or update,
    `graph_pass_vectors`, which may be in a file), else encoded here with `encoder`."""
    if computed is not None and len(computed) == len(passages):
        return computed
    return encode_texts(
        encoder,
        [p.content for p in passages],
        batch_size=batch_size,
        show_progress=show_progress,
        desc="embedding passages",
    )


def graph_pass_vectors(encoder: TextEncoder, vectors: Rows | None) -> Rows | None:
    """The passage vectors a graph build or update computed (its passage pass runs the packaged
    MiniLM, `GraphBuild.passage_vectors`) when `encoder` is that embedder; None for any other, whose
    passages are embedded by `passage_vectors`. They may be in a temporary file (the passage
    pass's `SpilledArray`: `np.asarray` reads them; `DenseIndex.build` adds them a block at a
    time)."""
    return vectors if is_default(encoder) else None
