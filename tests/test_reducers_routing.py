"""Reducers and routers are pure functions: tested directly."""

from langgraph.types import Send

from graphseek.graphs.common import abstain
from graphseek.graphs.routing import (
    budget_exhausted,
    fill_placeholders,
    ready_steps,
    route_action,
    route_escalation,
    route_plan,
    route_unless_failed,
)
from graphseek.state import Context, EvidenceItem, Fact, Gap, SubQuestion, Usage
from graphseek.state.reducers import (
    add_usage,
    append_unique,
    dedupe_evidence,
    merge_dicts,
    merge_facts,
    merge_gaps,
)


def test_merge_facts_replaces_by_id_and_keeps_order():
    a, b = Fact(id="f1", text="A"), Fact(id="f2", text="B")
    merged = merge_facts([a, b], [Fact(id="f1", text="A2"), Fact(id="f3", text="C")])
    assert [(f.id, f.text) for f in merged] == [("f1", "A2"), ("f2", "B"), ("f3", "C")]


def test_merge_gaps_marks_resolved():
    merged = merge_gaps(
        [Gap(id="g1", description="x")], [Gap(id="g1", description="x", resolved=True)]
    )
    assert merged == [Gap(id="g1", description="x", resolved=True)]


def test_dedupe_evidence_by_passage_id_first_wins():
    e1 = EvidenceItem(passage_id="p1", sentence="first")
    e2 = EvidenceItem(passage_id="p1", sentence="second")
    e3 = EvidenceItem(passage_id="p2")
    assert dedupe_evidence([e1], [e2, e3]) == [e1, e3]


def test_append_unique_and_usage_and_dicts():
    assert append_unique(["q1"], ["q1", "q2"]) == ["q1", "q2"]
    total = add_usage(Usage(llm_calls=1, prompt_tokens=10), Usage(llm_calls=2, completion_tokens=5))
    assert (total.llm_calls, total.prompt_tokens, total.completion_tokens) == (3, 10, 5)
    assert add_usage(None, None) == Usage()
    assert merge_dicts({"a": [1], "b": 1}, {"a": [2], "b": 2}) == {"a": [1, 2], "b": 2}


def test_budget_exhausted_names_the_budget():
    ctx = Context(max_turns=3, max_llm_calls=5, max_tokens=100)
    assert budget_exhausted(Usage(), 0, ctx) is None
    assert "turn" in budget_exhausted(Usage(), 3, ctx)
    assert "LLM-call" in budget_exhausted(Usage(llm_calls=5), 0, ctx)
    assert "token" in budget_exhausted(Usage(prompt_tokens=60, completion_tokens=40), 0, ctx)


def test_placeholders_and_ready_steps():
    plan = [
        SubQuestion(id=1, question="Who directed Jaws?"),
        SubQuestion(id=2, question="Where was #1 born?", depends_on=[1]),
        SubQuestion(id=3, question="When was Jaws released?"),
    ]
    assert fill_placeholders("Where was #1 born?", {"1": "Steven Spielberg"}) == (
        "Where was Steven Spielberg born?"
    )
    assert fill_placeholders("Where was #2 born?", {"1": "x"}) == "Where was #2 born?"
    assert [s.id for s in ready_steps(plan, {})] == [1, 3]
    ready = ready_steps(plan, {"1": "Steven Spielberg", "3": "1975"})
    assert [(s.id, s.question) for s in ready] == [(2, "Where was Steven Spielberg born?")]


def test_route_plan_fans_out_independent_steps():
    plan = [
        SubQuestion(id=1, question="When did A come out?"),
        SubQuestion(id=2, question="When did B come out?"),
    ]
    sends = route_plan({"question": "q", "plan": plan})
    assert sends == [
        Send("ask_librarian", {"question": "When did A come out?", "step_id": 1}),
        Send("ask_librarian", {"question": "When did B come out?", "step_id": 2}),
    ]
    assert (
        route_plan({"question": "q", "plan": plan, "next_action": "abstain"}) == "finalize_answer"
    )


def test_route_action():
    pending = [{"question": "Who?", "step_id": 2}]
    state = {"question": "q", "next_action": "ask_librarian", "pending": pending}
    assert route_action(state) == [Send("ask_librarian", pending[0])]
    assert route_action({"question": "q", "next_action": "answer"}) == "finalize_answer"
    assert route_action({"question": "q", "next_action": "ask_librarian", "pending": []}) == (
        "finalize_answer"
    )


def test_route_unless_failed_goes_on_until_a_node_gives_up():
    route = route_unless_failed("decompose_question")
    assert route.__name__ == "route_to_decompose_question"
    assert route({"question": "q"}) == "decompose_question"
    assert route({"question": "q", "next_action": "answer"}) == "decompose_question"
    assert route({"question": "q", "next_action": "abstain"}) == "finalize_answer"
    # the shared abstention update is what the router reads as giving up
    update = abstain("decompose_question", "decomposer failed: x", usage=Usage(llm_calls=1))
    assert update == {
        "next_action": "abstain",
        "abstain_reason": "decomposer failed: x",
        "trace": ["decompose_question"],
        "usage": Usage(llm_calls=1),
    }
    assert route({"question": "q", **update}) == "finalize_answer"


def test_route_escalation_climbs_the_stages_once_each():
    def after(stage, sufficient=False):
        return route_escalation(
            {"question": "q", "sufficient": sufficient, "diagnostics": {"stage_reached": stage}}
        )

    assert [after(s) for s in ("local", "bridge", "ppr")] == [
        "retrieve_bridge",
        "retrieve_ppr",
        "generate_answer",
    ]
    assert after("local", sufficient=True) == "generate_answer"
    assert route_escalation({"question": "q"}) == "generate_answer"  # no stage: answer
    assert route_escalation({"question": "q", "next_action": "abstain"}) == "finalize_answer"
