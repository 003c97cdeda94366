"""What every LLM policy of the checking and searching roles shares: one structured call with
the role's system prompt, plain-text renderings of evidence for the prompts, and the fallback to
the role's offline policy when a model call fails after its retries (`falls_back`; for a
tool-calling step, `offline_policy`), each fallback noted in the run's degraded notes."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel

from graphseek.agents.roles import Step
from graphseek.agents.text import summary
from graphseek.errors import BudgetExceededError, LLMError
from graphseek.knowledge.passages import Hit
from graphseek.llm import invoke_structured
from graphseek.state.models import Draft, EvidenceItem, Usage
from graphseek.state.run_scope import Notes

M = TypeVar("M", bound=BaseModel)
C = TypeVar("C", bound=type)

log = logging.getLogger(__name__)

#: the role methods that may fall back: every role protocol's step (`graphseek.agents.roles`);
#: not `call_tools`, whose caller (a tool-calling loop) handles its own failures
ROLE_METHODS = frozenset(
    "clarify decompose draft decide initial_gaps plan update refine answer assess check verify "
    "rewrite think expand ground".split()
)


class Fallback:
    """The offline policy a failing LLM policy of `role` falls back to, built on first use;
    each fallback is noted in `record` (the run's `Notes`) when one is given."""

    def __init__(self, role: str, offline: Callable[[], Any], record: Notes | None = None) -> None:
        self.role = role
        self._offline = offline
        self._policy: Any = None
        self._lock = threading.Lock()
        self.record = record

    def note(self, exc: LLMError) -> str:
        """Note (log, and keep in the run's record) that the offline policy answers a step whose
        model call failed with `exc`; returns the note, "role: reason"."""
        reason = " ".join(str(exc).split())[:200]
        log.warning(
            "%s: model call failed (%s); the offline policy answers this step", self.role, reason
        )
        note = f"{self.role}: {reason}"
        if self.record is not None:
            self.record.add(note)
        return note

    def policy(self) -> Any:
        with self._lock:
            if self._policy is None:
                self._policy = self._offline()
            return self._policy

    def run(self, method: str, exc: LLMError, args: Any, kwargs: Any) -> Step[Any]:
        """The offline policy's step for the call that failed with `exc`: the failed call's
        usage is charged, and the step says it was degraded and why."""
        step = getattr(self.policy(), method, None)
        if step is None:
            raise exc
        out = step(*args, **kwargs)
        if not isinstance(out, Step):
            raise exc
        failed = getattr(exc, "usage", None)
        usage = (failed if isinstance(failed, Usage) else Usage()) + out.usage
        return replace(out, usage=usage, degraded=(*out.degraded, self.note(exc)))


def offline_policy(policy: Any, exc: LLMError) -> Any:
    """For a tool-calling step (`call_tools`, which has no offline twin of its own) whose model
    call failed with `exc`: the offline policy `policy` falls back to, the failure noted as
    degraded in the run; None when `policy` has no fallback (``on_model_failure="abstain"``)
    or `exc` is a spent budget (it ends the run). The caller takes the offline policy's path
    for the step and charges ``exc.usage``."""
    fallback = getattr(policy, "fallback", None)
    if not isinstance(fallback, Fallback) or isinstance(exc, BudgetExceededError):
        return None
    offline = fallback.policy()
    fallback.note(exc)
    return offline


def _degrading(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except BudgetExceededError:
            raise  # a spent budget ends the run, whichever policy would go on
        except LLMError as exc:
            fallback = getattr(self, "fallback", None)
            if not isinstance(fallback, Fallback):
                raise
            return fallback.run(name, exc, args, kwargs)

    return call


@functools.cache
def falls_back(llm_cls: C) -> C:
    """A subclass of the LLM policy `llm_cls` whose role steps (`ROLE_METHODS`), when the model
    call fails after its retries (malformed replies, transport or request errors; not a spent
    budget), return the step of the offline policy set as the instance's `fallback`.

    A subclass, not a wrapper, so that `isinstance(policy, LLMPlanner)` still holds where a
    graph asks which policy it has."""
    overrides: dict[str, Any] = {
        name: _degrading(name, getattr(llm_cls, name))
        for name in ROLE_METHODS
        if callable(getattr(llm_cls, name, None))
    }
    overrides["fallback"] = None
    return type(llm_cls.__name__, (llm_cls,), overrides)  # type: ignore[return-value]


def with_fallback(
    policy: Any, role: str, offline: Callable[[], Any], record: Notes | None = None
) -> Any:
    """`policy` (an instance of a `falls_back` class) with the offline policy it falls back to
    (each fallback noted in `record`, the run's degraded notes)."""
    policy.fallback = Fallback(role, offline, record)
    return policy


class StructuredRole:
    """Base of an LLM policy: `ask(schema, system, user)` -> (validated reply, usage)."""

    def __init__(
        self,
        model: Any,
        max_retries: int = 2,
        callbacks: Sequence[Any] = (),
    ) -> None:
        self.model = model
        self.callbacks = list(callbacks)
        self.max_retries = max_retries

    def ask(self, schema: type[M], system: str, user: str) -> tuple[M, Usage]:
        out, usage = invoke_structured(
            self.model,
            schema,
            [("system", system), ("human", user)],
            max_retries=self.max_retries,
            callbacks=self.callbacks,
        )
        assert isinstance(out, schema)
        return out, usage


def render_summaries(hits: Sequence[Hit]) -> str:
    """`[id] title: first sentence (similarity s)` per passage."""
    if not hits:
        return "(no documents)"
    return "\n".join(
        f"[{h.passage.id}] {h.passage.title}: {summary(h.passage.text)} (similarity {h.score:.2f})"
        for h in hits
    )


def render_evidence(items: Sequence[EvidenceItem], max_chars: int = 4000) -> str:
    """`[id] title: sentence or text` blocks, cut to a character budget."""
    if not items:
        return "(no evidence)"
    blocks: list[str] = []
    used = 0
    for e in items:
        body = e.sentence or e.text
        block = f"[{e.passage_id}] {e.title}: {body}" if e.title else f"[{e.passage_id}] {body}"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block)
        used += len(block)
    return "\n\n".join(blocks)


def render_lines(lines: Sequence[str], max_lines: int = 40, empty: str = "(none)") -> str:
    """Graph lines (triples, hyperedges), one per line, at most `max_lines`."""
    return "\n".join(lines[:max_lines]) if lines else empty


def render_steps(drafts: Sequence[Draft], max_chars: int = 6000) -> str:
    """The searched sub-queries: question, answer, evidence sentences with passage ids."""
    if not drafts:
        return "(nothing searched yet)"
    blocks = []
    for i, d in enumerate(drafts, 1):
        step = f" (plan step {d.step_id})" if d.step_id is not None else ""
        ev = "; ".join(f"[{e.passage_id}] {e.sentence or e.text[:300]}" for e in d.evidence[:3])
        blocks.append(
            f"{i}. {d.question}{step}\n   answer: {d.answer or '(none)'} "
            f"(confidence {d.confidence:.2f})\n   evidence: {ev or '(none)'}"
        )
    return "\n".join(blocks)[-max_chars:]


def render_history(history: Sequence[Mapping[str, Any]], max_chars: int = 6000) -> str:
    """ReAct history: one block per step with the thought's decision and the observation."""
    if not history:
        return "(no steps yet)"
    blocks = []
    for h in history:
        head = f"Step {h.get('step', '?')}: {h.get('decision', '')}"
        if h.get("query"):
            head += f" | query: {h['query']}"
        if h.get("topic"):
            head += f" | topic: {h['topic']}"
        blocks.append(f"{head}\nObservation: {h.get('observation', '')}")
    return "\n\n".join(blocks)[-max_chars:]
