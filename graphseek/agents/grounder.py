"""Grounder role: GraphSearch's query grounding (§3.1.1, eq. 2).

A sub-query that refers to earlier answers (#N) is instantiated with them before retrieval.
Queries without references are returned as they are, without a model call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel

from graphseek.agents.prompts.grounder import GROUNDER_SYSTEM, GROUNDER_USER
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import StructuredRole
from graphseek.agents.text import fill_placeholders
from graphseek.state.bounds import Reasoning, Sentence

_REF = re.compile(r"#\d+")


class GroundedQuery(BaseModel):
    reason: Reasoning = ""
    query: Sentence


class QueryGrounder(Protocol):
    def ground(
        self, query: str, earlier: Sequence[tuple[int, str, str]], answers: Mapping[str, str]
    ) -> Step[str]:
        """`query` with its #N references resolved; `earlier` holds (step id, question, answer)
        of answered steps and `answers` the answers by step id."""
        ...


class LLMQueryGrounder(StructuredRole):
    def ground(
        self, query: str, earlier: Sequence[tuple[int, str, str]], answers: Mapping[str, str]
    ) -> Step[str]:
        if not _REF.search(query):
            return Step(query)
        lines = "\n".join(f"#{sid} {q} -> {a}" for sid, q, a in earlier) or "(none)"
        out, usage = self.ask(
            GroundedQuery, GROUNDER_SYSTEM, GROUNDER_USER.format(query=query, answers=lines)
        )
        grounded = " ".join(out.query.split()) or query
        # a reference the model left in place is filled by substitution when its answer is known
        return Step(fill_placeholders(grounded, answers), usage)
