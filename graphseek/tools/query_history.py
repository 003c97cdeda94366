"""The query history rule of KAIR (no repeated queries): a planned query is a repeat of one
already searched when both read the same after case, punctuation, articles and spacing are
normalised. The search tool enforces it (`graphseek.tools.kair_tools.search_gap`) and the
planners check it (`graphseek.agents.kair` re-exports both functions).
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def normalize_query(query: str) -> str:
    """Case-, punctuation-, article- and spacing-insensitive form of a query."""
    text = re.sub(r"[^\w\s#]", " ", query.casefold())
    text = re.sub(r"\b(?:a|an|the)\b", " ", text)
    return " ".join(text.split())


def is_repeat(query: str, history: Iterable[str]) -> bool:
    """True when `query` was already searched (up to `normalize_query`)."""
    key = normalize_query(query)
    return any(normalize_query(q) == key for q in history)


__all__ = ["is_repeat", "normalize_query"]
