"""KAIR steps that the single agent and the suggesters of `knowledge_aware` share: planning a
query that is not a repeat (with the budgets checked before each planner call), and a knowledge
update that keeps only what KAIR eq. 5 lets in."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from graphseek.agents.kair import AcceptedUpdate, accept_update, is_repeat
from graphseek.agents.registry import Roles
from graphseek.agents.roles import KnowledgeView, Planner, QueryPlan
from graphseek.errors import BudgetExceededError, LLMError
from graphseek.graphs.common import error_usage
from graphseek.graphs.routing import budget_exhausted
from graphseek.knowledge.passages import Hit
from graphseek.state.context import Context
from graphseek.state.models import EvidenceItem, Usage

log = logging.getLogger(__name__)


def plan_new_query(
    planner: Planner,
    view: KnowledgeView,
    attempts: int,
    spent: Usage | None = None,
    context: Context | None = None,
) -> tuple[QueryPlan, Usage, list[str]]:
    """Ask the planner for a query not in the history; a repeat is rejected and the planner asked
    again with the rejected queries listed, `attempts` times at most. Returns the plan (an empty
    query when none is new), the usage, and the rejected queries.

    With `context`, the budgets are checked before every planner call against `spent` (the
    run's usage before this round) plus what the calls here cost; a spent budget raises
    `BudgetExceededError`. A failed call raises its `LLMError` carrying the usage of every call
    made here."""
    usage = Usage()
    rejected: list[str] = []
    for _ in range(max(1, attempts)):
        if context is not None:
            why = budget_exhausted((spent or Usage()) + usage, 0, context)
            if why:
                raise BudgetExceededError(f"budget: {why}", cause=why, usage=usage)
        try:
            step = planner.plan(view, tuple(rejected))
        except LLMError as exc:
            exc.usage = usage + error_usage(exc)
            raise
        usage = usage + step.usage
        query = " ".join(step.value.query.split())
        if not query:
            return step.value, usage, rejected
        if is_repeat(query, [*view.query_history, *rejected]):
            rejected.append(query)
            continue
        return replace(step.value, query=query), usage, rejected
    reason = f"every proposed query was already searched ({'; '.join(rejected)})"
    return QueryPlan(query="", reason=reason), usage, rejected


def _shown_passages(hits: Sequence[Hit], context: Sequence[EvidenceItem]) -> dict[str, str]:
    """Passage id -> whole text of what a knowledge update sees: new hits and the context."""
    shown = {h.passage.id: h.passage.text for h in hits}
    for item in context:
        shown.setdefault(item.passage_id, item.text)
    return shown


def update_from_hits(
    roles: Roles, view: KnowledgeView, plan: QueryPlan, hits: Sequence[Hit]
) -> tuple[AcceptedUpdate, Usage, str | None]:
    """Run the knowledge updater and keep what KAIR eq. 5 lets in."""
    try:
        step = roles.knowledge_updater.update(view, plan, hits)
    except LLMError as exc:
        log.warning("knowledge updater failed on %r: %s", plan.query, exc)
        return AcceptedUpdate(), error_usage(exc), f"knowledge updater: {exc}"
    shown = _shown_passages(hits, view.refined_context)
    return accept_update(view.required, step.value, shown), step.usage, None
