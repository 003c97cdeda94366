"""Entity records: mentions aggregated into one name, aliases, types and description, compared.

A record stands for a base entity (the mentions exact merging joined) or a final one; semantic
merging and Phase 3 linking compare records by type (`types_compatible`) and name
(`any_name_match`), and show them to a model through `describe`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from graphseek.knowledge.graph.models import CONCEPT, UNTYPED, Mention
from graphseek.knowledge.text import names_match, normalize_name

GENERIC_TYPES = frozenset({CONCEPT, UNTYPED})
#: NER labels that may name the same referent when a tagger hesitates between them
TYPE_FAMILIES: dict[str, str] = {
    "PERSON": "person",
    "ORG": "org",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "WORK_OF_ART": "work",
    "PRODUCT": "work",
    "LAW": "work",
    "EVENT": "event",
    "DATE": "time",
    "TIME": "time",
}
#: types whose near-duplicates are different values, never worth a "similar" edge
VALUE_TYPES = frozenset({"DATE", "TIME", "MONEY", "PERCENT", "QUANTITY", "CARDINAL", "ORDINAL"})


@dataclass
class EntityRecord:
    """Aggregated attributes of a group of mentions (a base or a final entity)."""

    name: str
    aliases: list[str]
    description: str
    types: list[str]
    mention_ids: Sequence[str]
    """Sorted (a list, or a view of alignment's ids: `id_columns.IdList`)."""
    passage_ids: list[str]

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]

    def embedding_text(self) -> str:
        """``"name; alias, alias; TYPE, TYPE"`` (the text semantic merging embeds)."""
        parts = [self.name]
        if self.aliases:
            parts.append(", ".join(self.aliases[:8]))
        parts.append(", ".join(self.types))
        return "; ".join(parts)


def aggregate(
    mentions: Sequence[Mention], mention_ids: Sequence[str] | None = None
) -> EntityRecord:
    """Name = the most frequent surface of the most frequent name key (ties: longer, then
    alphabetical); aliases = every other surface, one per key; types by frequency (``CONCEPT``
    and ``ENTITY`` dropped when a specific type is present); description = the most frequent.
    (Counts in plain dicts: called once per base and per final entity, tens of thousands of
    times a build, where `Counter` objects cost more than the counting.) `mention_ids`: the
    mentions' ids, sorted, when the caller has them (`MentionColumns.id_list`)."""
    key_counts: dict[str, int] = {}
    surfaces: dict[str, dict[str, int]] = {}
    for m in mentions:
        key = _name_key(m.name)
        key_counts[key] = key_counts.get(key, 0) + 1
        counts = surfaces.setdefault(key, {})
        counts[m.name] = counts.get(m.name, 0) + 1
    best_key = min(key_counts.items(), key=_frequent_longer)[0]
    name = _most_frequent({s: c for s, c in surfaces[best_key].items() if s})
    alias_keys: dict[str, dict[str, int]] = {}
    for m in mentions:
        for surface in (m.name, *m.aliases):
            key = _name_key(surface)
            if key != best_key:
                counts = alias_keys.setdefault(key, {})
                counts[surface] = counts.get(surface, 0) + 1
    aliases = [min(alias_keys[key].items(), key=_frequent_first)[0] for key in sorted(alias_keys)]
    type_counts: dict[str, int] = {}
    for m in mentions:
        for t in m.types:
            type_counts[t] = type_counts.get(t, 0) + 1
    types = [t for t, _ in sorted(type_counts.items(), key=_frequent_first)]
    specific = [t for t in types if t not in GENERIC_TYPES]
    types = specific or types or [UNTYPED]
    descriptions: dict[str, int] = {}
    for m in mentions:
        if m.description:
            descriptions[m.description] = descriptions.get(m.description, 0) + 1
    return EntityRecord(
        name=name,
        aliases=aliases,
        description=_most_frequent(descriptions),
        types=types,
        mention_ids=sorted(m.id for m in mentions) if mention_ids is None else mention_ids,
        passage_ids=sorted({m.passage_id for m in mentions}),
    )


def _name_key(surface: str) -> str:
    return normalize_name(surface) or surface.lower()


def _frequent_longer(item: tuple[str, int]) -> tuple[int, int, str]:
    return -item[1], -len(item[0]), item[0]


def _frequent_first(item: tuple[str, int]) -> tuple[int, str]:
    return -item[1], item[0]


def _most_frequent(counts: dict[str, int]) -> str:
    """The most frequent of counted non-empty values; ties go to the longer, then the
    alphabetically first ("" when there is none)."""
    return min(counts.items(), key=_frequent_longer)[0] if counts else ""


def types_compatible(a: Iterable[str], b: Iterable[str]) -> bool:
    """Shared type, same NER family, or one side only generic (``CONCEPT``/``ENTITY``)."""
    ta, tb = set(a), set(b)
    if not ta or not tb or ta & tb:
        return True
    if ta <= GENERIC_TYPES or tb <= GENERIC_TYPES:
        return True
    fa = {TYPE_FAMILIES[t] for t in ta if t in TYPE_FAMILIES}
    fb = {TYPE_FAMILIES[t] for t in tb if t in TYPE_FAMILIES}
    return bool(fa & fb)


def _looks_proper(name: str) -> bool:
    first = next((c for c in name if c.isalpha()), "")
    return first.isupper()


def generic_may_join(a: EntityRecord, b: EntityRecord) -> bool:
    """A generic-only entity (a noun chunk) joins a typed one only when its name looks like a
    proper name: "Lothair II" missed by the tagger, not "film director" mis-tagged PERSON."""
    ga, gb = set(a.types) <= GENERIC_TYPES, set(b.types) <= GENERIC_TYPES
    if ga == gb:
        return True
    generic = a if ga else b
    return _looks_proper(generic.name)


def any_name_match(a: EntityRecord, b: EntityRecord, limit: int = 10) -> bool:
    return any(names_match(x, y) for x in a.names[:limit] for y in b.names[:limit])


def describe(records: Sequence[EntityRecord]) -> str:
    """The entity listing the merge and link prompts show."""
    lines = []
    for n, r in enumerate(records, 1):
        aliases = ", ".join(r.aliases[:8]) or "-"
        lines.append(
            f"{n}. name={r.name}; aliases={aliases}; types={', '.join(r.types)}; "
            f"description={r.description or '-'}"
        )
    return "\n".join(lines)
