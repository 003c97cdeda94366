"""Typed state shared by every workflow."""

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
from graphseek.state.schema import Diagnostics, InputState, LibrarianTask, OutputState, State

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
    "State",
    "SubQuestion",
    "Usage",
]
