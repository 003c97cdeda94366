"""Query grounding, offline policy: substitute each #N by the answer of step N."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from graphseek.agents.offline.seeker import fill_placeholders
from graphseek.agents.roles import Step


class OfflineQueryGrounder:
    def ground(
        self, query: str, earlier: Sequence[tuple[int, str, str]], answers: Mapping[str, str]
    ) -> Step[str]:
        return Step(fill_placeholders(query, answers))
