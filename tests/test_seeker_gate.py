"""A supported draft is kept (issue 25, item 5): the Seeker's A2RAG gate and its refusal to ask
the same questions twice (dual_agent), the decomposer keeping every hop, knowledge_aware's
filter that never empties the context and knowledge update that records only stated facts."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from graphseek.agents.decomposer import LLMDecomposer, dropped_hop, repair_plan
from graphseek.agents.kair import AcceptedUpdate
from graphseek.agents.knowledge_updater import keep_stated, unstated_reason
from graphseek.agents.offline.decomposer import OfflineDecomposer
from graphseek.agents.prompts.answerer import ANSWERER_SYSTEM
from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM
from graphseek.agents.prompts.context_filter import CONTEXT_FILTER_SYSTEM
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM
from graphseek.agents.prompts.knowledge_updater import KNOWLEDGE_UPDATER_SYSTEM
from graphseek.agents.prompts.librarian import LIBRARIAN_TOOLS_SYSTEM
from graphseek.agents.prompts.planner import PLANNER_INIT_SYSTEM, PLANNER_SYSTEM
from graphseek.agents.prompts.seeker import SEEKER_SYSTEM
from graphseek.agents.seeker import new_questions, supported_draft
from graphseek.graphs import build_workflow, get_workflow
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context, EvidenceItem, Fact, Gap
from graphseek.state.models import Draft, SeekerAction, SubQuestion

QUESTION = "Where did Ada Lovelace's father die?"
PLAN = {
    "reason": "the father first, then where he died",
    "sub_questions": [
        {"id": 1, "question": "Who was the father of Ada Lovelace?", "depends_on": []},
        {"id": 2, "question": "Where did #1 die?", "depends_on": [1]},
    ],
}
LIBRARIAN = {
    "Who was the father of Ada Lovelace?": ("Lord Byron", "ada"),
    "What is Ada Lovelace's father?": ("Lord Byron", "ada"),
    "Where did Lord Byron die?": ("Missolonghi", "byron"),
    "Where did George Gordon Byron die?": ("Missolonghi", "byron"),
}


def ask(questions: list[str], step_ids: list[int | None]) -> dict[str, Any]:
    return {
        "reason": "ask",
        "action": "ask_librarian",
        "questions": questions,
        "step_ids": step_ids,
    }


ASK_DEATH = ask(["Where did Lord Byron die?"], [2])
ASK_DEATH_AGAIN = ask(["Where did George Gordon Byron die?"], [2])


def dual_agent_model(
    seeker: list[Any], confidence: float = 0.9, plan: dict[str, Any] = PLAN
) -> ScriptedChatModel:
    """Routes by role prompt; the tool-calling Librarian searches, then finishes with
    `confidence`; the Seeker replays `seeker` (then abstains)."""
    replies = iter(seeker)

    def respond(messages: list[Any]) -> Any:
        system = messages[0].content
        if system == CLARIFIER_SYSTEM:
            return {"reason": "fine", "question": QUESTION}
        if system == DECOMPOSER_SYSTEM:
            return plan
        if system == LIBRARIAN_TOOLS_SYSTEM:
            question = messages[1].content.split("\n", 1)[0].removeprefix("Question: ")
            answer, pid = LIBRARIAN[question]
            if not any(isinstance(m, ToolMessage) for m in messages):
                call = {"name": "context_search", "args": {"query": question}, "id": "s1"}
                return AIMessage(content="", tool_calls=[call])
            finish = {
                "answer": answer,
                "passage_ids": [pid],
                "reason": "stated",
                "confidence": confidence,
            }
            return AIMessage(content="", tool_calls=[{"name": "finish", "args": finish, "id": "f"}])
        if system == SEEKER_SYSTEM:
            return next(replies, {"reason": "nothing more", "action": "abstain"})
        raise AssertionError(f"unexpected prompt: {system[:60]}")

    return ScriptedChatModel(responses=respond)


def stream(graph: Any, context: Context, question: str = QUESTION) -> tuple[list[str], dict]:
    nodes: list[str] = []
    final: dict[str, Any] = {}
    for mode, payload in graph.stream(
        {"question": question}, context=context, stream_mode=["updates", "values"]
    ):
        if mode == "updates":
            nodes.extend(payload)
        else:
            final = payload
    return nodes, final


def seeker_calls(model: ScriptedChatModel) -> int:
    return sum(m[0].content == SEEKER_SYSTEM for m in model.calls)


# -- dual_agent: the gate ---------------------------------------------------------------------


def test_a_supported_confident_draft_ends_the_loop_whatever_the_seeker_asks(tiny_index):
    model = dual_agent_model([ASK_DEATH, ASK_DEATH_AGAIN, ASK_DEATH_AGAIN])
    nodes, final = stream(
        get_workflow("dual_agent"), Context(index=tiny_index, llm=model, retriever="bm25")
    )
    assert nodes == [
        "clarify_question",
        "decompose_question",
        "ask_librarian",
        "decide_action",
        "ask_librarian",
        "decide_action",
        "finalize_answer",
    ]
    # the Seeker asked again, but the draft of the last step (0.9, stated in "byron") answers
    assert seeker_calls(model) == 2
    assert final["answer"] == "Missolonghi" and final["abstained"] is False
    assert final["next_action"] == "answer"
    assert [e.passage_id for e in final["evidence"]][:2] == ["byron", "ada"]  # then related
    assert final["history"][-1]["action"] == "ask_librarian"  # what the Seeker chose
    assert len(final["diagnostics"]["seeker_gate"]) == 1
    assert final["query_history"][-1] == "Where did Lord Byron die?"


def test_a_repeated_round_is_not_run_again(tiny_index):
    # weak drafts (below the gate) and the same question again: no second round for it; the
    # run ends with the best supported draft
    model = dual_agent_model([ASK_DEATH, ASK_DEATH, ASK_DEATH], confidence=0.3)
    nodes, final = stream(
        get_workflow("dual_agent"), Context(index=tiny_index, llm=model, retriever="bm25")
    )
    assert nodes.count("ask_librarian") == 2 and nodes[-2:] == ["decide_action", "finalize_answer"]
    assert seeker_calls(model) == 2
    assert final["answer"] == "Missolonghi" and not final["abstained"]
    assert "asked before" in final["diagnostics"]["seeker_gate"][0]


def test_the_offline_seeker_is_not_gated(tiny_index):
    # with the offline policies the graph is the same and the gate stays out of the way
    nodes, final = stream(
        get_workflow("dual_agent"),
        Context(index=tiny_index, llm="offline", profile="wikipedia"),
    )
    assert final["answer"] == "Missolonghi"
    assert "seeker_gate" not in final.get("diagnostics", {})


def _draft(question: str, answer: str, step: int | None, text: str, conf: float) -> Draft:
    evidence = [EvidenceItem(passage_id="p", text=text)]
    return Draft(question=question, answer=answer, step_id=step, evidence=evidence, confidence=conf)


def test_supported_draft_needs_the_answer_in_its_evidence_and_the_last_hop():
    plan = [
        SubQuestion(id=1, question="Who is the father of Ada?"),
        SubQuestion(id=2, question="Where did #1 die?", depends_on=[1]),
    ]
    byron = "Byron died of a fever at Missolonghi in 1824."
    drafts = [
        _draft("Who is the father of Ada?", "Lord Byron", 1, "Ada's father: Lord Byron.", 0.9),
        _draft("Where did Lord Byron die?", "Rome", 2, byron, 0.95),  # not in its evidence
        _draft("Where did Lord Byron die?", "Missolonghi", 2, byron, 0.6),
        _draft("Where did Lord Byron die?", "Missolonghi", None, byron, 0.8),  # by its text
    ]
    best = supported_draft(QUESTION, plan, drafts, 0.5, {"1": "Lord Byron"})
    assert best is drafts[3]
    assert supported_draft(QUESTION, plan, drafts[:3], 0.5) is drafts[2]
    assert supported_draft(QUESTION, plan, drafts[:3], 0.7) is None
    assert supported_draft(QUESTION, plan, drafts[:1], 0.1) is None  # step 1 is not the last hop
    action = SeekerAction(
        action="ask_librarian",
        questions=["where did lord byron die", "Who was Byron's mother?"],
        step_ids=[2, None],
    )
    questions, step_ids, repeated = new_questions(action, drafts)
    assert questions == ["Who was Byron's mother?"] and step_ids == [None]
    assert repeated == ["where did lord byron die"]


# -- the decomposer keeps every hop -----------------------------------------------------------

DROPPED = {
    "reason": "one lookup",
    "sub_questions": [{"id": 1, "question": "Who was the father of Ada Lovelace?"}],
}


def test_a_decomposition_that_drops_a_hop_is_repaired(tiny_index):
    model = dual_agent_model([], plan=DROPPED)
    graph = build_workflow("dual_agent").compile(
        checkpointer=InMemorySaver(), interrupt_after=["decompose_question"]
    )
    config = {"configurable": {"thread_id": "hop"}}
    graph.invoke(
        {"question": QUESTION},
        config,
        context=Context(index=tiny_index, llm=model, retriever="bm25"),
    )
    values = graph.get_state(config).values
    assert values["trace"] == ["clarify_question", "decompose_question"]
    plan = values["plan"]
    assert len(plan) == 2 and plan[1].depends_on == [1] and "#1" in plan[1].question
    assert re.search(r"\bdie\b", plan[1].question)
    assert values["diagnostics"]["notes"][0].startswith("decomposer: the plan dropped a hop")


def test_dropped_hop_checks_answer_type_relation_and_grammar_plan():
    def steps(*texts: str) -> list[SubQuestion]:
        return [SubQuestion(id=i, question=t) for i, t in enumerate(texts, 1)]

    where = "Where was the director of The Lantern Keeper born?"
    ref = OfflineDecomposer("wikipedia").decompose(where).value
    assert dropped_hop(where, steps("Who directed The Lantern Keeper?"), ref)
    assert not dropped_hop(where, steps("Who directed The Lantern Keeper?", "Where was #1 born?"))
    mother = "Who is the mother of the director of Titanic?"
    assert "mother" in dropped_hop(mother, steps("Who directed Titanic?"))
    assert not dropped_hop(mother, steps("Who directed Titanic?", "Who is the mother of #1?"))
    assert not dropped_hop("Which company developed zlib?", steps("Who developed zlib?"))
    assert not dropped_hop("Which country was Marie Curie born in?", steps("Where was she born?"))
    # no grammar plan to fall back on: the question itself becomes the last step
    repaired = repair_plan(where, steps("Who directed The Lantern Keeper?"), steps(where))
    assert [s.question for s in repaired] == ["Who directed The Lantern Keeper?", where]
    assert repaired[1].depends_on == [1]


def test_llm_decomposer_keeps_a_full_plan():
    model = ScriptedChatModel(responses=[PLAN])
    step = LLMDecomposer(model).decompose(QUESTION)
    assert [s.question for s in step.value] == [
        "Who was the father of Ada Lovelace?",
        "Where did #1 die?",
    ]
    assert step.notes == ()


# -- knowledge_aware: filter_context and update_knowledge -------------------------------------

Q_FATHER = "Who is the father of Ada Lovelace?"
Q_DEATH = "Where did Lord Byron die?"
GAPS = [Q_FATHER, "Where did #1 die?"]
ADA_CHILD = "She was the only legitimate child of the poet Lord Byron and Annabella Milbanke."


def fact(statement: str, quote: str, pid: str, gap: str, answer: str = "") -> dict[str, Any]:
    return {"statement": statement, "quote": quote, "passage_ids": [pid], "gap_id": gap,
            "answer": answer}  # fmt: skip


FACTS = {
    Q_FATHER: [
        fact("Ada Lovelace's father is Lord Byron.", ADA_CHILD, "ada", "1", "Lord Byron"),
        # not in the "ada" passage: neither its words nor its answer
        fact("Lord Byron died in Rome in 1830.", "", "ada", "2", "Rome"),
    ],
    Q_DEATH: [fact("Lord Byron died at Missolonghi.", "", "byron", "2", "Missolonghi")],
}


class NoToolsModel(ScriptedChatModel):
    """A chat model without tool calling: the planner takes its JSON path."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def kair_model(keep: list[dict[str, str]] | None = None) -> ScriptedChatModel:
    def respond(messages: list[Any]) -> Any:
        system, human = messages[0].content, messages[1].content
        if system == PLANNER_INIT_SYSTEM:
            return {"reasoning": "father, then death", "gaps": GAPS}
        if system == PLANNER_SYSTEM:
            query, gap = (Q_DEATH, "2") if "(resolved: Lord Byron)" in human else (Q_FATHER, "1")
            return {"reasoning": "next gap", "target_gap_ids": [gap], "query": query}
        if system == KNOWLEDGE_UPDATER_SYSTEM:
            query = re.search(r"^Search just made:(.*)$", human, re.M)
            return {
                "reasoning": "read",
                "facts": FACTS.get(query.group(1).strip() if query else "", []),
            }
        if system == CONTEXT_FILTER_SYSTEM:
            return {"reasoning": "keep", "segments": keep or []}
        if system == ANSWERER_SYSTEM:
            return {"reasoning": "done", "action": "answer", "answer": "Missolonghi",
                    "passage_ids": ["byron"], "confidence": 0.9}  # fmt: skip
        raise AssertionError(f"unexpected prompt: {system[:60]}")

    return NoToolsModel(responses=respond)


def test_update_knowledge_drops_a_fact_no_passage_states(tiny_index):
    nodes, final = stream(
        get_workflow("knowledge_aware"),
        Context(index=tiny_index, llm=kair_model(), retriever="bm25"),
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
    assert [(f.text, f.passage_ids) for f in final["known"]] == [
        ("Ada Lovelace's father is Lord Byron.", ["ada"]),
        ("Lord Byron died at Missolonghi.", ["byron"]),
    ]
    # "Rome" did not resolve gap 2 in the first round: the second search did, with Missolonghi
    assert final["step_answers"] == {"1": "Lord Byron", "2": "Missolonghi"}
    unstated = final["diagnostics"]["unstated_facts"]
    assert len(unstated) == 2 and unstated[0].startswith("Lord Byron died in Rome")
    assert "gap 2" in unstated[1]
    assert final["answer"] == "Missolonghi"
    # the filter kept nothing each round: the best-ranked passages stayed whole
    assert final["refined_context"]
    assert all(e.sentence == e.text for e in final["refined_context"])


def test_unstated_reason_and_keep_stated():
    passages = {"ada": "Ada Lovelace. " + ADA_CHILD}
    good = Fact(id="1/a", text="Ada Lovelace's father is Lord Byron.", passage_ids=["ada"])
    quoted = Fact(id="1/b", text="Her father was a poet.", passage_ids=["ada"], source=ADA_CHILD)
    made_up = Fact(id="2/c", text="Lord Byron died in Rome in 1830.", passage_ids=["ada"])
    unseen = Fact(id="2/d", text="Lord Byron died at Missolonghi.", passage_ids=["byron"])
    assert unstated_reason(good, passages) == ""
    assert unstated_reason(quoted, passages) == ""
    assert "rome" in unstated_reason(made_up, passages)
    assert unstated_reason(unseen, passages) == "cites no observed passage"
    accepted = AcceptedUpdate(
        facts=[good, made_up],
        gaps=[Gap(id="1", description=GAPS[0], resolved=True),
              Gap(id="2", description=GAPS[1], resolved=True)],
        answers={"1": "Lord Byron", "2": "Rome"},
    )  # fmt: skip
    out = keep_stated(accepted, passages)
    assert [f.id for f in out.update.facts] == ["1/a"]
    assert out.update.answers == {"1": "Lord Byron"}
    assert [g.id for g in out.update.gaps] == ["1"]
    assert len(out.dropped) == 2


def test_filter_context_never_drops_every_passage(tiny_index, tiny_passages):
    by_id = {p.id: p for p in tiny_passages}
    passages = [
        EvidenceItem(passage_id=pid, title=by_id[pid].title, text=by_id[pid].text, score=s)
        for pid, s in (("ada", 3.0), ("milbanke", 2.0), ("babbage", 1.5), ("engine", 1.0))
    ]
    # the model keeps one paraphrase (not a substring): nothing would be left
    model = kair_model(keep=[{"passage_id": "ada", "text": "Ada's father was Lord Byron."}])
    graph = build_workflow("knowledge_aware").compile(
        checkpointer=InMemorySaver(), interrupt_after=["filter_context"]
    )
    config = {"configurable": {"thread_id": "filter"}}
    graph.update_state(
        config,
        {
            "question": QUESTION,
            "required": [Gap(id="1", description=GAPS[0]), Gap(id="2", description=GAPS[1])],
            "known": [],
            "passages": passages,
            "refined_context": [],
            "turn": 0,
        },
        as_node="update_knowledge",
    )
    graph.invoke(None, config, context=Context(index=tiny_index, llm=model))
    values = graph.get_state(config).values
    assert [e.passage_id for e in values["refined_context"]] == ["ada", "milbanke", "babbage"]
    assert all(e.sentence == e.text for e in values["refined_context"])
    assert values["diagnostics"]["dropped_segments"] == ["ada: Ada's father was Lord Byron."]
    assert any("kept nothing" in n for n in values["diagnostics"]["notes"])
