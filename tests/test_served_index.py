"""Served indexes are confined (issue 56): the graphs the LangGraph server serves
(`graphseek.graphs.served`, named by `langgraph.json`) make a `ServedContext` of a client's JSON
context, which opens only a directory under the index root ($GRAPHSEEK_INDEX_DIR, else the
server's working directory) or a URI the server lists in $GRAPHSEEK_INDEX_URIS. Refusals are one
line that does not depend on whether the path exists and names no directory of the server and no
environment variable's value. Python callers and the CLI are not served: any path still opens.

Driven as the server drives a run, without starting one: `graph.invoke(input, context=<JSON>)` on
the served graph, and the error object the server sends (`langgraph_api.serde.default`)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from langgraph_api.serde import default as server_error_payload

from graphseek.errors import ContextError, InvalidRequestError
from graphseek.graphs import get_workflow, served, topology_names
from graphseek.state.context import (
    INDEX_DIR_ENV,
    INDEX_URIS_ENV,
    RERANKERS_ENV,
    Context,
    ServedContext,
)
from graphseek.state.validation import (
    MAX_QUESTION_ENV,
    PATH_REFUSED,
    RERANKER_REFUSED,
    URI_REFUSED,
    check_question,
)

ROOT = Path(__file__).resolve().parent.parent
FAKE_KEY = "sk-fake-0123456789abcdefSECRET"
PASSWORD = "pg-pass-SECRET-42"
LISTED = f"postgresql://me:{PASSWORD}@db.internal:5432/rag?schema=my_index"


def _served_error(index_path: str, graph: str = "naive", **settings: Any) -> str:
    """The message the server sends when a run of the served `graph` names `index_path` (and
    `settings`)."""
    context = {"index_path": index_path, "llm": "offline", **settings}
    with pytest.raises(ContextError) as err:
        getattr(served, graph).invoke({"question": "Who?"}, context=context)
    payload = server_error_payload(err.value)
    assert payload["error"] == "ContextError" and "\n" not in payload["message"]
    return str(payload["message"])


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_index: Any) -> Path:
    """The server's index root, holding a copy of the tiny index (`my-index`), a folder that is
    no index (`empty`) and a link to the tiny index outside it (`escape`); and the server's
    environment: the root, a fake API key and a listed URI with a password. The working
    directory is another folder, outside the root."""
    index_root = tmp_path / "indexes"
    index_root.mkdir()
    shutil.copytree(tiny_index.path, index_root / "my-index")
    (index_root / "empty").mkdir()
    (index_root / "escape").symlink_to(Path(tiny_index.path), target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "not-an-index").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setenv(INDEX_DIR_ENV, str(index_root))
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv(INDEX_URIS_ENV, f"postgresql://other@db.internal/x  {LISTED}")
    return index_root


def test_langgraph_json_serves_every_topology_with_a_served_context() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert sorted(config["graphs"]) == sorted(topology_names())
    for name, target in config["graphs"].items():
        assert target == f"./graphseek/graphs/served.py:{name}"
        graph = getattr(served, name)
        assert graph.context_schema is ServedContext and graph.name == name
        local = get_workflow(name)
        assert local.context_schema is Context and graph.config == local.config
        # Studio renders the same form as before
        assert (
            graph.get_context_jsonschema()["properties"]
            == (local.get_context_jsonschema()["properties"])
        )
        assert graph.get_context_jsonschema()["title"] == "Context"


def test_a_relative_path_under_the_root_opens_and_answers(root: Path) -> None:
    out = served.naive.invoke(
        {"question": "Where did Ada Lovelace's father die?"},
        context={"index_path": "my-index", "llm": "offline", "profile": "wikipedia"},
    )
    assert out["trace"] and out["retrieved_ids"]
    located = ServedContext(index_path="my-index").index_location()
    assert located == str((root / "my-index").resolve())
    # file:// and a path inside a subfolder of the root are relative paths too
    assert ServedContext(index_path="file://my-index").index_location() == located
    (root / "team").mkdir()
    (root / "team" / "docs").symlink_to(root / "my-index")  # a link that stays in the root
    assert ServedContext(index_path="team/docs").index_location() == located


@pytest.mark.parametrize(
    "index_path",
    [
        "/etc",  # exists, outside
        "/no/such/dir",  # does not exist, outside
        "{tiny}",  # an index, outside, by its absolute path
        "{root}/my-index",  # an index inside the root, by its absolute path
        "~",
        "~/my-index",
        "file:///etc",
        "../not-an-index",  # exists outside, no index
        "../no-such-dir",  # does not exist outside
        "my-index/../my-index",  # '..' that stays inside is refused too
        "empty/../../not-an-index",
        "escape",  # a link in the root to an index outside it
        "escape/",
        "my-index\x00",
    ],
)
def test_paths_out_of_the_root_get_one_refusal(
    root: Path, tiny_index: Any, index_path: str
) -> None:
    raw = index_path.format(tiny=tiny_index.path, root=root)
    assert _served_error(raw) == PATH_REFUSED
    with pytest.raises(ContextError, match="^index_path must name an index directory"):
        ServedContext(index_path=raw)


def test_a_missing_and_an_existing_folder_outside_get_the_same_message(root: Path) -> None:
    outside = root.parent
    assert (outside / "not-an-index").is_dir() and not (outside / "no-such-dir").exists()
    messages = {
        _served_error(str(outside / "not-an-index")),
        _served_error(str(outside / "no-such-dir")),
        _served_error("../not-an-index"),
        _served_error("../no-such-dir"),
        _served_error("/etc", graph="dual_agent"),
    }
    assert messages == {PATH_REFUSED}


def test_inside_the_root_a_missing_index_and_a_folder_without_one_are_named(root: Path) -> None:
    assert _served_error("nope") == (
        "index_path 'nope': no index directory of that name under the server's index root; "
        "build one there with `graphseek index CORPUS --out DIR`."
    )
    message = _served_error("empty")
    # the index's own message, its paths shown relative to the root
    assert message.startswith("index_path 'empty': ") and "manifest.json" in message
    assert str(root) not in message and str(root.resolve()) not in message
    long = "x" * 5000
    assert len(_served_error(long)) < 400


def test_a_uri_opens_only_when_the_server_lists_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for uri in [
        "postgresql://me@attacker.example:5432/rag?schema=my_index",  # another host
        "postgresql://me@db.internal:5432/rag?schema=other",  # another index on the host
        "postgresql://me@db.internal:5432/rag?schema=my_index&host=attacker.example",
        "postgresql://me@db.internal:5432/rag?schema=my_index&sslmode=disable",
        "postgresql://me@db.internal:5432/rag?schema=BAD-NAME",
        "redis://db.internal/0",
    ]:
        assert _served_error(uri) == URI_REFUSED, uri
    # listed: named without the password (or with any), the server connects with its own URI;
    # no connection is made to check it
    for uri in [
        "postgresql://me@db.internal:5432/rag?schema=my_index",
        "postgres://me:guess@db.internal:5432/rag?schema=my_index",
    ]:
        assert ServedContext(index_path=uri).index_location() == LISTED
    monkeypatch.delenv(INDEX_URIS_ENV)
    assert _served_error("postgresql://me@db.internal:5432/rag?schema=my_index") == URI_REFUSED


def test_refusals_carry_no_environment_value(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [
        _served_error(p)
        for p in [
            "/etc", "../x", "escape", "nope", "empty", "postgresql://me@elsewhere/db",
            "postgresql://me@db.internal:5432/rag?schema=other",
        ]
    ]  # fmt: skip
    monkeypatch.setenv(MAX_QUESTION_ENV, "not-a-number-SECRET")
    with pytest.raises(InvalidRequestError) as err:
        check_question("Who?")
    messages.append(str(err.value))
    assert err.value.args[0] == f"${MAX_QUESTION_ENV} is not a whole number of characters."
    secrets = {FAKE_KEY, PASSWORD, "not-a-number-SECRET", str(root), str(Path.cwd())}
    secrets |= {v for v in os.environ.values() if len(v) >= 4 and os.sep in v}
    for message in messages:
        assert not [s for s in secrets if s in message], message


def test_a_served_context_takes_no_opened_index(root: Path) -> None:
    with pytest.raises(ContextError, match="names its index by index_path"):
        ServedContext(index=object())


def test_the_root_is_the_working_directory_when_unset(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(INDEX_DIR_ENV)
    monkeypatch.chdir(root)
    assert ServedContext(index_path="my-index").index_location() == str(
        (root / "my-index").resolve()
    )
    assert _served_error(str(root / "my-index")) == PATH_REFUSED
    assert _served_error("../not-an-index") == PATH_REFUSED


def test_python_callers_are_not_served_and_open_any_path(root: Path, tiny_index: Any) -> None:
    """`Context`, the topologies' own graphs, `ask` and the CLI take the user's path as given."""
    from graphseek.api import ask
    from graphseek.cli import main

    outside = str(tiny_index.path)
    assert Context(index_path=outside).index_location() == outside
    assert Context(index_path="../not-an-index").index_location() == str(
        (root.parent / "not-an-index").resolve()
    )
    out = get_workflow("naive").invoke(
        {"question": "Who?"}, context={"index_path": outside, "llm": "offline"}
    )
    assert out["trace"]
    assert ask(outside, "Where did Ada Lovelace's father die?", topology="naive").trace
    assert (
        main(["ask", outside, "Where did Ada Lovelace's father die?", "--topology", "naive"]) == 0
    )


def test_a_listed_postgres_index_is_served(
    root: Path, monkeypatch: pytest.MonkeyPatch, pg_server: Any, tiny_index: Any
) -> None:
    """End to end over the embedded PostgreSQL: the listed URI opens and answers."""
    from graphseek.knowledge.postgres import PostgresIndex

    uri = f"{pg_server.get_uri()}&schema=served_tiny"
    PostgresIndex.from_directory(tiny_index.path, uri)
    monkeypatch.setenv(INDEX_URIS_ENV, uri)
    out = served.naive.invoke(
        {"question": "Where did Ada Lovelace's father die?"},
        context={"index_path": uri, "llm": "offline", "profile": "wikipedia"},
    )
    assert out["trace"] and out["retrieved_ids"]
    assert _served_error(uri.replace("served_tiny", "other_tiny")) == URI_REFUSED


# -- the reranker: only a spec the server lists -----------------------------------------------


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
def test_a_served_reranker_must_be_listed_and_an_unlisted_one_sends_nothing(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `http:` spec names the host that would get the server's key; a `ce:` spec a folder of
    the server. Unlisted, either is refused at the start of the run with one line, before any
    request; listed (written as listed), it reranks. Only the fake server on 127.0.0.1 is sent
    anything."""
    from test_remote_embedder import FakeModelServer

    from graphseek.knowledge import rerank

    question = "Where did Ada Lovelace's father die?"
    rerank.clear_rerankers()
    try:
        with FakeModelServer(lambda query, text: float("Missolonghi" in text)) as server:
            spec = f"http:tiny-reranker@{server.base_url}"
            unlisted = [
                spec,  # the server runs it, but its configuration does not list it
                f"http:{server.base_url}",
                "http:https://attacker.example/",
                "https://attacker.example/v1/rerank",
                "ce:/etc",
                "ce:../models/ms-marco",
                "bge-reranker",  # malformed: the same line, not an echo
            ]
            for candidate in unlisted:
                assert _served_error("my-index", reranker=candidate) == RERANKER_REFUSED
            monkeypatch.setenv(RERANKERS_ENV, f"ce:/models/ms-marco  {spec}")
            for candidate in [
                f"http:{server.base_url}",  # the same endpoint, written otherwise
                spec + "/",
                spec.upper(),
                "ce:/models/ms-marco/",
                "https://attacker.example/v1/rerank",
            ]:
                assert _served_error("my-index", reranker=candidate) == RERANKER_REFUSED
            assert server.requests == []  # nothing was sent for a refused spec
            # listed: validation passes, and the run reranks through it
            assert ServedContext(index_path="my-index", reranker=f" {spec} ").reranker
            assert ServedContext(index_path="my-index", reranker="").reranker == ""
            out = served.naive.invoke(
                {"question": question},
                context={"index_path": "my-index", "llm": "offline", "reranker": spec},
            )
            assert out["retrieved_ids"]
            assert server.requests and server.requests[0][1]["query"] == question
    finally:
        rerank.clear_rerankers()
    # the refusal repeats neither the list nor a key; none listed: no reranker is served
    for shown in (FAKE_KEY, "127.0.0.1", "tiny-reranker", "ms-marco", "attacker", "/etc"):
        assert shown not in RERANKER_REFUSED
    monkeypatch.delenv(RERANKERS_ENV)
    assert _served_error("my-index", reranker=spec) == RERANKER_REFUSED
    # Python callers and the CLI are not served: any spec is theirs to use
    assert Context(reranker="ce:/models/ms-marco").reranker == "ce:/models/ms-marco"
