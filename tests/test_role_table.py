"""`graphseek.agents.registry.ROLES`, the one table of roles, is what `build_roles` builds: every
`Roles` policy has a row; offline, each role is its row's offline policy; with a model under
the row's `llm` key, its LLM policy; each policy has its interface's methods, and the LLM policy
reads its prompts from the row's prompt module. docs/python-api.md lists the same rows."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import fields
from pathlib import Path
from typing import get_type_hints

import pytest

from graphseek.agents.registry import ROLES, Roles, build_roles
from graphseek.llm import ScriptedChatModel
from graphseek.state.context import Context

#: `Roles` fields that are not a role's policy
NOT_ROLES = {"offline", "threshold", "reader", "readers"}
DOCS = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def _methods(protocol: type) -> set[str]:
    return {
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }


def test_every_role_has_one_row_with_its_interface() -> None:
    hints = get_type_hints(Roles)
    names = {f.name for f in fields(Roles)} - NOT_ROLES
    assert set(ROLES) == names
    for name, spec in ROLES.items():
        assert hints[name] is spec.protocol, name
        methods = _methods(spec.protocol)
        assert methods, name
        for policy in (spec.llm, spec.offline):
            assert methods <= set(dir(policy)), (name, policy, methods - set(dir(policy)))


def test_each_llm_policy_reads_the_prompt_module_of_its_row() -> None:
    for name, spec in ROLES.items():
        importlib.import_module(spec.prompts)
        source = inspect.getsource(inspect.getmodule(spec.llm))  # type: ignore[arg-type]
        assert spec.prompts in source, (name, spec.prompts)


def test_offline_each_role_is_its_rows_offline_policy() -> None:
    roles = build_roles(Context())
    assert roles.offline == frozenset(ROLES)
    for name, spec in ROLES.items():
        assert type(getattr(roles, name)) is spec.offline, name


@pytest.mark.parametrize("model_key", sorted({spec.model for spec in ROLES.values()}))
def test_a_model_under_a_rows_key_gives_its_llm_policy(model_key: str) -> None:
    roles = build_roles(Context(llm={model_key: ScriptedChatModel(responses=[])}))
    on_model = {name for name, spec in ROLES.items() if spec.model == model_key}
    assert roles.offline == frozenset(ROLES) - on_model
    for name in on_model:
        assert isinstance(getattr(roles, name), ROLES[name].llm), name


def test_the_docs_list_every_role_with_its_two_policies() -> None:
    text = DOCS.read_text()
    for name, spec in ROLES.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}` ")), "")
        assert row, f"docs/python-api.md has no row for {name}"
        for part in (spec.llm.__name__, spec.offline.__name__, spec.prompts.rsplit(".", 1)[1]):
            assert part in row, (name, part, row)
