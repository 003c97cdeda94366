"""`Roles` and the budget guard are built once per run (in the scope its `Context` carries), not
once per node; no process-wide table keeps them."""

from __future__ import annotations

import gc
import weakref

import pytest

import graphseek.agents.registry as registry
from graphseek.state.context import Context
from graphseek.state.run_scope import run_scope


def test_one_roles_object_per_context() -> None:
    first, second = Context(), Context()
    roles = registry.get_roles(first)
    assert registry.get_roles(first) is roles
    assert registry.get_roles(second) is not roles
    scope = run_scope(first)
    assert scope is run_scope(first) and "roles" in scope
    alive = weakref.ref(roles)
    del first, scope, roles
    gc.collect()
    assert alive() is None  # the roles go with their run


def test_the_budget_guard_is_the_runs_and_reaches_its_llm_policies() -> None:
    from graphseek.llm import ScriptedChatModel
    from graphseek.llm.budget import guard_for

    context = Context(llm=ScriptedChatModel(responses=[]), max_llm_calls=3)
    guard = guard_for(context)
    assert guard is not None and guard is guard_for(context)
    assert guard.max_llm_calls == 3 and guard_for(Context(max_llm_calls=3)) is not guard
    roles = registry.get_roles(context)
    assert roles.seeker.callbacks == [guard] and roles.librarian.callbacks == [guard]


def test_a_copied_context_is_another_run() -> None:
    import copy
    import pickle

    context = Context()
    roles = registry.get_roles(context)
    assert registry.get_roles(copy.copy(context)) is roles  # a shallow copy: the same object's run
    assert "roles" not in run_scope(copy.deepcopy(context))
    assert "roles" not in run_scope(pickle.loads(pickle.dumps(context)))
    assert copy.deepcopy(context) == context  # the scope is not a setting


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


def test_tool_refusals_are_per_model_for_the_process_held_weakly() -> None:
    """A server's refusal of tools outlives the run (the next run takes the JSON path at once),
    is matched by the model object, not by equal settings, and goes with the model."""
    from graphseek.agents.tool_calling import RefusedModels
    from graphseek.llm import ScriptedChatModel

    refused = RefusedModels()
    model, twin = ScriptedChatModel(responses=[]), ScriptedChatModel(responses=[])
    refused.add(model)
    refused.add(model)
    assert model in refused and twin not in refused
    alive = weakref.ref(model)
    del model
    gc.collect()
    assert alive() is None and refused._refs == []
