"""The check at the start of every topology: its first node calls `check_entry` before anything
else, so `invoke`, `stream` and a LangGraph server run refuse what the CLI and `ask` refuse.

The run's `Context` was checked when it was made (`Context.__post_init__`, also for the JSON
context of a server client); here the input state (`graphseek.state.validation.check_input`) and
the retriever name, which only the retriever registry knows. A bad request ends the run with an
`InvalidRequestError` (a `ValueError`) whose one line names the field; the LangGraph server shows
it as the run's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from graphseek.state.context import Context
from graphseek.state.validation import check_input
from graphseek.tools.retrievers import check_retriever


def check_entry(state: Mapping[str, Any], runtime: Runtime[Context]) -> None:
    """Refuse a run whose input has no usable `question` or whose context names an unknown
    retriever (`InvalidRequestError`)."""
    context = runtime.context
    check_input(state, getattr(context, "max_question_chars", None) or None)
    retriever = getattr(context, "retriever", None)
    if retriever is not None:
        check_retriever(retriever)
