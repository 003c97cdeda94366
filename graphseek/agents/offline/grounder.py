"""Query grounding, offline policy: substitute each #N by the answer of step N."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graphseek.agents.roles import Step
from graphseek.agents.text import fill_placeholders


class OfflineQueryGrounder:
    def ground(
        self, query: str, earlier: Sequence[tuple[int, str, str]], answers: Mapping[str, str]
    ) -> Step[str]:
        return Step(fill_placeholders(query, answers))
