"""Pure routing and budget functions. Routers decide escalation and stopping; nodes never loop."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from langgraph.types import Send

from graphseek.state.context import Context
from graphseek.state.models import SubQuestion, Usage
from graphseek.state.schema import LibrarianTask, State

_PLACEHOLDER = re.compile(r"#(\d+)")


def budget_exhausted(usage: Usage | None, turn: int, context: Context) -> str | None:
    """The name of the first budget used up (turns, LLM calls, tokens), or None."""
    usage = usage or Usage()
    if turn >= context.max_turns:
        return f"turn budget exhausted ({turn}/{context.max_turns} turns)"
    if usage.llm_calls >= context.max_llm_calls:
        return f"LLM-call budget exhausted ({usage.llm_calls}/{context.max_llm_calls} calls)"
    if usage.total_tokens >= context.max_tokens:
        return f"token budget exhausted ({usage.total_tokens}/{context.max_tokens} tokens)"
    return None


def fill_placeholders(text: str, step_answers: Mapping[str, str]) -> str:
    """Replace `#N` by the answer of step N where it is known."""

    def sub(match: re.Match[str]) -> str:
        answer = step_answers.get(match.group(1))
        return answer if answer else match.group(0)

    return _PLACEHOLDER.sub(sub, text)


def ready_steps(plan: Sequence[SubQuestion], step_answers: Mapping[str, str]) -> list[SubQuestion]:
    """Unanswered steps whose dependencies all have answers, with placeholders filled."""
    out = []
    for step in plan:
        if str(step.id) in step_answers:
            continue
        if all(str(d) in step_answers for d in step.depends_on):
            out.append(
                step.model_copy(update={"question": fill_placeholders(step.question, step_answers)})
            )
    return out


def failed(state: State) -> bool:
    """A node gave up (malformed LLM output after retries, out of scope, …)."""
    return state.get("next_action") == "abstain"


def route_unless_failed(next_node: str) -> Callable[[State], str]:
    """A router that goes on to `next_node`, or to `finalize_answer` once a node gave up."""

    def route(state: State) -> str:
        return "finalize_answer" if failed(state) else next_node

    route.__name__ = f"route_to_{next_node}"
    return route


def route_plan(state: State) -> list[Send] | Literal["decide_action", "finalize_answer"]:
    """After decomposition: send every independent step to the Librarian in parallel."""
    if failed(state):
        return "finalize_answer"
    steps = ready_steps(state.get("plan", []), state.get("step_answers", {}))
    if not steps:
        return "decide_action"
    return [Send("ask_librarian", LibrarianTask(question=s.question, step_id=s.id)) for s in steps]


def route_action(state: State) -> list[Send] | Literal["finalize_answer"]:
    """After the Seeker: fan its questions out to the Librarian, or finish."""
    pending = state.get("pending") or []
    if state.get("next_action") == "ask_librarian" and pending:
        return [Send("ask_librarian", task) for task in pending]
    return "finalize_answer"
