"""The graph topologies (higra_retriever, adaptive, deep_search, react) and dual_agent's HiGra and
branching extensions, driven by the scripted chat model over the tiny corpus with a hand-built
knowledge graph; routers as pure functions; graph shapes against snapshots; langgraph.json."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from graphseek.agents.offline.branching import BranchingSeeker
from graphseek.agents.offline.thinker import best_topic
from graphseek.agents.offline.verifier import OfflineEvidenceVerifier, triple_check
from graphseek.agents.prompts.coverage import COVERAGE_SYSTEM
from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM
from graphseek.agents.prompts.drafter import DRAFTER_SYSTEM
from graphseek.agents.prompts.expander import EXPANDER_SYSTEM
from graphseek.agents.prompts.grounder import GROUNDER_SYSTEM
from graphseek.agents.prompts.librarian import LIBRARIAN_SYSTEM, LIBRARIAN_TOOLS_SYSTEM
from graphseek.agents.prompts.refiner import REFINER_SYSTEM
from graphseek.agents.prompts.rewriter import REWRITER_SYSTEM
from graphseek.agents.prompts.seeker import SEEKER_SYSTEM
from graphseek.agents.prompts.sufficiency import SUFFICIENCY_SYSTEM
from graphseek.agents.prompts.thinker import THINKER_TOOLS_SYSTEM
from graphseek.agents.prompts.verifier import EVIDENCE_VERIFIER_SYSTEM, TRIPLE_CHECK_SYSTEM
from graphseek.agents.roles import SeekerView, Step
from graphseek.agents.text import align_names
from graphseek.graphs import build_workflow, get_workflow
from graphseek.graphs.routing import (
    route_channels,
    route_escalation,
    route_evidence,
    route_thought,
    route_verification,
)
from graphseek.knowledge.graph.models import Entity, HyperEdge, Relation, Topic
from graphseek.llm import ScriptedChatModel
from graphseek.state import Context, Draft, EvidenceItem, SeekerAction, SubQuestion, Usage
from graphseek.state.verdicts import LogicDraft, Thought, Verification
from graphseek.tools.graph_access import GraphView, set_graph_view

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).parent / "snapshots"
MINE = ["higra_retriever", "dual_agent", "adaptive", "deep_search", "react"]
QUESTION = "Where did Ada Lovelace's father die?"
PASSAGE_ID = re.compile(r"^\[([\w-]+)\]", re.MULTILINE)


# -- a knowledge graph of the tiny corpus ----------------------------------------------------------


def _e(eid: str, name: str, types: list[str], passages: list[str], **kw: Any) -> Entity:
    return Entity(id=eid, name=name, types=types, passage_ids=passages, **kw)


def _r(rid: str, source: str, label: str, target: str, *passages: str) -> Relation:
    return Relation(id=rid, source=source, label=label, target=target, passage_ids=list(passages))


def tiny_view() -> GraphView:
    entities = [
        _e("e_ada", "Ada Lovelace", ["PERSON"], ["ada", "milbanke"]),
        _e(
            "e_byron",
            "Lord Byron",
            ["PERSON"],
            ["byron", "ada", "milbanke"],
            aliases=["George Gordon Byron"],
        ),  # fmt: skip
        _e("e_miss", "Missolonghi", ["GPE"], ["missolonghi", "byron"]),
        _e("e_milbanke", "Annabella Milbanke", ["PERSON"], ["milbanke", "ada"]),
        _e("e_babbage", "Charles Babbage", ["PERSON"], ["babbage", "engine", "ada"]),
        _e("e_engine", "Analytical Engine", ["PRODUCT"], ["engine", "babbage", "ada"]),
        _e("e_london", "London", ["GPE"], ["byron"]),
        _e("e_curie", "Marie Curie", ["PERSON"], ["curie", "warsaw"]),
        _e("e_warsaw", "Warsaw", ["GPE"], ["warsaw"]),
    ]
    relations = [
        _r("r1", "e_ada", "daughter of", "e_byron", "ada"),
        _r("r2", "e_ada", "daughter of", "e_milbanke", "ada"),
        _r("r3", "e_byron", "died in", "e_miss", "byron"),
        _r("r4", "e_byron", "born in", "e_london", "byron"),
        _r("r5", "e_milbanke", "married", "e_byron", "milbanke"),
        _r("r6", "e_babbage", "designed", "e_engine", "babbage", "engine"),
        _r("r7", "e_ada", "worked on", "e_engine", "ada"),
        _r("r8", "e_curie", "born in", "e_warsaw", "warsaw"),
    ]
    hyperedges = [
        HyperEdge(id="h1", relation="Lord Byron died of a fever at Missolonghi in 1824",
                  entity_ids=["e_byron", "e_miss"], passage_ids=["byron"], topic_id="t_life"),
        HyperEdge(id="h2", relation="Lord Byron was born in London",
                  entity_ids=["e_byron", "e_london"], passage_ids=["byron"], topic_id="t_life"),
        HyperEdge(id="h3", relation="Ada Lovelace was the child of Lord Byron and Annabella "
                  "Milbanke", entity_ids=["e_ada", "e_byron", "e_milbanke"],
                  passage_ids=["ada"], topic_id="t_family"),
        HyperEdge(id="h4", relation="Charles Babbage designed the Analytical Engine",
                  entity_ids=["e_babbage", "e_engine"], passage_ids=["babbage", "engine"],
                  topic_id="t_computing"),
    ]  # fmt: skip
    topics = [
        Topic(id="t_life", label="born, died, fever", keywords=["death"], size=2),
        Topic(id="t_family", label="child, daughter, married", keywords=["father"], size=1),
        Topic(id="t_computing", label="engine, designed, computer", keywords=["babbage"], size=1),
    ]
    passage_ids = [
        "ada",
        "byron",
        "babbage",
        "engine",
        "missolonghi",
        "milbanke",
        "curie",
        "warsaw",
    ]
    return GraphView.from_models(
        entities, relations, passage_ids, hyperedges=hyperedges, topics=topics
    )


@pytest.fixture(scope="module")
def graph_index(tiny_index: Any) -> Any:
    """The tiny index reopened as its own object, with `tiny_view()` attached as its graph (the
    shared `tiny_index` keeps having no graph)."""
    from graphseek.knowledge.index import Index

    index = Index.open(tiny_index.path)
    set_graph_view(index, tiny_view())
    return index


# -- the scripted model ---------------------------------------------------------------------------


Handler = Callable[[str], Any]


def scripted(handlers: dict[str, Handler]) -> ScriptedChatModel:
    """A scripted model answering each role (told apart by its system prompt) with a handler of
    the role's user message."""

    def respond(messages: list[Any]) -> Any:
        system, user = messages[0].content, messages[1].content
        if system == LIBRARIAN_TOOLS_SYSTEM and LIBRARIAN_SYSTEM in handlers:
            return tool_librarian(handlers[LIBRARIAN_SYSTEM], messages)
        handler = handlers.get(system)
        if handler is None:
            raise AssertionError(f"unexpected prompt: {system[:70]!r}")
        return handler(user)

    return ScriptedChatModel(responses=respond)


def tool_librarian(handler: Handler, messages: list[Any]) -> AIMessage:
    """The tool-calling Librarian played by a JSON Librarian handler: search once with the
    configured retrieval, then `finish` with the handler's reply to the results."""
    question = asked(messages[1].content)
    results = [m.content for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return tool_call("context_search", 1, query=question)
    reply = handler(f"Question: {question}\n\n" + "\n".join(results))
    return tool_call(
        "finish",
        2,
        answer=reply.get("answer", ""),
        passage_ids=reply.get("passage_ids", []),
        candidates=reply.get("candidates", []),
        confidence=reply.get("confidence", 0.5),
    )


def replay(*replies: Any) -> Handler:
    """A handler replaying `replies` in order, then repeating the last one."""
    queue: Iterator[Any] = iter(replies)
    last: list[Any] = []

    def handle(_: str) -> Any:
        last[:] = [next(queue, last[0] if last else None)]
        return last[0]

    return handle


def asked(user: str) -> str:
    """The question of a Librarian-style user message ("Question: ..." on the first line)."""
    return user.split("\n", 1)[0].removeprefix("Question: ").strip()


def librarian(answers: dict[str, tuple[Any, ...]]) -> Handler:
    """Librarian replies by question, (answer, confidence[, passage to cite]); cites "byron" by
    default when shown, else the first passage."""

    def handle(user: str) -> dict[str, Any]:
        answer, confidence, *pid = answers.get(asked(user), ("", 0.1))
        ids = PASSAGE_ID.findall(user.split("Passages:", 1)[-1])
        cite = "byron" if "byron" in ids else (ids[0] if ids else "")
        if pid and pid[0] in ids:
            cite = pid[0]
        return {"reasoning": "from the passages", "answer": answer, "passage_ids": [cite],
                "evidence": [], "confidence": confidence}  # fmt: skip

    return handle


def run(graph_name: str, question: str, context: Context) -> dict[str, Any]:
    return get_workflow(graph_name).invoke({"question": question}, context=context)


def llm_for(model: ScriptedChatModel) -> dict[str, Any]:
    """Every role scripted, seed recognition (HiGra, progressive) offline."""
    return {"default": model, "entity_recognition": "offline"}


IN_SCOPE = {"reason": "the summaries name Ada Lovelace", "coverage": 0.9, "in_scope": True}
INSUFFICIENT = {
    "reason": "the place of death is missing",
    "missing": ["death"],
    "sufficient": False,
}
SUFFICIENT = {"reason": "all hops are present", "missing": [], "sufficient": True}
CHECK_OK = {"relevance_reason": "on topic", "relevant": True, "grounding_reason": "stated",
            "grounded": True, "adequacy_reason": "a place", "adequate": True}  # fmt: skip
CHECK_UNGROUNDED = {**CHECK_OK, "grounding_reason": "not in the evidence", "grounded": False}


# -- higra_retriever ------------------------------------------------------------------------------


def test_higra_retriever_gives_relations_and_passages_to_the_librarian(graph_index):
    model = scripted({LIBRARIAN_SYSTEM: librarian({QUESTION: ("Missolonghi", 0.9)})})
    out = run("higra_retriever", QUESTION, Context(index=graph_index, llm=llm_for(model)))
    assert out["trace"] == ["retrieve_context", "generate_answer", "finalize_answer"]
    assert out["answer"] == "Missolonghi" and out["abstained"] is False
    assert [e.passage_id for e in out["evidence"]][:1] == ["byron"]  # then related
    prompt = model.calls[0][1].content
    assert "Graph relations" in prompt
    assert "Ada Lovelace | daughter of | Lord Byron" in prompt
    assert {"ada", "byron"} <= set(out["retrieved_ids"])
    assert out["usage"].llm_calls == 1


def test_higra_retriever_without_a_graph_says_so_and_still_answers(tiny_index):
    model = scripted({LIBRARIAN_SYSTEM: librarian({QUESTION: ("Missolonghi", 0.9)})})
    out = run("higra_retriever", QUESTION, Context(index=tiny_index, llm=llm_for(model)))
    assert out["answer"] == "Missolonghi"
    assert any("no knowledge graph" in n for n in out["diagnostics"]["notes"])
    assert "Graph relations" not in model.calls[0][1].content


def test_higra_retriever_abstains_on_an_exhausted_budget(graph_index):
    model = scripted({LIBRARIAN_SYSTEM: librarian({QUESTION: ("Missolonghi", 0.9)})})
    ctx = Context(index=graph_index, llm=llm_for(model), max_llm_calls=0)
    out = run("higra_retriever", QUESTION, ctx)
    assert out["abstained"] and "LLM-call budget" in out["abstain_reason"]
    assert model.calls == []


# -- dual_agent: HiGra context, branching paths, multiple answers ----------------------------------


def test_dual_agent_librarian_sees_higra_relations(graph_index):
    plan = {"sub_questions": [{"id": 1, "question": "Where did Lord Byron die?"}]}
    answer = {"reason": "done", "action": "answer", "answer": "Missolonghi", "evidence": ["byron"]}
    model = scripted(
        {
            DECOMPOSER_SYSTEM: replay(plan),
            LIBRARIAN_SYSTEM: librarian({"Where did Lord Byron die?": ("Missolonghi", 0.9)}),
            SEEKER_SYSTEM: replay(answer),
        }
    )
    ctx = Context(index=graph_index, llm=llm_for(model), retriever="higra")
    out = run("dual_agent", "Where did Lord Byron die?", ctx)
    assert out["answer"] == "Missolonghi"
    assert out["trace"] == [
        "clarify_question", "decompose_question", "ask_librarian", "decide_action",
        "finalize_answer",
    ]  # fmt: skip
    # the Librarian's configured retrieval (HiGra) shows it the relations
    results = [m for c in model.calls for m in c if isinstance(m, ToolMessage)]
    assert results and results[0].name == "context_search"
    assert "Lord Byron | died in | Missolonghi" in results[0].content


def test_dual_agent_offline_seeker_branches_on_an_uncertain_answer(tiny_index):
    def answers(user: str) -> dict[str, Any]:
        q = asked(user)
        ids = PASSAGE_ID.findall(user)
        if "father" in q:
            reply = ("Lord Byron", 0.4, ["Charles Babbage"], "ada")
        elif "Lord Byron" in q:
            reply = ("Missolonghi", 0.9, [], "byron")
        else:
            reply = ("London", 0.2, [], ids[0] if ids else "")
        return {"answer": reply[0], "confidence": reply[1], "candidates": reply[2],
                "passage_ids": [reply[3]], "evidence": []}  # fmt: skip

    model = scripted({LIBRARIAN_SYSTEM: answers})
    ctx = Context(
        index=tiny_index, llm={"default": "offline", "librarian": model}, retriever="bm25"
    )
    out = run("dual_agent", QUESTION, ctx)
    assert out["trace"] == [
        "clarify_question", "decompose_question", "ask_librarian", "decide_action",
        "ask_librarian", "ask_librarian", "decide_action", "finalize_answer",
    ]  # fmt: skip
    questions = [asked(c[1].content) for c in model.calls]
    assert any("Lord Byron" in q and "die" in q for q in questions)
    assert any("Charles Babbage" in q and "die" in q for q in questions)  # the branch
    assert out["answer"] == "Missolonghi"


class _Answering:
    def decide(self, view: SeekerView) -> Step[SeekerAction]:
        return Step(SeekerAction(action="answer", answer="Missolonghi", evidence=["byron"]))


def _draft(question: str, answer: str, conf: float, step: int, pid: str) -> Draft:
    evidence = [EvidenceItem(passage_id=pid)]
    return Draft(question=question, answer=answer, confidence=conf, step_id=step, evidence=evidence)


def test_branching_seeker_answers_with_every_supported_branch():
    plan = [SubQuestion(id=1, question="Who are the sons of X?"),
            SubQuestion(id=2, question="Where did #1 die?", depends_on=[1])]  # fmt: skip
    drafts = [
        _draft("Who are the sons of X?", "A", 0.4, 1, "p1"),
        _draft("Where did A die?", "Missolonghi", 0.9, 2, "p2"),
        _draft("Where did B die?", "Athens", 0.85, 2, "p3"),
        _draft("Where did C die?", "Rome", 0.3, 2, "p4"),
    ]
    view = SeekerView(question="Where did X's son die?", plan=plan, drafts=drafts,
                      step_answers={}, turn=2, max_turns=6)  # fmt: skip
    action = BranchingSeeker(_Answering()).decide(view).value
    assert action.answer == "Missolonghi and Athens"
    assert action.evidence == ["byron", "p2", "p3"]


# -- adaptive --------------------------------------------------------------------------------------


def test_adaptive_escalates_through_all_three_stages(graph_index):
    model = scripted(
        {
            COVERAGE_SYSTEM: replay(IN_SCOPE),
            SUFFICIENCY_SYSTEM: replay(INSUFFICIENT),
            LIBRARIAN_SYSTEM: librarian({QUESTION: ("Missolonghi", 0.8)}),
            TRIPLE_CHECK_SYSTEM: replay(CHECK_OK),
        }
    )
    graph = build_workflow("adaptive").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "escalation"}}
    out = graph.invoke({"question": QUESTION}, config, context=Context(index=graph_index,
                       llm=llm_for(model)))  # fmt: skip
    assert out["trace"] == [
        "gate_coverage", "retrieve_local", "retrieve_bridge", "retrieve_ppr", "generate_answer",
        "triple_check", "finalize_answer",
    ]  # fmt: skip
    diagnostics = out["diagnostics"]
    assert diagnostics["stage_reached"] == "ppr"
    assert diagnostics["stages_visited"] == ["local", "bridge", "ppr"]
    assert diagnostics["coverage"] == 0.9
    assert out["answer"] == "Missolonghi" and not out["abstained"]
    stages = [re.search(r"Retrieval stage just completed: (\w+)", c[1].content).group(1)
              for c in model.calls if c[0].content == SUFFICIENCY_SYSTEM]  # fmt: skip
    assert stages == ["local", "bridge"]  # no check after the last stage
    assert "byron" in out["retrieved_ids"]
    # the checkpointed state holds the progressive retriever's state after Stage 3
    saved = graph.get_state(config).values
    assert saved["retrieval"].stage == 3 and saved["retrieval"].entity_seeds == ["e_ada"]
    assert saved["verification"].passed


def test_adaptive_rewrites_after_a_triple_check_failure(graph_index):
    rewritten = "Where did Lord Byron die?"
    model = scripted(
        {
            COVERAGE_SYSTEM: replay(IN_SCOPE),
            SUFFICIENCY_SYSTEM: replay(SUFFICIENT),
            LIBRARIAN_SYSTEM: librarian(
                {QUESTION: ("London", 0.6), rewritten: ("Missolonghi", 0.9)}
            ),
            TRIPLE_CHECK_SYSTEM: replay(CHECK_UNGROUNDED, CHECK_OK),
            REWRITER_SYSTEM: replay({"reason": "ask the last hop", "query": rewritten}),
        }
    )
    out = run("adaptive", QUESTION, Context(index=graph_index, llm=llm_for(model)))
    assert out["trace"] == [
        "gate_coverage", "retrieve_local", "generate_answer", "triple_check", "rewrite_query",
        "retrieve_local", "generate_answer", "triple_check", "finalize_answer",
    ]  # fmt: skip
    assert out["diagnostics"]["failures"] == ["grounding"]
    assert out["diagnostics"]["retries"] == 1
    assert out["answer"] == "Missolonghi"
    assert [e.passage_id for e in out["evidence"]][:1] == ["byron"]  # then related
    rewrite_prompt = next(c[1].content for c in model.calls if c[0].content == REWRITER_SYSTEM)
    assert "Failed check: grounding" in rewrite_prompt


def test_adaptive_abstains_when_retries_run_out(graph_index):
    model = scripted(
        {
            COVERAGE_SYSTEM: replay(IN_SCOPE),
            SUFFICIENCY_SYSTEM: replay(SUFFICIENT),
            LIBRARIAN_SYSTEM: librarian({}),
            TRIPLE_CHECK_SYSTEM: replay(CHECK_UNGROUNDED),
            REWRITER_SYSTEM: replay({"query": "Where did Lord Byron die?"},
                                    {"query": "Where did George Gordon Byron die?"}),
        }
    )  # fmt: skip
    ctx = Context(index=graph_index, llm=llm_for(model), max_retries=1)
    out = run("adaptive", QUESTION, ctx)
    assert out["abstained"] and out["answer"] == ""
    assert "failed Triple-Check on grounding" in out["abstain_reason"]
    assert out["diagnostics"]["failures"] == ["grounding", "grounding"]
    assert out["trace"].count("rewrite_query") == 1
    assert out["trace"][-1] == "finalize_answer"


def test_adaptive_obeys_the_llm_call_budget(graph_index):
    model = scripted({COVERAGE_SYSTEM: replay(IN_SCOPE), SUFFICIENCY_SYSTEM: replay(SUFFICIENT)})
    out = run("adaptive", QUESTION, Context(index=graph_index, llm=llm_for(model), max_llm_calls=2))
    assert out["abstained"] and "LLM-call budget" in out["abstain_reason"]
    assert out["trace"] == ["gate_coverage", "retrieve_local", "generate_answer", "finalize_answer"]
    assert out["usage"].llm_calls == 2


def test_adaptive_gate_abstains_out_of_scope(graph_index):
    gate = {"reason": "nothing about chemistry", "coverage": 0.1, "in_scope": False}
    model = scripted({COVERAGE_SYSTEM: replay(gate)})
    out = run("adaptive", "What is the boiling point of mercury?",
              Context(index=graph_index, llm=llm_for(model)))  # fmt: skip
    assert out["trace"] == ["gate_coverage", "finalize_answer"]
    assert out["abstained"] and out["abstain_reason"].startswith("out of scope (coverage 0.10)")
    assert "[" in model.calls[0][1].content and "similarity" in model.calls[0][1].content


def test_adaptive_a_model_out_of_scope_verdict_is_read_again_by_the_offline_gate(graph_index):
    """Sending a question away takes both readings: a model that judges an in-corpus question
    out of scope (no reason) is overruled by the offline gate, and the question is searched."""
    gate = {"coverage": 0.05, "in_scope": False}
    model = scripted(
        {
            COVERAGE_SYSTEM: replay(gate),
            SUFFICIENCY_SYSTEM: replay(SUFFICIENT),
            LIBRARIAN_SYSTEM: librarian({"Where did Lord Byron die?": ("Missolonghi", 0.9)}),
            TRIPLE_CHECK_SYSTEM: replay(CHECK_OK),
        }
    )
    out = run(
        "adaptive", "Where did Lord Byron die?", Context(index=graph_index, llm=llm_for(model))
    )
    assert out["trace"][:2] == ["gate_coverage", "retrieve_local"]
    assert out["answer"] == "Missolonghi"
    out = run("adaptive", "What is the boiling point of mercury?",
              Context(index=graph_index, llm=llm_for(model)))  # fmt: skip
    assert out["trace"] == ["gate_coverage", "finalize_answer"]
    assert out["abstain_reason"] == "out of scope (coverage 0.05): the model gave no reason"


# -- deep_search ------------------------------------------------------------------------------------


PLAN = {
    "sub_questions": [
        {"id": 1, "question": "Who is the father of Ada Lovelace?", "depends_on": []},
        {"id": 2, "question": "Where did #1 die?", "depends_on": [1]},
    ]
}


def _keep_all(user: str) -> dict[str, Any]:
    return {"reason": "all relevant", "passage_ids": PASSAGE_ID.findall(user), "triples": []}


def _deep_search_model(verdicts: list[dict[str, Any]], expansions: list[Any]) -> ScriptedChatModel:
    return scripted(
        {
            DECOMPOSER_SYSTEM: replay(PLAN),
            GROUNDER_SYSTEM: replay({"reason": "#1 is Lord Byron", "query": "Where did Lord Byron die?"}),
            REFINER_SYSTEM: _keep_all,
            LIBRARIAN_SYSTEM: librarian(
                {
                    "Who is the father of Ada Lovelace?": ("Lord Byron", 0.9, "ada"),
                    "Where did Lord Byron die?": ("Missolonghi", 0.5),
                    "Where did George Gordon Byron die?": ("Missolonghi", 0.9),
                }
            ),
            DRAFTER_SYSTEM: replay({"chain": ["Ada's father is Lord Byron [ada]",
                                              "Lord Byron died at Missolonghi [byron]"],
                                    "answer": "Missolonghi", "evidence": ["byron", "ada"],
                                    "confidence": 0.8}),
            EVIDENCE_VERIFIER_SYSTEM: replay(*verdicts),
            EXPANDER_SYSTEM: replay(*expansions),
        }
    )  # fmt: skip


REJECT = {"reason": "the death place is weakly supported", "missing": ["Byron's death place"],
          "verdict": "reject"}  # fmt: skip
ACCEPT = {"reason": "every link is backed", "missing": [], "verdict": "accept"}


def test_deep_search_expands_after_a_rejected_draft(graph_index):
    model = _deep_search_model(
        [REJECT, ACCEPT], [{"reason": "use the full name", "queries": ["Where did George Gordon Byron die?"]}]
    )  # fmt: skip
    out = run("deep_search", QUESTION, Context(index=graph_index, llm=llm_for(model)))
    search = ["ground_queries", "semantic_search", "relational_search", "refine_context",
              "answer_subqueries"]  # fmt: skip
    assert out["trace"] == [
        "decompose_query", *search, *search, "draft_logic", "verify_evidence", "expand_query",
        *search, "draft_logic", "verify_evidence", "finalize_answer",
    ]  # fmt: skip
    assert out["answer"] == "Missolonghi" and not out["abstained"]
    assert out["diagnostics"]["failures"] == ["reject"]
    assert out["diagnostics"]["retries"] == 1
    assert [e.passage_id for e in out["evidence"]][:2] == ["byron", "ada"]  # then related
    # query grounding: the second step was searched with #1 resolved
    grounded = [c[1].content for c in model.calls if c[0].content == GROUNDER_SYSTEM]
    assert (
        len(grounded) == 1 and "#1 Who is the father of Ada Lovelace? -> Lord Byron" in grounded[0]
    )
    librarian_questions = [asked(c[1].content) for c in model.calls
                           if c[0].content == LIBRARIAN_SYSTEM]  # fmt: skip
    assert librarian_questions[-1] == "Where did George Gordon Byron die?"


def test_deep_search_abstains_when_expansions_run_out(graph_index):
    model = _deep_search_model(
        [REJECT], [{"queries": ["Where did George Gordon Byron die?"]}, {"queries": ["Byron's death?"]}]
    )  # fmt: skip
    ctx = Context(index=graph_index, llm=llm_for(model), max_retries=1)
    out = run("deep_search", QUESTION, ctx)
    assert out["abstained"] and "evidence verification rejected" in out["abstain_reason"]
    assert out["diagnostics"]["failures"] == ["reject", "reject"]
    assert out["trace"].count("expand_query") == 1 and out["trace"][-1] == "finalize_answer"


def test_deep_search_obeys_the_llm_call_budget(graph_index):
    model = _deep_search_model([ACCEPT], [])
    out = run(
        "deep_search", QUESTION, Context(index=graph_index, llm=llm_for(model), max_llm_calls=4)
    )
    assert out["abstained"] and "LLM-call budget" in out["abstain_reason"]
    assert out["usage"].llm_calls <= 5


# -- react ----------------------------------------------------------------------------------------


def tool_call(name: str, step: int, **args: Any) -> AIMessage:
    """A model reply calling one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"c{step}"}])


def test_react_stops_early_once_the_context_suffices(graph_index):
    replies = [
        tool_call("retrieve_subgraph", 1, topic="born, died, fever", query="Where did Lord Byron die?"),
        tool_call("finish", 2, answer="Missolonghi", passage_ids=["byron"],
                  reason="the hyperedge says Missolonghi"),
    ]  # fmt: skip
    model = scripted({THINKER_TOOLS_SYSTEM: replay(*replies)})
    ctx = Context(index=graph_index, llm=llm_for(model), max_turns=6)
    out = run("react", QUESTION, ctx)
    assert out["trace"] == ["think", "observe", "think", "finalize_answer"]
    assert out["diagnostics"]["early_stop"] is True and out["diagnostics"]["turns"] == 1
    assert out["answer"] == "Missolonghi"
    assert [e.passage_id for e in out["evidence"]][:1] == ["byron"]  # the finish call's citation
    observation = model.calls[1][3]  # the tool's result reached the next thought
    assert isinstance(observation, ToolMessage) and observation.name == "retrieve_subgraph"
    assert "HyperEdge_1: <Lord Byron died of a fever at Missolonghi in 1824>" in observation.content
    assert "- born, died, fever" in model.calls[0][1].content  # the topics offered
    assert "finish" in model.call_tools[0] and "retrieve_subgraph" in model.call_tools[0]


def test_react_uses_fine_grained_primitives_and_reasons(graph_index):
    replies = [
        tool_call("neighbor_check", 1, entity="Ada Lovelace", relation="daughter",
                  query="Who is the father of Ada Lovelace?"),
        tool_call("node_feature", 3, entity="Lord Byron", attr="passages",
                  query="Where did Lord Byron die?"),
        tool_call("finish", 4, answer="Missolonghi", passage_ids=["byron"]),
    ]  # fmt: skip
    model = scripted({THINKER_TOOLS_SYSTEM: replay(*replies)})
    out = run("react", QUESTION, Context(index=graph_index, llm=llm_for(model)))
    assert out["trace"] == ["think", "observe", "think", "observe", "think", "finalize_answer"]
    results = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == ["neighbor_check", "node_feature"]
    assert "Relation: (Ada Lovelace, daughter of, Lord Byron)" in results[0].content
    assert "passages: ada, byron, milbanke" in results[1].content
    assert out["answer"] == "Missolonghi"


def test_react_abstains_when_the_step_budget_runs_out(graph_index):
    retrieve = tool_call("retrieve_subgraph", 1, topic="born, died, fever", query=QUESTION)
    model = scripted({THINKER_TOOLS_SYSTEM: replay(retrieve)})
    out = run("react", QUESTION, Context(index=graph_index, llm=llm_for(model), max_turns=2))
    assert out["trace"] == ["think", "observe", "think", "observe", "think", "finalize_answer"]
    assert out["abstained"] and "turn budget exhausted (2/2 turns)" in out["abstain_reason"]
    assert out["diagnostics"]["early_stop"] is False


def test_react_prose_instead_of_a_tool_call_is_retried_then_abstains(graph_index):
    model = scripted({THINKER_TOOLS_SYSTEM: replay(AIMessage(content="Byron, probably."))})
    out = run("react", QUESTION, Context(index=graph_index, llm=llm_for(model), max_retries=1))
    assert out["abstained"] and "called no tool after 2 attempt(s)" in out["abstain_reason"]
    assert "Call exactly one of the tools" in model.calls[1][-1].content
    assert out["usage"].llm_calls == 2 and out["trace"] == ["think", "finalize_answer"]


def test_react_tool_errors_come_back_to_the_model(graph_index):
    replies = [
        tool_call("no_such_tool", 1, query="x"),
        tool_call("finish", 2, answer=""),
    ]
    model = scripted({THINKER_TOOLS_SYSTEM: replay(*replies)})
    out = run("react", QUESTION, Context(index=graph_index, llm=llm_for(model)))
    error = model.calls[1][3]
    assert isinstance(error, ToolMessage) and error.status == "error"
    assert "no_such_tool" in error.content
    assert out["abstained"] and out["trace"][-1] == "finalize_answer"


def test_react_without_tool_calling_takes_the_json_path_with_the_same_tool_calls(graph_index):
    from langchain_core.language_models import FakeListChatModel

    thoughts = [
        {"decision": "RETRIEVE", "query": "Where did Lord Byron die?", "topic": "born, died, fever"},
        {"decision": "FINISH", "answer": "Missolonghi", "sufficient": True},
    ]  # fmt: skip
    model = FakeListChatModel(responses=[json.dumps(t) for t in thoughts])
    graph = build_workflow("react").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "json-path"}}
    ctx = Context(index=graph_index, llm={"default": "offline", "thinker": model})
    out = graph.invoke({"question": QUESTION}, config, context=ctx)
    assert out["answer"] == "Missolonghi"
    assert any("JSON thought path" in n for n in out["diagnostics"]["notes"])
    messages = graph.get_state(config).values["messages"]  # what Studio shows
    calls = [c["name"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["retrieve_subgraph", "finish"]
    assert [m.name for m in messages if isinstance(m, ToolMessage)] == ["retrieve_subgraph"]


def test_react_offline_emits_the_same_tool_calls(graph_index):
    graph = build_workflow("react").compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "offline"}}
    out = graph.invoke(
        {"question": QUESTION}, config, context=Context(index=graph_index, profile="wikipedia")
    )
    messages = graph.get_state(config).values["messages"]
    calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls and calls[-1]["name"] == "finish"
    assert out["answer"] == "Missolonghi"
    assert len([m for m in messages if isinstance(m, ToolMessage)]) == out["trace"].count("observe")


# -- routers (pure) --------------------------------------------------------------------------------


def _runtime(**settings: Any) -> Any:
    return SimpleNamespace(context=Context(**settings))


def test_route_escalation_is_monotonic():
    def at(stage: str, sufficient: bool) -> str:
        return route_escalation(
            {"question": "q", "sufficient": sufficient, "diagnostics": {"stage_reached": stage}}
        )

    assert [at(s, False) for s in ("local", "bridge", "ppr")] == [
        "retrieve_bridge", "retrieve_ppr", "generate_answer",
    ]  # fmt: skip
    assert [at(s, True) for s in ("local", "bridge")] == ["generate_answer"] * 2
    assert route_escalation({"question": "q", "next_action": "abstain"}) == "finalize_answer"


def test_route_verification_bounds_retries_and_budgets():
    failed = Verification(passed=False, failure="grounding")
    state: dict[str, Any] = {"question": "q", "verification": failed, "retries": 0}
    assert route_verification(state, _runtime(max_retries=2)) == "rewrite_query"
    assert route_verification({**state, "retries": 2}, _runtime(max_retries=2)) == "finalize_answer"
    spent = {**state, "usage": Usage(llm_calls=9)}
    assert route_verification(spent, _runtime(max_llm_calls=9)) == "finalize_answer"
    passed = {**state, "verification": Verification(passed=True)}
    assert route_verification(passed, _runtime()) == "finalize_answer"
    assert route_evidence({**state, "verification": Verification(passed=False, failure="reject")},
                          _runtime(max_retries=1)) == "expand_query"  # fmt: skip


def test_route_channels_fans_out_both_channels_per_subquery():
    state = {"question": "q", "pending": [{"question": "a?", "step_id": 1},
                                          {"question": "b?", "step_id": 2}]}  # fmt: skip
    sends = route_channels(state)
    assert [(s.node, s.arg["subquery"], s.arg["step_id"]) for s in sends] == [
        ("semantic_search", "a?", 1), ("relational_search", "a?", 1),
        ("semantic_search", "b?", 2), ("relational_search", "b?", 2),
    ]  # fmt: skip
    assert route_channels({"question": "q", "pending": []}) == "draft_logic"


def test_route_thought():
    finish = Thought(decision="FINISH", answer="x")
    assert route_thought({"question": "q", "thought": finish}) == "finalize_answer"
    # REASON needs no tool: think again; RETRIEVE runs its tool calls
    assert route_thought({"question": "q", "thought": Thought(decision="REASON")}) == "think"
    assert route_thought({"question": "q", "thought": Thought(decision="RETRIEVE")}) == "act"


# -- offline checks (no model) --------------------------------------------------------------------


BYRON = EvidenceItem(
    passage_id="byron",
    title="Lord Byron",
    text="Lord Byron was an English poet. He died of a fever at Missolonghi in 1824.",
    sentence="He died of a fever at Missolonghi in 1824.",
)


def test_offline_triple_check_reports_the_first_failed_condition():
    q = "Where did Lord Byron die?"
    assert triple_check(q, "Missolonghi", [BYRON]).passed
    assert triple_check(q, "Missolonghi", []).failure == "relevance"
    curie = EvidenceItem(passage_id="curie", title="Marie Curie", text="Marie Curie was Polish.")
    assert triple_check(q, "Missolonghi", [curie]).failure == "relevance"
    assert triple_check(q, "Athens", [BYRON]).failure == "grounding"
    assert triple_check(q, "Lord Byron", [BYRON]).failure == "adequacy"
    when = triple_check("When did Lord Byron die?", "Missolonghi", [BYRON])
    assert when.failure == "adequacy" and "not a date" in when.reason
    assert triple_check("When did Lord Byron die?", "1824", [BYRON]).passed


def test_offline_evidence_verifier():
    drafts = [Draft(question="Where did Lord Byron die?", answer="Missolonghi", step_id=1,
                    confidence=0.9, evidence=[BYRON])]  # fmt: skip
    verifier = OfflineEvidenceVerifier()
    good = LogicDraft(answer="Missolonghi", evidence=["byron"], confidence=0.9)
    assert verifier.verify("Where did Lord Byron die?", drafts, good).value.passed
    gap = good.model_copy(update={"gaps": ["no answer to step 2"]})
    rejected = verifier.verify("Where did Lord Byron die?", drafts, gap).value
    assert rejected.failure == "reject" and rejected.missing == ["no answer to step 2"]
    unsupported = good.model_copy(update={"answer": "Athens"})
    assert not verifier.verify("Where did Lord Byron die?", drafts, unsupported).value.passed


def test_align_names_and_best_topic():
    assert align_names("When did Byron's daughter die?", ["Lord Byron", "Ada Lovelace"]) == (
        "When did Lord Byron's daughter die?"
    )
    assert align_names("Where did Ada Lovelace die?", ["Ada Lovelace"]) == (
        "Where did Ada Lovelace die?"
    )
    topics = ["born, died, fever", "child, daughter, married"]
    assert best_topic("Where did Lord Byron die?", topics) == "born, died, fever"
    assert best_topic("Where did Lord Byron die?", topics, tried=topics[:1]) == ""


# -- graph shapes and langgraph.json -----------------------------------------------------------------


@pytest.mark.parametrize("name", MINE)
def test_graph_shape_matches_snapshot(name):
    mermaid = get_workflow(name).get_graph().draw_mermaid()
    path = SNAPSHOTS / f"{name}.mmd"
    if os.environ.get("GRAPHSEEK_UPDATE_SNAPSHOTS"):
        path.write_text(mermaid)
    assert path.exists(), (
        f"write the snapshot first: GRAPHSEEK_UPDATE_SNAPSHOTS=1 pytest {__file__}"
    )
    assert mermaid == path.read_text()


def test_librarian_subgraph_shape_matches_snapshot():
    from graphseek.graphs.librarian_agent import librarian_agent

    mermaid = librarian_agent.get_graph().draw_mermaid()
    path = SNAPSHOTS / "librarian_agent.mmd"
    if os.environ.get("GRAPHSEEK_UPDATE_SNAPSHOTS"):
        path.write_text(mermaid)
    assert mermaid == path.read_text()


def test_every_langgraph_json_entry_is_a_compiled_graph():
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert set(MINE) <= set(config["graphs"])
    for name, target in config["graphs"].items():
        file, attr = target.rsplit(":", 1)
        path = (ROOT / file).resolve()
        assert path.is_file(), f"{name}: {path} does not exist"
        module_name = "graphseek.graphs." + path.stem
        spec = importlib.util.find_spec(module_name)
        assert spec is not None and Path(spec.origin).resolve() == path, name
        graph = getattr(importlib.import_module(module_name), attr)
        assert isinstance(graph, CompiledStateGraph), name
        assert graph.name == name


# -- the offline reasoner ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["higra_retriever", "adaptive", "deep_search", "react"])
@pytest.mark.parametrize("with_graph", [True, False], ids=["graph", "no-graph"])
def test_offline_reasoner_answers_a_two_hop_question(name, with_graph, graph_index, tiny_index):
    index = graph_index if with_graph else tiny_index
    out = run(name, QUESTION, Context(index=index, llm="offline", profile="wikipedia"))
    assert out["answer"] == "Missolonghi" and not out["abstained"], out.get("abstain_reason")
    assert "byron" in [e.passage_id for e in out["evidence"]]
    assert out["usage"].llm_calls == 0


def test_react_unfinished_at_its_budget_answers_when_the_reader_is_sure_of_what_it_observed(
    graph_index,
):
    """The turn budget runs out before the model finishes: the offline reader reads the passages
    the run observed and answers at its operating point (noted); else the run abstains."""
    question = "Where did Lord Byron die?"
    retrieve = tool_call("search_passages", 1, query="Lord Byron death place")
    model = scripted({THINKER_TOOLS_SYSTEM: replay(retrieve)})
    out = run("react", question, Context(index=graph_index, llm=llm_for(model), max_turns=1))
    assert out["trace"] == ["think", "observe", "think", "finalize_answer"]
    assert out["answer"] == "Missolonghi" and not out["abstained"]
    assert "byron" in [e.passage_id for e in out["evidence"] if e.supports_answer]
    (note,) = out["diagnostics"]["notes"]
    assert note.startswith("the thinker had not finished when turn budget exhausted (1/1 turns)")
    strict = Context(index=graph_index, llm=llm_for(model), max_turns=1, abstain_threshold=0.999)
    out = run("react", question, strict)
    assert out["abstained"] and "turn budget exhausted (1/1 turns)" in out["abstain_reason"]


def test_adaptive_a_model_check_without_reason_gives_way_when_the_reader_reads_the_same_answer(
    graph_index,
):
    """A model's Triple-Check that fails an answer on relevance (no reason given) is overruled
    when the offline reader, reading the same evidence, gives that answer at its operating
    point; an answer the reader does not read stays failed, the missing reason said."""
    question = "Where did Lord Byron die?"
    irrelevant = {**CHECK_OK, "relevance_reason": "", "relevant": False}

    def ask(answer: str) -> dict[str, Any]:
        model = scripted(
            {
                COVERAGE_SYSTEM: replay(IN_SCOPE),
                SUFFICIENCY_SYSTEM: replay(SUFFICIENT),
                LIBRARIAN_SYSTEM: librarian({question: (answer, 0.9)}),
                TRIPLE_CHECK_SYSTEM: replay(irrelevant),
                REWRITER_SYSTEM: replay({"reason": "same", "query": question}),
            }
        )
        return run("adaptive", question, Context(index=graph_index, llm=llm_for(model)))

    out = ask("Missolonghi")
    assert out["answer"] == "Missolonghi" and not out["abstained"]
    assert "rewrite_query" not in out["trace"] and "failures" not in out["diagnostics"]
    out = ask("London")
    assert out["abstained"] and out["diagnostics"]["failures"][0] == "relevance"
    assert "failed Triple-Check on relevance: the model gave no reason" in out["abstain_reason"]
