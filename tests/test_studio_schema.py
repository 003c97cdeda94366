"""What LangGraph Studio and the LangGraph server see, without starting a server: the input, output
and context schemas of all seven graphs, the context's validation and index-path rule, errors that
the server reports to its client verbatim, and progress streaming (node updates + LLM messages)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from langgraph_api.serde import default as server_error_payload
from test_topologies import LIBRARIAN_SYSTEM, QUESTION, librarian, scripted

from graphseek.errors import ContextError, ModelSpecError
from graphseek.graphs import get_workflow, topology_names
from graphseek.state import Context
from graphseek.state.context import INDEX_DIR_ENV, resolve_index_path

#: what a user sets in Studio's context form (Python-only fields are hidden)
VISIBLE = {
    "index_path", "retriever", "top_k", "llm", "max_turns", "max_llm_calls", "max_tokens",
    "max_retries", "agents", "mode", "abstain_threshold", "tool_char_budget", "seed",
}  # fmt: skip
#: settings added by later work are checked by the loop below (described, defaulted, JSON-typed)
NEW_FIELDS = {f.name for f in fields(Context)} - VISIBLE - {"index"}


@pytest.mark.parametrize("name", topology_names())
def test_schemas_show_the_question_the_answer_and_the_described_settings(name: str) -> None:
    graph = get_workflow(name)
    inp = graph.get_input_jsonschema()
    assert list(inp["properties"]) == ["question"] and inp["required"] == ["question"]
    assert inp["properties"]["question"]["type"] == "string"
    out = graph.get_output_jsonschema()
    assert {"answer", "abstained", "abstain_reason", "evidence", "trace", "usage"} <= set(
        out["properties"]
    )
    ctx = graph.get_context_jsonschema()
    assert ctx is not None
    props = ctx["properties"]
    assert set(props) == VISIBLE | NEW_FIELDS
    for key, prop in props.items():
        assert prop.get("description"), f"{key} has no description"
        assert "default" in prop or prop.get("type") == "object", f"{key} has no default"
        # a JSON type (an `Any` field has none); mappings such as role -> int are "object"
        assert prop.get("type") in {"string", "integer", "number", "boolean", "object"}, prop
    assert props["retriever"]["enum"] == ["bm25", "dense", "hybrid", "higra", "progressive"]
    assert props["mode"]["enum"] == ["single", "competitive", "collaborative"]


def test_python_only_fields_stay_usable_but_out_of_the_schema() -> None:
    schema_fields = set(get_workflow("naive").get_context_jsonschema()["properties"])
    assert {f.name for f in fields(Context)} - schema_fields == {"index"}
    marker = object()
    ctx = Context(index=marker, llm={"default": "offline"})
    assert ctx.index is marker and ctx.llm == {"default": "offline"}
    assert "index=" not in repr(ctx)


def test_bad_settings_fail_with_one_readable_line() -> None:
    with pytest.raises(ContextError, match=r"top_k must be an integer >= 1, got 0") as err:
        Context(top_k=0, max_turns=-1)
    assert "max_turns must be an integer >= 1" in str(err.value)
    assert isinstance(err.value, ValueError)
    with pytest.raises(ContextError, match="abstain_threshold must be a number in"):
        Context(abstain_threshold=2)


def test_relative_index_paths_resolve_against_graphseek_index_dir(monkeypatch, tmp_path) -> None:
    (tmp_path / "my-index").mkdir()
    monkeypatch.setenv(INDEX_DIR_ENV, str(tmp_path))
    assert Context(index_path="my-index").resolved_index_path() == tmp_path / "my-index"
    assert resolve_index_path(tmp_path / "my-index") == tmp_path / "my-index"
    monkeypatch.delenv(INDEX_DIR_ENV)
    monkeypatch.chdir(tmp_path)
    assert Context(index_path="my-index").resolved_index_path() == tmp_path / "my-index"
    assert Context().resolved_index_path() is None


def test_a_missing_index_names_the_resolved_path_and_the_rule(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(INDEX_DIR_ENV, str(tmp_path))
    with pytest.raises(ContextError) as err:
        Context(index_path="my-index")
    message = str(err.value)
    assert f"'my-index' (resolved to {tmp_path / 'my-index'})" in message
    assert f"${INDEX_DIR_ENV} ({tmp_path})" in message and "graphseek index" in message
    # an opened index given from Python wins; the path is not checked then
    assert Context(index=object(), index_path="my-index").index is not None


def _server_error(exc: BaseException) -> dict[str, Any]:
    """The `{"error", "message"}` object the LangGraph server sends for a failed run."""
    return server_error_payload(exc)


def test_a_run_with_a_bad_index_path_fails_with_the_message_the_server_shows(
    monkeypatch, tmp_path
) -> None:
    monkeypatch.setenv(INDEX_DIR_ENV, str(tmp_path))
    with pytest.raises(ContextError) as err:
        # a JSON context, as the server passes it
        get_workflow("naive").invoke({"question": "q"}, context={"index_path": "nope"})
    payload = _server_error(err.value)
    assert payload["error"] == "ContextError"
    assert payload["message"].startswith("index_path 'nope' (resolved to")


def test_an_index_directory_without_an_index_is_reported(tmp_path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ContextError) as err:
        get_workflow("naive").invoke(
            {"question": "q"}, context={"index_path": str(tmp_path / "empty")}
        )
    assert _server_error(err.value)["message"].startswith(f"index_path '{tmp_path / 'empty'}': ")


def test_no_index_at_all_is_reported() -> None:
    with pytest.raises(ContextError, match="No index for this run: set index_path") as err:
        get_workflow("naive").invoke({"question": "q"}, context={"llm": "offline"})
    assert _server_error(err.value)["message"] != "An internal error occurred"


def test_unknown_retriever_and_llm_spec_are_reported() -> None:
    with pytest.raises(ValueError, match="Unknown retriever 'nope'; known retrievers:") as err:
        get_workflow("naive").invoke(
            {"question": "q"}, context=Context(index=object(), retriever="nope")
        )
    assert "known retrievers" in _server_error(err.value)["message"]
    with pytest.raises(ModelSpecError, match="did you mean 'openai:gpt-4o'") as err2:
        get_workflow("dual_agent").invoke(
            {"question": "q"}, context=Context(index=object(), llm="gpt-4o")
        )
    assert "unknown model spec 'gpt-4o'" in _server_error(err2.value)["message"]


@pytest.mark.slow
def test_stream_shows_node_updates_and_llm_messages(tiny_index: Any) -> None:
    """`stream_mode=["updates", "messages"]`: each node's update, and the LLM policies' messages
    tagged with the node that made them (what Studio shows while a run is in progress)."""
    model = scripted({LIBRARIAN_SYSTEM: librarian({QUESTION: ("Missolonghi", 0.9)})})
    updates: list[str] = []
    message_nodes: list[str] = []
    for mode, chunk in get_workflow("naive").stream(
        {"question": QUESTION},
        context=Context(index=tiny_index, llm=model),
        stream_mode=["updates", "messages"],
    ):
        if mode == "updates":
            updates.extend(chunk)
        else:
            message, metadata = chunk
            assert message.content or getattr(message, "tool_calls", None)
            message_nodes.append(metadata["langgraph_node"])
    assert updates == ["retrieve_passages", "generate_answer", "finalize_answer"]
    assert "generate_answer" in message_nodes


def test_langgraph_json_names_the_seven_graphs() -> None:
    import json

    config = json.loads((Path(__file__).resolve().parent.parent / "langgraph.json").read_text())
    assert sorted(config["graphs"]) == sorted(topology_names())
