"""invoke_structured / invoke_text: retries on malformed output, errors, usage accounting."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from pydantic import BaseModel, Field

from graphseek.errors import LLMOutputError
from graphseek.llm import (
    ScriptedChatModel,
    UsageCallback,
    invoke_structured,
    invoke_text,
    parse_message,
)
from graphseek.state.models import Usage


class Answer(BaseModel):
    reason: str = Field(description="why")
    answer: str
    confidence: float = 1.0


GOOD = {"reason": "the passage says so", "answer": "Paris"}


def test_valid_reply_first_time() -> None:
    model = ScriptedChatModel(responses=[GOOD])
    parsed, usage = invoke_structured(model, Answer, "Capital of France?")
    assert parsed == Answer(**GOOD)
    assert usage.llm_calls == 1
    assert len(model.calls) == 1


def test_malformed_replies_are_retried_with_a_correction() -> None:
    model = ScriptedChatModel(responses=["Paris, obviously", {"reason": "no answer"}, GOOD])
    parsed, usage = invoke_structured(model, Answer, "Capital of France?", max_retries=2)
    assert parsed.answer == "Paris"
    assert len(model.calls) == 3 and usage.llm_calls == 3
    first, second, third = model.calls
    assert len(first) == 1
    # each retry resends the original prompt plus one correction naming the error
    assert [m.content for m in second[:-1]] == ["Capital of France?"]
    assert "not valid JSON" in str(second[-1].content)
    assert "answer: Field required" in str(third[-1].content)
    assert "Answer" in str(third[-1].content)
    assert len(third) == 2


def test_always_malformed_raises_after_exactly_one_plus_max_retries() -> None:
    for max_retries in (0, 1, 3):
        model = ScriptedChatModel(responses=lambda messages: "still not JSON")
        with pytest.raises(LLMOutputError) as info:
            invoke_structured(model, Answer, "q", max_retries=max_retries)
        assert len(model.calls) == 1 + max_retries
        message = str(info.value)
        assert "Answer" in message and "not valid JSON" in message
        assert f"after {1 + max_retries} attempt" in message
        assert info.value.usage.llm_calls == 1 + max_retries  # type: ignore[attr-defined]


def test_validation_error_is_named_in_the_final_error() -> None:
    model = ScriptedChatModel(
        responses=lambda messages: {"reason": "r", "answer": "a", "confidence": "high"}
    )
    with pytest.raises(LLMOutputError, match="confidence"):
        invoke_structured(model, Answer, "q", max_retries=1)


def test_errors_that_are_not_model_failures_propagate_at_once() -> None:
    model = ScriptedChatModel(responses=[RuntimeError("a bug"), GOOD])
    with pytest.raises(RuntimeError, match="a bug"):
        invoke_structured(model, Answer, "q")
    assert len(model.calls) == 1


def test_transport_errors_are_retried_and_every_attempt_is_charged(monkeypatch) -> None:
    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    model = ScriptedChatModel(responses=[ConnectionError("down"), GOOD])
    parsed, usage = invoke_structured(model, Answer, "q")
    assert parsed.answer == GOOD["answer"] and len(model.calls) == 2
    assert usage.llm_calls == 2 and usage.failed_calls == 1 and usage.tokens_estimated


def test_transport_errors_end_in_the_taxonomy_with_their_usage(monkeypatch) -> None:
    from graphseek.errors import LLMError, LLMTransportError

    monkeypatch.setenv("GRAPHSEEK_LLM_BACKOFF", "0")
    monkeypatch.setenv("GRAPHSEEK_LLM_MAX_RETRIES", "1")
    model = ScriptedChatModel(responses=[TimeoutError("slow"), TimeoutError("slow"), GOOD])
    with pytest.raises(LLMTransportError) as info:
        invoke_structured(model, Answer, "q")
    assert isinstance(info.value, LLMError) and info.value.cause == "timeout"
    assert str(info.value).startswith("timeout") and "2 attempt(s)" in str(info.value)
    assert info.value.usage.llm_calls == 2 and info.value.usage.failed_calls == 2  # type: ignore[attr-defined]


def test_plain_json_route_for_models_without_structured_output() -> None:
    # FakeListChatModel has no bind_tools, so with_structured_output raises NotImplementedError
    model = FakeListChatModel(responses=['Sure! {"reason": "r", "answer": "Rome"} Hope it helps.'])
    parsed, usage = invoke_structured(model, Answer, [HumanMessage("Capital of Italy?")])
    assert parsed.answer == "Rome"
    assert usage.llm_calls == 1


def test_tool_call_replies_are_read() -> None:
    call = AIMessage(content="", tool_calls=[{"name": "Answer", "args": GOOD, "id": "a"}])
    assert parse_message(call, Answer) == Answer(**GOOD)


def test_invoke_text_returns_text_and_usage() -> None:
    model = ScriptedChatModel(responses=["x" * 8])
    text, usage = invoke_text(model, "y" * 40)
    assert text == "x" * 8
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens) == (1, 10, 2)
    assert usage.llm_seconds >= 0


def test_usage_sums_across_attempts_and_extra_callbacks_see_them() -> None:
    run_total = UsageCallback()
    model = ScriptedChatModel(responses=["x" * 40, GOOD])
    _, usage = invoke_structured(model, Answer, "y" * 400, callbacks=[run_total])
    # the scripted model charges characters // 4 for each prompt and reply
    prompts = [sum(len(str(m.content)) for m in call) // 4 for call in model.calls]
    assert prompts[0] == 100 and prompts[1] > 100
    assert usage.llm_calls == 2
    assert usage.prompt_tokens == sum(prompts)
    assert usage.completion_tokens == 40 // 4 + len(json.dumps(GOOD)) // 4
    assert usage.llm_seconds > 0 and usage.seconds == 0  # wall time is the run's
    assert _counts(run_total.usage) == _counts(usage)
    _, more = invoke_text(ScriptedChatModel(responses=["z"]), "q", callbacks=[run_total])
    assert _counts(run_total.usage) == _counts(usage + more)


def _counts(usage: Usage) -> tuple[int, int, int]:
    return usage.llm_calls, usage.prompt_tokens, usage.completion_tokens


def test_usage_callback_reads_llm_output_token_usage_and_counts_errors() -> None:
    from uuid import uuid4

    callback = UsageCallback()
    run = uuid4()
    callback.on_llm_start({}, ["p"], run_id=run)
    callback.on_llm_end(
        LLMResult(
            generations=[[ChatGeneration(message=AIMessage(content="a"))]],
            llm_output={"token_usage": {"prompt_tokens": 11, "completion_tokens": 4}},
        ),
        run_id=run,
    )
    failed = uuid4()
    callback.on_chat_model_start({}, [[HumanMessage("p")]], run_id=failed)
    callback.on_llm_error(RuntimeError("boom"), run_id=failed)
    usage = callback.usage
    # the failed call is charged: one more call, its one-character prompt estimated as 1 token
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens) == (2, 12, 4)
    assert (usage.failed_calls, usage.estimated_calls) == (1, 1) and usage.tokens_estimated
    assert callback.errors == 1
    callback.reset()
    assert callback.usage.llm_calls == 0


# -- ChatOpenAI against a mocked OpenAI-compatible server (httpx transport, no socket) ----------


def fake_server(replies: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    import httpx

    requests: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        requests.append(body)
        content = replies[len(requests) - 1]
        return httpx.Response(
            200,
            json={
                "id": f"cmpl-{len(requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37},
            },
        )

    return httpx.Client(transport=httpx.MockTransport(handle)), requests


def test_chat_openai_json_schema_route_with_retry(tmp_path: Any) -> None:
    from graphseek.llm import make_chat_model

    client, requests = fake_server(["I think Paris.", json.dumps(GOOD)])
    model = make_chat_model(
        "openai:local-model",
        base_url="http://127.0.0.1:9/v1",
        http_client=client,
        cache=tmp_path / "llm.sqlite",
    )
    parsed, usage = invoke_structured(model, Answer, "Capital of France?")
    assert parsed == Answer(**GOOD)
    assert (usage.llm_calls, usage.prompt_tokens, usage.completion_tokens) == (2, 60, 14)
    first = requests[0]
    assert first["model"] == "local-model" and first["temperature"] == 0
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["name"] == "Answer"
    assert first["response_format"]["json_schema"]["strict"] is False
    assert requests[1]["messages"][-1]["role"] == "user"
    assert "not valid JSON" in requests[1]["messages"][-1]["content"]

    # the same question again is answered from the cache: no request, no cost
    again, cached = invoke_structured(model, Answer, "Capital of France?")
    assert again == parsed
    assert len(requests) == 2
    assert (cached.llm_calls, cached.prompt_tokens) == (0, 0)


def test_async_variants_retry_and_fail_the_same_way() -> None:
    import asyncio

    from graphseek.llm import ainvoke_structured, ainvoke_text

    model = ScriptedChatModel(responses=["{broken", GOOD, "plain text"])
    parsed, usage = asyncio.run(ainvoke_structured(model, Answer, "q", max_retries=1))
    assert parsed.answer == "Paris" and usage.llm_calls == 2
    text, more = asyncio.run(ainvoke_text(model, "q"))
    assert text == "plain text" and more.llm_calls == 1
    always_bad = ScriptedChatModel(responses=lambda messages: "nope")
    with pytest.raises(LLMOutputError, match="after 3 attempt"):
        asyncio.run(ainvoke_structured(always_bad, Answer, "q", max_retries=2))
    assert len(always_bad.calls) == 3


# -- a reply cut off at max_tokens: its complete part ---------------------------------------------


def test_salvage_keeps_only_values_written_whole() -> None:
    from graphseek.llm.structured import salvage_truncated

    runaway = '{"answer": "LZMA2", "candidates": ["LZMA2", "LZMA2.1", "LZMA2.2", "LZ'
    assert salvage_truncated(runaway) == {
        "answer": "LZMA2",
        "candidates": ["LZMA2", "LZMA2.1", "LZMA2.2"],
    }
    # a half-written answer is dropped, never kept shorter
    assert salvage_truncated('{"answer": "Jean-lo') is None
    assert salvage_truncated('{"reasoning": "x", "answer": "Jean-lo') == {"reasoning": "x"}
    # objects in a list keep their finished members; strings with commas and escapes are text
    nested = '{"facts": [{"s": "a, b", "q": "say \\"hi\\", then"}, {"s": "c", "q": "d'
    assert salvage_truncated(nested) == {
        "facts": [{"s": "a, b", "q": 'say "hi", then'}, {"s": "c"}]
    }
    # a complete object is not a truncated one
    assert salvage_truncated('{"answer": "x"}') is None
    assert salvage_truncated("no json here") is None


def test_a_runaway_reply_cut_at_max_tokens_keeps_its_complete_fields() -> None:
    from graphseek.agents.librarian import LibrarianReply
    from graphseek.llm.structured import _salvaged

    cut = (
        '{"answer": "LZMA2", "evidence": ["The primary filter is currently LZMA2."], '
        '"candidates": ["LZMA2", "LZMA2.1", "LZMA2.2", "LZMA2.3", "LZ'
    )
    reply = _salvaged(cut, LibrarianReply)
    assert reply is not None and reply.answer == "LZMA2"
    assert reply.evidence == ["The primary filter is currently LZMA2."]
    # what the schema requires must be there
    assert _salvaged('{"candidates": ["a", "b", "c', LibrarianReply) is None


def test_an_answer_copied_from_a_passage_is_grounded_on_it() -> None:
    """A small model answers with a sentence of a passage and cites nothing: the passages it
    occurs in are its evidence; an answer in no passage stays ungrounded."""
    from graphseek.agents.librarian import LibrarianReply, ground_reply
    from graphseek.agents.seeker import is_supported
    from graphseek.knowledge.passages import Hit, Passage

    hits = [
        Hit(
            passage=Passage(id="xz", title="XZ", text="The primary filter is LZMA2. It is fast."),
            score=1.0,
            rank=1,
        ),  # fmt: skip
        Hit(passage=Passage(id="gz", title="gzip", text="gzip uses DEFLATE."), score=0.5, rank=2),
    ]
    copied = ground_reply("q", LibrarianReply(answer="The primary filter is LZMA2."), hits)
    assert [e.passage_id for e in copied.evidence] == ["xz"] and is_supported(copied)
    assert copied.evidence[0].sentence == "The primary filter is LZMA2."
    made_up = ground_reply("q", LibrarianReply(answer="Brotli", confidence=0.9), hits)
    assert made_up.evidence == [] and not is_supported(made_up) and made_up.confidence <= 0.3
