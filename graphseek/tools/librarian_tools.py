"""The Librarian's actions as LangChain tools (`dual_agent`'s tool-calling Librarian,
`graphseek.graphs.librarian_agent`): `context_search`, the team's configured retrieval for the run
(`graphseek.tools.graph_context.librarian_context`: the context's retriever, or the
HiGraRetriever's relations and passages with ``retriever="higra"``); the passage and graph
searches of `graphseek.tools.lc_tools`; and `finish`, which carries the answer, the passages that
state it, other candidates and a confidence (running it only echoes the answer: the workflow
routes on it).
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, Field

from graphseek.state.bounds import Names
from graphseek.state.context import Context
from graphseek.tools.graph_context import librarian_context
from graphseek.tools.lc_tools import (
    FINISH,
    FinishArgs,
    char_budget,
    fit_lines,
    format_passages,
    neighbors,
    ppr_search,
    search_entities,
    search_passages,
)


class ContextSearchArgs(BaseModel):
    query: str = Field(description="The question (or a reformulation) to retrieve evidence for.")


@tool("context_search", args_schema=ContextSearchArgs, response_format="content_and_artifact")
def context_search(query: str, runtime: ToolRuntime[Context]) -> tuple[str, dict[str, Any]]:
    """Retrieve evidence with the team's configured retrieval: the most relevant passages, and
    the knowledge graph's relations among them when the team uses the graph retriever."""
    context = runtime.context
    found = librarian_context(context, query)
    budget = char_budget(context)
    head = fit_lines(found.lines, budget // 3) if found.lines else ""
    body = format_passages([h.passage for h in found.hits], max(300, budget - len(head) - 40))
    text = "\n".join(p for p in (f"Relations:\n{head}" if head else "", f"Passages:\n{body}") if p)
    return text[:budget], {
        "passage_ids": [h.passage.id for h in found.hits],
        "scores": [h.score for h in found.hits],
        "lines": list(found.lines),
        "note": found.note,
        "usage": found.usage.model_dump(),
    }


class LibrarianFinishArgs(FinishArgs):
    candidates: Names = Field(
        default_factory=list,
        description="Other plausible answers the passages support, best first.",
    )
    confidence: float = Field(
        default=0.8, ge=0.0, le=1.0, description="How sure the passages make you (0 to 1)."
    )


@tool(FINISH, args_schema=LibrarianFinishArgs)
def librarian_finish(
    answer: str,
    passage_ids: list[str] | None = None,
    reason: str = "",
    candidates: list[str] | None = None,
    confidence: float = 0.8,
) -> str:
    """Give the answer to the question with the ids of the passages that state it (and other
    plausible answers, and your confidence), and stop searching. With an empty answer when
    nothing relevant was found."""
    return f"Answer: {answer or '(none)'} (passages: {', '.join(passage_ids or []) or 'none'})"


def librarian_tools() -> list[BaseTool]:
    """The Librarian's actions: the configured retrieval, passage and graph search, `finish`."""
    return [
        context_search,
        search_passages,
        search_entities,
        neighbors,
        ppr_search,
        librarian_finish,
    ]


__all__ = [
    "ContextSearchArgs",
    "LibrarianFinishArgs",
    "context_search",
    "librarian_finish",
    "librarian_tools",
]
