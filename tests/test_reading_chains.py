"""Choosing a two-hop chain by the joint support of its bridge and its answer."""

from __future__ import annotations

import pytest

from graphseek.agents.offline.branching import BranchingSeeker
from graphseek.agents.reading.chains import JointChooser, bridge_confidences
from graphseek.agents.roles import SeekerView, Step
from graphseek.state.models import Draft, EvidenceItem, SeekerAction, SubQuestion

PLAN = [
    SubQuestion(id=1, question="Which program is libqux based on?"),
    SubQuestion(id=2, question="Who wrote #1?", depends_on=[1]),
]


def _draft(q: str, a: str, conf: float, step: int, cands: dict[str, float] | None = None) -> Draft:
    cands = cands or {}
    return Draft(
        question=q, answer=a, confidence=conf, step_id=step,
        evidence=[EvidenceItem(passage_id=f"p-{a or 'none'}", text=f"{q} {a}")],
        candidates=list(cands), candidate_confidences=list(cands.values()),
    )  # fmt: skip


UPSTREAM = _draft("Which program is libqux based on?", "Acme", 0.3, 1, {"Bolt": 0.25, "Cog": 0.1})


def test_bridge_confidences_take_the_best_over_drafts() -> None:
    again = _draft("Which program is libqux based on? (x)", "Bolt", 0.4, 1, {"Acme": 0.2})
    got = bridge_confidences([UPSTREAM, again])
    assert got == {"acme": ("Acme", 0.3), "bolt": ("Bolt", 0.4), "cog": ("Cog", 0.1)}
    # a policy that reports no per-candidate confidences: nothing to weigh
    assert bridge_confidences([Draft(question="q", answer="A", candidates=["B"])]) == {}


def test_the_bridge_whose_second_hop_reads_well_wins() -> None:
    finals = [
        _draft("Who wrote Acme?", "Zed", 0.1, 2),
        _draft("Who wrote Bolt?", "Mira Holt", 0.9, 2),
        _draft("Who wrote Cog?", "", 0.0, 2),
    ]
    choice = JointChooser(unexplored=0.1).choose("Who wrote #1?", "1", [UPSTREAM], finals)
    assert choice is not None
    assert (choice.bridge, choice.draft.answer, choice.branches) == ("Bolt", "Mira Holt", 3)
    # posterior of Bolt = .25*.9 / (.3*.1 + .25*.9 + .35*.1) = .776; times its read .9
    assert abs(choice.confidence - 0.6986) < 1e-3


def test_a_rephrased_question_still_counts_for_its_bridge() -> None:
    finals = [
        _draft("Who wrote Acme? (libqux)", "Zed", 0.8, 2),
        _draft("Who wrote Bolt?", "Zed", 0.7, 2),
    ]
    choice = JointChooser(unexplored=0.3).choose("Who wrote #1?", "1", [UPSTREAM], finals)
    assert choice is not None and choice.draft.answer == "Zed"
    # both branches read the same answer: their posterior mass adds up
    w_a, w_b, rest = 0.3 * 0.8, 0.25 * 0.7, 0.45 * 0.3
    expected = (w_a * 0.8 + w_b * 0.7) / (w_a + w_b + rest)
    assert abs(choice.confidence - round(expected, 4)) < 1e-4


def test_one_branch_or_no_confidences_keeps_the_callers_rule() -> None:
    chooser = JointChooser()
    assert (
        chooser.choose("Who wrote #1?", "1", [UPSTREAM], [_draft("Who wrote Acme?", "Zed", 0.9, 2)])
        is None
    )
    plain = Draft(question="Which program is libqux based on?", answer="Acme", confidence=0.3,
                  step_id=1, candidates=["Bolt"])  # fmt: skip
    finals = [_draft("Who wrote Acme?", "Zed", 0.9, 2), _draft("Who wrote Bolt?", "Yu", 0.9, 2)]
    assert chooser.choose("Who wrote #1?", "1", [plain], finals) is None


class _Abstaining:
    abstain_threshold = 0.5

    def decide(self, view: SeekerView) -> Step[SeekerAction]:
        return Step(SeekerAction(action="abstain", reason="weak step 1"))


def _view(finals: list[Draft]) -> SeekerView:
    return SeekerView(question="Who wrote the program libqux is based on?", plan=PLAN,
                      drafts=[UPSTREAM, *finals], step_answers={}, turn=3, max_turns=6)  # fmt: skip


def test_branching_seeker_answers_through_the_jointly_supported_chain() -> None:
    finals = [
        _draft("Who wrote Acme?", "Zed", 0.05, 2),
        _draft("Who wrote Bolt?", "Mira Holt", 0.95, 2),
    ]
    seeker = BranchingSeeker(_Abstaining(), chooser=JointChooser(unexplored=0.05))
    action = seeker.decide(_view(finals)).value
    assert action.action == "answer" and action.answer == "Mira Holt"
    assert action.confidence >= 0.5
    assert action.evidence == ["p-Acme", "p-Mira Holt"]  # step 1's draft, then the chosen read
    # without a chooser the inner rule stands
    assert BranchingSeeker(_Abstaining()).decide(_view(finals)).value.action == "abstain"


def test_branching_seeker_abstains_when_no_chain_is_supported() -> None:
    finals = [_draft("Who wrote Acme?", "Zed", 0.3, 2), _draft("Who wrote Bolt?", "Yu", 0.3, 2)]
    action = BranchingSeeker(_Abstaining(), chooser=JointChooser()).decide(_view(finals)).value
    assert action.action == "abstain"
    assert "No chain is supported enough" in action.reason


class _Librarian:
    """Drafts from a table (question -> draft); reports per-candidate confidences."""

    profile = "general"

    def __init__(self, table: dict[str, Draft]) -> None:
        self.table = table
        self.asked: list[str] = []

    def draft(self, question: str, hits: object) -> Step[Draft]:
        self.asked.append(question)
        return Step(self.table.get(question, Draft(question=question, answer="")))


@pytest.mark.slow
def test_resolve_chain_reads_through_the_best_bridges() -> None:
    from graphseek.agents.offline.chain import plan_for, resolve_chain
    from graphseek.knowledge.passages import Hit, Passage

    question = "Who wrote the program that libqux is based on?"
    plan, whole = plan_for(question, "general")
    assert not whole and len(plan) == 2
    first, last = plan[0].question, plan[1].question
    upstream = _draft(first, "Acme", 0.3, 1, {"Bolt": 0.25, "Cog": 0.1})
    table = {first: upstream}
    for bridge, answer, conf in (
        ("Acme", "Zed", 0.05),
        ("Bolt", "Mira Holt", 0.95),
        ("Cog", "", 0.0),
    ):
        q = last.replace("#1", bridge)
        table[q] = _draft(q, answer, conf, 2)
    hits = [Hit(passage=Passage.from_title_text("libqux", "libqux is based on Bolt."), score=1.0)]
    librarian = _Librarian(table)
    chain = resolve_chain(librarian, question, hits)
    assert chain.resolved and chain.final is not None
    assert chain.answers == {"1": "Bolt", "2": "Mira Holt"}
    assert chain.final.confidence >= 0.5
    assert len(librarian.asked) == 4  # step 1, then step 2 through three bridges
    # without a chooser the weak first step stops the chain
    plain = resolve_chain(_Librarian(table), question, hits, chooser=None)
    assert not plain.resolved and plain.missing == [first]
    # a Librarian without per-candidate confidences: step 1 is drafted once, as before
    bare = {q: d.model_copy(update={"candidate_confidences": []}) for q, d in table.items()}
    librarian = _Librarian(bare)
    assert not resolve_chain(librarian, question, hits).resolved
    assert librarian.asked == [first]


def test_a_read_whose_evidence_never_names_its_bridge_is_no_evidence_for_it() -> None:
    finals = [
        _draft("Who wrote Acme?", "Zed", 0.9, 2).model_copy(
            update={"evidence": [EvidenceItem(passage_id="p9", text="Zed wrote a novel.")]}
        ),
        _draft("Who wrote Bolt?", "Zed", 0.9, 2).model_copy(
            update={"evidence": [EvidenceItem(passage_id="p9", text="Zed wrote a novel.")]}
        ),
    ]
    assert JointChooser().choose("Who wrote #1?", "1", [UPSTREAM], finals) is None
