"""SQLiteResponseCache: hits make no model call, cost nothing, and persist across instances."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, Generation
from pydantic import BaseModel

from graphseek.llm import (
    ScriptedChatModel,
    SQLiteResponseCache,
    UsageCallback,
    invoke_structured,
    invoke_text,
    make_chat_model,
)
from graphseek.llm.cache import normalise_llm_string


class Answer(BaseModel):
    answer: str


def once(reply: object) -> ScriptedChatModel:
    """A scripted model that fails the test if it is called a second time."""
    return ScriptedChatModel(responses=[reply])


def test_second_identical_call_is_a_free_cache_hit(tmp_path: Path) -> None:
    cache = SQLiteResponseCache(tmp_path / "llm.sqlite")
    model = once("Paris")
    model.cache = cache
    text, usage = invoke_text(model, "Capital of France?")
    assert (text, usage.llm_calls) == ("Paris", 1) and usage.prompt_tokens > 0
    again, hit = invoke_text(model, "Capital of France?")  # the script is spent: must hit
    assert again == "Paris"
    assert (hit.llm_calls, hit.prompt_tokens, hit.completion_tokens) == (0, 0, 0)
    assert len(model.calls) == 1
    assert len(cache) == 1


def test_structured_call_is_cached_and_replayed(tmp_path: Path) -> None:
    model = make_chat_model("scripted", responses=[{"answer": "Rome"}], cache=tmp_path / "c.db")
    callback = UsageCallback()
    first, _ = invoke_structured(model, Answer, "Capital of Italy?", callbacks=[callback])
    second, usage = invoke_structured(model, Answer, "Capital of Italy?", callbacks=[callback])
    assert first == second == Answer(answer="Rome")
    assert usage.llm_calls == 0
    assert callback.usage.llm_calls == 1 and callback.cache_hits == 1


def test_cache_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "llm.sqlite"
    writer = once(AIMessage(content="", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c"}]))
    writer.cache = SQLiteResponseCache(path)
    original = writer.invoke("go")
    assert path.exists()
    writer.cache.close()

    reader = once("must not be used")
    reader.cache = SQLiteResponseCache(path)
    _, usage = invoke_text(reader, "go")
    assert reader.calls == []
    assert usage.llm_calls == 0
    cached = reader.invoke("go")
    assert cached.tool_calls == original.tool_calls
    # langchain-core stamps total_cost=0 on every cache hit
    assert cached.usage_metadata == {**(original.usage_metadata or {}), "total_cost": 0}
    assert cached.id != original.id  # ids are not replayed (LangGraph dedupes messages by id)


def test_key_includes_prompt_and_model_parameters(tmp_path: Path) -> None:
    cache = SQLiteResponseCache(tmp_path / "c.sqlite")
    a = ScriptedChatModel(responses=["a1", "a2", "a3"], model_name="a", cache=cache)
    b = ScriptedChatModel(responses=["b1"], model_name="b", cache=cache)
    assert a.invoke("q").content == "a1"
    assert b.invoke("q").content == "b1"  # another model: a miss
    assert a.invoke("other q").content == "a2"  # another prompt: a miss
    assert a.invoke("q", stop=["\n"]).content == "a3"  # other parameters: a miss
    assert a.invoke("q").content == "a1"
    assert len(cache) == 4
    cache.clear()
    assert len(cache) == 0


def test_transport_settings_are_not_part_of_the_key() -> None:
    llm_string = (
        '{"id": ["x"], "kwargs": {"max_retries": 2, "model_name": "m", "request_timeout": 60.0,'
        ' "temperature": 0.0}, "lc": 1, "type": "constructor"}---[(\'stop\', None)]'
    )
    other = llm_string.replace('"max_retries": 2', '"max_retries": 5').replace("60.0", "5.0")
    assert normalise_llm_string(llm_string) == normalise_llm_string(other)
    hotter = llm_string.replace('"temperature": 0.0', '"temperature": 0.7')
    assert normalise_llm_string(llm_string) != normalise_llm_string(hotter)
    assert normalise_llm_string("[('stop', None)]") == "[('stop', None)]"


def test_plain_generations_and_unreadable_rows(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = SQLiteResponseCache(path)
    cache.update("p", "l", [Generation(text="hello", generation_info={"k": 1})])
    hit = cache.lookup("p", "l")
    assert hit is not None and hit[0].text == "hello" and hit[0].generation_info == {"k": 1}
    assert cache.lookup("p", "other") is None
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE llm_responses SET response = 'garbage'")
    assert cache.lookup("p", "l") is None  # unreadable: a miss, overwritten by the next reply


def test_wal_mode_and_threads(tmp_path: Path) -> None:
    cache = SQLiteResponseCache(tmp_path / "c.sqlite")
    message = AIMessage(content="x")

    def work(i: int) -> None:
        for j in range(20):
            cache.update(f"p{i}-{j}", "l", [ChatGeneration(message=message)])
            assert cache.lookup(f"p{i}-{j}", "l") is not None

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 80
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_langchain_in_memory_cache_hits_are_free_too() -> None:
    model = once("x")
    model.cache = InMemoryCache()
    _, first = invoke_text(model, "q")
    _, second = invoke_text(model, "q")
    assert (first.llm_calls, second.llm_calls, second.prompt_tokens) == (1, 0, 0)


@pytest.mark.parametrize("spec_cache", ["env", "arg"])
def test_factory_attaches_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec_cache: str
) -> None:
    path = tmp_path / f"{spec_cache}.sqlite"
    if spec_cache == "env":
        monkeypatch.setenv("GRAPHSEEK_LLM_CACHE", str(path))
        model = make_chat_model("scripted", responses=["one"])
    else:
        model = make_chat_model("scripted", responses=["one"], cache=str(path))

    def ask() -> list[BaseMessage]:
        return [model.invoke("same")]

    assert ask()[0].content == ask()[0].content == "one"
    assert path.exists()
