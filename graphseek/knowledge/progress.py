"""Labelled progress bars for the long stages of indexing.

Every long stage (``reading``, ``embedding passages``, ``extracting``, ``aligning entities``,
``linking``, ``topics``, ``writing``) shows one tqdm bar with its label, counts and ETA, on
stderr. A bar is drawn only when the caller asks for progress *and* stderr is a terminal, or
when graphseek logs at INFO (``graphseek -v``); on a pipe, in CI or under ``--json`` nothing is
printed.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

STAGES = (
    "reading",
    "embedding passages",
    "extracting",
    "aligning entities",
    "linking",
    "topics",
    "writing",
)


def progress_enabled(requested: bool) -> bool:
    """Whether to draw bars: requested, and stderr is a TTY or graphseek logs at INFO (-v)."""
    if not requested:
        return False
    try:
        if sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):
        pass
    return logging.getLogger("graphseek").isEnabledFor(logging.INFO)


def bar(label: str, total: int | None, enabled: bool, unit: str = "passage") -> Any:
    """A tqdm bar for one stage (a no-op bar when not `progress_enabled(enabled)`)."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=label,
        unit=unit,
        disable=not progress_enabled(enabled),
        dynamic_ncols=True,
        leave=True,
        file=sys.stderr,
    )
