"""What LangGraph Studio and the LangGraph server see, without starting a server: the input, output
and context schemas of all seven graphs, each graph's own state (its keys, its actions, what its
nodes read and write), the context's validation and index-path rule, errors that the server
reports to its client verbatim, and progress streaming (node updates + LLM messages)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest
from langgraph_api.serde import default as server_error_payload
from test_topologies import LIBRARIAN_SYSTEM, QUESTION, librarian, scripted, tiny_view

from graphseek.errors import ContextError, ModelSpecError
from graphseek.graphs import build_workflow, get_workflow, topology_names
from graphseek.state import Context, SeekerAction
from graphseek.state.context import INDEX_DIR_ENV, resolve_index_path
from graphseek.state.schema import (
    TOPOLOGY_STATES,
    ChannelTask,
    DualAgentAction,
    DualAgentState,
    FinalizeState,
    InputState,
    KnowledgeAwareState,
    OutputState,
    RunState,
    SuggesterTask,
)

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
    assert props["retriever"]["enum"] == [
        "bm25",
        "dense",
        "hybrid",
        "higra",
        "progressive",
        "bridge",
        "doc_hop",
    ]
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
        # a JSON context on a topology's own graph, as a Python caller may pass it (the served
        # graphs confine the path and say less: tests/test_served_index.py)
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


# -- one state per topology ----------------------------------------------------------------------

#: what each topology adds to `RunState` (question, the output keys and `next_action`)
OWN_KEYS = {
    "naive": {"passages", "drafts"},
    "higra_retriever": {"passages", "drafts", "graph_context"},
    "dual_agent": {
        "clarified_question", "plan", "pending", "step_answers", "drafts", "turn", "history",
        "query_history", "messages", "graph_context", "bridges",
    },
    "adaptive": {
        "query", "retrieval", "sufficient", "retries", "verification", "turn", "history",
        "query_history", "passages", "graph_context", "drafts",
    },
    "deep_search": {
        "plan", "pending", "step_answers", "drafts", "turn", "history", "query_history",
        "retries", "verification", "channel_results", "logic_draft", "graph_context",
    },
    "react": {
        "turn", "history", "query_history", "messages", "passages", "step_answers", "thought",
        "graph_context", "drafts",
    },
    "knowledge_aware": {
        "known", "required", "query_history", "step_answers", "proposals", "refined_context",
        "passages", "turn", "history", "suggester_caches", "messages", "planned_query", "drafts",
    },
}  # fmt: skip


def _keys(schema: Any) -> set[str]:
    return set(get_type_hints(schema))


def _actions(schema: Any) -> set[str]:
    hint = get_type_hints(schema, include_extras=True)["next_action"]
    (literal,) = get_args(hint)  # NotRequired[Literal[...]]
    assert get_origin(literal) is Literal, hint
    return set(get_args(literal))


@pytest.mark.parametrize("name", topology_names())
def test_each_topology_has_its_own_state_on_the_common_base(name: str) -> None:
    builder = get_workflow(name).builder
    state = builder.state_schema
    assert state is TOPOLOGY_STATES[name]
    assert _keys(state) == _keys(RunState) | OWN_KEYS[name]
    assert len(_keys(RunState)) == 10 and len(_keys(state)) <= 23  # one shared state had 35
    # Studio's forms are the same for every topology
    assert builder.input_schema is InputState and builder.output_schema is OutputState
    # next_action: the topology's own actions, which answer or abstain in the end
    assert {"answer", "abstain"} <= _actions(state)
    # every node reads its topology's state, but the parallel branches (their `Send` payload)
    for node, spec in builder.nodes.items():
        if spec.input_schema not in (ChannelTask, SuggesterTask):
            assert spec.input_schema is state, node
    # and the graph has no channel for a key of another topology (`Send` payloads aside)
    payloads = (_keys(ChannelTask) | _keys(SuggesterTask)) - _keys(state)
    assert set(builder.channels) - payloads == _keys(state)


def test_the_subgraphs_return_keys_of_their_parents_state() -> None:
    from graphseek.graphs.librarian_agent import LibrarianOutput
    from graphseek.graphs.suggester_agent import SuggesterOutput

    assert _keys(LibrarianOutput) <= _keys(DualAgentState)
    assert _keys(SuggesterOutput) <= _keys(KnowledgeAwareState)
    # the Seeker's move is dual_agent's next_action
    assert set(get_args(SeekerAction.model_fields["action"].annotation)) == set(
        get_args(DualAgentAction)
    )


class _Reads(dict):
    """A node's input that records the keys the node reads."""

    def __init__(self, data: dict[str, Any], seen: set[str]) -> None:
        super().__init__(data)
        self.seen = seen

    def __getitem__(self, key: str) -> Any:
        self.seen.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.seen.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.seen.add(str(key))
        return super().__contains__(key)


def _recorded(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, dict[str, Any]]:
    """The topology's graph with each function node wrapped to record the keys it reads and
    the updates it returns."""
    import functools
    import importlib

    from graphseek.graphs import TOPOLOGIES, common

    topology = importlib.import_module(TOPOLOGIES[name].module)
    log: dict[str, Any] = {}
    for node, spec in build_workflow(name).nodes.items():
        func = getattr(spec.runnable, "func", None)
        # the module the builder finds the node in (finalize_answer: common's add_finalize_answer)
        module = next(
            (
                m
                for m in (topology, common)
                if getattr(m, getattr(func, "__name__", ""), None) is func
            ),
            None,
        )
        if func is None or module is None:
            continue  # a subgraph or a ToolNode

        def wrapper(state: Any, *args: Any, __f: Any = func, __n: str = node, **kw: Any) -> Any:
            entry = log.setdefault(__n, {"reads": set(), "updates": []})
            out = __f(_Reads(dict(state), entry["reads"]), *args, **kw)
            entry["updates"].append(out)
            return out

        monkeypatch.setattr(module, func.__name__, functools.wraps(func)(wrapper))
    return build_workflow(name).compile(), log


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "settings"),
    [(n, {}) for n in topology_names()]
    + [("knowledge_aware", {"agents": 2, "mode": "competitive"})],
)
def test_nodes_read_and_write_only_their_topologys_keys(
    name: str, settings: dict[str, Any], tiny_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run on the tiny graph: every key a node reads is in the state LangGraph hands it (a key
    missing from the topology's state would read as absent), every key it writes is in the
    topology's state, and `next_action` takes only the topology's actions."""
    from graphseek.knowledge.index import Index
    from graphseek.tools.graph_access import set_graph_view

    index = Index.open(tiny_index.path)
    set_graph_view(index, tiny_view())
    graph, log = _recorded(name, monkeypatch)
    out = graph.invoke(
        {"question": QUESTION},
        {"recursion_limit": 200},
        context=Context(index=index, llm="offline", **settings),
    )
    assert out["trace"][-1] == "finalize_answer"
    state = TOPOLOGY_STATES[name]
    assert "finalize_answer" in log and len(log) >= 3
    for node, entry in log.items():
        # finalize_answer, shared, reads what its topology has of `FinalizeState`; a parallel
        # branch reads its `Send` payload; the others their topology's state
        schema = graph.builder.nodes[node].input_schema
        readable = _keys(FinalizeState if node == "finalize_answer" else schema)
        assert entry["reads"] <= readable, (node, entry["reads"] - readable)
        for update in entry["updates"]:
            assert set(update) <= _keys(state), (node, set(update) - _keys(state))
            if "next_action" in update:
                assert update["next_action"] in _actions(state), (node, update["next_action"])
