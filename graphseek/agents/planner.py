"""Planner role: What is Required at the start, then the next search query from Known,
Required and the query history (KAIR §3.1 Query Planning, eq. 2).

The node, not the policy, rejects a query already in the history (`graphseek.agents.kair`) and
asks again with the rejected queries listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from graphseek.agents.kair import format_gaps, format_known, format_queries, open_gaps
from graphseek.agents.prompts.planner import (
    PLANNER_INIT_SYSTEM,
    PLANNER_INIT_USER,
    PLANNER_SYSTEM,
    PLANNER_TOOLS_SYSTEM,
    PLANNER_USER,
    STRATEGIES,
)
from graphseek.agents.roles import KnowledgeView, QueryPlan, Step
from graphseek.agents.structured_role import StructuredRole
from graphseek.state.bounds import Names, Reasoning, Sentence, Sentences
from graphseek.state.models import Gap


class InitialRequired(BaseModel):
    reasoning: Reasoning = ""
    gaps: Sentences = Field(min_length=1, description="Missing facts, as questions, in order.")


class QueryProposal(BaseModel):
    reasoning: Reasoning = ""
    target_gap_ids: Names = Field(default_factory=list)
    query: Sentence = Field(description="The next search query; never one already searched.")


class LLMPlanner(StructuredRole):
    def initial_gaps(self, question: str) -> Step[list[Gap]]:
        user = PLANNER_INIT_USER.format(question=question)
        out, usage = self.ask(InitialRequired, PLANNER_INIT_SYSTEM, user)
        texts = [" ".join(g.split()) for g in out.gaps if g.strip()] or [question]
        return Step([Gap(id=str(i), description=t) for i, t in enumerate(texts, 1)], usage)

    def plan(self, view: KnowledgeView, rejected: Sequence[str] = ()) -> Step[QueryPlan]:
        out, usage = self.ask(QueryProposal, PLANNER_SYSTEM, _plan_user(view, rejected))
        open_ids = {g.id for g in open_gaps(view.required)}
        targets = tuple(g for g in out.target_gap_ids if g in open_ids)
        query = " ".join(out.query.replace("#", " ").split())
        return Step(QueryPlan(query=query, gap_ids=targets, reason=out.reasoning), usage)

    def call_tools(
        self, view: KnowledgeView, messages: Sequence[BaseMessage], tools: Sequence[Any]
    ) -> Step[AIMessage]:
        """One step of a suggester's search (KAIR §3.3) as tool calls: the model, with the
        search tools bound, reads its caches and the conversation so far (its calls and their
        results, errors included) and calls a tool. Raises `ToolsUnsupportedError` for a model
        that cannot call tools, and the taxonomy's `LLMError`s."""
        prompt = [
            SystemMessage(PLANNER_TOOLS_SYSTEM),
            HumanMessage(_plan_user(view, ())),
            *messages,
        ]
        reply, usage = self.ask_tools(tools, prompt)
        return Step(reply, usage)


def _plan_user(view: KnowledgeView, rejected: Sequence[str]) -> str:
    return PLANNER_USER.format(
        question=view.question,
        known=format_known(view.known),
        required=format_gaps(view.required, view.answers),
        queries=format_queries(view.query_history),
        rejected="; ".join(rejected) if rejected else "(none)",
        agent=view.agent + 1,
        agents=view.agents,
        strategy=STRATEGIES[view.agent % len(STRATEGIES)],
        assigned=", ".join(view.assigned_gaps) if view.assigned_gaps else "any",
    )
