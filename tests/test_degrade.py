"""Degrade instead of abstaining (issue 25, item 7): with `on_model_failure="offline"` a role
whose model still fails after its retries falls back to its offline policy for that step, noted
in `diagnostics.degraded`, the failed calls charged; "abstain" (the default) ends the run."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from graphseek.agents.clarifier import LLMClarifier
from graphseek.agents.planner import LLMPlanner
from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM
from graphseek.agents.prompts.librarian import LIBRARIAN_TOOLS_SYSTEM
from graphseek.agents.prompts.seeker import SEEKER_SYSTEM
from graphseek.agents.registry import build_roles
from graphseek.agents.roles import Step
from graphseek.agents.structured_role import FAILURES_BEFORE_OFFLINE, falls_back, with_fallback
from graphseek.errors import BudgetExceededError, ContextError
from graphseek.graphs import get_workflow
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context

QUESTION = "Where did Ada Lovelace's father die?"
PLAN = {
    "reason": "the father first, then where he died",
    "sub_questions": [
        {"id": 1, "question": "Who is the father of Ada Lovelace?", "depends_on": []},
        {"id": 2, "question": "Where did #1 die?", "depends_on": [1]},
    ],
}
LIBRARIAN = {
    "Who is the father of Ada Lovelace?": ("Lord Byron", "ada"),
    "Where did Lord Byron die?": ("Missolonghi", "byron"),
}


def model_with_broken_seeker() -> ScriptedChatModel:
    """Every role answers well, but the Seeker's every reply is malformed."""

    def respond(messages: list[Any]) -> Any:
        system = messages[0].content
        if system == CLARIFIER_SYSTEM:
            return {"reason": "fine", "question": QUESTION}
        if system == DECOMPOSER_SYSTEM:
            return PLAN
        if system == LIBRARIAN_TOOLS_SYSTEM:
            question = messages[1].content.split("\n", 1)[0].removeprefix("Question: ")
            answer, pid = LIBRARIAN[question]
            if not any(isinstance(m, ToolMessage) for m in messages):
                call = {"name": "context_search", "args": {"query": question}, "id": "s1"}
                return AIMessage(content="", tool_calls=[call])
            finish = {"answer": answer, "passage_ids": [pid], "reason": "stated"}
            return AIMessage(content="", tool_calls=[{"name": "finish", "args": finish, "id": "f"}])
        if system == SEEKER_SYSTEM:
            return "I think we should look further, maybe."
        raise AssertionError(f"unexpected prompt: {system[:60]}")

    return ScriptedChatModel(responses=respond)


def stream(context: Context) -> tuple[list[str], dict[str, Any]]:
    nodes: list[str] = []
    final: dict[str, Any] = {}
    for mode, payload in get_workflow("dual_agent").stream(
        {"question": QUESTION}, context=context, stream_mode=["updates", "values"]
    ):
        if mode == "updates":
            nodes.extend(payload)
        else:
            final = payload
    return nodes, final


def seeker_calls(model: ScriptedChatModel) -> int:
    return sum(m[0].content == SEEKER_SYSTEM for m in model.calls)


def test_a_failing_seeker_falls_back_to_its_offline_policy(tiny_index):
    model = model_with_broken_seeker()
    context = Context(
        index=tiny_index, llm=model, retriever="bm25", max_retries=2, on_model_failure="offline"
    )
    nodes, final = stream(context)
    assert nodes == [
        "clarify_question",
        "decompose_question",
        "ask_librarian",
        "decide_action",
        "ask_librarian",
        "decide_action",
        "finalize_answer",
    ]
    assert final["answer"] == "Missolonghi" and final["abstained"] is False
    # the offline Seeker asked for step 2 with the father's name, then answered
    assert [h["action"] for h in final["history"] if h.get("role") == "seeker"] == [
        "ask_librarian",
        "answer",
    ]
    assert final["query_history"][-1] == "Where did Lord Byron die?"
    degraded = final["diagnostics"]["degraded"]
    assert len(degraded) == 2 and all(d.startswith("seeker: ") for d in degraded)
    # each turn: one attempt and two retries, all charged
    assert seeker_calls(model) == 6
    # decompose, 2 Librarians x (search + finish), 6 Seeker attempts (a question is not clarified)
    assert final["usage"].llm_calls == len(model.calls) == 1 + 2 * 2 + 6


def test_abstain_still_abstains(tiny_index):
    model = model_with_broken_seeker()
    context = Context(
        index=tiny_index, llm=model, retriever="bm25", max_retries=2, on_model_failure="abstain"
    )
    nodes, final = stream(context)
    assert nodes[-2:] == ["decide_action", "finalize_answer"]
    assert nodes.count("decide_action") == 1
    assert final["abstained"] and final["answer"] == ""
    assert final["abstain_reason"].startswith("seeker failed")
    assert "degraded" not in final.get("diagnostics", {})
    assert seeker_calls(model) == 3
    assert final["usage"].llm_calls == len(model.calls)


def test_the_default_is_abstain():
    assert Context().on_model_failure == "abstain"
    with pytest.raises(ContextError, match="on_model_failure"):
        Context(on_model_failure="retry")  # type: ignore[arg-type]


class _Offline:
    def clarify(self, question: str) -> Step[str]:
        return Step(f"offline: {question}")


def test_falls_back_keeps_the_class_charges_the_failure_and_lets_budgets_end_the_run():
    model = ScriptedChatModel(responses=["not json"] * 3)
    policy = with_fallback(falls_back(LLMClarifier)(model, max_retries=2), "clarifier", _Offline)
    assert isinstance(policy, LLMClarifier)
    step = policy.clarify("Ada Lovelace's father died where")
    assert step.value == "offline: Ada Lovelace's father died where"
    assert step.usage.llm_calls == 3
    assert step.degraded[0].startswith("clarifier: ")
    # a spent budget is not degraded
    broke = ScriptedChatModel(responses=[BudgetExceededError("LLM-call budget exhausted")])
    spent = with_fallback(falls_back(LLMClarifier)(broke, max_retries=0), "clarifier", _Offline)
    with pytest.raises(BudgetExceededError):
        spent.clarify("Ada Lovelace's father died where")


def test_registry_wires_the_fallback_only_when_asked(tiny_index):
    model = ScriptedChatModel(responses=[])
    plain = build_roles(Context(index=tiny_index, llm=model))
    degrading = build_roles(Context(index=tiny_index, llm=model, on_model_failure="offline"))
    assert getattr(plain.seeker, "fallback", None) is None
    assert degrading.seeker.fallback.role == "seeker"  # type: ignore[attr-defined]
    # the tool-calling loops still recognise the LLM planner
    assert isinstance(degrading.planner, LLMPlanner)
    assert degrading.planner.fallback.role == "planner"  # type: ignore[attr-defined]


# -- every topology against a server whose every reply is bad ------------------------------------

#: the roles each topology's run falls back for, every structured and tool-calling reply bad
#: (react's thinker and dual_agent's Librarian ("graph_librarian") call tools: the step is taken
#: by the role's offline policy; knowledge_aware's planner both calls tools and plans in JSON)
FALLS_BACK = {
    "naive": {"librarian"},
    "react": {"thinker"},
    "dual_agent": {"decomposer", "graph_librarian", "seeker"},
    # (its offline updater resolves the gap, as the offline run does, so the run reaches the
    # answerer, whose model fails too)
    "knowledge_aware": {"planner", "knowledge_updater", "context_filter", "answerer"},
    "higra_retriever": {"graph_librarian"},
    "adaptive": {"coverage", "sufficiency", "graph_librarian", "triple_checker"},
    "deep_search": {"decomposer", "grounder", "refiner", "graph_librarian", "drafter",
                    "evidence_verifier", "expander"},
}  # fmt: skip
BAD_REPLIES = {
    "malformed": {"content": "I am not sure, let me think about it."},
    "http500": {"status": 500, "error": "internal server error"},
}


def ask_bad_server(
    monkeypatch: pytest.MonkeyPatch, index: Any, topology: str, fault: str, on_failure: str
) -> tuple[Any, int]:
    """`topology` on a server whose every reply is `fault`; the result and the requests made."""
    from fake_openai import FakeOpenAIServer, Reply

    from graphseek.api import ask
    from graphseek.llm import clear_model_cache

    for name in ("GRAPHSEEK_LLM", "GRAPHSEEK_LLM_CACHE", "OPENAI_API_KEY", "GRAPHSEEK_BASE_URL",
                 "OPENAI_API_BASE"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "1")
    bad = Reply(**BAD_REPLIES[fault])  # type: ignore[arg-type]
    server = FakeOpenAIServer(lambda request: bad)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    clear_model_cache()
    try:
        with server:
            result = ask(
                index, QUESTION, topology=topology, llm="openai:bad", on_model_failure=on_failure
            )
    finally:
        clear_model_cache()
    return result, len(server.requests)


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("fault", sorted(BAD_REPLIES))
@pytest.mark.parametrize("topology", sorted(FALLS_BACK))
def test_every_topology_degrades_to_its_offline_policies(monkeypatch, tiny_index, topology, fault):
    result, requests = ask_bad_server(monkeypatch, tiny_index, topology, fault, "offline")
    assert requests  # the model was asked
    # an answer or an abstention of the offline policies, not a "model failed" abstention
    assert result.abstained == (result.answer == "")
    assert "failed" not in result.abstain_reason, result.abstain_reason
    assert not result.diagnostics.get("errors"), result.diagnostics
    degraded = result.diagnostics["degraded"]
    assert {note.split(":", 1)[0] for note in degraded} == FALLS_BACK[topology]
    why = "malformed reply" if fault == "malformed" else "HTTP 500"
    assert all(why in note for note in degraded), degraded
    # the failed calls are charged
    assert result.usage.llm_calls == requests
    # a role whose model failed FAILURES_BEFORE_OFFLINE times is not asked again in the run
    # (one more failure each where parallel branches ask at once); 3 attempts per call
    attempts = 3
    assert requests <= (FAILURES_BEFORE_OFFLINE + 1) * attempts * len(FALLS_BACK[topology])
    assert any("model not asked after" in note for note in degraded) or requests <= (
        FAILURES_BEFORE_OFFLINE * attempts * len(FALLS_BACK[topology])
    )


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize(
    ("topology", "role"),
    [("react", "thinker"), ("dual_agent", "decomposer"), ("naive", "librarian")],
)
def test_abstain_ends_the_run_at_the_first_failed_step(monkeypatch, tiny_index, topology, role):
    result, _ = ask_bad_server(monkeypatch, tiny_index, topology, "malformed", "abstain")
    assert result.abstained and result.abstain_reason.startswith(f"{role} failed: malformed")
    assert "degraded" not in result.diagnostics


# -- a degraded draft is judged as the offline reader judges it ----------------------------------


def test_rescaled_confidence_keeps_order_and_the_decision_at_the_point() -> None:
    from graphseek.agents.structured_role import rescale_confidence

    point, target = 0.5, 0.15
    assert rescale_confidence(point, point, target) == pytest.approx(target)
    assert rescale_confidence(0.0, point, target) == 0.0
    assert rescale_confidence(1.0, point, target) == pytest.approx(1.0)
    grid = [i / 20 for i in range(21)]
    mapped = [rescale_confidence(c, point, target) for c in grid]
    assert mapped == sorted(mapped)
    # below the offline point stays below the run's threshold, at or above stays at or above
    assert all((m < target) == (c < point) for c, m in zip(grid, mapped, strict=True))


@pytest.mark.enable_socket
@pytest.mark.allow_hosts(["127.0.0.1"])
@pytest.mark.parametrize("topology", ["naive", "higra_retriever"])
def test_a_degraded_librarian_answers_only_what_the_offline_run_answers(
    monkeypatch, tiny_index, topology
):
    """The run's threshold is set for a model's own confidence; the offline Librarian that
    answers for a failed model call is judged at its calibrated point, so a draft the offline
    run abstains on is not answered just because the model failed."""
    from graphseek.api import ask

    offline = ask(tiny_index, QUESTION, topology=topology, llm="offline")
    degraded, _ = ask_bad_server(monkeypatch, tiny_index, topology, "malformed", "offline")
    assert degraded.diagnostics.get("degraded")
    assert degraded.abstained == offline.abstained
    assert degraded.answer == offline.answer
