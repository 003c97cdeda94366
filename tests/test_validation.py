"""One validation at every entry: a compiled workflow's `invoke` / `stream` refuses what the CLI and
`ask` refuse, with the same one-line error naming the field, before any node does work."""

from __future__ import annotations

from typing import Any

import pytest

from graphseek.errors import ContextError, InvalidRequestError, UnknownTopologyError
from graphseek.graphs import get_workflow, topology_names
from graphseek.state.context import Context
from graphseek.state.validation import (
    check_input,
    check_name,
    check_question,
    unknown_name,
)

# (input, context, error, message): every bad request, each as a server client sends it (JSON)
BAD_REQUESTS: list[tuple[Any, dict[str, Any], type[Exception], str]] = [
    ({"question": ""}, {}, InvalidRequestError, "The question is empty"),
    ({"question": "   \n"}, {}, InvalidRequestError, "The question is empty"),
    ({"question": None}, {}, InvalidRequestError, 'The input has no "question"'),
    ({}, {}, InvalidRequestError, 'The input has no "question"; send {"question": "..."}.'),
    ({"question": "Who? " * 1000}, {}, InvalidRequestError, "the limit is 2,000"),
    ({"question": "Who?" * 10}, {"max_question_chars": 20}, InvalidRequestError, "limit is 20 "),
    ({"question": "\x00\x01\x02\x03 who?"}, {}, InvalidRequestError, "The question is not text"),
    ({"question": "q"}, {"retriever": "nope"}, InvalidRequestError, "Unknown retriever 'nope'; "),
    ({"question": "q"}, {"retriever": "hybird"}, InvalidRequestError, "did you mean 'hybrid'?"),
    ({"question": "q"}, {"profile": "wiki"}, ContextError, "did you mean 'wikipedia'?"),
    ({"question": "q"}, {"mode": "swarm"}, ContextError, "Unknown knowledge_aware mode 'swarm'"),
    ({"question": "q"}, {"top_k": 0}, ContextError, "top_k must be an integer >= 1, got 0"),
    ({"question": "q"}, {"max_turns": 0}, ContextError, "max_turns must be an integer >= 1"),
    ({"question": "q"}, {"agents": -1}, ContextError, "agents must be an integer >= 1"),
    ({"question": "q"}, {"max_llm_calls": -1}, ContextError, "max_llm_calls must be an integer"),
    ({"question": "q"}, {"llm_timeout": -2}, ContextError, "llm_timeout must be a number"),
    ({"question": "q"}, {"max_question_chars": -1}, ContextError, "max_question_chars must be"),
]


@pytest.mark.parametrize("topology", topology_names())
def test_every_topology_refuses_bad_requests_before_any_work(topology: str) -> None:
    """The context names no index: a run that got past the checks would fail with "No index for
    this run" at its first retrieval; the check's own error shows it ran first."""
    graph = get_workflow(topology)
    for inp, context, error, message in BAD_REQUESTS:
        with pytest.raises(error) as err:
            graph.invoke(inp, context=context)
        assert message in str(err.value), (topology, inp, context)
        assert isinstance(err.value, ValueError) and "\n" not in str(err.value)


def test_stream_and_a_python_context_are_checked_too() -> None:
    graph = get_workflow("dual_agent")
    with pytest.raises(InvalidRequestError, match="The question is empty"):
        list(graph.stream({"question": " "}, context=Context(index=object())))
    with pytest.raises(InvalidRequestError, match="Unknown retriever 'nope'"):
        list(graph.stream({"question": "q"}, context=Context(index=object(), retriever="nope")))
    with pytest.raises(ContextError, match="top_k must be an integer >= 1"):
        Context(top_k=0)


def test_ask_and_the_graph_share_the_question_limit(tiny_index: Any) -> None:
    from graphseek.api import ask

    question = "Where did Ada Lovelace's father die? " + "Please answer. " * 150  # > 2,000
    with pytest.raises(InvalidRequestError, match="the limit is 2,000"):
        ask(tiny_index, question, topology="naive")
    result = ask(tiny_index, question, topology="naive", max_question_chars=5000)
    assert result.trace  # the run's own check took the raised limit from the context


def test_unknown_names_get_the_closest_known_ones() -> None:
    assert (
        unknown_name("topology", "dual_agnet", topology_names())
        == "Unknown topology 'dual_agnet'; did you mean 'dual_agent'?"
    )
    assert unknown_name("mode", "x", ["single", "competitive"]) == (
        "Unknown mode 'x'; known modes: single, competitive."
    )
    assert unknown_name("retriever", "BM25", ["bm25", "dense"]).endswith("did you mean 'bm25'?")
    many = [f"doc-{i:03d}.txt" for i in range(500)]
    message = unknown_name("document source", "zzz", many, plural="sources")
    assert message.endswith(", … (500 in all).") and message.count(",") == 20
    assert check_name("mode", "single", ["single"]) == "single"
    with pytest.raises(InvalidRequestError):
        check_name("mode", None, ["single"])
    with pytest.raises(UnknownTopologyError, match="did you mean 'dual_agent'"):
        get_workflow("dual_agnet")


def test_input_and_question_checks() -> None:
    assert check_input({"question": "  Who?  "}) == "Who?"
    with pytest.raises(InvalidRequestError, match='The input must be an object with a "question"'):
        check_input(["Who?"])
    with pytest.raises(InvalidRequestError, match="the limit is 3"):
        check_question("Who?!", 3)
    with pytest.raises(InvalidRequestError, match="limit must be at least 1"):
        check_question("Who?", -1)


def test_the_cli_refuses_what_the_graph_refuses(
    tiny_index: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphseek.cli import main

    for extra, message in [
        (["--retriever", "hybird"], "Unknown retriever 'hybird'; did you mean 'hybrid'?"),
        (["--mode", "competetive"], "did you mean 'competitive'?"),
        (["--max-turns", "0"], "max_turns must be an integer >= 1, got 0"),
    ]:
        assert main(["ask", str(tiny_index.path), "Who?", *extra]) == 2
        assert message in capsys.readouterr().err
