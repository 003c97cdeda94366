"""The knowledge_aware (KAIR) workflow: scripted single, competitive and collaborative runs, the
budget, repeated queries, exact-substring filtering, the offline reasoner and the graph shape."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphseek.agents.kair import (
    accept_update,
    enforce_exact_match,
    is_repeat,
    ready_gaps,
    split_segments,
)
from graphseek.agents.prompts.answerer import ANSWERER_SYSTEM
from graphseek.agents.prompts.context_filter import CONTEXT_FILTER_SYSTEM
from graphseek.agents.prompts.knowledge_updater import KNOWLEDGE_UPDATER_SYSTEM
from graphseek.agents.prompts.planner import (
    PLANNER_INIT_SYSTEM,
    PLANNER_SYSTEM,
    PLANNER_TOOLS_SYSTEM,
)
from graphseek.agents.roles import (
    FactProposal,
    KnowledgeDelta,
    KnowledgeView,
    QueryPlan,
    Segment,
    Step,
)
from graphseek.api import ask
from graphseek.graphs import build_workflow, get_workflow
from graphseek.graphs.knowledge_aware import plan_new_query, suggester_retriever
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context, EvidenceItem, Fact, Gap

QUESTION = "Where did Ada Lovelace's father die?"
GAPS = ["Who is the father of Ada Lovelace?", "Where did #1 die?"]
Q_FATHER = "Who is the father of Ada Lovelace?"
Q_DEATH = "Where did Lord Byron die?"
ADA_CHILD = "She was the only legitimate child of the poet Lord Byron and Annabella Milbanke."
BYRON_DIED = (
    "He was born in London in 1788 and died of a fever at Missolonghi in 1824 while fighting "
    "in the Greek War of Independence."
)
SNAPSHOT = Path(__file__).parent / "snapshots" / "knowledge_aware.mmd"


def fact(statement: str, quote: str, pid: str, gap: str, answer: str = "") -> dict[str, Any]:
    return {
        "statement": statement,
        "quote": quote,
        "passage_ids": [pid],
        "gap_id": gap,
        "answer": answer,
    }


FATHER_FACT = fact("Ada Lovelace's father is Lord Byron.", ADA_CHILD, "ada", "1", "Lord Byron")
DEATH_FACT = fact("Lord Byron died at Missolonghi.", BYRON_DIED, "byron", "2", "Missolonghi")
ANSWER = {
    "reasoning": "Byron is the father; he died at Missolonghi.",
    "action": "answer",
    "answer": "Missolonghi",
    "passage_ids": ["byron", "ada"],
    "confidence": 0.9,
}


def _field(human: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}(.*)$", human, re.M)
    return match.group(1).strip() if match else ""


def scripted(
    plan: Callable[[str], dict[str, Any]],
    update: dict[str, list[dict[str, Any]]],
    keep: Callable[[str], list[dict[str, str]]] | None = None,
    answer: dict[str, Any] | None = None,
) -> ScriptedChatModel:
    """A model that routes by role prompt: `plan(human)` for the planner (a suggester's tool
    call: its query as `search_gap`, then `stop_searching` once a search was refused),
    `update[query]` the facts for a search, `keep(human)` the filter's segments, `answer` the
    answerer's reply."""

    def respond(messages: list[Any]) -> dict[str, Any] | AIMessage:
        system, human = messages[0].content, messages[1].content
        if system == PLANNER_INIT_SYSTEM:
            return {"reasoning": "father first, then his place of death", "gaps": GAPS}
        if system == PLANNER_SYSTEM:
            return plan(human)
        if system == PLANNER_TOOLS_SYSTEM:
            return suggester_call(plan, human, messages)
        if system == KNOWLEDGE_UPDATER_SYSTEM:
            query = _field(human, "Search just made:")
            return {"reasoning": "read the passages", "facts": update.get(query, [])}
        if system == CONTEXT_FILTER_SYSTEM:
            return {"reasoning": "keep what matters", "segments": keep(human) if keep else []}
        if system == ANSWERER_SYSTEM:
            return answer or ANSWER
        raise AssertionError(f"unexpected prompt: {system[:60]}")

    return ScriptedChatModel(responses=respond)


def suggester_call(
    plan: Callable[[str], dict[str, Any]], human: str, messages: list[Any]
) -> AIMessage:
    """A tool-calling agent's reply: its planned query as a `search_gap` call; after a refused
    search, the next plan, or `stop_searching` when the plan repeats the refused query."""
    agent = _suggester(human)
    tries = sum(isinstance(m, AIMessage) for m in messages)
    reply = plan(human)
    refused = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    if refused and is_repeat(reply["query"], [refused[-1].tool_calls[0]["args"]["query"]]):
        call = {"name": "stop_searching", "args": {"reason": "refused"}, "id": f"stop{agent}"}
        return AIMessage(content="", tool_calls=[call])
    args = {"query": reply["query"], "gap_ids": reply["target_gap_ids"]}
    call_id = f"s{agent}-{len(model_turns(human))}-{tries}"
    return AIMessage(content=reply["reasoning"], tool_calls=[{"name": "search_gap", "args": args,
                                                              "id": call_id}])  # fmt: skip


def model_turns(human: str) -> list[str]:
    """The queries of the history a suggester's prompt lists."""
    return [q for q in human.split("Query history:", 1)[-1].split("\n") if q.startswith("- ")]


def query_reply(query: str, gap: str = "1") -> dict[str, Any]:
    return {"reasoning": "target the first open gap", "target_gap_ids": [gap], "query": query}


def keep_known_sentences(human: str) -> list[dict[str, str]]:
    """The filter keeps the two decisive sentences when they are among the candidates."""
    out = []
    if ADA_CHILD in human:
        out.append({"passage_id": "ada", "text": ADA_CHILD})
    if BYRON_DIED in human:
        out.append({"passage_id": "byron", "text": BYRON_DIED})
    return out


def run(graph: Any, context: Context) -> tuple[list[str], dict[str, Any]]:
    """Stream a run; return the nodes visited (in order) and the final state values."""
    nodes: list[str] = []
    final: dict[str, Any] = {}
    for mode, payload in graph.stream(
        {"question": QUESTION}, context=context, stream_mode=["updates", "values"]
    ):
        if mode == "updates":
            nodes.extend(payload)
        else:
            final = payload
    return nodes, final


class NoToolsModel(ScriptedChatModel):
    """A chat model without tool calling (the JSON path)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def planner_prompts(model: ScriptedChatModel) -> list[str]:
    planners = (PLANNER_SYSTEM, PLANNER_TOOLS_SYSTEM)
    return [m[1].content for m in model.calls if m[0].content in planners]


# -- single agent -----------------------------------------------------------------------------


def test_single_agent_scripted_run(tiny_index):
    def plan(human: str) -> dict[str, Any]:
        if "(resolved: Lord Byron)" in human:
            return query_reply(Q_DEATH, "2")
        return query_reply(Q_FATHER)

    model = scripted(plan, {Q_FATHER: [FATHER_FACT], Q_DEATH: [DEATH_FACT]}, keep_known_sentences)
    nodes, final = run(
        get_workflow("knowledge_aware"), Context(index=tiny_index, llm=model, retriever="bm25")
    )
    assert nodes == [
        "initialize_caches",
        "plan_query",
        "retrieve_documents",
        "update_knowledge",
        "filter_context",
        "plan_query",
        "retrieve_documents",
        "update_knowledge",
        "filter_context",
        "compose_answer",
        "finalize_answer",
    ]
    # the trace lists the workflow's own nodes; the ToolNode (retrieve_documents) shows in
    # the stream and in `messages`: one search_gap call and its result per round
    assert final["trace"] == [n for n in nodes if n != "retrieve_documents"]
    calls = [c for m in final["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [(c["name"], c["args"]["query"]) for c in calls] == [
        ("search_gap", Q_FATHER),
        ("search_gap", Q_DEATH),
    ]
    results = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert [r.artifact["retriever"] for r in results] == ["bm25", "bm25"]
    assert final["answer"] == "Missolonghi" and final["abstained"] is False
    assert [e.passage_id for e in final["evidence"]][:2] == ["byron", "ada"]  # then related
    # Known: two facts with their passage ids; ids name the gap each fact addresses
    assert [(f.text, f.passage_ids, f.id.split("/")[0]) for f in final["known"]] == [
        ("Ada Lovelace's father is Lord Byron.", ["ada"], "1"),
        ("Lord Byron died at Missolonghi.", ["byron"], "2"),
    ]
    assert final["known"][1].source == BYRON_DIED  # an exact quote is kept
    assert [(g.id, g.resolved) for g in final["required"]] == [("1", True), ("2", True)]
    assert final["step_answers"] == {"1": "Lord Byron", "2": "Missolonghi"}
    assert final["query_history"] == [Q_FATHER, Q_DEATH]
    # the refined context: segments that are exact substrings of their passages
    assert [(e.passage_id, e.sentence) for e in final["refined_context"]] == [
        ("ada", ADA_CHILD),
        ("byron", BYRON_DIED),
    ]
    assert all(e.sentence in e.text for e in final["refined_context"])
    # the second plan saw the first fact and the resolved gap with its answer
    assert "Ada Lovelace's father is Lord Byron. [ada]" in planner_prompts(model)[1]
    assert final["turn"] == 2 and final["diagnostics"]["rounds"] == 2
    # initial gaps + 2 × (plan, update, filter) + answer
    assert final["usage"].llm_calls == 8 == len(model.calls)
    assert final["usage"].prompt_tokens > 0


def test_planner_repeating_a_query_is_refused_by_the_tool_and_asked_again(tiny_index):
    replies = iter(
        [
            query_reply(Q_FATHER),
            query_reply("who is the FATHER of Ada Lovelace"),  # a repeat, up to case/punctuation
            query_reply(Q_DEATH, "2"),
        ]
    )
    model = scripted(lambda human: next(replies), {Q_FATHER: [FATHER_FACT], Q_DEATH: [DEATH_FACT]})
    nodes, final = run(
        get_workflow("knowledge_aware"), Context(index=tiny_index, llm=model, retriever="bm25")
    )
    assert final["answer"] == "Missolonghi"
    assert final["query_history"] == [Q_FATHER, Q_DEATH]
    assert final["diagnostics"]["rejected_queries"] == ["who is the FATHER of Ada Lovelace"]
    # the refusal is a ToolMessage; the planner, called again, saw it and searched anew
    refused = [m for m in final["messages"] if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(refused) == 1 and "already searched" in refused[0].text
    third = [m for m in model.calls if m[0].content == PLANNER_TOOLS_SYSTEM][2]
    assert any(isinstance(m, ToolMessage) and "already searched" in m.text for m in third)
    assert len(planner_prompts(model)) == 3
    # plan -> tools (refused) -> plan again -> tools, inside the second round
    assert nodes[5:10] == [
        "plan_query",
        "retrieve_documents",
        "plan_query",
        "retrieve_documents",
        "update_knowledge",
    ]


def test_json_planner_repeating_a_query_is_rejected_and_asked_again(tiny_index):
    replies = iter(
        [
            query_reply(Q_FATHER),
            query_reply("who is the FATHER of Ada Lovelace"),
            query_reply(Q_DEATH, "2"),
        ]
    )
    base = scripted(lambda human: next(replies), {Q_FATHER: [FATHER_FACT], Q_DEATH: [DEATH_FACT]})
    model = NoToolsModel(responses=base.responses)
    nodes, final = run(
        get_workflow("knowledge_aware"), Context(index=tiny_index, llm=model, retriever="bm25")
    )
    assert final["answer"] == "Missolonghi"
    assert final["query_history"] == [Q_FATHER, Q_DEATH]
    assert final["diagnostics"]["rejected_queries"] == ["who is the FATHER of Ada Lovelace"]
    assert any("JSON path" in n for n in final["diagnostics"]["notes"])
    prompts = planner_prompts(model)
    assert len(prompts) == 3
    assert _field(prompts[2], "Rejected this turn (already searched):") == (
        "who is the FATHER of Ada Lovelace"
    )
    assert nodes.count("plan_query") == 2  # the re-ask happens inside the planning step
    # the JSON plans are emitted as the same tool calls
    calls = [c for m in final["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert [c["args"]["query"] for c in calls] == [Q_FATHER, Q_DEATH]


def test_plan_new_query_gives_up_when_every_proposal_repeats():
    class Stubborn:
        calls = 0

        def initial_gaps(self, question: str) -> Step[list[Gap]]:
            raise NotImplementedError

        def plan(self, view: KnowledgeView, rejected: Any = ()) -> Step[QueryPlan]:
            self.calls += 1
            return Step(QueryPlan(query=f"  {Q_FATHER.upper()} ", gap_ids=("1",)))

    planner = Stubborn()
    view = KnowledgeView(question=QUESTION, query_history=[Q_FATHER])
    plan, _, rejected = plan_new_query(planner, view, attempts=3)
    assert plan.query == "" and "already searched" in plan.reason
    assert planner.calls == 3 and len(rejected) == 3


def test_budget_exhausted_with_open_gaps_abstains(tiny_index):
    counter = iter(range(100))
    model = scripted(lambda human: query_reply(f"Ada Lovelace family, attempt {next(counter)}"), {})
    # the compiled graph's own recursion limit lets the default six rounds run
    out = get_workflow("knowledge_aware").invoke(
        {"question": QUESTION}, context=Context(index=tiny_index, llm=model, retriever="bm25")
    )
    assert out["abstained"] and out["answer"] == ""
    assert "turn budget exhausted (6/6 turns)" in out["abstain_reason"]
    assert "2 Required gap(s) still open" in out["abstain_reason"]
    assert out["trace"] == [
        "initialize_caches",
        *["plan_query", "update_knowledge", "filter_context"] * 6,
        "compose_answer",
        "finalize_answer",
    ]
    assert not any(m[0].content == ANSWERER_SYSTEM for m in model.calls)  # never asked


def test_llm_call_budget_stops_the_loop(tiny_index):
    counter = iter(range(100))
    model = scripted(lambda human: query_reply(f"Ada Lovelace family, attempt {next(counter)}"), {})
    result = ask(tiny_index, QUESTION, topology="knowledge_aware", llm=model, max_llm_calls=5)
    assert result.abstained and "LLM-call budget exhausted" in result.abstain_reason
    assert result.usage.llm_calls == 5  # the run's BudgetGuard checks before every call


def test_unknown_mode_is_rejected(tiny_index):
    with pytest.raises(ValueError, match="Unknown knowledge_aware mode 'swarm'"):
        ask(tiny_index, QUESTION, topology="knowledge_aware", llm="offline", mode="swarm")


# -- contextual filtering ---------------------------------------------------------------------


def test_context_filter_drops_segments_that_are_not_exact_substrings(tiny_index, tiny_passages):
    ada = next(p for p in tiny_passages if p.id == "ada")
    segments = [
        {"passage_id": "ada", "text": ADA_CHILD},
        {"passage_id": "ada", "text": "Ada's father was the poet Lord Byron."},  # paraphrase
        {"passage_id": "nowhere", "text": ADA_CHILD},  # not a candidate passage
    ]
    model = scripted(lambda human: query_reply(Q_FATHER), {}, keep=lambda human: segments)
    graph = build_workflow("knowledge_aware").compile(
        checkpointer=InMemorySaver(), interrupt_after=["filter_context"]
    )
    config = {"configurable": {"thread_id": "filter"}}
    graph.update_state(
        config,
        {
            "question": QUESTION,
            "required": [Gap(id="1", description=GAPS[0]), Gap(id="2", description=GAPS[1])],
            "known": [
                Fact(id="1/x", text="Ada Lovelace's father is Lord Byron.", passage_ids=["ada"])
            ],
            "passages": [EvidenceItem(passage_id="ada", title=ada.title, text=ada.text)],
            "refined_context": [],
            "turn": 0,
        },
        as_node="update_knowledge",
    )
    graph.invoke(None, config, context=Context(index=tiny_index, llm=model))
    state = graph.get_state(config)
    assert state.next == ("plan_query",)
    values = state.values
    assert [(e.passage_id, e.sentence) for e in values["refined_context"]] == [("ada", ADA_CHILD)]
    assert values["diagnostics"]["dropped_segments"] == [
        "ada: Ada's father was the poet Lord Byron.",
        f"nowhere: {ADA_CHILD}",
    ]
    assert values["turn"] == 1


def test_enforce_exact_match_and_sentence_splitting():
    text = "Alpha is first. Beta (born 1900) is second! Gamma ends."
    pieces = split_segments(text)
    assert pieces == ["Alpha is first.", "Beta (born 1900) is second!", "Gamma ends."]
    assert all(p in text for p in pieces)
    kept, dropped = enforce_exact_match(
        [Segment("p", "Beta (born 1900) is second!"), Segment("p", "Beta is second."),
         Segment("p", "Beta (born 1900) is second!")],
        {"p": text},
    )  # fmt: skip
    assert [s.text for s in kept] == ["Beta (born 1900) is second!"]
    assert dropped == ["p: Beta is second."]


def test_knowledge_update_admits_only_supported_relevant_facts():
    required = [Gap(id="1", description=GAPS[0]), Gap(id="2", description=GAPS[1])]
    delta = KnowledgeDelta(
        facts=[
            FactProposal(Fact(id="x", text="Byron is the father.", passage_ids=["ada"]), "1", "Lord Byron"),
            FactProposal(Fact(id="x", text="Unsupported claim.", passage_ids=["zzz"]), "2", "Rome"),
            FactProposal(Fact(id="x", text="Off-topic fact.", passage_ids=["ada"]), "9", ""),
        ],
        new_gaps=["Who is the mother of Ada Lovelace?", GAPS[0]],
    )  # fmt: skip
    out = accept_update(required, delta, {"ada": "Ada text"})
    assert [f.text for f in out.facts] == ["Byron is the father."]
    assert out.facts[0].id.startswith("1/") and out.facts[0].passage_ids == ["ada"]
    assert out.answers == {"1": "Lord Byron"} and out.resolved == ["1"]
    assert [g.description for g in out.gaps if not g.resolved] == [
        "Who is the mother of Ada Lovelace?"
    ]
    assert len(out.rejected) == 2
    assert [g.id for g in ready_gaps(required, {"1": "Lord Byron"})] == ["1", "2"]
    assert [g.id for g in ready_gaps(required, {})] == ["1"]
    assert is_repeat("the father of Ada?", ["Father of  ada"])


# -- multi-agent ------------------------------------------------------------------------------


def _suggester(human: str) -> int:
    return int(re.search(r"You are suggester (\d+) of", human).group(1)) - 1


def test_competitive_second_suggester_wins_and_ends_the_loop(tiny_index):
    keyword = "Ada Lovelace father place of death"
    model = scripted(
        lambda human: query_reply([Q_FATHER, keyword][_suggester(human)]),
        {Q_FATHER: [FATHER_FACT], keyword: [FATHER_FACT, DEATH_FACT]},
        keep_known_sentences,
    )
    nodes, final = run(
        get_workflow("knowledge_aware"),
        Context(
            index=tiny_index, llm=model, retriever="bm25", top_k=8, agents=2, mode="competitive"
        ),
    )
    assert nodes == [
        "initialize_caches",
        "suggest",
        "suggest",
        "select_proposal",
        "filter_context",
        "compose_answer",
        "finalize_answer",
    ]
    assert final["diagnostics"]["suggester_winners"] == [1]
    assert final["answer"] == "Missolonghi"
    # the winner's caches became the shared ones; the loser keeps its private caches
    assert [f.text for f in final["known"]] == [
        "Ada Lovelace's father is Lord Byron.",
        "Lord Byron died at Missolonghi.",
    ]
    caches = final["suggester_caches"]
    assert [g.resolved for g in caches["0"]["required"]] == [True, False]
    assert caches["0"]["queries"] == [Q_FATHER] and caches["1"]["queries"] == [keyword]
    assert final["query_history"] == [Q_FATHER, keyword]
    assert final["proposals"] == []
    assert [e.passage_id for e in final["refined_context"]] == ["ada", "byron"]
    # suggesters search with different retrievers
    assert [suggester_retriever(i, Context(retriever="bm25")) for i in range(4)] == [
        "bm25",
        "dense",
        "hybrid",
        "bm25",
    ]


def test_competitive_ties_go_to_more_known_facts_then_lower_index(tiny_index):
    model = scripted(
        lambda human: query_reply(["q zero about Ada", "q one about Ada"][_suggester(human)]),
        {"q zero about Ada": [FATHER_FACT], "q one about Ada": [FATHER_FACT]},
        keep_known_sentences,
        answer=ANSWER,
    )
    result = ask(
        tiny_index,
        QUESTION,
        topology="knowledge_aware",
        llm=model,
        agents=2,
        mode="competitive",
        max_turns=1,
    )
    assert result.diagnostics["suggester_winners"] == [0]  # equal: lower index
    assert result.abstained and "1 Required gap(s) still open" in result.abstain_reason


def test_collaborative_suggesters_share_one_known_cache(tiny_index):
    mother = fact(
        "Ada Lovelace's mother is Annabella Milbanke.", ADA_CHILD, "ada", "1"
    )  # narrows gap 1 without resolving it

    def plan(human: str) -> dict[str, Any]:
        agent = _suggester(human)
        if "(resolved: Lord Byron)" in human:
            return query_reply([Q_DEATH, "Lord Byron death"][agent], "2")
        return query_reply([Q_FATHER, "Ada Lovelace parents"][agent])

    model = scripted(
        plan,
        {Q_FATHER: [FATHER_FACT], "Ada Lovelace parents": [mother], Q_DEATH: [DEATH_FACT]},
        keep_known_sentences,
    )
    nodes, final = run(
        get_workflow("knowledge_aware"),
        Context(index=tiny_index, llm=model, retriever="bm25", agents=2, mode="collaborative"),
    )
    assert nodes == [
        "initialize_caches",
        *["suggest", "suggest", "select_proposal", "filter_context"] * 2,
        "compose_answer",
        "finalize_answer",
    ]
    assert final["answer"] == "Missolonghi"
    # both suggesters wrote into the shared Known; the reducers merged their updates
    assert [f.text for f in final["known"]] == [
        "Ada Lovelace's father is Lord Byron.",
        "Ada Lovelace's mother is Annabella Milbanke.",
        "Lord Byron died at Missolonghi.",
    ]
    assert all(g.resolved for g in final["required"])
    assert "suggester_winners" not in final["diagnostics"]
    # round 2: suggester 2 read the fact suggester 1 found, and was assigned the open gap 2
    second_round = [p for p in planner_prompts(model) if "(resolved: Lord Byron)" in p]
    assert len(second_round) == 2
    assert all("Ada Lovelace's father is Lord Byron. [ada]" in p for p in second_round)
    assert all(
        _field(p, "You are suggester").endswith("Gaps assigned to you: 2.") for p in second_round
    )
    assert final["query_history"] == [Q_FATHER, "Ada Lovelace parents", Q_DEATH, "Lord Byron death"]


# -- offline reasoner -------------------------------------------------------------------------


def test_offline_reasoner_answers_two_hop_question(tiny_index):
    pytest.importorskip("graphseek.agents.offline.librarian", reason="no offline Librarian")
    result = ask(
        tiny_index,
        QUESTION,
        topology="knowledge_aware",
        llm="offline",
        retriever="bm25",
        profile="wikipedia",
    )
    assert result.answer == "Missolonghi" and not result.abstained
    assert "byron" in [e.passage_id for e in result.evidence]
    assert result.usage.llm_calls == 0
    assert result.trace[:3] == ["initialize_caches", "plan_query", "update_knowledge"]


def test_offline_competitive_run_through_the_api(tiny_index):
    pytest.importorskip("graphseek.agents.offline.librarian", reason="no offline Librarian")
    result = ask(
        tiny_index,
        QUESTION,
        topology="knowledge_aware",
        agents=3,
        mode="competitive",
        profile="wikipedia",
    )
    assert result.answer == "Missolonghi" and not result.abstained
    assert result.trace.count("suggest") % 3 == 0
    assert result.diagnostics["suggester_winners"]


def test_offline_planner_reformulates_a_searched_gap():
    from graphseek.agents.offline.kair import OfflinePlanner

    planner = OfflinePlanner("wikipedia")  # a kinship question: relation chains
    gaps = planner.initial_gaps(QUESTION).value
    assert [g.description for g in gaps] == GAPS
    view = KnowledgeView(question=QUESTION, required=gaps, query_history=[Q_FATHER])
    plan = planner.plan(view).value
    assert plan.query and not is_repeat(plan.query, [Q_FATHER]) and plan.gap_ids == ("1",)
    resolved = [gaps[0].model_copy(update={"resolved": True}), gaps[1]]
    view = KnowledgeView(question=QUESTION, required=resolved, answers={"1": "Lord Byron"})
    assert planner.plan(view).value.query == Q_DEATH
    # suggester 2 starts at a different wording of the same gap
    assert planner.plan(KnowledgeView(question=QUESTION, required=gaps, agent=2)).value.query != (
        Q_FATHER
    )


# -- graph shape ------------------------------------------------------------------------------


def test_graph_shape_matches_snapshot():
    mermaid = get_workflow("knowledge_aware").get_graph().draw_mermaid()
    assert SNAPSHOT.exists(), f"write the snapshot first: {SNAPSHOT}"
    assert mermaid == SNAPSHOT.read_text()
