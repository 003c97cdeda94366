"""Sentence bridges as next-hop subjects in `dual_agent` (issue 57 item 3).

On the tiny corpus, "Where did Ada Lovelace's father die?" names Ada Lovelace only. The offline
reader answers its first hop ("What is Ada Lovelace's father?") with "English" and Charles
Babbage, both wrong; semantic bridging reaches Lord Byron from Ada Lovelace through "She married
Lord Byron in 1815 and was the mother of Ada Lovelace." (Annabella Milbanke's page). With the
`bridge` retriever the Seeker asks the second hop about Lord Byron too and answers Missolonghi;
without the bridges it abstains. A model Seeker is shown the bridge and its sentence."""

from __future__ import annotations

from typing import Any

import pytest

from graphseek.agents.offline.bridges import asked_through, chain_bridges, extends, subjects
from graphseek.agents.offline.seeker import OfflineSeeker
from graphseek.agents.profiles import GENERAL
from graphseek.agents.roles import SeekerView
from graphseek.knowledge.passages import Passage
from graphseek.state.models import Draft, EvidenceItem, SentenceBridge, SubQuestion

QUESTION = "Where did Ada Lovelace's father die?"
SENTENCE = "She married Lord Byron in 1815 and was the mother of Ada Lovelace."


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory: pytest.TempPathFactory, tiny_passages: list[Passage]) -> Any:
    from graphseek.knowledge.index import Index

    path = tmp_path_factory.mktemp("bridge-hops") / "index"
    return Index.build(tiny_passages, path, show_progress=False, graph=True)


def _bridge(
    entity: str, weight: float = 0.54, types: tuple[str, ...] = ("PERSON",)
) -> SentenceBridge:
    return SentenceBridge(
        entity=entity,
        types=list(types),
        source="Ada Lovelace",
        sentence=SENTENCE,
        passage_id="milbanke",
        weight=weight,
    )


PLAN = [
    SubQuestion(id=1, question="Who is the father of Ada Lovelace?"),
    SubQuestion(id=2, question="Where did #1 die?", depends_on=[1]),
]


def _draft(question: str, answer: str, confidence: float, step: int, pid: str = "x") -> Draft:
    evidence = [EvidenceItem(passage_id=pid, text=f"... {answer} ...", sentence=answer)]
    return Draft(
        question=question,
        answer=answer,
        step_id=step,
        confidence=confidence,
        evidence=evidence if answer else [],
    )


def _view(drafts: list[Draft], bridges: list[SentenceBridge], turn: int = 1) -> SeekerView:
    answers = {str(d.step_id): d.answer for d in drafts if d.answer}
    return SeekerView(
        question=QUESTION,
        plan=PLAN,
        drafts=drafts,
        step_answers=answers,
        turn=turn,
        max_turns=6,
        bridges=bridges,
    )


# -- the rules, on views ---------------------------------------------------------------------------


def test_subjects_fit_the_hop_and_keep_the_longest_name() -> None:
    hop = PLAN[0]
    bridges = [
        _bridge("Byron", 0.6),
        _bridge("Lord Byron", 0.6),
        _bridge("Greece", 0.7, ("GPE",)),
        _bridge("Lord Byron of Rochdale", 0.4, ("WORK_OF_ART",)),
    ]
    # a person is asked for: the place is left out, "Byron" gives way to "Lord Byron"
    assert [b.entity for b in subjects(bridges, hop, "", GENERAL)] == [
        "Lord Byron",
    ]
    # a hop that names no kind of entity ("What is ...") takes any bridge but a group's name
    what = SubQuestion(id=1, question="What is Ada Lovelace's father?")
    swedish = _bridge("Swedish", 0.9, ("NORP",))
    assert [b.entity for b in subjects([swedish, *bridges], what, "", GENERAL)] == [
        "Greece",
        "Lord Byron of Rochdale",
    ]
    # the hop's answer written longer comes first, whatever its type; the answer itself is left out
    found = subjects(bridges, hop, "Lord Byron", GENERAL)
    assert [b.entity for b in found] == ["Lord Byron of Rochdale"]
    assert extends("Ermengarde of Tours", "Ermengarde") and not extends("Ermengarde", "Ermengarde")


def test_a_comparison_follows_no_bridge() -> None:
    """A comparison's steps are about the options it names: no bridge replaces one."""
    bridges = [_bridge("Lord Byron")]
    assert chain_bridges(QUESTION, bridges, GENERAL) == bridges
    assert chain_bridges("Who was born first, Ada Lovelace or Marie Curie?", bridges, GENERAL) == []
    offered = "Which film has the director who was born later, Playing It Wild or Greed?"
    assert chain_bridges(offered, bridges, GENERAL) == []


def test_an_unanswered_hop_is_followed_through_its_bridge() -> None:
    seeker = OfflineSeeker(abstain_threshold=0.5)
    first = _draft(PLAN[0].question, "", 0.0, 1)
    action = seeker.decide(_view([first], [_bridge("Lord Byron")])).value
    assert action.action == "ask_librarian"
    assert "Where did Lord Byron die?" in action.questions
    # without bridges, the second hop is never asked
    plain = seeker.decide(_view([first], [])).value
    assert "Where did Lord Byron die?" not in plain.questions


def test_the_answer_through_a_bridge_is_as_sure_as_the_bridge() -> None:
    first = _draft(PLAN[0].question, "", 0.0, 1)
    second = _draft("Where did Lord Byron die?", "Missolonghi", 0.9, 2, "byron")
    drafts = [first, first.model_copy(update={"question": "Who was Ada Lovelace's father?"})]
    view = _view([*drafts, second], [_bridge("Lord Byron", 0.54)], turn=5)
    action = OfflineSeeker(abstain_threshold=0.5).decide(view).value
    assert action.action == "answer" and action.answer == "Missolonghi"
    assert action.confidence == pytest.approx(0.54)  # min(0.9, the bridge's activation)
    assert action.evidence == ["milbanke", "byron"]
    assert "Lord Byron" in action.reason
    # a bridge less sure than the threshold abstains
    strict = OfflineSeeker(abstain_threshold=0.8).decide(view).value
    assert strict.action == "abstain" and "through the bridge 'Lord Byron'" in strict.reason


def test_a_settled_hop_is_only_confirmed_by_its_answer_written_longer() -> None:
    seeker = OfflineSeeker()
    first = _draft(PLAN[0].question, "Byron", 0.9, 1, "ada")
    weak = _draft("Where did Byron die?", "London", 0.2, 2)
    bridges = [_bridge("Lord Byron", 0.5), _bridge("Charles Babbage", 0.7)]
    action = seeker.decide(_view([first, weak], bridges)).value
    assert "Where did Lord Byron die?" in action.questions
    assert not any("Babbage" in q for q in action.questions)
    assert asked_through("Where did Lord Byron die?", PLAN[1], {"1": "Byron"}, bridges) == (
        1,
        bridges[0],
    )
    assert asked_through("Where did Byron die?", PLAN[1], {"1": "Byron"}, bridges) is None


def test_a_confirming_bridge_keeps_the_readers_confidence() -> None:
    """The hop's answer written longer by a bridge is the same entity: the chain through it is
    as sure as the reader's answer, not as the bridge's activation."""
    first = _draft(PLAN[0].question, "Byron", 0.9, 1, "ada")
    weak = _draft("Where did Byron die?", "London", 0.2, 2)
    longer = _draft("Where did Lord Byron die?", "Missolonghi", 0.85, 2, "byron")
    view = _view([first, weak, longer], [_bridge("Lord Byron", 0.5)], turn=3)
    action = OfflineSeeker(abstain_threshold=0.8).decide(view).value
    assert action.action == "answer" and action.answer == "Missolonghi"
    assert action.confidence == pytest.approx(0.85)
    assert action.evidence == ["ada", "milbanke", "byron"]


def test_without_bridges_the_seeker_decides_as_before() -> None:
    first = _draft(PLAN[0].question, "Lord Byron", 0.9, 1, "ada")
    second = _draft("Where did Lord Byron die?", "Missolonghi", 0.9, 2, "byron")
    seeker = OfflineSeeker()
    with_none = seeker.decide(_view([first, second], [])).value
    assert with_none.action == "answer" and with_none.answer == "Missolonghi"
    assert with_none.evidence == ["ada", "byron"]


# -- the workflow on the tiny corpus ---------------------------------------------------------------


def test_question_bridges_only_when_the_run_bridges(graph_index: Any) -> None:
    from graphseek.state.context import Context
    from graphseek.tools.graph_context import question_bridges

    found = question_bridges(Context(index=graph_index, retriever="bridge"), QUESTION)
    assert [(b.entity, b.source, b.passage_id) for b in found] == [
        ("Lord Byron", "Ada Lovelace", "milbanke")
    ]
    assert found[0].sentence == SENTENCE and "PERSON" in found[0].types
    assert 0.35 <= found[0].weight <= 1.0
    seeded = Context(index=graph_index, retriever="higra", bridge_seeds=True)
    assert [b.entity for b in question_bridges(seeded, QUESTION)] == ["Lord Byron"]
    for context in (
        Context(index=graph_index, retriever="hybrid"),
        Context(index=graph_index, retriever="higra"),
        Context(index=graph_index, retriever="hybrid", bridge_seeds=True),
    ):
        assert question_bridges(context, QUESTION) == []


def test_dual_agent_offline_follows_the_bridge_to_the_answer(
    graph_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphseek.api import ask
    from graphseek.graphs import dual_agent

    result = ask(graph_index, QUESTION, llm="offline", retriever="bridge", top_k=2)
    assert result.answer == "Missolonghi" and not result.abstained
    assert {"milbanke", "byron"} <= {e.passage_id for e in result.evidence}
    followed = result.diagnostics["bridges_followed"]
    assert any("'Lord Byron'" in note and "[milbanke]" in note for note in followed)
    # before: the same retrieval without the bridges, and the default retrieval, abstain
    monkeypatch.setattr(dual_agent, "question_bridges", lambda context, question: [])
    before = ask(graph_index, QUESTION, llm="offline", retriever="bridge", top_k=2)
    assert before.abstained and "bridges_followed" not in before.diagnostics
    monkeypatch.undo()
    hybrid = ask(graph_index, QUESTION, llm="offline", retriever="hybrid", top_k=2)
    assert hybrid.abstained and "bridges_followed" not in hybrid.diagnostics


# -- a model Seeker is shown the bridge ------------------------------------------------------------


def test_the_model_seekers_prompt_carries_the_bridge(graph_index: Any) -> None:
    from langchain_core.messages import AIMessage, ToolMessage

    from graphseek.agents.prompts.clarifier import CLARIFIER_SYSTEM
    from graphseek.agents.prompts.decomposer import DECOMPOSER_SYSTEM
    from graphseek.agents.prompts.librarian import LIBRARIAN_TOOLS_SYSTEM
    from graphseek.agents.prompts.seeker import SEEKER_SYSTEM
    from graphseek.api import ask
    from graphseek.llm import ScriptedChatModel

    plan = {
        "reason": "the father, then where he died",
        "question_subject": "place of death",
        "sub_questions": [
            {"id": 1, "question": "Who is the father of Ada Lovelace?", "depends_on": []},
            {"id": 2, "question": "Where did #1 die?", "depends_on": [1]},
        ],
    }
    answers = {
        "Who is the father of Ada Lovelace?": ("", []),  # the first hop finds no answer
        "Where did Lord Byron die?": ("Missolonghi", ["byron"]),
    }
    seeker_replies = iter(
        [
            {
                "reason": "the bridge sentence names Ada Lovelace's parents' marriage",
                "action": "ask_librarian",
                "questions": ["Where did Lord Byron die?"],
                "step_ids": [2],
            },
            {"reason": "done", "action": "answer", "answer": "Missolonghi", "evidence": ["byron"]},
        ]
    )

    def respond(messages: list[Any]) -> Any:
        system = messages[0].content
        if system == CLARIFIER_SYSTEM:
            return {"reason": "fine", "question": QUESTION}
        if system == DECOMPOSER_SYSTEM:
            return plan
        if system == LIBRARIAN_TOOLS_SYSTEM:
            question = messages[1].content.split("\n", 1)[0].removeprefix("Question: ")
            answer, pids = answers[question]
            if not any(isinstance(m, ToolMessage) for m in messages):
                call = {"name": "context_search", "args": {"query": question}, "id": "s1"}
                return AIMessage(content="", tool_calls=[call])
            finish = {"answer": answer, "passage_ids": pids, "reason": "read"}
            return AIMessage(content="", tool_calls=[{"name": "finish", "args": finish, "id": "f"}])
        if system == SEEKER_SYSTEM:
            return next(seeker_replies)
        raise AssertionError(system[:60])

    model = ScriptedChatModel(responses=respond)
    result = ask(graph_index, QUESTION, llm=model, retriever="bridge", top_k=2)
    assert result.answer == "Missolonghi"
    prompts = [m[1].content for m in model.calls if m[0].content == SEEKER_SYSTEM]
    assert prompts and all("Candidate bridges" in p for p in prompts)
    line = f'- Lord Byron (from Ada Lovelace) [milbanke] "{SENTENCE}"'
    assert all(line in p for p in prompts)
    # the block sits after the plan, before the history: each turn still extends the last
    head = prompts[0].rsplit("\n", 1)[0]
    assert prompts[1].startswith(head)
    followed = result.diagnostics["bridges_followed"]
    assert any("'Lord Byron'" in note for note in followed)

    # a run whose retrieval does not bridge shows the model no bridge
    seeker_replies = iter(
        [
            {
                "reason": "guess",
                "action": "ask_librarian",
                "questions": ["Where did Lord Byron die?"],
                "step_ids": [2],
            },
            {"reason": "done", "action": "answer", "answer": "Missolonghi", "evidence": ["byron"]},
        ]
    )
    model = ScriptedChatModel(responses=respond)
    result = ask(graph_index, QUESTION, llm=model, retriever="hybrid", top_k=2)
    prompts = [m[1].content for m in model.calls if m[0].content == SEEKER_SYSTEM]
    assert prompts and not any("Candidate bridges" in p for p in prompts)
    assert "bridges_followed" not in result.diagnostics
