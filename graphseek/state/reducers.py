"""Reducers for state keys that parallel branches write. Small, pure, unit-tested."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from graphseek.state.models import EvidenceItem, Fact, Gap, Usage

T = TypeVar("T")


def merge_facts(left: Sequence[Fact] | None, right: Sequence[Fact] | None) -> list[Fact]:
    """Merge facts by id; a later fact with the same id replaces the earlier one in place."""
    out: dict[str, Fact] = {f.id: f for f in left or []}
    for fact in right or []:
        out[fact.id] = fact
    return list(out.values())


def merge_gaps(left: Sequence[Gap] | None, right: Sequence[Gap] | None) -> list[Gap]:
    """Merge gaps by id; a later gap with the same id (e.g. now `resolved`) replaces the earlier."""
    out: dict[str, Gap] = {g.id: g for g in left or []}
    for gap in right or []:
        out[gap.id] = gap
    return list(out.values())


def dedupe_evidence(
    left: Sequence[EvidenceItem] | None, right: Sequence[EvidenceItem] | None
) -> list[EvidenceItem]:
    """Keep one evidence item per passage id (the first seen), preserving order."""
    seen: dict[str, EvidenceItem] = {}
    for item in [*(left or []), *(right or [])]:
        seen.setdefault(item.passage_id, item)
    return list(seen.values())


def append_unique(left: Sequence[T] | None, right: Sequence[T] | None) -> list[T]:
    """Append items not already present (e.g. the query history: no repeated queries)."""
    out = list(left or [])
    for item in right or []:
        if item not in out:
            out.append(item)
    return out


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """Sum two usage records."""
    if left is None:
        return right or Usage()
    if right is None:
        return left
    return left + right


def merge_dicts(left: Mapping[str, Any] | None, right: Mapping[str, Any] | None) -> Any:
    """Shallow merge of diagnostics; list values are concatenated, the rest overwritten."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        if isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = [*out[key], *value]
        else:
            out[key] = value
    return out
