"""The Librarian with graph context: drafts from passages plus retrieved relations
(HiGraAgent §4.6, the HiGraRetriever's (relations, passages) context).

The LLM policy is the Librarian's (same system prompt, reply schema and grounding of cited ids)
with the relations added to the user message; without relations it sends exactly the
Librarian's prompt. The offline policy (`graphseek.agents.offline.graph_librarian`) drafts from
the passages, hop by hop for a multi-hop question.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from graphseek.agents.librarian import LibrarianReply, ground_reply
from graphseek.agents.prompts.graph_librarian import GRAPH_LIBRARIAN_USER
from graphseek.agents.prompts.librarian import (
    LIBRARIAN_SYSTEM,
    LIBRARIAN_TOOLS_SYSTEM,
    LIBRARIAN_TOOLS_USER,
    LIBRARIAN_USER,
)
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import PassageRole, render_lines
from graphseek.knowledge.passages import Hit
from graphseek.state.models import Draft

#: relations shown to the model at most
MAX_RELATIONS = 30


class GraphLibrarian(Protocol):
    def draft(
        self, question: str, hits: Sequence[Hit], relations: Sequence[str] = ()
    ) -> Step[Draft]: ...


class LLMGraphLibrarian(PassageRole):
    def call_tools(
        self, question: str, messages: Sequence[BaseMessage], tools: Sequence[Any]
    ) -> Step[AIMessage]:
        """One step of the Librarian's search: the model, with the search tools and `finish`
        bound, reads the question and its searches so far and replies with tool calls. Raises
        `ToolsUnsupportedError` for a model that cannot call tools."""
        prompt = [
            SystemMessage(LIBRARIAN_TOOLS_SYSTEM),
            HumanMessage(LIBRARIAN_TOOLS_USER.format(question=question)),
            *messages,
        ]
        reply, usage = self.ask_tools(tools, prompt)
        return Step(reply, usage)

    def draft(
        self, question: str, hits: Sequence[Hit], relations: Sequence[str] = ()
    ) -> Step[Draft]:
        if relations:
            user = self.evidence_prompt(
                LIBRARIAN_SYSTEM, GRAPH_LIBRARIAN_USER, hits,
                question=question, relations=render_lines(relations, MAX_RELATIONS),
            )  # fmt: skip
        else:
            user = self.evidence_prompt(LIBRARIAN_SYSTEM, LIBRARIAN_USER, hits, question=question)
        out, usage = self.ask(LibrarianReply, LIBRARIAN_SYSTEM, user)
        return Step(ground_reply(question, out, hits), usage)
