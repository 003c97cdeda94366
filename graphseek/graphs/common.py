"""Nodes and helpers that several topologies share: the Librarian call, an abstention, and the
final answer."""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from typing_extensions import TypedDict, Unpack

from graphseek.agents.reading.answer_fit import Fit
from graphseek.agents.registry import get_roles, thresholds
from graphseek.agents.text import answer_occurs, as_hits, contains
from graphseek.errors import LLMError
from graphseek.knowledge.passages import Hit, Passage
from graphseek.llm.usage import error_usage
from graphseek.state.context import Context
from graphseek.state.models import Draft, EvidenceItem, Usage
from graphseek.state.run_scope import degraded_notes
from graphseek.state.schema import (
    Abstention,
    Diagnostics,
    DraftOutcome,
    FinalizeState,
    RunUpdate,
)

log = logging.getLogger(__name__)


def to_hits(items: list[EvidenceItem]) -> list[Hit]:
    """Evidence items as ranked hits (`graphseek.agents.text.as_hits`)."""
    return as_hits(items)


def draft_for(
    question: str, hits: list[Hit], runtime: Runtime[Context], step_id: int | None = None
) -> tuple[Draft, Usage, str | None]:
    """Run the Librarian policy; a failed call (after retries) becomes an empty draft, its
    usage still charged. A run with readers drafts through their escalation cascade
    (`graphseek.graphs.cascade`)."""
    roles = get_roles(runtime.context)
    if roles.readers:
        from graphseek.graphs.cascade import cascade_draft

        draft, usage = cascade_draft(question, hits, runtime, step_id)
        return draft, usage, None
    try:
        step = roles.librarian.draft(question, hits)
    except LLMError as exc:
        log.warning("Librarian failed on %r: %s", question, exc)
        return Draft(question=question, answer="", step_id=step_id), error_usage(exc), str(exc)
    draft = step.value.model_copy(update={"step_id": step_id, "question": question})
    return draft, step.usage, None


class AbstainExtra(TypedDict, total=False):
    """The keys an abstention may carry besides its reason."""

    usage: Usage
    diagnostics: Diagnostics


def abstain(node: str, reason: str, **extra: Unpack[AbstainExtra]) -> Abstention:
    """The update of a node that gives up: abstain with `reason` (routers then go to
    `finalize_answer`), plus any `extra` keys (the usage of a failed call, say)."""
    return {"next_action": "abstain", "abstain_reason": reason, "trace": [node], **extra}


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
) -> DraftOutcome:
    """The update of a single-shot answer node: answer with the draft's evidence, or abstain when
    the Librarian failed or its confidence is below `threshold`."""
    update: DraftOutcome = {"drafts": [draft], "usage": usage, "trace": ["generate_answer"]}
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


def unrecorded_degraded(state: FinalizeState, runtime: Runtime[Context]) -> RunUpdate:
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


#: the roles whose policy can write a run's answer; a chat model behind any of them makes the
#: reader check the answer before it is given (`model_answer_fit`)
ANSWER_ROLES = frozenset(
    {"librarian", "seeker", "thinker", "answerer", "drafter", "graph_librarian"}
)


def model_answer_fit(
    question: str,
    answer: str,
    evidence: list[EvidenceItem],
    observed: Callable[[], list[Hit]],
    ctx: Context,
) -> tuple[Fit, list[EvidenceItem]] | None:
    """A chat model's answer as the reader reads it (`graphseek.agents.reading.answer_fit`),
    with its evidence flagged for it. Evidence that does not state the answer gives way to the
    first `QUOTED_ANSWER_PASSAGES` passages the run observed (`observed()`) that do; `fit.fits` is
    False, with the reason, when the answer does not answer the question or no such passage
    states it. None when no model can have written the answer (an offline run: its answers are
    the reader's own spans)."""
    from graphseek.agents.librarian import QUOTED_ANSWER_PASSAGES
    from graphseek.agents.reading.answer_fit import fit_answer
    from graphseek.agents.reading.evidence import mark_support, to_evidence

    if ANSWER_ROLES <= get_roles(ctx).offline:
        return None
    # the passage a sentence was copied from, else the first cited: its title reads with it
    first = evidence[0] if evidence else None
    source = next((e for e in evidence if contains(e.text, answer)), first)
    seen = observed()  # read once: the model's answer is checked against it twice
    read = [f"{e.title} {e.text}" for e in evidence]
    read += [f"{h.passage.title} {h.passage.text}" for h in seen]
    fit = fit_answer(
        question, answer, thresholds(ctx)[0], source.title if source else "", evidence=read
    )
    marked = mark_support(evidence, fit.answer)
    if not fit.fits or fit.answer in ("yes", "no") or any(e.supports_answer for e in marked):
        return fit, marked
    stating = [h for h in seen if answer_occurs(fit.answer, f"{h.passage.title} {h.passage.text}")]
    if not stating:
        reason = f"the answer {fit.answer!r} is stated in none of the passages the run read"
        return Fit(fit.answer, False, reason, fit.read_from), marked
    grounded = [to_evidence(h) for h in stating[:QUOTED_ANSWER_PASSAGES]]
    return fit, mark_support(grounded, fit.answer)


def confident_reading(question: str, evidence: list[EvidenceItem], ctx: Context) -> Draft | None:
    """The offline reader's draft of `question` over `evidence` (the offline Librarian of the
    run's profile) when it has an answer with evidence at its operating point or above; None
    otherwise. A second, independent reading of what a model's run read."""
    reader = get_roles(ctx).reader
    if reader is None or not evidence:
        return None
    draft = reader.draft(question, to_hits(evidence)).value
    if draft.answer and draft.evidence and draft.confidence >= thresholds(ctx)[0]:
        return draft
    return None


def reader_agrees(
    question: str, answer: str, evidence: list[EvidenceItem], ctx: Context
) -> float | None:
    """The reader's confidence when its `confident_reading` of `evidence` gives `answer` itself;
    None when it gives another answer, none, or is less sure: what a model's verifier without a
    reason cannot outweigh."""
    from graphseek.agents.reading.reader import same_answer

    draft = confident_reading(question, evidence, ctx) if answer.strip() else None
    return draft.confidence if draft and same_answer(draft.answer, answer) else None


def cascade_diagnostics(drafts: list[Draft], answer: str) -> Diagnostics:
    """What the run's escalation cascades did (`Draft.readings`): every reading with its
    question (reader, outcome, answer, confidence, the reader's point, the reason it passed), the
    cost per reader, and the reader whose answer the run gave (the last reading that answered
    `answer`). Empty without readings."""
    from graphseek.agents.reading.reader import same_answer

    readings: list[dict[str, Any]] = []
    cost: dict[str, dict[str, int]] = {}
    answered_by = ""
    for d in drafts:
        for r in d.readings:
            readings.append({"question": d.question, **r.model_dump(exclude={"usage"})})
            c = cost.setdefault(
                r.reader, {"calls": 0, "llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
            )
            c["calls"] += 1
            c["llm_calls"] += r.usage.llm_calls
            c["prompt_tokens"] += r.usage.prompt_tokens
            c["completion_tokens"] += r.usage.completion_tokens
            if r.outcome == "answered" and answer and same_answer(r.answer, answer):
                answered_by = r.reader
    if not readings:
        return {}
    out: Diagnostics = {"readings": readings, "reader_usage": cost}
    if answered_by:
        out["answered_by"] = answered_by
    return out


def finalize_answer(state: FinalizeState, runtime: Runtime[Context]) -> RunUpdate:
    """Write the output fields: the answer with its grounding (each item flagged whether it holds
    the answer) and, after it, the most relevant other sentences the run read
    (`with_related`), or an explicit abstention that shows the passages and sentences the run found
    most likely to hold the answer (`graphseek.agents.reading.evidence`). A chat model's answer
    is read first (`model_answer_fit`): a sentence gives way to the span that answers, and an
    answer that does not answer, or that its evidence does not state, is an abstention."""
    from graphseek.agents.reading.evidence import (
        mark_support,
        shown_evidence,
        with_related,
        with_sentences,
    )

    question = state.get("question", "")
    reason = state.get("abstain_reason") or "no answer could be grounded in the retrieved passages"
    diagnostics: Diagnostics = {**unrecorded_degraded(state, runtime).get("diagnostics", {})}
    answering = state.get("next_action") == "answer" and bool(state.get("answer"))
    # what the run read, looked up once: a model's answer is checked against it, and the
    # evidence shown is ranked from it
    passages_read = functools.cache(lambda: read_passages(state, runtime))
    diagnostics |= cascade_diagnostics(
        list(state.get("drafts") or []), state.get("answer", "") if answering else ""
    )
    if answering:
        answer = state["answer"]
        evidence = list(state.get("evidence", []))
        checked = model_answer_fit(question, answer, evidence, passages_read, runtime.context)
        if checked is None:
            # an earlier rejection that a later round overcame is no reason to show with an answer
            evidence = mark_support(evidence, answer)
        else:
            fit, evidence = checked
            if fit.read_from:
                diagnostics["answer_read_from"] = fit.read_from
            answer = fit.answer
        if checked is None or checked[0].fits:
            extra: RunUpdate = {"diagnostics": diagnostics} if diagnostics else {}
            shown_with = with_related(
                question,
                with_sentences(question, evidence, answer),
                state.get("drafts") or [],
                passages_read(),
                answer,
            )
            return {
                "answer": answer,
                "abstained": False,
                "abstain_reason": "",
                "evidence": Overwrite(shown_with),
                "trace": ["finalize_answer"],
                **extra,
            }
        reason = checked[0].reason
        diagnostics["answer_misfit"] = answer
    extra = {"diagnostics": diagnostics} if diagnostics else {}
    shown = shown_evidence(question, state.get("drafts") or [], passages_read())
    return {
        "answer": "",
        "abstained": True,
        "abstain_reason": reason,
        "evidence": Overwrite(shown),
        "trace": ["finalize_answer"],
        **extra,
    }


def read_observed(state: FinalizeState, runtime: Runtime[Context]) -> DraftOutcome:
    """A loop that decides its own answer (react's thinker, knowledge_aware's rounds) ended in an
    abstention, in a run with readers (`Context.readers`; `graphseek.graphs.routing.route_end`,
    the escalation's conditional edge): the cascade of readers drafts the question from the
    passages the loop observed, cheapest reader first, as every other topology's drafts are
    read. Its answer stands at the run's draft threshold; else the loop's abstention stands,
    with the readers' reason after it."""
    question = " ".join(state.get("question", "").split())
    draft, usage, error = draft_for(question, to_hits(list(state.get("passages", []))), runtime)
    update = answer_or_abstain(draft, usage, error, get_roles(runtime.context).threshold)
    update["trace"] = ["read_observed"]
    if update.get("next_action") == "abstain":
        before = state.get("abstain_reason") or "the loop found no answer"
        update["abstain_reason"] = f"{before}; the readers: {update.get('abstain_reason', '')}"
    return update


def add_read_observed(builder: StateGraph[Any, Context, Any, Any]) -> None:
    """Add `read_observed` (reading the topology's own state, as `finalize_answer` does), which
    goes on to `finalize_answer`."""
    builder.add_node(read_observed, input_schema=builder.state_schema)
    builder.add_edge("read_observed", "finalize_answer")


def add_finalize_answer(builder: StateGraph[Any, Context, Any, Any]) -> None:
    """Add `finalize_answer` to a topology, reading the topology's own state: the node reads those
    of `FinalizeState`'s keys the topology has (inferred from its annotation, its input schema
    would add the others to every graph as channels no node writes)."""
    builder.add_node(finalize_answer, input_schema=builder.state_schema)
