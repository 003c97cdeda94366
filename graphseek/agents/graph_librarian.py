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

from graphseek.agents.librarian import BriefReply, LibrarianReply, ground_reply
from graphseek.agents.prompts.graph_librarian import GRAPH_LIBRARIAN_USER
from graphseek.agents.prompts.librarian import (
    LIBRARIAN_SYSTEM,
    LIBRARIAN_TOOLS_SYSTEM,
    LIBRARIAN_TOOLS_USER,
    LIBRARIAN_USER,
    READER_SYSTEM,
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
    """The Librarian's model policy. `brief`: draft in the brief form of a cascade's model
    reader (`READER_SYSTEM`, `BriefReply`: answer, passage ids, confidence), not the full one
    (reasoning, candidates and quoted sentences as well)."""

    def __init__(self, model: Any, *args: Any, brief: bool = False, **kwargs: Any) -> None:
        super().__init__(model, *args, **kwargs)
        self.brief = brief

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
        system = READER_SYSTEM if self.brief else LIBRARIAN_SYSTEM
        if relations:
            user = self.evidence_prompt(
                system, GRAPH_LIBRARIAN_USER, hits,
                question=question, relations=render_lines(relations, MAX_RELATIONS),
            )  # fmt: skip
        else:
            user = self.evidence_prompt(system, LIBRARIAN_USER, hits, question=question)
        if self.brief:
            brief, usage = self.ask(BriefReply, system, user)
            return Step(ground_reply(question, brief.full(), hits), usage)
        out, usage = self.ask(LibrarianReply, system, user)
        return Step(ground_reply(question, out, hits), usage)
