"""The escalation cascade of readers (`Context.readers`, `graphseek.graphs.cascade`) through a
fake OpenAI-compatible server on 127.0.0.1, and the sentence prompts the model readers read."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fake_openai import BYRON_QUOTE, HOP2, QUESTION, FakeOpenAIServer, Reply, Request, TinyWorld
from model_env import model_env, serve

from graphseek import ask
from graphseek.agents.readers import DEFAULT_MODEL_POINT, Reader, judge, model_point, says_unknown
from graphseek.errors import ContextError
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem

MODEL = "openai:tiny-model"

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


@pytest.fixture(autouse=True)
def llm_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from model_env(monkeypatch, GRAPHSEEK_LLM_TIMEOUT="20")


def librarian_prompts(server: FakeOpenAIServer) -> list[str]:
    return [
        Request(body, i).first_user
        for i, body in enumerate(server.requests, 1)
        if Request(body, i).schema_name in ("LibrarianReply", "BriefReply")
    ]


# -- the rule ----------------------------------------------------------------------------------


def _hit(pid: str, title: str, text: str) -> Hit:
    return Hit(passage=Passage(id=pid, title=title, text=text), score=1.0, rank=1)


BYRON = _hit("byron", "Lord Byron", BYRON_QUOTE)


def _draft(answer: str, confidence: float, evidence: bool = True) -> Draft:
    items = [EvidenceItem(passage_id="byron", title="Lord Byron", text=BYRON_QUOTE)]
    return Draft(
        question="Where did Lord Byron die?",
        answer=answer,
        confidence=confidence,
        evidence=items if evidence else [],
    )


def test_unknown_replies_are_recognised() -> None:
    for text in ("", "unknown", "Unknown.", "not stated", "N/A", "I don't know"):
        assert says_unknown(text), text
    assert not says_unknown("Missolonghi")


def test_a_model_answer_stands_only_grounded_and_at_its_point() -> None:
    model = Reader("openai:m", None, 0.6)
    q = "Where did Lord Byron die?"
    kept, reason = judge(model, q, _draft("Missolonghi", 0.9), [BYRON], 0.4)
    assert reason == "" and kept.answer == "Missolonghi"
    assert any(e.supports_answer for e in kept.evidence)
    _, reason = judge(model, q, _draft("Missolonghi", 0.5), [BYRON], 0.4)
    assert "below its point 0.60" in reason
    _, reason = judge(model, q, _draft("Athens", 0.95), [BYRON], 0.4)
    assert "Athens" in reason  # stated in no passage read: the next reader reads
    _, reason = judge(model, q, _draft("unknown", 0.95), [BYRON], 0.4)
    assert reason == "it answered 'unknown'"
    failed = _draft("", 0.0).model_copy(update={"error": "server error"})
    assert judge(model, q, failed, [BYRON], 0.4)[1].startswith("its model call failed")


def test_a_model_sentence_is_read_down_to_its_grounded_span() -> None:
    model = Reader("openai:m", None, 0.6)
    said = "Lord Byron died of a fever at Missolonghi."
    kept, reason = judge(model, "Where did Lord Byron die?", _draft(said, 0.9), [BYRON], 0.4)
    assert reason == "" and kept.answer == "Missolonghi"


def test_the_offline_reader_needs_evidence_and_its_point() -> None:
    offline = Reader("offline", None, 0.4)
    assert judge(offline, "q", _draft("Missolonghi", 0.5), [BYRON], 0.4)[1] == ""
    assert "no evidence" in judge(offline, "q", _draft("Missolonghi", 0.9, False), [BYRON], 0.4)[1]
    assert "below" in judge(offline, "q", _draft("Missolonghi", 0.3), [BYRON], 0.4)[1]


def test_an_uncalibrated_model_gets_the_conservative_point() -> None:
    assert model_point("openai:never-calibrated") == DEFAULT_MODEL_POINT


def test_readers_are_checked_with_the_context() -> None:
    assert Context(readers="offline, openai:m").readers == "offline, openai:m"
    with pytest.raises(ContextError, match="readers must be model specs"):
        Context(readers="offline,,openai:m")
    with pytest.raises(ContextError, match="read_by must be"):
        Context(read_by="words")  # type: ignore[arg-type]


# -- runs through a server ----------------------------------------------------------------------


def test_the_offline_reader_settles_with_no_model_call(monkeypatch, tiny_index) -> None:
    with serve(monkeypatch, TinyWorld()) as server:
        result = ask(tiny_index, HOP2, topology="naive", readers=f"offline,{MODEL}")
    assert result.answer == "Missolonghi"
    assert server.requests == [] and result.usage.llm_calls == 0
    assert result.diagnostics["answered_by"] == "offline"
    (reading,) = result.diagnostics["readings"]
    assert reading["reader"] == "offline" and reading["outcome"] == "answered"
    assert reading["answer"] == "Missolonghi" and reading["question"] == HOP2


def test_a_question_the_offline_reader_cannot_settle_goes_to_the_model(
    monkeypatch, tiny_index
) -> None:
    # an offline point of 1.0: the offline reader never settles
    with serve(monkeypatch, TinyWorld()) as server:
        result = ask(
            tiny_index, QUESTION, topology="naive", readers=f"offline,{MODEL}",
            abstain_threshold=1.0,
        )  # fmt: skip
    assert result.answer == "Missolonghi" and not result.abstained
    assert result.diagnostics["answered_by"] == MODEL
    first, second = result.diagnostics["readings"]
    assert (first["reader"], first["outcome"]) == ("offline", "passed")
    assert "below its point 1.00" in first["reason"]
    assert (second["reader"], second["outcome"], second["answer"]) == (
        MODEL,
        "answered",
        "Missolonghi",
    )
    usage = result.diagnostics["reader_usage"]
    assert usage["offline"]["llm_calls"] == 0 and usage[MODEL]["llm_calls"] == 1
    assert result.usage.llm_calls == 1
    # the model read the best sentences, under their passage ids, not whole passages
    (prompt,) = librarian_prompts(server)
    assert "[byron] Lord Byron:\n- " in prompt and "Missolonghi" in prompt
    # in its brief form: the answer, its passages and a confidence, not reasoning, candidates or
    # quoted sentences (the evidence shown is ranked by sentence either way)
    (request,) = [Request(body, i) for i, body in enumerate(server.requests, 1)]
    assert request.schema_name == "BriefReply"
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"answer", "passage_ids", "confidence"}
    assert result.evidence and result.evidence[0].passage_id == "byron"


def test_a_model_given_every_role_drafts_in_the_librarians_full_form(
    monkeypatch, tiny_index
) -> None:
    with serve(monkeypatch, TinyWorld()) as server:
        result = ask(tiny_index, QUESTION, topology="naive", llm=MODEL)
    assert result.answer == "Missolonghi"
    assert [Request(b, i).schema_name for i, b in enumerate(server.requests, 1)] == [
        "LibrarianReply"
    ]


def test_the_last_readers_abstention_stands_and_shows_the_evidence(monkeypatch, tiny_index) -> None:
    def unknown(request: Request) -> Reply:
        return Reply.json(
            {
                "reasoning": "",
                "answer": "unknown",
                "candidates": [],
                "evidence": [],
                "passage_ids": [],
                "confidence": 0.9,
            }  # fmt: skip
        )

    with serve(monkeypatch, unknown):
        result = ask(
            tiny_index, QUESTION, topology="naive", readers=f"offline,{MODEL}",
            abstain_threshold=1.0,
        )  # fmt: skip
    assert result.abstained and result.answer == ""
    last = result.diagnostics["readings"][-1]
    assert last["outcome"] == "abstained" and last["reason"] == "it answered 'unknown'"
    assert "answered_by" not in result.diagnostics
    assert result.evidence  # an abstention still shows what the run read


def test_a_made_up_answer_passes_to_the_next_model(monkeypatch, tiny_index) -> None:
    def by_model(request: Request) -> Reply:
        if request.body.get("model") == "weak":
            return Reply.json(
                {
                    "reasoning": "",
                    "answer": "Athens",
                    "candidates": [],
                    "evidence": [],
                    "passage_ids": ["byron"],
                    "confidence": 0.95,
                }  # fmt: skip
            )
        return TinyWorld()(request)

    with serve(monkeypatch, by_model):
        result = ask(
            tiny_index,
            QUESTION,
            topology="naive",
            readers=["offline", "openai:weak", "openai:strong"],
            abstain_threshold=1.0,
        )
    assert result.answer == "Missolonghi"
    assert result.diagnostics["answered_by"] == "openai:strong"
    weak = result.diagnostics["readings"][1]
    assert (weak["reader"], weak["outcome"], weak["answer"]) == ("openai:weak", "passed", "Athens")


def test_dual_agent_drafts_every_step_through_the_cascade(monkeypatch, tiny_index) -> None:
    import graphseek.agents.readers as readers

    # the offline reader's first-hop guess ('English', about 0.51) is below the run's point
    # (0.55 here), so that hop goes to the model. Uncalibrated (point 0.8), the model's 'Lord
    # Byron' differs from the offline guess: 0.9 x DISAGREEING is below its point: abstention
    point = {"abstain_threshold": 0.55}
    with serve(monkeypatch, TinyWorld()):
        result = ask(
            tiny_index, QUESTION, topology="dual_agent", readers=f"offline,{MODEL}", **point
        )
    assert result.abstained and result.answer == ""
    # calibrated lower (reader_points.json), the same answer stands
    monkeypatch.setattr(readers, "_points", lambda: {"tiny-model": 0.4})
    with serve(monkeypatch, TinyWorld()):
        result = ask(
            tiny_index, QUESTION, topology="dual_agent", readers=f"offline,{MODEL}", **point
        )
    assert result.answer == "Missolonghi"
    readings = result.diagnostics["readings"]
    # every step is read by the offline reader first; only a step it cannot settle reaches the
    # model (here the first hop, whose offline guess is below its point), so it makes one call
    asked = [r["question"] for r in readings if r["reader"] == "offline"]
    assert len(set(asked)) == 2
    assert (readings[-1]["reader"], readings[-1]["answer"]) == ("offline", "Missolonghi")
    to_model = [r for r in readings if r["reader"] == MODEL]
    assert result.usage.llm_calls == len(to_model) <= 1


def test_the_cli_takes_readers(monkeypatch, capsys, tiny_index) -> None:
    from graphseek.cli import main

    with serve(monkeypatch, TinyWorld()):
        code = main(
            [
                "ask",
                str(tiny_index.path),
                QUESTION,
                "-t",
                "naive",
                "--readers",
                f"offline,{MODEL}",
                "--abstain-threshold",
                "1.0",
                "--json",
            ]  # fmt: skip
        )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["answer"] == "Missolonghi"
    assert out["diagnostics"]["answered_by"] == MODEL


def test_the_cli_text_says_which_reader_answered(monkeypatch, capsys, tiny_index) -> None:
    from graphseek.cli import main

    with serve(monkeypatch, TinyWorld()):
        code = main(
            [
                "ask",
                str(tiny_index.path),
                QUESTION,
                "-t",
                "naive",
                "--readers",
                f"offline,{MODEL}",
                "--abstain-threshold",
                "1.0",
            ]  # fmt: skip
        )
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "Answer: Missolonghi" in out
    assert (
        f"readers: offline settled 0 of 1; {MODEL} settled 1 of 1, 1 model calls; "
        f"answered by {MODEL}"
    ) in out


def test_studio_streams_each_reader_as_a_subgraph_step(monkeypatch, tiny_index) -> None:
    from graphseek.api import make_context
    from graphseek.graphs import build_workflow, memory_saver

    graph = build_workflow("naive").compile(checkpointer=memory_saver())
    context = make_context(tiny_index, None, readers=f"offline,{MODEL}", abstain_threshold=1.0)
    config = {"configurable": {"thread_id": "cascade"}}
    with serve(monkeypatch, TinyWorld()):
        steps = [
            (namespace[0].split(":")[0] if namespace else "", node)
            for namespace, update in graph.stream(
                {"question": QUESTION}, config, context=context, subgraphs=True
            )
            for node in update
        ]
    # the escalation: two readers in turn, inside the node that drafts
    assert steps.count(("generate_answer", "read")) == 2
    assert ("", "finalize_answer") in steps
    assert graph.get_state(config).values["answer"] == "Missolonghi"


def test_a_model_answer_that_no_earlier_reader_guessed_needs_more_confidence() -> None:
    from graphseek.agents.readers import DISAGREEING

    model = Reader("openai:m", None, 0.6)
    q = "Where did Lord Byron die?"
    agreed, reason = judge(model, q, _draft("Missolonghi", 0.9), [BYRON], 0.4, ["Missolonghi"])
    assert reason == "" and agreed.confidence == 0.9
    alone, reason = judge(model, q, _draft("Missolonghi", 0.9), [BYRON], 0.4, ["London"])
    assert alone.confidence == 0.9 * DISAGREEING and "below its point" in reason
    first, reason = judge(model, q, _draft("Missolonghi", 0.9), [BYRON], 0.4, [])
    assert reason == "" and first.confidence == 0.9  # no earlier guess: its own confidence


@pytest.mark.parametrize("topology", ["react", "knowledge_aware"])
def test_a_loops_abstention_is_read_by_the_cascade(monkeypatch, tiny_index, topology) -> None:
    # react's thinker and knowledge_aware's rounds decide their own answer; offline at a point of
    # 1.0 they abstain, and the conditional edge sends the passages they observed to the readers
    with serve(monkeypatch, TinyWorld()) as server:
        result = ask(
            tiny_index, QUESTION, topology=topology, readers=f"offline,{MODEL}",
            abstain_threshold=1.0,
        )  # fmt: skip
    assert result.answer == "Missolonghi" and not result.abstained
    assert result.trace[-2:] == ["read_observed", "finalize_answer"]
    assert result.diagnostics["answered_by"] == MODEL
    first, second = result.diagnostics["readings"]
    assert (first["reader"], first["outcome"]) == ("offline", "passed")
    assert (second["reader"], second["outcome"]) == (MODEL, "answered")
    # the model only read: one brief draft, no other role
    assert [Request(b, i).schema_name for i, b in enumerate(server.requests, 1)] == ["BriefReply"]
    assert result.usage.llm_calls == 1


@pytest.mark.parametrize("topology", ["react", "knowledge_aware"])
def test_without_readers_a_loops_abstention_stands(tiny_index, topology) -> None:
    result = ask(tiny_index, QUESTION, topology=topology, abstain_threshold=1.0)
    assert result.abstained and "read_observed" not in result.trace


def test_the_readers_abstention_keeps_the_loops_reason(monkeypatch, tiny_index) -> None:
    def unknown(request: Request) -> Reply:
        return Reply.json({"answer": "unknown", "passage_ids": [], "confidence": 0.1})

    with serve(monkeypatch, unknown):
        result = ask(
            tiny_index, QUESTION, topology="react", readers=f"offline,{MODEL}",
            abstain_threshold=1.0,
        )  # fmt: skip
    assert result.abstained and "read_observed" in result.trace
    loop_reason, _, readers_reason = result.abstain_reason.partition("; the readers: ")
    assert loop_reason and readers_reason
    assert result.evidence  # the abstention still shows what the loop read
