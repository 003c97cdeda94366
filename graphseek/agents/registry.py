"""Pick each role's policy for a run: the LLM policy when a chat model is configured for the role,
the offline reasoner's deterministic policy otherwise. Nodes only ever call `get_roles(context)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphseek.agents.clarifier import LLMClarifier
from graphseek.agents.decomposer import LLMDecomposer
from graphseek.agents.librarian import LLMLibrarian
from graphseek.agents.offline.clarifier import OfflineClarifier
from graphseek.agents.offline.decomposer import OfflineDecomposer
from graphseek.agents.offline.librarian import OfflineLibrarian
from graphseek.agents.offline.seeker import OfflineSeeker
from graphseek.agents.roles import Clarifier, Decomposer, Librarian, Seeker
from graphseek.agents.seeker import LLMSeeker
from graphseek.llm import model_for
from graphseek.state.context import Context


@dataclass(frozen=True)
class Roles:
    clarifier: Clarifier
    decomposer: Decomposer
    librarian: Librarian
    seeker: Seeker
    offline: frozenset[str]  # names of the roles run by the offline reasoner


_OFFLINE_CACHE: dict[str, Any] = {}


def _offline(name: str, factory: Any) -> Any:
    """Offline policies hold loaded models (spaCy, MiniLM): build each once per process."""
    if name not in _OFFLINE_CACHE:
        _OFFLINE_CACHE[name] = factory()
    return _OFFLINE_CACHE[name]


def get_roles(context: Context) -> Roles:
    llm = context.llm
    retries = context.max_retries
    offline: set[str] = set()

    def pick(role: str, llm_cls: Any, offline_factory: Any) -> Any:
        model = model_for(llm, role)
        if model is None:
            offline.add(role)
            return _offline(role, offline_factory)
        return llm_cls(model, max_retries=retries)

    clarifier = pick("clarifier", LLMClarifier, OfflineClarifier)
    decomposer = pick("decomposer", LLMDecomposer, OfflineDecomposer)
    librarian = pick("librarian", LLMLibrarian, OfflineLibrarian)
    seeker_model = model_for(llm, "seeker")
    if seeker_model is None:
        offline.add("seeker")
        seeker: Seeker = OfflineSeeker(abstain_threshold=context.abstain_threshold)
    else:
        seeker = LLMSeeker(seeker_model, max_retries=retries)
    return Roles(clarifier, decomposer, librarian, seeker, frozenset(offline))
