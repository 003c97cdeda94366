"""Nodes and helpers that several topologies share: the Librarian call, an abstention, and the
final answer."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from graphseek.agents.registry import get_roles
from graphseek.errors import LLMError
from graphseek.knowledge.passages import Hit, Passage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem, Usage
from graphseek.state.run_scope import degraded_notes
from graphseek.state.schema import FinalizeState

log = logging.getLogger(__name__)


def to_hits(items: list[EvidenceItem]) -> list[Hit]:
    return [
        Hit(passage=Passage(id=e.passage_id, title=e.title, text=e.text), score=e.score, rank=i)
        for i, e in enumerate(items, 1)
    ]


def draft_for(
    question: str, hits: list[Hit], runtime: Runtime[Context], step_id: int | None = None
) -> tuple[Draft, Usage, str | None]:
    """Run the Librarian policy; a failed call (after retries) becomes an empty draft, its
    usage still charged."""
    roles = get_roles(runtime.context)
    try:
        step = roles.librarian.draft(question, hits)
    except LLMError as exc:
        log.warning("Librarian failed on %r: %s", question, exc)
        return Draft(question=question, answer="", step_id=step_id), error_usage(exc), str(exc)
    draft = step.value.model_copy(update={"step_id": step_id, "question": question})
    return draft, step.usage, None


def abstain(node: str, reason: str, **extra: Any) -> dict[str, Any]:
    """The update of a node that gives up: abstain with `reason` (routers then go to
    `finalize_answer`), plus any `extra` keys (the usage of a failed call, say)."""
    return {"next_action": "abstain", "abstain_reason": reason, "trace": [node], **extra}


def error_usage(exc: BaseException) -> Usage:
    """What a failed model call cost (`LLMError.usage`), zero when unknown."""
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, Usage) else Usage()


def evidence_from_drafts(drafts: list[Draft], passage_ids: list[str]) -> list[EvidenceItem]:
    """Evidence items for the cited passage ids (first occurrence wins); all drafts' if none cited."""
    pool: dict[str, EvidenceItem] = {}
    for d in drafts:
        for e in d.evidence:
            pool.setdefault(e.passage_id, e)
    if passage_ids:
        cited = [pool[p] for p in passage_ids if p in pool]
        if cited:
            return cited
    return list(pool.values())


def answer_or_abstain(
    draft: Draft, usage: Usage, error: str | None, threshold: float
) -> dict[str, Any]:
    """The update of a single-shot answer node: answer with the draft's evidence, or abstain when
    the Librarian failed or its confidence is below `threshold`."""
    update: dict[str, Any] = {"drafts": [draft], "usage": usage, "trace": ["generate_answer"]}
    if error:
        update |= {"next_action": "abstain", "abstain_reason": f"librarian failed: {error}"}
    elif draft.answer and draft.confidence >= threshold:
        update |= {"next_action": "answer", "answer": draft.answer, "evidence": draft.evidence}
    else:
        update |= {
            "next_action": "abstain",
            "abstain_reason": f"low confidence ({draft.confidence:.2f}) in {draft.answer!r}",
        }
    return update


#: how many of a run's retrieved passages an abstention's evidence is chosen from (first seen first)
SHOWN_FROM = 8


def read_passages(
    state: FinalizeState, runtime: Runtime[Context], limit: int = SHOWN_FROM
) -> list[Hit]:
    """The passages the run read, first seen first: those its state holds with their text, then
    the rest of `retrieved_ids` looked up in the index (ids the index no longer holds skipped)."""
    known: dict[str, EvidenceItem] = {}
    held = [*state.get("passages", []), *state.get("refined_context", [])]
    for e in [*held, *(e for d in state.get("drafts", []) for e in d.evidence)]:
        known.setdefault(e.passage_id, e)
    ids = list(dict.fromkeys([*state.get("retrieved_ids", []), *known]))[:limit]
    index = None
    hits: list[Hit] = []
    for rank, pid in enumerate(ids, 1):
        if pid in known:
            e = known[pid]
            passage = Passage(id=pid, title=e.title, text=e.text)
        else:
            if index is None:
                from graphseek.tools.retrievers import resolve_index

                index = resolve_index(runtime.context)
            try:
                passage = index.get(pid)
            except KeyError:
                continue
        hits.append(Hit(passage=passage, score=0.0, rank=rank))
    return hits


def unrecorded_degraded(state: FinalizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    """``diagnostics.degraded`` for the run's steps answered by a role's offline policy
    (`degraded_notes`: every fallback of the run) that no node recorded in the state."""
    recorded = Counter(state.get("diagnostics", {}).get("degraded") or [])
    missing: list[str] = []
    for note in degraded_notes(runtime.context).items():
        if recorded[note] > 0:
            recorded[note] -= 1
        else:
            missing.append(note)
    return {"diagnostics": {"degraded": missing}} if missing else {}


def finalize_answer(state: FinalizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Write the output fields: the answer with its grounding (each item flagged whether it holds
    the answer), or an explicit abstention that shows the passages and sentences the run found
    most likely to hold the answer (`graphseek.agents.reading.evidence`)."""
    from graphseek.agents.reading.evidence import mark_support, shown_evidence

    if state.get("next_action") == "answer" and state.get("answer"):
        # an earlier rejection that a later round overcame is no reason to show with an answer
        evidence = mark_support(state.get("evidence", []), state["answer"])
        return {
            "abstained": False,
            "abstain_reason": "",
            "evidence": Overwrite(evidence),
            "trace": ["finalize_answer"],
            **unrecorded_degraded(state, runtime),
        }
    reason = state.get("abstain_reason") or "no answer could be grounded in the retrieved passages"
    question = state.get("question", "")
    shown = shown_evidence(question, state.get("drafts") or [], read_passages(state, runtime))
    return {
        "answer": "",
        "abstained": True,
        "abstain_reason": reason,
        "evidence": Overwrite(shown),
        "trace": ["finalize_answer"],
        **unrecorded_degraded(state, runtime),
    }


def add_finalize_answer(builder: StateGraph[Any, Context, Any, Any]) -> None:
    """Add `finalize_answer` to a topology, reading the topology's own state: the node reads those
    of `FinalizeState`'s keys the topology has (inferred from its annotation, its input schema
    would add the others to every graph as channels no node writes)."""
    builder.add_node(finalize_answer, input_schema=builder.state_schema)
