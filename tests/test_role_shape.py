"""Every LLM role policy has one shape: a `StructuredRole` built as (model, max_retries,
callbacks), with a role's own settings keyword-only (`max_chars`, `repair`), also when wrapped
by `falls_back` for ``on_model_failure="offline"``."""

from __future__ import annotations

import pytest

from graphseek.agents import registry
from graphseek.agents.answerer import LLMAnswerer
from graphseek.agents.context_filter import LLMContextFilter
from graphseek.agents.decomposer import LLMDecomposer
from graphseek.agents.graph_librarian import LLMGraphLibrarian
from graphseek.agents.knowledge_updater import LLMKnowledgeUpdater
from graphseek.agents.librarian import LLMLibrarian
from graphseek.agents.structured_role import PassageRole, StructuredRole, falls_back

LLM_POLICIES = sorted(
    (v for k, v in vars(registry).items() if k.startswith("LLM") and isinstance(v, type)),
    key=lambda cls: cls.__name__,
)

#: the passage budgets the roles had before they shared one constructor
MAX_CHARS = {
    LLMAnswerer: 8000,
    LLMContextFilter: 8000,
    LLMGraphLibrarian: 6000,
    LLMKnowledgeUpdater: 6000,
    LLMLibrarian: 6000,
}


def test_the_registry_builds_every_llm_policy_from_structured_role() -> None:
    assert len(LLM_POLICIES) == 19
    for cls in LLM_POLICIES:
        assert issubclass(cls, StructuredRole), cls.__name__
        for wrapped in (cls, falls_back(cls)):
            policy = wrapped("model", max_retries=1, callbacks=("guard",))
            assert (policy.model, policy.max_retries, policy.callbacks) == ("model", 1, ["guard"])


@pytest.mark.parametrize("cls", list(MAX_CHARS), ids=lambda cls: cls.__name__)
def test_passage_roles_keep_their_budget_and_take_it_by_keyword_only(cls: type) -> None:
    assert issubclass(cls, PassageRole)
    assert cls("model").max_chars == MAX_CHARS[cls]
    assert falls_back(cls)("model", 0, (), max_chars=123).max_chars == 123
    assert cls("model").max_chars == MAX_CHARS[cls]  # an instance's budget is its own
    with pytest.raises(TypeError):
        cls("model", 2, (), 123)


def test_the_decomposer_takes_its_repair_by_keyword() -> None:
    repair = object()  # any Decomposer; never called here
    assert LLMDecomposer("model").repair is None
    assert falls_back(LLMDecomposer)("model", repair=repair).repair is repair
