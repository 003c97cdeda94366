"""`Roles` are built once per run (per `Context` object), not once per node."""

from __future__ import annotations

import gc

import pytest

import graphseek.agents.registry as registry
from graphseek.state.context import Context


def test_one_roles_object_per_context() -> None:
    first, second = Context(), Context()
    roles = registry.get_roles(first)
    assert registry.get_roles(first) is roles
    assert registry.get_roles(second) is not roles
    key = id(first)
    del first
    gc.collect()
    assert key not in registry._RUN_ROLES  # the entry goes with its run


@pytest.mark.parametrize("topology", ["dual_agent", "adaptive"])
def test_a_run_builds_its_roles_once(
    tiny_index, monkeypatch: pytest.MonkeyPatch, topology: str
) -> None:
    from graphseek.api import ask

    calls: list[int] = []
    build = registry.build_roles

    def counting(context: Context) -> registry.Roles:
        calls.append(id(context))
        return build(context)

    monkeypatch.setattr(registry, "build_roles", counting)
    result = ask(tiny_index, "Where did Ada Lovelace's father die?", topology=topology)
    assert len(result.trace) > 3  # several nodes asked for their roles
    assert len(calls) == 1
