"""The LangChain tools: schemas for the model, the index from the runtime context, budgeted text
with passage ids, run directly and through a LangGraph ToolNode."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime
from test_graph_retrieval import ToySearch, toy_view

from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context
from graphseek.tools import lc_tools
from graphseek.tools.graph_access import set_graph_view
from graphseek.tools.lc_tools import all_tools, fit_lines, format_passages


class ToyIndex:
    """Just enough of `Index` for the tools: search, dense_search, get, passages, embed,
    embeddings."""

    def __init__(self, with_graph: bool = True) -> None:
        self.search_impl = ToySearch()
        self.by_id = self.search_impl.passages
        self.passages = list(self.by_id.values())
        self.embeddings = np.zeros((len(self.passages), 4), dtype=np.float32)
        if with_graph:
            set_graph_view(self, toy_view())
        else:
            self.path = "/nowhere"

    def search(self, query: str, k: int = 5, method: str = "hybrid") -> list[Hit]:
        return [
            Hit(passage=self.by_id[pid], score=score, rank=r)
            for r, (pid, score) in enumerate(self.search_impl(query, k), start=1)
        ]

    def dense_search(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        from graphseek.knowledge.dense import top_positions

        scores = self.embeddings @ query_vector
        return [(i, float(scores[i])) for i in top_positions(scores, k, positive=False)]

    def get(self, pid: str) -> Any:
        return self.by_id[pid]

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), 4), dtype=np.float32)

    def dir_for(self, name: str) -> Any:
        from pathlib import Path

        return Path("/nowhere") / name


def _runtime(index: Any, **settings: Any) -> ToolRuntime:
    return ToolRuntime(
        state={},
        context=Context(index=index, **settings),
        config={},
        stream_writer=lambda _: None,
        tool_call_id="call-1",
        store=None,
    )


def _call(name: str, args: dict[str, Any], index: Any, **extra: Any) -> ToolMessage:
    tool = {t.name: t for t in all_tools()}[name]
    call = {"name": name, "args": {**args, "runtime": _runtime(index, **extra)}, "id": "call-1"}
    call["type"] = "tool_call"
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage)
    return message


@pytest.fixture(scope="module")
def index() -> ToyIndex:
    return ToyIndex()


def test_tool_names_and_schemas_hide_the_runtime() -> None:
    tools = all_tools()
    assert [t.name for t in tools] == [
        "search_passages",
        "search_entities",
        "neighbors",
        "higra_retrieve",
        "bridge_discovery",
        "ppr_search",
        "relational_query",
        "retrieve_subgraph",
        "node_feature",
        "neighbor_check",
    ]
    for t in tools:
        schema = t.tool_call_schema.model_json_schema()
        assert "runtime" not in schema["properties"], t.name
        assert len(t.description) > 60, t.name
    relational = {t.name: t for t in tools}["relational_query"]
    props = relational.tool_call_schema.model_json_schema()
    assert "patterns" in props["properties"]


def test_search_passages_returns_ids_within_budget(index: ToyIndex) -> None:
    message = _call("search_passages", {"query": "Analytical Engine designed", "k": 3}, index)
    assert message.content.splitlines()[0].startswith("[p_engine] Analytical Engine: ")
    assert message.artifact == {"passage_ids": ["p_engine", "p_babbage", "p_ada"]}
    assert message.content.endswith("Passage ids: p_engine, p_babbage, p_ada")
    query = {"query": "Analytical Engine", "k": 3}
    small = _call("search_passages", query, index, tool_char_budget=250)
    assert len(small.content) <= 250
    assert small.content.endswith("Passage ids: p_engine, p_babbage, p_ada")


def test_graph_tools_return_text_and_passage_ids(index: ToyIndex) -> None:
    entities = _call("search_entities", {"query": "Byron"}, index)
    assert entities.content.startswith("[byron] Lord Byron (aliases: George Gordon Byron")
    assert entities.artifact["entity_ids"][0] == "byron"

    rels = _call("neighbors", {"entity": "Lord Byron", "relation": "born"}, index)
    assert "(Lord Byron, born in, London) [p_byron]" in rels.content
    assert rels.artifact["passage_ids"] == ["p_byron"]

    higra = _call("higra_retrieve", {"query": "Who designed the Analytical Engine?", "k": 3}, index)
    assert higra.content.startswith("Entities: Analytical Engine\nRelations:\n")
    assert "(Charles Babbage, designed, Analytical Engine)" in higra.content
    # similarity here is the index's hybrid fusion (BM25 + a flat dense ranking)
    assert set(higra.artifact["passage_ids"]) == {"p_ada", "p_engine", "p_babbage"}
    assert higra.artifact["entity_ids"] == ["engine"]

    bridge = _call("bridge_discovery", {"entities": ["Analytical Engine", "Missolonghi"]}, index)
    assert "Bridges: Ada Lovelace, Lord Byron" in bridge.content
    assert "p_byron" in bridge.artifact["passage_ids"]
    single = _call("bridge_discovery", {"entities": ["Missolonghi"]}, index)
    assert single.content.startswith("Bridge discovery needs two known entities")

    ppr = _call("ppr_search", {"entities": ["Ada Lovelace"], "k": 2}, index)
    assert ppr.artifact["passage_ids"] == ["p_ada", "p_milbanke"]
    assert ppr.content.startswith("[p_ada] Ada Lovelace: ")

    relational = _call(
        "relational_query",
        {
            "patterns": [
                {"subject": "Ada Lovelace", "relation": "daughter of", "object": "?p"},
                {"subject": "?p", "relation": "died in", "object": "?place"},
            ]
        },
        index,
    )
    assert "?place = Missolonghi, 1824" in relational.content
    assert relational.artifact["passage_ids"] == ["p_ada", "p_byron"]

    topic = _call("retrieve_subgraph", {"topic": "t_computing"}, index)
    assert "HyperEdge_1: <Charles Babbage designed the Analytical Engine>" in topic.content
    feature = _call("node_feature", {"entity": "engine", "attr": "types"}, index)
    assert feature.content.startswith("Entity engine (Analytical Engine)\ntypes: PRODUCT")
    check = _call("neighbor_check", {"entity": "Missolonghi"}, index)
    assert check.content.endswith("Passage ids: p_byron")


def test_graph_tool_without_a_graph_says_so() -> None:
    message = _call("neighbors", {"entity": "Lord Byron"}, ToyIndex(with_graph=False))
    assert "no knowledge graph" in message.content and "search_passages" in message.content
    assert message.artifact == {"passage_ids": []}


def test_tools_through_a_toolnode(index: ToyIndex) -> None:
    graph = StateGraph(MessagesState, context_schema=Context)
    graph.add_node("tools", ToolNode(all_tools()))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    calls = [
        {"name": "search_passages", "args": {"query": "Missolonghi Greece", "k": 1}, "id": "a"},
        {"name": "neighbor_check", "args": {"entity": "Lord Byron", "relation": "died"}, "id": "b"},
    ]
    out = graph.compile().invoke(
        {"messages": [AIMessage("", tool_calls=calls)]}, context=Context(index=index)
    )
    replies = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert replies["a"].artifact == {"passage_ids": ["p_miss"]}
    assert "HyperEdge_1: <Lord Byron died at Missolonghi in 1824>" in replies["b"].content


def test_fit_lines_and_format_passages() -> None:
    lines = [f"line {i} " + "x" * 40 for i in range(20)]
    text = fit_lines(lines, 300, "Passage ids: a, b")
    assert len(text) <= 300 and text.endswith("Passage ids: a, b")
    assert "more lines cut to fit" in text
    assert fit_lines(["short"], 100) == "short"
    assert format_passages([], 100) == "No passages found."
    assert lc_tools.char_budget(SimpleNamespace(tool_char_budget="x")) == 4000
    assert lc_tools.char_budget(Context(tool_char_budget=50)) == 200
