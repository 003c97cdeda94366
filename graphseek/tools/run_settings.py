"""A setting of the LangGraph run a tool call is part of, read from the run's context."""

from __future__ import annotations

import sys


def run_setting(name: str) -> str:
    """``Context.<name>`` of the LangGraph run this call is part of, else "" (outside a run)."""
    if "langgraph" not in sys.modules:  # no run without langgraph loaded
        return ""
    from langgraph.runtime import get_runtime

    try:
        runtime = get_runtime()
    except (RuntimeError, KeyError):  # outside a run
        return ""
    return str(getattr(getattr(runtime, "context", None), name, "") or "")
