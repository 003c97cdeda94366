"""Checkpoints: every topology's state round-trips through `checkpoint_serializer()` (SQLite and
in memory) with its pydantic types rebuilt and no "unregistered type" event, and the README's
recipe works: resume an interrupted thread, replay from a checkpoint, step the Seeker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from pydantic import BaseModel
from test_topologies import tiny_view

from graphseek.graphs import (
    build_workflow,
    checkpoint_serializer,
    memory_saver,
    sqlite_saver,
    topology_names,
)
from graphseek.state import Context, EvidenceItem, Usage
from graphseek.state.serde import checkpoint_types
from graphseek.tools.graph_access import set_graph_view

QUESTION = "Where did Ada Lovelace's father die?"


class Foreign(BaseModel):
    x: int = 1


@pytest.fixture
def serde_events() -> Iterator[list[dict[str, Any]]]:
    """Every allowlist event LangGraph's serializer emits while the test runs."""
    events: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(lambda e: events.append(dict(e)))
    yield events
    unregister()


@pytest.fixture(scope="module")
def graph_index(tiny_index: Any) -> Any:
    from graphseek.knowledge.index import Index

    index = Index.open(tiny_index.path)
    set_graph_view(index, tiny_view())
    return index


def test_allowlist_names_every_state_model() -> None:
    names = {name for _, name in checkpoint_types()}
    assert {"SubQuestion", "Draft", "EvidenceItem", "Fact", "Gap", "Usage"} <= names
    assert {"Verification", "LogicDraft", "ChannelResult", "Thought"} <= names
    allowed = checkpoint_serializer()._allowed_msgpack_modules
    assert ("graphseek.tools.progressive", "ProgressiveState") in allowed
    assert ("graphseek.tools.progressive", "StageRecord") in allowed


def test_serializer_round_trips_models_and_blocks_strangers(serde_events) -> None:
    serde = checkpoint_serializer()
    value = {"evidence": [EvidenceItem(passage_id="byron", text="t")], "usage": Usage(llm_calls=2)}
    assert serde.loads_typed(serde.dumps_typed(value)) == value
    assert serde_events == []

    # a model that is not graphseek state is not rebuilt on load
    back = serde.loads_typed(serde.dumps_typed(Foreign(x=3)))
    assert not isinstance(back, Foreign)
    assert [e["kind"] for e in serde_events] == ["msgpack_blocked"]


@pytest.mark.slow
@pytest.mark.parametrize("name", topology_names())
def test_every_topology_checkpoints_without_unregistered_types(
    name: str, graph_index: Any, tmp_path: Any, serde_events: list[dict[str, Any]]
) -> None:
    saver = sqlite_saver(tmp_path / "runs.sqlite")
    graph = build_workflow(name).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": f"t-{name}"}, "recursion_limit": 200}
    settings: dict[str, Any] = (
        {"agents": 2, "mode": "competitive"} if name == "knowledge_aware" else {}
    )
    out = graph.invoke(
        {"question": QUESTION},
        config,
        context=Context(index=graph_index, llm="offline", **settings),
    )
    assert out["trace"][-1] == "finalize_answer"
    history = list(graph.get_state_history(config))
    assert len(history) > 3
    # the stored values come back as their models
    last = history[0].values
    assert isinstance(last["usage"], Usage)
    assert all(isinstance(e, EvidenceItem) for e in last.get("evidence", []))
    unexpected = [e for e in serde_events if e["module"].startswith("graphseek")]
    assert unexpected == [], unexpected
    saver.conn.close()


@pytest.mark.slow
def test_plain_saver_reports_graphseek_types_as_unregistered(tiny_index, serde_events) -> None:
    """Without `checkpoint_serializer()`, LangGraph flags the state models (the bug this fixes)."""
    graph = build_workflow("naive").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "plain"}}
    graph.invoke({"question": QUESTION}, config, context=Context(index=tiny_index, llm="offline"))
    list(graph.get_state_history(config))
    kinds = {(e["kind"], e["name"]) for e in serde_events if e["module"].startswith("graphseek")}
    assert ("msgpack_unregistered_allowed", "EvidenceItem") in kinds


@pytest.mark.slow
def test_readme_recipe_resume_replay_and_step_the_seeker(
    tiny_index: Any, tmp_path: Any, serde_events: list[dict[str, Any]]
) -> None:
    """Interrupt before every Seeker decision, resume the thread from a new saver on the same
    file, then replay from a stored checkpoint."""
    db = tmp_path / "runs.sqlite"
    context = Context(index=tiny_index, llm="offline", profile="wikipedia")
    graph = build_workflow("dual_agent").compile(
        checkpointer=sqlite_saver(db), interrupt_before=["decide_action"]
    )
    config = {"configurable": {"thread_id": "seeker"}}
    graph.invoke({"question": QUESTION}, config, context=context)
    state = graph.get_state(config)
    assert state.next == ("decide_action",)
    assert state.values["drafts"], "the Librarian drafted before the Seeker's first decision"

    # a new process: a fresh saver on the same file resumes the interrupted thread
    graph2 = build_workflow("dual_agent").compile(
        checkpointer=sqlite_saver(db), interrupt_before=["decide_action"]
    )
    stops = 0
    while graph2.get_state(config).next:
        graph2.invoke(None, config, context=context)
        stops += 1
        assert stops < 10
    final = graph2.get_state(config).values
    assert final["answer"] == "Missolonghi" and not final["abstained"]

    # replay: run again from the checkpoint just before the first Seeker decision (a graph
    # compiled without the breakpoint on the same file); the replay forks the thread's history
    history = list(graph2.get_state_history(config))
    before = [s for s in history if s.next == ("decide_action",)][-1]
    replay = build_workflow("dual_agent").compile(checkpointer=sqlite_saver(db))
    replayed = replay.invoke(None, before.config, context=context)
    assert replayed["answer"] == final["answer"]
    assert len(list(replay.get_state_history(config))) > len(history)
    assert [e for e in serde_events if e["module"].startswith("graphseek")] == []


def test_memory_saver_uses_the_graphseek_serializer() -> None:
    saver = memory_saver()
    assert ("graphseek.state.models", "EvidenceItem") in saver.serde._allowed_msgpack_modules
