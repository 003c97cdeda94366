"""What every LLM policy shares (`StructuredRole`): its constructor, one structured call with
the role's system prompt, one tool-calling step, plain-text renderings of evidence for the
prompts, and the fallback to the role's offline policy when a model call fails after its retries
(`falls_back`; for a tool-calling step, `offline_policy`), each fallback noted in the run's
degraded notes."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from graphseek.agents.formatting import ReadBy, with_evidence
from graphseek.agents.roles import Step
from graphseek.agents.text import summary
from graphseek.agents.tool_calling import call_tools
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


def rescale_confidence(confidence: float, source: float, target: float) -> float:
    """`confidence` on a scale whose abstention point is `source`, mapped onto a scale whose point
    is `target`: piecewise linear through (0, 0), (source, target) and (1, 1), so the order of
    confidences and the answer-or-abstain decision at the point are kept."""
    c = min(max(confidence, 0.0), 1.0)
    if c <= source:
        return c * target / source if source > 0 else target
    return target + (c - source) * (1.0 - target) / (1.0 - source) if source < 1 else 1.0


def _rescaled(value: Any, scale: tuple[float, float]) -> Any:
    """A `Draft` (or a list of drafts) with its confidences rescaled (`rescale_confidence`)."""
    if isinstance(value, list):
        return [_rescaled(v, scale) for v in value]
    if not isinstance(value, Draft):
        return value
    return value.model_copy(
        update={
            "confidence": rescale_confidence(value.confidence, *scale),
            "candidate_confidences": [
                rescale_confidence(c, *scale) for c in value.candidate_confidences
            ],
        }
    )


#: after this many failed model calls of a role in one run (each after its retries), the role's
#: offline policy answers its remaining steps without asking the model again: a server that is
#: down or a model that cannot write the schema costs a few calls, not every step's retries
FAILURES_BEFORE_OFFLINE = 2


class ModelSkippedError(LLMError):
    """A role's model was not asked: it failed `FAILURES_BEFORE_OFFLINE` times in this run."""

    kind = "skipped"


class Fallback:
    """The offline policy a failing LLM policy of `role` falls back to, built on first use;
    each fallback is noted in `record` (the run's `Notes`) when one is given.

    `scale` = (the offline reader's abstention point, the run's): the offline policy's drafts
    are judged by the run's threshold, set for a model's self-reported confidence, so their
    confidences are rescaled to decide as the offline reader would at its calibrated point (a
    draft the offline run abstains on is not answered because a model call failed)."""

    def __init__(
        self,
        role: str,
        offline: Callable[[], Any],
        record: Notes | None = None,
        scale: tuple[float, float] | None = None,
    ) -> None:
        self.role = role
        self._offline = offline
        self._policy: Any = None
        self._lock = threading.Lock()
        self.record = record
        self.scale = scale
        self.failures = 0
        self.last_failure = ""

    def skip(self) -> ModelSkippedError | None:
        """The error standing for a model call not made, once the role's model has failed
        `FAILURES_BEFORE_OFFLINE` times in the run; None while it may still be asked."""
        if self.failures < FAILURES_BEFORE_OFFLINE:
            return None
        return ModelSkippedError(
            f"model not asked after {self.failures} failed calls in this run "
            f"(last: {self.last_failure})",
            cause="skipped",
        )

    def note(self, exc: LLMError) -> str:
        """Note (log, and keep in the run's record) that the offline policy answers a step whose
        model call failed with `exc`; returns the note, "role: reason"."""
        reason = " ".join(str(exc).split())[:200]
        if isinstance(exc, ModelSkippedError):
            log.info("%s: %s; the offline policy answers this step", self.role, reason)
        else:
            self.failures += 1
            self.last_failure = reason
            log.warning(
                "%s: model call failed (%s); the offline policy answers this step",
                self.role,
                reason,
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
        value = out.value if self.scale is None else _rescaled(out.value, self.scale)
        return replace(out, value=value, usage=usage, degraded=(*out.degraded, self.note(exc)))


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
        fallback = getattr(self, "fallback", None)
        skipped = fallback.skip() if isinstance(fallback, Fallback) else None
        if skipped is not None:
            return fallback.run(name, skipped, args, kwargs)  # type: ignore[union-attr]
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


def _skipping(method: Callable[..., Any]) -> Callable[..., Any]:
    """A tool-calling step (`call_tools`) that raises `ModelSkippedError` instead of asking a
    model that failed `FAILURES_BEFORE_OFFLINE` times: its caller takes the offline path."""

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        fallback = getattr(self, "fallback", None)
        skipped = fallback.skip() if isinstance(fallback, Fallback) else None
        if skipped is not None:
            raise skipped
        return method(self, *args, **kwargs)

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
    if callable(getattr(llm_cls, "call_tools", None)):
        overrides["call_tools"] = _skipping(llm_cls.call_tools)  # type: ignore[attr-defined]
    overrides["fallback"] = None
    return type(llm_cls.__name__, (llm_cls,), overrides)  # type: ignore[return-value]


def with_fallback(
    policy: Any,
    role: str,
    offline: Callable[[], Any],
    record: Notes | None = None,
    scale: tuple[float, float] | None = None,
) -> Any:
    """`policy` (an instance of a `falls_back` class) with the offline policy it falls back to
    (each fallback noted in `record`, the run's degraded notes; drafts rescaled by `scale`, see
    `Fallback`)."""
    policy.fallback = Fallback(role, offline, record, scale)
    return policy


class StructuredRole:
    """Base of every LLM policy: the model, its retries of malformed replies and the run's
    callbacks (the budget guard); `ask(schema, system, user)` -> (validated reply, usage), and
    for a tool-calling step `ask_tools(tools, prompt)` -> (the reply calling tools, usage).

    A role with settings of its own adds them as keyword-only arguments after these three
    (`PassageRole`'s `max_chars`, `LLMDecomposer`'s `repair`)."""

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

    def ask_tools(
        self, tools: Sequence[Any], prompt: Sequence[BaseMessage]
    ) -> tuple[AIMessage, Usage]:
        """The model, with `tools` bound, called on `prompt` until it calls one
        (`graphseek.agents.tool_calling.call_tools`, with the role's retries and callbacks)."""
        return call_tools(self.model, tools, prompt, self.max_retries, callbacks=self.callbacks)


class PassageRole(StructuredRole):
    """An LLM policy that shows the model passages or context cut to `max_chars` characters;
    a subclass sets its default as the class attribute. `read_by`: whether a role that reads
    evidence (`evidence_prompt`) is shown the best sentences (the default) or whole passages."""

    max_chars: int = 6000
    read_by: ReadBy = "sentences"

    def __init__(
        self,
        model: Any,
        max_retries: int = 2,
        callbacks: Sequence[Any] = (),
        *,
        max_chars: int | None = None,
        read_by: ReadBy | None = None,
    ) -> None:
        super().__init__(model, max_retries, callbacks)
        if max_chars is not None:
            self.max_chars = max_chars
        if read_by is not None:
            self.read_by = read_by

    def evidence_prompt(
        self,
        system: str,
        template: str,
        hits: Sequence[Hit],
        rank_by: str | None = None,
        **fields: Any,
    ) -> str:
        """`template` with the evidence of `hits` as ``{passages}`` (`with_evidence`): the best
        sentences for `rank_by` (default ``fields["question"]``) or whole passages, as `read_by`
        says, in the room the model's window leaves."""
        return with_evidence(
            self.model, system, template, hits, self.max_chars, self.read_by, rank_by, **fields
        )


def render_summaries(hits: Sequence[Hit]) -> str:
    """`[id] title: first sentence (similarity s)` per passage."""
    if not hits:
        return "(no documents)"
    return "\n".join(
        f"[{h.passage.id}] {h.passage.title}: {summary(h.passage.text)} (similarity {h.score:.2f})"
        for h in hits
    )


def render_evidence(items: Sequence[EvidenceItem], max_chars: int = 4000) -> str:
    """`[id] title: body` blocks, cut to a character budget; the body is an item's sentence with
    its neighbours (`context`: "-S, --source" is said by the line after it), else its sentence,
    else its passage's text."""
    if not items:
        return "(no evidence)"
    blocks: list[str] = []
    used = 0
    for e in items:
        body = e.context or e.sentence or e.text
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
