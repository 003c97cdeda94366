"""Typed state shared by every workflow.

The workflow schema (`RunState`, `InputState`, ...; each topology's state is in
`graphseek.state.schema`) loads on first use: it imports LangGraph (about half a second), which
the knowledge layer (an index build, say) never needs.
"""

from typing import TYPE_CHECKING, Any

from graphseek.state.context import Context
from graphseek.state.models import (
    Draft,
    EvidenceItem,
    Fact,
    Gap,
    SeekerAction,
    SubQuestion,
    Usage,
)

if TYPE_CHECKING:
    from graphseek.state.schema import (
        Diagnostics,
        InputState,
        LibrarianTask,
        OutputState,
        RunState,
    )

_SCHEMA = frozenset({"Diagnostics", "InputState", "LibrarianTask", "OutputState", "RunState"})


def __getattr__(name: str) -> Any:
    if name in _SCHEMA:
        from graphseek.state import schema

        return getattr(schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Context",
    "Diagnostics",
    "Draft",
    "EvidenceItem",
    "Fact",
    "Gap",
    "SeekerAction",
    "InputState",
    "LibrarianTask",
    "OutputState",
    "RunState",
    "SubQuestion",
    "Usage",
]
