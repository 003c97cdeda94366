"""A KAIR agent's actions as LangChain tools (`knowledge_aware`'s single agent and its
suggesters, `graphseek.graphs.kair_steps`): `search_gap(query, gap_ids)` searches with the agent's
retriever (`suggester_retriever`) and refuses a query already in the agent's history (a
`ToolException`, so the `ToolNode` returns it as an error `ToolMessage` the planner can react to);
the passage and graph searches of `graphseek.tools.lc_tools`; `stop_searching`.

The agent a call runs for is read from the graph state the `ToolNode` hands the tool
(``suggester_cache`` / ``suggester`` for a suggester, ``query_history`` for the single agent).
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, Field

from graphseek.state.bounds import Names, Reasoning, Sentence
from graphseek.state.context import Context
from graphseek.tools.lc_tools import (
    char_budget,
    format_passages,
    neighbors,
    ppr_search,
    search_entities,
    search_passages,
)
from graphseek.tools.query_history import is_repeat
from graphseek.tools.retrievers import resolve_index, retrieve

#: the retrievers suggesters take turns with after the context's own (round-robin by index)
SUGGESTER_RETRIEVERS = ("bm25", "dense", "hybrid")
SEARCH_GAP = "search_gap"
STOP = "stop_searching"


def suggester_retriever(index: int, context: Context) -> str:
    """Suggester `index`'s retriever: the context's for suggester 0 (and the single agent),
    then the others in turn."""
    pool = [context.retriever, *(r for r in SUGGESTER_RETRIEVERS if r != context.retriever)]
    return pool[index % len(pool)]


# -- the actions --------------------------------------------------------------------------------


class SearchGapArgs(BaseModel):
    query: Sentence = Field(
        description="The search query for the gap: never one from the query history."
    )
    gap_ids: Names = Field(
        default_factory=list, description="Ids of the open Required gaps the query serves."
    )


def _agent_of(state: Any) -> tuple[int, list[str]]:
    """The agent a tool runs for: (suggester index, its query history); the single agent is
    suggester 0 with the shared history."""
    state = state if isinstance(state, dict) else {}
    cache = state.get("suggester_cache")
    if cache:
        return int(state.get("suggester") or 0), list(cache.get("queries") or [])
    return 0, list(state.get("query_history") or [])


@tool(SEARCH_GAP, args_schema=SearchGapArgs, response_format="content_and_artifact")
def search_gap(
    query: str, runtime: ToolRuntime[Context], gap_ids: list[str] | None = None
) -> tuple[str, dict[str, Any]]:
    """Search the documents for the information an open Required gap asks for, with this
    agent's retriever. Returns passages as [passage id] Title: text."""
    context = runtime.context
    agent, history = _agent_of(runtime.state)
    query = " ".join(str(query).split())
    if not query:
        raise ToolException("the query is empty: give the words to search for")
    if is_repeat(query, history):
        raise ToolException(f"{query!r} was already searched: reformulate the query")
    retriever = suggester_retriever(agent, context)
    hits = retrieve(resolve_index(context), query, context.top_k, retriever)
    scores = [h.score for h in hits]
    text = format_passages([h.passage for h in hits], char_budget(context), scores)
    return text or "(nothing found)", {
        "passage_ids": [h.passage.id for h in hits],
        "scores": scores,
        "query": query,
        "gap_ids": [str(g) for g in gap_ids or []],
        "retriever": retriever,
    }


class StopArgs(BaseModel):
    reason: Reasoning = Field(default="", description="Why no search is left to make.")


@tool(STOP, args_schema=StopArgs)
def stop_searching(reason: str = "") -> str:
    """End this round without a search: nothing is left that a search could find."""
    return f"stopped: {reason or 'no search left'}"


def kair_tools() -> list[BaseTool]:
    """A KAIR agent's actions: its gap search, passage and graph search, and stopping."""
    return [search_gap, search_passages, search_entities, neighbors, ppr_search, stop_searching]


__all__ = [
    "SEARCH_GAP",
    "STOP",
    "SUGGESTER_RETRIEVERS",
    "SearchGapArgs",
    "StopArgs",
    "kair_tools",
    "search_gap",
    "stop_searching",
    "suggester_retriever",
]
