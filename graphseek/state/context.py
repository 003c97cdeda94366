"""Runtime context: the settings of a run, passed at call time (`graph.invoke(inp, context=...)`).

Budgets are settings here; counters live in the state. The same dataclass is the graphs'
`context_schema`, so LangGraph Studio and the LangGraph server render it as the run's settings form
(`assistants.get_schemas()["context_schema"]`): every field a client may set has a JSON type, a
default and a description. A client sends JSON, so the index is named by `index_path` and the model
by a spec string.

Python callers may also hand over objects that JSON cannot carry: an opened `graphseek.Index`
(`index=`), or a chat model instance or a mapping role -> spec/model (`llm=`). Those are marked
`SkipJsonSchema`, so they never appear in the form, and the server drops them from a client's
context (it keeps only the keys of the schema).

Adding a setting: add a field with a default and `metadata={"description": ...}`, annotated with a
JSON type (str, int, float, bool, a Literal, or a mapping such as `dict[str, int]` with
`default_factory`); `tests/test_studio_schema.py` checks that every visible field is described,
defaulted and typed. Check its range in `__post_init__` when a bad value would only fail later.
A Python-only object goes in a field annotated `SkipJsonSchema[...]` with `repr=False`.

Served and local runs differ in one place: the graphs the LangGraph server serves
(`graphseek.graphs.served`, named by `langgraph.json`) take `ServedContext`, which confines the
index a client names (`ServedContext.index_location`) and its reranker (one the server lists in
$GRAPHSEEK_RERANKERS). A `Context`, made by Python callers, the CLI and `ask`, opens any path or
URI and uses any reranker its user gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema

from graphseek.errors import ContextError
from graphseek.state.validation import (
    URI_REFUSED,
    check_context,
    check_served_reranker,
    confine_index_path,
)

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore
else:  # the state layer imports no knowledge module at run time; the schema's pydantic sees Any
    IndexStore = Any

RetrieverName = Literal["bm25", "dense", "hybrid", "higra", "progressive", "bridge", "doc_hop"]
Mode = Literal["single", "competitive", "collaborative"]
Profile = Literal["general", "wikipedia"]
OnModelFailure = Literal["abstain", "offline"]
ReadBy = Literal["sentences", "passages"]
#: the reading profiles (each one's abstention threshold, its operating point, is calibrated on
#: its dev slices and stored beside it: `graphseek.agents.profiles`)
PROFILE_NAMES: tuple[str, ...] = get_args(Profile)

#: the forms of a `Context.reranker` spec (`graphseek.knowledge.rerank` parses it)
RERANKER_PREFIXES = ("http:", "https:", "ce:")

#: environment variable naming the directory that relative `index_path`s resolve against (for a
#: served run, the only directory whose indexes it opens)
INDEX_DIR_ENV = "GRAPHSEEK_INDEX_DIR"
#: environment variable listing, separated by whitespace, the index URIs (postgresql://…) that a
#: served run opens; a client names one without its password
INDEX_URIS_ENV = "GRAPHSEEK_INDEX_URIS"
#: environment variable listing, separated by whitespace, the reranker specs a served run may use
#: (compared exactly; none listed: a served run uses no reranker)
RERANKERS_ENV = "GRAPHSEEK_RERANKERS"
#: the longest `index_path` a served refusal repeats
SHOWN_PATH_CHARS = 200


def _describe(text: str) -> dict[str, str]:
    return {"description": text}


@dataclass(frozen=True, kw_only=True)
class Context:
    """Settings of one run of any topology (unused settings are ignored by a topology)."""

    # -- what to search -------------------------------------------------------------------------
    index_path: str = field(
        default="",
        metadata=_describe(
            "Directory of an index built by `graphseek index CORPUS --out DIR`, relative to the "
            f"server's index root: ${INDEX_DIR_ENV} when set, else the server's working "
            "directory (the directory `langgraph dev` was started from). Absolute paths, '..' "
            "and links out of the root are refused. Or a PostgreSQL index that the server lists "
            f"in ${INDEX_URIS_ENV}: postgresql://user@host:5432/db?schema=NAME."
        ),
    )
    retriever: RetrieverName = field(
        default="hybrid",
        metadata=_describe(
            "Passage retriever: bm25 (lexical), dense (MiniLM + FAISS), hybrid (both, fused "
            "with RRF), higra (HiGraRetriever over the knowledge graph), progressive (A2RAG "
            "local -> bridge -> PPR), bridge (question entities -> sentences -> entities, "
            "then PPR) or doc_hop (BM25, then the passages of the documents its best sentences "
            "name: a second hop through the corpus's own document names). Graph retrievers "
            "(higra, progressive, bridge) need an index built with a graph."
        ),
    )
    bridge_seeds: bool = field(
        default=False,
        metadata=_describe(
            "higra and progressive (also the adaptive workflow's stages): add to the entities "
            "the question names the ones semantic bridging reaches from them (the bridge "
            "retriever's rounds: through the sentences most like the question that name them, "
            "to the other entities those sentences name), at most 3, best first, so their "
            "subgraph and PageRank reach a second hop no question word names. Needs an index "
            "with sentence nodes (ignored without them). Off: they retrieve as before."
        ),
    )
    top_k: int = field(default=5, metadata=_describe("Passages retrieved per query (>= 1)."))
    reranker: str = field(
        default="",
        metadata=_describe(
            "Reranker of the retrieved passages (off when empty): 'http:<url>' or "
            "'http:<model>@<url>' (a /v1/rerank or /rerank endpoint: vLLM, TEI, Jina, Cohere) or "
            "'ce:<folder>' (a local cross-encoder). It orders the top 3k (at least 20) hits. "
            f"A server runs only a spec its ${RERANKERS_ENV} lists, written as listed."
        ),
    )
    # -- the model --------------------------------------------------------------------------------
    # Python callers may also pass a chat model instance or a mapping role -> spec / model (key
    # "default" for the other roles); only the spec string is part of the form.
    llm: str | SkipJsonSchema[Any] = field(
        default="",
        metadata=_describe(
            "Model for every role: 'offline' (deterministic offline reasoner, no API key), "
            "'openai:<model>' (e.g. 'openai:gpt-4o-mini'; OPENAI_API_KEY or an OpenAI-compatible "
            "GRAPHSEEK_BASE_URL on the server). Empty: $GRAPHSEEK_LLM, else 'offline'."
        ),
    )
    # Python callers may also pass a list of specs and chat-model instances
    readers: str | SkipJsonSchema[list[str]] = field(
        default="",
        metadata=_describe(
            "Escalation cascade of readers for every draft, comma-separated, e.g. "
            "'offline,openai:small-model,openai:large-model': each reads the same best sentences "
            "in turn, and the first whose answer is grounded and at or above its calibrated "
            "confidence answers; a reader that passes hands the question to the next, and the "
            "last reader's abstention stands. Empty: off (`llm` does every role)."
        ),
    )
    read_by: ReadBy = field(
        default="sentences",
        metadata=_describe(
            "What a model reads to draft or check an answer: the retrieved passages' most "
            "relevant sentences, each with its neighbours (sentences), or whole passages."
        ),
    )
    # -- budgets (counters live in the state) -----------------------------------------------------
    max_turns: int = field(
        default=6,
        metadata=_describe("Most controller turns (Seeker, planner or ReAct steps) before the "
                           "run answers with what it has or abstains."),
    )  # fmt: skip
    max_llm_calls: int = field(
        default=60, metadata=_describe("Most LLM calls in one run (failed calls count).")
    )
    max_tokens: int = field(
        default=400_000, metadata=_describe("Most prompt + completion tokens in one run.")
    )
    max_retries: int = field(
        default=2,
        metadata=_describe(
            "Retries of a malformed LLM reply, and of a failed check (adaptive rewrite, "
            "deep_search expansion) before abstaining."
        ),
    )
    on_model_failure: OnModelFailure = field(
        default="abstain",
        metadata=_describe(
            "When a role's model call still fails after its retries (malformed replies, server "
            "errors; not a spent budget): abstain (end the run, naming the cause) or offline "
            "(that step falls back to the role's offline policy, noted in "
            "diagnostics.degraded, the failed call still charged; its drafts are judged as the "
            "offline reader's, and after 2 failed calls in a run the role's model is not asked "
            "again)."
        ),
    )
    llm_timeout: float = field(
        default=0.0,
        metadata=_describe(
            "Seconds one model request may take. 0: $GRAPHSEEK_LLM_TIMEOUT, else 300 (fit for "
            "a local model on a CPU)."
        ),
    )
    # Python callers may also give a mapping role -> tokens (key "default" for the rest)
    max_reply_tokens: int | SkipJsonSchema[dict[str, int]] = field(
        default=0,
        metadata=_describe(
            "Longest model reply in tokens, sent as max_tokens. 0: $GRAPHSEEK_LLM_MAX_TOKENS, "
            "else 1024."
        ),
    )
    # Python callers may also give a mapping role -> tokens (key "default" for the rest)
    context_window: int | SkipJsonSchema[dict[str, int]] = field(
        default=0,
        metadata=_describe(
            "The model's context window in tokens: every prompt is packed to fit it beside the "
            "reply, and a request that cannot fit is not sent. 0: what the server reports "
            "(vLLM, llama.cpp, Ollama), else the model family's known window, else 8192."
        ),
    )
    # -- topology settings ------------------------------------------------------------------------
    agents: int = field(
        default=1,
        metadata=_describe("knowledge_aware: number of suggester agents (>= 1)."),
    )
    mode: Mode = field(
        default="single",
        metadata=_describe(
            "knowledge_aware: single agent; competitive suggesters with private caches (the "
            "proposal leaving the fewest Required gaps wins); collaborative suggesters sharing "
            "one cache."
        ),
    )
    profile: Profile = field(
        default="general",
        metadata=_describe(
            "Dataset knowledge of the offline reasoner: general (reading from general English, "
            "for any documents) or wikipedia (relation cues and title rules tuned to "
            "Wikipedia-style passages, e.g. 2WikiMultiHopQA)."
        ),
    )
    abstain_threshold: float = field(
        default=-1.0,
        metadata=_describe(
            "Offline policies abstain when the best answer's confidence is below this (0..1). "
            "Negative (the default): the profile's operating point, calibrated on its dev slices "
            "(graphseek/agents/profiles/operating_points.json)."
        ),
    )
    tool_char_budget: int = field(
        default=4000,
        metadata=_describe("Most characters of one graph tool's output shown to a model."),
    )
    max_tool_calls_per_reply: int = field(
        default=3,
        metadata=_describe(
            "Most tool calls of one model reply that run (>= 1); the rest are left out and "
            "noted in diagnostics.dropped_calls."
        ),
    )
    max_question_chars: int = field(
        default=0,
        metadata=_describe(
            "Longest question accepted, in characters. 0: $GRAPHSEEK_MAX_QUESTION_CHARS, else 2000."
        ),
    )
    seed: int = field(default=0, metadata=_describe("Seed for anything randomised."))
    # -- Python only (not in the schema, dropped from a server client's context) ------------------
    index: SkipJsonSchema[IndexStore | None] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # names and limits (one error naming the field); then every bad budget in one line
        check_context(self, profiles=PROFILE_NAMES, modes=get_args(Mode))
        problems = []
        for name in ("top_k", "agents", "max_turns", "max_tool_calls_per_reply"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                problems.append(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("max_llm_calls", "max_tokens", "max_retries", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{name} must be an integer >= 0, got {value!r}")
        windows = (
            self.context_window.values()
            if isinstance(self.context_window, dict)
            else [self.context_window]
        )
        if any(not isinstance(w, int) or isinstance(w, bool) or w < 0 for w in windows):
            problems.append(
                f"context_window must be tokens >= 0 (0: ask the server), got {self.context_window!r}"
            )
        threshold = self.abstain_threshold
        if not isinstance(threshold, int | float) or float(threshold) > 1.0:
            problems.append(
                "abstain_threshold must be a number in [0, 1] (or negative for the profile "
                f"default), got {threshold!r}"
            )
        if not isinstance(self.index_path, str):
            problems.append(f"index_path must be a string, got {type(self.index_path).__name__}")
        if not isinstance(self.reranker, str) or (
            self.reranker.strip()
            and not self.reranker.strip().lower().startswith(RERANKER_PREFIXES)
        ):
            problems.append(
                "reranker must be empty, 'http:<url>', 'http:<model>@<url>' or 'ce:<folder>', "
                f"got {self.reranker!r}"
            )
        if not isinstance(self.retriever, str) or not self.retriever:
            problems.append(f"retriever must be a name, got {self.retriever!r}")
        if not isinstance(self.bridge_seeds, bool):
            problems.append(f"bridge_seeds must be true or false, got {self.bridge_seeds!r}")
        if self.read_by not in get_args(ReadBy):
            problems.append(f"read_by must be 'sentences' or 'passages', got {self.read_by!r}")
        if reader_specs(self.readers) is None:
            problems.append(
                "readers must be model specs separated by commas (e.g. "
                f"'offline,openai:small-model'), got {self.readers!r}"
            )
        if self.on_model_failure not in ("abstain", "offline"):
            problems.append(
                f"on_model_failure must be 'abstain' or 'offline', got {self.on_model_failure!r}"
            )
        if problems:
            raise ContextError("Invalid run context: " + "; ".join(problems) + ".")
        # fail at the start of a run, not at its first retrieval, when the index path is wrong
        if self.index is None and self.index_path:
            self.index_location()

    def resolved_index_path(self) -> Path | None:
        """`index_path` as an absolute path (None when not set); see `resolve_index_path`."""
        return resolve_index_path(self.index_path) if self.index_path else None

    def index_location(self) -> str:
        """What a run opens for `index_path`: a directory as an absolute path
        (`resolve_index_path`), `ContextError` when there is none; a URI as given (a
        postgresql:// URI names a database, checked when the index opens)."""
        if _is_uri(self.index_path):
            return self.index_path
        path = resolve_index_path(self.index_path)
        if not _is_dir(path):
            raise ContextError(index_path_problem(self.index_path, "no such directory"))
        return str(path)

    def index_problem(self, problem: str) -> str:
        """The message of an index at `index_location()` that does not open (`problem`)."""
        return index_path_problem(self.index_path, problem)


@dataclass(frozen=True, kw_only=True)
class ServedContext(Context):
    """Settings of one run of any topology (unused settings are ignored by a topology); the
    index is one under the server's index root or listed in its $GRAPHSEEK_INDEX_URIS, the
    reranker one listed in its $GRAPHSEEK_RERANKERS."""

    # The context schema of the served graphs (`graphseek.graphs.served`): the server makes one
    # of each client's JSON context. `index_location` opens a directory under the index root
    # (`index_base_dir()`) named by a relative path (`validation.confine_index_path`) or a URI
    # that $GRAPHSEEK_INDEX_URIS lists (`allowed_index_uri`; the listed URI is the one
    # connected to). `reranker` is empty or a spec $GRAPHSEEK_RERANKERS lists
    # (`validation.check_served_reranker`): an `http:` spec names the host that gets the
    # server's rerank key, a `ce:` spec a folder of the server that is loaded. The other fields
    # name no host, file or endpoint: `llm` picks a model name, sent to the server's own
    # endpoint ($GRAPHSEEK_BASE_URL / $OPENAI_BASE_URL) with its own key, and an index's
    # embedder is the one its manifest records. The docstring is the description Studio shows;
    # the title stays `Context`.
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(title="Context")

    def __post_init__(self) -> None:
        if self.index is not None:  # a client's JSON is not an opened index
            raise ContextError("A served run names its index by index_path.")
        # before the base checks, whose message would repeat a malformed spec
        check_served_reranker(self.reranker, os.environ.get(RERANKERS_ENV, "").split())
        super().__post_init__()

    def index_location(self) -> str:
        if _is_uri(self.index_path):
            return allowed_index_uri(self.index_path, os.environ.get(INDEX_URIS_ENV, "").split())
        path = confine_index_path(self.index_path, index_base_dir())
        if not _is_dir(path):
            raise ContextError(
                f"index_path {self._shown()}: no index directory of that name under the "
                "server's index root; build one there with `graphseek index CORPUS --out DIR`."
            )
        return str(path)

    def index_problem(self, problem: str) -> str:
        # the index's own message, its paths shown relative to the root
        text = problem.rstrip(".")
        roots = {str(index_base_dir().resolve()), str(index_base_dir())} - {os.sep}
        for root in sorted(roots, key=len, reverse=True):
            text = text.replace(root + os.sep, "").replace(root, ".")
        return f"index_path {self._shown()}: {text}."

    def _shown(self) -> str:
        raw = self.index_path
        return repr(raw if len(raw) <= SHOWN_PATH_CHARS else raw[:SHOWN_PATH_CHARS] + "…")


def _is_uri(path: str) -> bool:
    """Whether `path` names a server by a URI (its scheme is checked when the index opens,
    `graphseek.knowledge.storage.backend_for`); ``file://`` and plain paths are directories."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme.lower() != "file"


def _uri_key(uri: str) -> str | None:
    """What identifies an index URI: for ``postgresql://`` its form without a password (the
    scheme, user, host, port, database, libpq parameters and schema); None for anything else."""
    # here, not in `validation`: the URI parser imports `validation` (an import cycle otherwise)
    from graphseek.knowledge.postgres.uri import is_postgres_uri, parse_postgres_uri

    if not is_postgres_uri(uri):
        return None
    try:
        return parse_postgres_uri(uri).display
    except ValueError:
        return None


def allowed_index_uri(raw: str, allowed: Iterable[str]) -> str:
    """The URI of `allowed` (the server's own list) that `raw` names, matched without passwords,
    so a client names a configured index without its credentials and the server connects with
    its own; `ContextError` (`validation.URI_REFUSED`) when `raw` names none of them."""
    key = _uri_key(raw)
    if key is not None:
        for uri in allowed:
            if _uri_key(uri) == key:
                return uri
    raise ContextError(URI_REFUSED)


def _is_dir(path: Path) -> bool:
    """Whether `path` is a directory; False when it cannot be looked at (a name too long)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def index_base_dir() -> Path:
    """The directory relative index paths resolve against: `$GRAPHSEEK_INDEX_DIR`, else the
    current working directory."""
    base = os.environ.get(INDEX_DIR_ENV, "").strip()
    return Path(base).expanduser().resolve() if base else Path.cwd()


def resolve_index_path(path: str | os.PathLike[str]) -> Path:
    """An index path made absolute: a ``file://`` prefix dropped, `~` expanded, a relative path
    joined to `index_base_dir()`."""
    text = os.fspath(path)
    p = Path(text[len("file://") :] if text.lower().startswith("file://") else text).expanduser()
    return p if p.is_absolute() else (index_base_dir() / p).resolve()


def index_path_problem(raw: str, problem: str) -> str:
    """The message of a bad `index_path`: what was given, where it resolved, what is wrong, the
    rule for relative paths and how to build an index."""
    path = resolve_index_path(raw)
    where = repr(raw) if str(path) == raw else f"{raw!r} (resolved to {path})"
    rule = ""
    if not Path(raw).expanduser().is_absolute():
        base = os.environ.get(INDEX_DIR_ENV, "").strip()
        rule = (
            f" Relative paths resolve against ${INDEX_DIR_ENV} ({index_base_dir()})."
            if base
            else f" Relative paths resolve against the working directory ({Path.cwd()}); "
            f"set ${INDEX_DIR_ENV} to use another base."
        )
    return (
        f"index_path {where}: {problem.rstrip('.')}.{rule} "
        "Build an index with `graphseek index CORPUS --out DIR`."
    )


def reader_specs(readers: Any) -> list[Any] | None:
    """The readers of `Context.readers` in order (a comma-separated string, or a list of spec
    strings and, from Python, chat-model instances; empty: no cascade), or None when it is
    neither. The specs themselves are checked where the models are made
    (`graphseek.llm.factory.parse_spec`)."""
    if isinstance(readers, str):
        items: list[Any] = readers.split(",") if readers.strip() else []
    elif isinstance(readers, list | tuple):
        items = list(readers)
    else:
        return None
    if any(isinstance(r, str) and not r.strip() or r is None for r in items):
        return None
    return [r.strip() if isinstance(r, str) else r for r in items]
