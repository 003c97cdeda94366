"""Tool calls written as text (`graphseek.llm.text_tool_calls`), and the pure pieces of the tool
loop (`graphseek.agents.tool_calling`): the calls a reply runs, the grounded finish, progress."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from pydantic import BaseModel, Field

from graphseek.agents.tool_calling import (
    REPEAT_NOTE,
    accepted_finish,
    check_finish,
    plan_calls,
    rounds_without_new_passages,
    tool_schemas,
    with_text_calls,
)
from graphseek.llm.text_tool_calls import call_key, parse_tool_calls
from graphseek.tools.lc_tools import react_tools


class SearchArgs(BaseModel):
    query: str = Field(min_length=1)
    k: int = 5


class FinishArgs(BaseModel):
    answer: str
    passage_ids: list[str] = Field(default_factory=list)


SCHEMAS = {"search": SearchArgs, "finish": FinishArgs}
SEARCH = {"name": "search", "arguments": {"query": "Lord Byron"}}


def calls(text: str) -> list[tuple[str, dict, str]]:
    return [(c.name, c.args, c.error) for c in parse_tool_calls(text, SCHEMAS).calls]


# -- the text forms -----------------------------------------------------------------------------


def test_bare_json_lines_several_per_reply():
    text = (
        "I will search.\n"
        '{"name": "search", "arguments": {"query": "Ada Lovelace father"}}\n'
        '{"name": "search", "parameters": {"query": "Lord Byron death", "k": 3}}\n'
        '{"name": "finish", "args": {"answer": "Missolonghi", "passage_ids": ["byron"]}}'
    )
    parsed = parse_tool_calls(text, SCHEMAS)
    assert [(c.name, c.args) for c in parsed.calls] == [
        ("search", {"query": "Ada Lovelace father"}),
        ("search", {"query": "Lord Byron death", "k": 3}),
        ("finish", {"answer": "Missolonghi", "passage_ids": ["byron"]}),
    ]
    assert all(not c.error for c in parsed.calls)
    assert parsed.text == "I will search."


def test_objects_run_together_on_one_line():
    text = json.dumps(SEARCH) + json.dumps({"name": "search", "arguments": {"query": "Ada"}})
    assert [c[1]["query"] for c in calls(text)] == ["Lord Byron", "Ada"]


def test_hermes_qwen_tags_with_and_without_the_closing_tag():
    text = (
        f"<tool_call>\n{json.dumps(SEARCH)}\n</tool_call>\n"
        '<tool_call>{"name": "finish", "arguments": {"answer": "x"}}'
    )
    parsed = parse_tool_calls(text, SCHEMAS)
    assert [c.name for c in parsed.calls] == ["search", "finish"]
    assert parsed.text == ""


def test_llama3_python_tag_with_calls_joined_by_semicolons():
    text = (
        '<|python_tag|>{"name": "search", "parameters": {"query": "Ada"}}; '
        '{"name": "search", "parameters": {"query": "Byron"}}<|eom_id|>'
    )
    assert [c[1]["query"] for c in calls(text)] == ["Ada", "Byron"]
    assert parse_tool_calls(text, SCHEMAS).text == ""


def test_json_in_a_code_fence_and_a_json_list_of_calls():
    fenced = f"Here:\n```json\n{json.dumps(SEARCH)}\n```\nthanks"
    assert calls(fenced) == [("search", {"query": "Lord Byron"}, "")]
    assert parse_tool_calls(fenced, SCHEMAS).text == "Here:\nthanks"
    listed = json.dumps([SEARCH, {"name": "finish", "arguments": {"answer": "y"}}])
    assert [c[0] for c in calls(listed)] == ["search", "finish"]


def test_the_openai_shape_written_out_with_string_arguments():
    text = json.dumps(
        {"tool_calls": [{"type": "function", "function": {"name": "search",
                                                           "arguments": '{"query": "Ada"}'}}]}
    )  # fmt: skip
    assert calls(text) == [("search", {"query": "Ada"}, "")]


def test_identical_calls_in_one_reply_are_kept_once():
    text = "\n".join([json.dumps(SEARCH)] * 3 + [json.dumps(SEARCH).replace("Lord", "lord ")])
    assert len(calls(text)) == 1


def test_prose_and_objects_that_are_not_calls_are_left_alone():
    text = 'The answer is {"name": "Lord Byron", "born": 1788} and [1, 2].'
    parsed = parse_tool_calls(text, SCHEMAS)
    assert parsed.calls == [] and parsed.text == text and parsed.problems == []


def test_malformed_json_is_skipped_and_named_for_the_retry():
    text = '{"name": "search", "arguments": {"query": "Ada"}\n' + json.dumps(SEARCH)
    assert calls(text) == [("search", {"query": "Lord Byron"}, "")]
    broken = parse_tool_calls('<tool_call>{"name": "search", "arguments": {query: Ada}}', SCHEMAS)
    assert broken.calls == []
    assert broken.problems and "not valid JSON" in broken.problems[0]


def test_unknown_tool_and_invalid_arguments_are_returned_with_their_error():
    text = (
        '{"name": "web_search", "arguments": {"query": "Ada"}}\n'
        '{"name": "search", "arguments": {"query": ""}}\n'
        '{"name": "search", "arguments": {"k": 2}}'
    )
    found = calls(text)
    assert found[0][2] == "unknown tool 'web_search'; the tools are: finish, search"
    assert "invalid arguments for 'search'" in found[1][2] and "query" in found[1][2]
    assert "query: Field required" in found[2][2]


def test_call_key_normalises_arguments():
    assert call_key("s", {"query": " Lord  BYRON", "k": None}) == call_key(
        "s", {"query": "lord byron"}
    )
    assert call_key("s", {"query": "a"}) != call_key("t", {"query": "a"})


# -- call_tools's reading of a reply ------------------------------------------------------------


def test_a_reply_without_tool_calls_gets_the_calls_of_its_text():
    text = 'Searching.\n{"name": "search_passages", "arguments": {"query": "Ada"}}'
    reply, problems = with_text_calls(AIMessage(content=text, id="r1"), react_tools(), step=4)
    assert problems == [] and reply.id == "r1" and reply.content == "Searching."
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("search_passages", {"query": "Ada"})
    ]
    assert reply.tool_calls[0]["id"].startswith("text4_0_")
    # the schemas are the model-facing ones: the injected runtime is not an argument
    assert "runtime" not in tool_schemas(react_tools())["search_passages"].model_fields  # type: ignore[union-attr]


# -- the calls a reply runs ---------------------------------------------------------------------


def call(name: str, cid: str, **args: object) -> dict:
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def test_plan_caps_the_calls_and_drops_duplicates_in_the_reply():
    reply = [call("search", f"c{i}", query=q) for i, q in enumerate("abcab")]
    plan = plan_calls(reply, [], SCHEMAS, max_calls=2)
    assert [c["id"] for c in plan.run] == ["c0", "c1"]
    assert plan.kept == plan.run
    assert len(plan.dropped) == 3
    assert "over 2 calls a reply" in plan.dropped[0]
    assert "the same call twice" in plan.dropped[1]


def test_plan_answers_a_repeat_with_the_earlier_result():
    first = AIMessage(content="", tool_calls=[call("search", "old", query="Ada")])
    result = ToolMessage("[ada] ...", tool_call_id="old", name="search",
                         artifact={"passage_ids": ["ada"]})  # fmt: skip
    reply = [call("search", "new", query=" ada "), call("search", "other", query="Byron")]
    plan = plan_calls(reply, [HumanMessage("q"), first, result], SCHEMAS, max_calls=3)
    assert [c["id"] for c in plan.run] == ["other"]
    repeat = plan.replies["new"]
    assert REPEAT_NOTE in str(repeat.content) and "[ada] ..." in str(repeat.content)
    assert repeat.tool_call_id == "new" and repeat.artifact == {"passage_ids": ["ada"]}
    assert plan.repeated == ["search(query=' ada ')"]
    assert [c["id"] for c in plan.kept] == ["new", "other"]


def test_plan_refuses_unknown_tools_and_bad_arguments_and_takes_finish_last():
    reply = [
        call("finish", "f", answer="x"),
        call("web_search", "w", query="a"),
        call("search", "s", k=3),
        call("search", "ok", query="a"),
    ]
    plan = plan_calls(reply, [], SCHEMAS, max_calls=3, finish=["finish"])
    assert [c["id"] for c in plan.run] == ["ok"]
    assert [c["id"] for c in plan.kept] == ["w", "s", "ok", "f"]
    assert plan.replies["w"].status == "error" and "unknown tool" in str(plan.replies["w"].content)
    assert "invalid arguments" in str(plan.replies["s"].content)
    assert [c["id"] for c in plan.finish] == ["f"]


# -- the grounded finish ------------------------------------------------------------------------

OBSERVED = {
    "ada": "Ada Lovelace\nShe was the only legitimate child of the poet Lord Byron.",
    "byron": "Lord Byron\nHe died of a fever at Missolonghi in 1824.",
}


def test_finish_is_accepted_on_cited_observed_passages_that_state_it():
    verdict = check_finish("Missolonghi", ["byron"], OBSERVED)
    assert verdict.accepted and verdict.passage_ids == ("byron",)


def test_finish_with_a_made_up_id_cites_the_observed_passage_that_states_it():
    verdict = check_finish("missolonghi", ["archive"], OBSERVED)
    assert verdict.accepted and verdict.passage_ids == ("byron",)


def test_finish_is_refused_when_nothing_was_observed_or_the_answer_is_not_stated():
    nothing = check_finish("Missolonghi", ["byron"], {})
    assert not nothing.accepted and "search first" in nothing.reason
    made_up = check_finish("filters", ["archive", "byron"], OBSERVED)
    assert not made_up.accepted
    assert "archive were not returned" in made_up.reason
    assert "'filters' does not occur" in made_up.reason


def test_yes_no_needs_an_observed_cited_passage_and_empty_is_an_abstention():
    assert check_finish("Yes", ["ada"], OBSERVED).accepted
    assert not check_finish("no", ["archive"], OBSERVED).accepted
    empty = check_finish("", [], OBSERVED)
    assert empty.accepted and empty.answer == ""


def test_accepted_finish_is_read_from_the_last_results():
    verdict = check_finish("Missolonghi", [], OBSERVED)
    done = ToolMessage("ok", tool_call_id="f", name="finish", artifact=verdict.artifact())
    ai = AIMessage(content="", tool_calls=[call("finish", "f", answer="Missolonghi")])
    assert accepted_finish([ai, done]) == verdict
    assert accepted_finish([ai, done, AIMessage(content="again")]) is None


# -- progress -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rounds", "stale"),
    [([["a"]], 0), ([["a"], ["a"]], 1), ([["a"], ["a"], []], 2), ([["a"], ["a"], ["b"]], 0)],
)
def test_rounds_without_new_passages(rounds, stale):
    messages = []
    for i, ids in enumerate(rounds):
        messages.append(AIMessage(content="", tool_calls=[call("search", f"c{i}", query=str(i))]))
        messages.append(ToolMessage("r", tool_call_id=f"c{i}", artifact={"passage_ids": ids}))
    assert rounds_without_new_passages(messages) == stale


def test_a_round_that_ran_a_new_call_is_progress_when_asked():
    messages = []
    for i in range(3):
        messages.append(AIMessage(content="", tool_calls=[call("search", f"c{i}", query=str(i))]))
        messages.append(ToolMessage("r", tool_call_id=f"c{i}", artifact={"passage_ids": ["a"]}))
    assert rounds_without_new_passages(messages) == 2
    assert rounds_without_new_passages(messages, ran_counts=True) == 0
    repeat = ToolMessage(
        f"({REPEAT_NOTE}: ...)\nr", tool_call_id="c3", artifact={"passage_ids": ["a"]}
    )
    messages += [AIMessage(content="", tool_calls=[call("search", "c3", query="2")]), repeat]
    assert rounds_without_new_passages(messages, ran_counts=True) == 1


def test_llama3_function_tags():
    text = (
        '<function=search>{"query": "Ada"}</function>\n<function=finish>{"answer": "x"}</function>'
    )
    parsed = parse_tool_calls(text, SCHEMAS)
    assert [(c.name, c.args) for c in parsed.calls] == [
        ("search", {"query": "Ada"}),
        ("finish", {"answer": "x"}),
    ]
    assert parsed.text == ""


def test_a_broken_function_tag_is_named_for_the_retry():
    broken = parse_tool_calls("<function=search>{query: Ada}</function>", SCHEMAS)
    assert broken.calls == [] and "not valid JSON" in broken.problems[0]


# -- Llama 3.x's pythonic calls -----------------------------------------------------------------


def test_a_pythonic_list_of_calls_after_the_python_tag():
    text = (
        '<|python_tag|>[search(query="Bergen", k=5), finish(answer="Bergen (Norway)", '
        'passage_ids=["oslo", "bergen"])]<|eom_id|>'
    )
    parsed = parse_tool_calls(text, SCHEMAS)
    assert [(c.name, c.args, c.error) for c in parsed.calls] == [
        ("search", {"query": "Bergen", "k": 5}, ""),
        ("finish", {"answer": "Bergen (Norway)", "passage_ids": ["oslo", "bergen"]}, ""),
    ]
    assert parsed.text == ""


def test_a_pythonic_call_without_brackets_in_a_fence_or_on_its_own_line():
    fenced = "Let me search.\n```python\nsearch(query='Lord Byron')\n```\nthen answer"
    parsed = parse_tool_calls(fenced, SCHEMAS)
    assert [(c.name, c.args) for c in parsed.calls] == [("search", {"query": "Lord Byron"})]
    assert parsed.text == "Let me search.\nthen answer"
    lines = 'search(query="it\'s (here)");\nsearch(query="""Ada""")\n'
    assert [c[1]["query"] for c in calls(lines)] == ["it's (here)", "Ada"]
    multi = '[\n  search(query="a"),\n  functions.finish(answer="x")\n]'
    assert [(c[0], c[1]) for c in calls(multi)] == [
        ("search", {"query": "a"}),
        ("finish", {"answer": "x"}),
    ]


def test_a_pythonic_call_of_an_offered_tool_inside_a_sentence():
    assert calls('I will call search(query="Oslo") now.') == [("search", {"query": "Oslo"}, "")]


@pytest.mark.parametrize(
    "prose",
    [
        "The answer is Bergen (Norway).",
        "Bergen (Norway) is the answer.",
        "I think f(x) is a function (really), see [1] and g(2).",
        "Use search(query) to look it up.",  # a positional mention of a tool, not a call
        "The list [1, 2] and (3).",
    ],
)
def test_prose_with_parentheses_is_no_call(prose):
    parsed = parse_tool_calls(prose, SCHEMAS)
    assert parsed.calls == [] and parsed.text == prose and parsed.problems == []


def test_pythonic_positional_non_literal_and_unknown_calls_are_errors():
    text = (
        '[search("Bergen"), search(query=open("/etc/passwd")), web_search(query="a"), '
        "search(**{'query': 'x'})]"
    )
    found = calls(text)
    assert found[0] == (
        "search",
        {},
        "invalid arguments for 'search': 1 positional argument(s); write each argument as "
        "name=value",
    )
    assert found[1][1] == {} and "query: not a literal value" in found[1][2]
    assert found[2][2] == "unknown tool 'web_search'; the tools are: finish, search"
    assert "** arguments" in found[3][2]


def test_a_broken_pythonic_call_is_named_for_the_retry():
    broken = parse_tool_calls('<|python_tag|>[search(query="Bergen"', SCHEMAS)
    assert broken.calls == [] and "not a valid Python call" in broken.problems[0]


def test_a_truncated_pythonic_list_keeps_its_complete_calls():
    assert calls('[search(query="a"), search(query="b"), finish(ans') == [
        ("search", {"query": "a"}, ""),
        ("search", {"query": "b"}, ""),
    ]


def test_json_and_pythonic_calls_in_one_reply_and_json_strings_left_alone():
    text = (
        json.dumps({"name": "finish", "arguments": {"answer": 'search(query="x")'}})
        + '\nsearch(query="y")'
    )
    assert calls(text) == [
        ("finish", {"answer": 'search(query="x")'}, ""),
        ("search", {"query": "y"}, ""),
    ]


def test_a_repeated_result_does_not_charge_the_earlier_calls_usage_again():
    from graphseek.agents.tool_calling import repeated_result

    earlier = ToolMessage("[ada] ...", tool_call_id="old", name="context_search",
                          artifact={"passage_ids": ["ada"], "usage": {"llm_calls": 1}})  # fmt: skip
    again = repeated_result(call("context_search", "new", query="Ada"), earlier)
    assert again.artifact == {"passage_ids": ["ada"]} and again.tool_call_id == "new"
    assert str(again.content).startswith(f"({REPEAT_NOTE}") and again.name == "context_search"
    assert earlier.artifact["usage"] == {"llm_calls": 1}  # the earlier result is left alone
