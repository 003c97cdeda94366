"""The workflows' side of graph retrieval: `graphseek.tools.graph_context` (the run adapter over
the graph tools, re-exported here for the topologies) plus the one step that reads the question
with the agents' analysis: the triple pattern of GraphSearch's relational channel.
"""

from __future__ import annotations

import re

from graphseek.state.context import Context
from graphseek.tools.graph_context import (
    MAX_LINES,
    NO_GRAPH,
    NO_GRAPH_NOTE,
    STAGES,
    GraphResult,
    has_knowledge_graph,
    higra_context,
    hypergraph_action,
    knowledge_graph,
    progressive_stage,
    relation_line,
    semantic_channel,
    topic_labels,
)
from graphseek.tools.graph_context import relational_channel as relational_query_channel


def triple_pattern(query: str) -> tuple[str, str, str] | None:
    """A triple pattern for a one-hop sub-query: (focus entity, relation words, ?x), e.g.
    "Who directed The Lantern Keeper?" -> ("The Lantern Keeper", "directed", "?x")."""
    from graphseek.agents.reading import analyse_question
    from graphseek.agents.text import content_words

    names = analyse_question(query).names
    subject = names[0] if names else ""
    if not subject:
        return None
    subject_words = content_words(subject)
    words = [
        w
        for w in re.findall(r"[A-Za-z][\w-]*", query)
        if w.lower() in content_words(query) - subject_words
        or w.lower().rstrip("s") in content_words(query) - subject_words
    ]
    relation = " ".join(words)
    return (subject, relation or "related to", "?x")


def relational_channel(context: Context, query: str) -> GraphResult:
    """The relational channel for a sub-query (`graphseek.tools.graph_context`), anchored on the
    sub-query's `triple_pattern`."""
    return relational_query_channel(context, query, triple_pattern(query))


__all__ = [
    "MAX_LINES",
    "NO_GRAPH",
    "NO_GRAPH_NOTE",
    "STAGES",
    "GraphResult",
    "has_knowledge_graph",
    "higra_context",
    "hypergraph_action",
    "knowledge_graph",
    "progressive_stage",
    "relation_line",
    "relational_channel",
    "semantic_channel",
    "topic_labels",
    "triple_pattern",
]
