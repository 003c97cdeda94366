"""Phases 3 and 4 of HiGra (§3.3, §3.4): entity-entity and entity-passage linking.

Entity-entity (Phase 3), for entities that are similar or co-occur but share no extracted
relation:

- offline, **co-occurrence** edges (``kind="cooccurrence"``, label ``"co-occurs with"``) between
  named (not ``CONCEPT``-only) entities of the same sentence (``scope="sentence"``; mentions
  without a sentence index are skipped) or passage (``scope="passage"``), weighted by the number
  of sentences/passages;
- offline, **similarity** edges (``kind="similar"``, label ``"similar to"``, weight = cosine)
  between entities of one embedding cluster that semantic merging kept apart (the offline
  stand-in for "Apple Inc." / "Apple Store"), at most `max_similar` per entity, values (dates,
  amounts) excluded;
- with an LLM, **predicted** relations (``kind="predicted"``) inside each cluster
  (`PredictedRelations`).

Entity-passage (Phase 4): every name and alias of every named entity (typed, or a capitalised
generic one; lower-case noun chunks such as "film director" are not searched) is searched in
every passage with one Aho-Corasick automaton (pyahocorasick) over the lower-cased text, keeping only hits on
word boundaries. A surface form links its entity to the passages it occurs in when its number of
occurrences in the whole corpus is below `theta` and it is not one of the `top_k_common` most
frequent words of the corpus. (The paper states the rule for the name; it is applied to each
alias as well, since aliases are how passages name an entity.)
"""

from __future__ import annotations

import logging
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, Field

from graphseek.knowledge.graph.algorithms.align import clusters_of
from graphseek.knowledge.graph.algorithms.records import (
    GENERIC_TYPES,
    VALUE_TYPES,
    EntityRecord,
    describe,
)
from graphseek.knowledge.graph.memory.merge_pairs import MergePairs
from graphseek.knowledge.graph.models import Entity, Extraction, Relation, graph_record
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import normalize_text, stable_id, top_common_words

log = logging.getLogger(__name__)

COOCCURS = "co-occurs with"
SIMILAR = "similar to"


COOCCURRENCE_MAX_GROUP = 12
"""Co-occurring groups of more entities than this (lists, tables) give no co-occurrence edges."""


def relation_id(source: str, label: str, target: str) -> str:
    return stable_id("r", source, label, target)


# -- Phase 3 ------------------------------------------------------------------------------------


def cooccurrence_edges(
    extractions: Iterable[Extraction],
    mention_entity: Mapping[str, str],
    *,
    scope: str = "sentence",
    max_group: int = COOCCURRENCE_MAX_GROUP,
) -> list[Relation]:
    """Undirected co-occurrence edges (stored once, source id < target id).

    Only mentions present in `mention_entity` take part (callers leave out generic concepts,
    which would become hubs); groups of more than `max_group` entities (lists, tables) are
    skipped."""
    found = cooccurring_pairs(extractions, mention_entity, scope=scope, max_group=max_group)
    return [
        graph_record(
            Relation,
            id=relation_id(a, COOCCURS, b),
            source=a,
            label=COOCCURS,
            target=b,
            passage_ids=sorted(pids),
            weight=float(w),
            kind="cooccurrence",
        )
        for (a, b), (w, pids) in sorted(found.items())
    ]


def cooccurring_pairs(
    extractions: Iterable[Extraction],
    mention_entity: Mapping[str, str],
    *,
    scope: str = "sentence",
    max_group: int = COOCCURRENCE_MAX_GROUP,
) -> dict[tuple[str, str], tuple[int, set[str]]]:
    """The pairs `cooccurrence_edges` links (a < b): how often they co-occur and in which
    passages (unordered)."""
    if scope == "none":
        return {}
    if scope not in ("sentence", "passage"):
        raise ValueError(f"cooccurrence scope must be 'sentence', 'passage' or 'none': {scope!r}")
    out: dict[tuple[str, str], tuple[int, set[str]]] = {}
    by_sentence = scope == "sentence"
    for extraction in extractions:
        groups: dict[int, set[str]] = {}
        for m in extraction.mentions:
            if by_sentence and m.sentence < 0:
                continue
            eid = mention_entity.get(m.id)
            if eid is not None:
                groups.setdefault(m.sentence if by_sentence else 0, set()).add(eid)
        pid = extraction.passage_id
        for members in groups.values():
            if len(members) < 2 or len(members) > max_group:
                continue
            ordered = sorted(members)
            for i, a in enumerate(ordered):
                for b in ordered[i + 1 :]:
                    seen = out.get((a, b))
                    if seen is None:
                        out[(a, b)] = (1, {pid})
                    else:
                        seen[1].add(pid)
                        out[(a, b)] = (seen[0] + 1, seen[1])
    return out


class Typed(Protocol):
    """What `similarity_edges` reads of an entity."""

    @property
    def types(self) -> Sequence[str]: ...


def similarity_edges(
    pairs: Mapping[tuple[str, str], tuple[float, bool]],
    base_entity: Mapping[str, str],
    entities: Mapping[str, Typed],
    *,
    max_per_entity: int = 5,
) -> list[Relation]:
    """Edges between entities of one cluster that were not merged (best `max_per_entity`),
    sorted by id: `similar_relations` over `pairs` (a `MergePairs`, or a mapping with one key
    per pair of base ids, as a delta add's)."""
    if not isinstance(pairs, MergePairs):
        distinct = {key: row for key, row in pairs.items() if key[0] != key[1]}
        pairs = MergePairs.from_mapping(sorted({x for key in distinct for x in key}), distinct)
    return sorted(
        similar_relations(pairs, base_entity, entities, max_per_entity=max_per_entity),
        key=lambda r: r.id,
    )


def similar_relations(
    pairs: MergePairs,
    base_entity: Mapping[str, str],
    entities: Mapping[str, Typed],
    *,
    max_per_entity: int = 5,
) -> Iterator[Relation]:
    """Edges between entities of one cluster that were not merged: each two entities' best
    unmerged pair, none between value-typed entities (`VALUE_TYPES`), at most `max_per_entity`
    an entity taken best first (ties: the lower ids). Made from the columns of `pairs` (every
    candidate pair of the build) one at a time in that order, not sorted by id
    (`similarity_edges` sorts them), without a dict entry per entity pair and a list of every
    edge, which would be linking's top."""
    eids = sorted({e for e in (base_entity.get(b) for b in pairs.ids) if e is not None})
    number = {e: k for k, e in enumerate(eids)}  # sorted: numbers compare as the ids do
    of_base = np.fromiter(
        (number.get(base_entity.get(b, ""), -1) for b in pairs.ids),
        dtype=np.int64,
        count=len(pairs.ids),
    )
    del number
    ea, eb = of_base[pairs.a], of_base[pairs.b]
    keep = ~pairs.merged & (ea >= 0) & (eb >= 0) & (ea != eb) & (pairs.sim > -1.0)
    valued = np.zeros(len(eids), dtype=bool)  # read for the ends of these pairs only, as above
    for k in np.unique(np.concatenate([ea[keep], eb[keep]])).tolist():
        valued[k] = not VALUE_TYPES.isdisjoint(entities[eids[k]].types)
    keep[keep] &= ~valued[ea[keep]] & ~valued[eb[keep]]
    lo, hi = np.minimum(ea, eb)[keep], np.maximum(ea, eb)[keep]
    sim = pairs.sim[keep]
    del ea, eb, keep, of_base
    order = np.lexsort((-sim, hi, lo))  # each entity pair's best first
    lo, hi, sim = lo[order], hi[order], sim[order]
    first = np.ones(len(lo), dtype=bool)
    first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    lo, hi, sim = lo[first], hi[first], sim[first]
    order = np.lexsort((hi, lo, -sim))
    count = [0] * len(eids)
    for a, b, s in zip(lo[order].tolist(), hi[order].tolist(), sim[order].tolist(), strict=True):
        if count[a] >= max_per_entity or count[b] >= max_per_entity:
            continue
        count[a] += 1
        count[b] += 1
        source, target = eids[a], eids[b]
        yield graph_record(
            Relation,
            id=relation_id(source, SIMILAR, target),
            source=source,
            label=SIMILAR,
            target=target,
            passage_ids=[],
            weight=round(float(s), 6),
            kind="similar",
        )


class PredictedRelation(BaseModel):
    source: int = Field(description="Number of the source record.")
    label: str = Field(description='Short lower-case relation label, e.g. "store of".')
    target: int = Field(description="Number of the target record.")


class PredictedRelations(BaseModel):
    """The LLM's new relations inside one cluster."""

    reason: str = Field(default="", description="Why these relations hold.")
    relations: list[PredictedRelation] = Field(default_factory=list)


def predicted_edges(
    pairs: Mapping[tuple[str, str], tuple[float, bool]],
    base_entity: Mapping[str, str],
    entities: Mapping[str, Entity],
    model: Any,
    *,
    max_cluster_size: int = 12,
    max_concurrency: int = 8,
    max_retries: int = 2,
    show_progress: bool = False,
) -> tuple[list[Relation], Any]:
    """LLM-predicted relations inside each cluster of unmerged similar entities."""
    from graphseek.knowledge.graph.extract.llm import UsageMeter, parallel_map
    from graphseek.knowledge.graph.extract.prompts import LINK_PROMPT, LINK_SYSTEM

    ids = sorted(entities)
    position = {eid: k for k, eid in enumerate(ids)}
    index_pairs = set()
    for (a, b), (_, merged) in pairs.items():
        ea, eb = base_entity.get(a), base_entity.get(b)
        if merged or ea is None or eb is None or ea == eb:
            continue
        pa, pb = position[ea], position[eb]
        index_pairs.add((min(pa, pb), max(pa, pb)))
    clusters = clusters_of(sorted(index_pairs), max_cluster_size)
    meter = UsageMeter()

    def ask(cluster: list[int]) -> list[Relation]:
        from graphseek.errors import LLMOutputError
        from graphseek.llm import invoke_structured

        members = [entities[ids[k]] for k in cluster]
        records = [EntityRecord(e.name, e.aliases, e.description, e.types, [], []) for e in members]
        messages = [
            ("system", LINK_SYSTEM),
            ("human", LINK_PROMPT.format(entities=describe(records))),
        ]
        try:
            result, usage = invoke_structured(
                model, PredictedRelations, messages, max_retries=max_retries
            )
        except LLMOutputError as exc:
            meter.fail(getattr(exc, "usage", None))
            log.warning("link prediction failed for a cluster of %d: %s", len(cluster), exc)
            return []
        meter.add(usage)
        out = []
        for rel in result.relations:
            label = " ".join(rel.label.lower().split())
            if not (1 <= rel.source <= len(members) and 1 <= rel.target <= len(members)):
                continue
            source, target = members[rel.source - 1].id, members[rel.target - 1].id
            if source == target or not label:
                continue
            out.append(
                Relation(
                    id=relation_id(source, label, target),
                    source=source,
                    label=label,
                    target=target,
                    kind="predicted",
                )
            )
        return out

    answers = parallel_map(
        ask,
        clusters,
        max_concurrency=max_concurrency,
        desc="link (LLM)",
        show_progress=show_progress,
    )
    found = {r.id: r for batch in answers for r in batch}
    return sorted(found.values(), key=lambda r: r.id), meter


# -- Phase 4 ------------------------------------------------------------------------------------


class MatchReport(BaseModel):
    """What the passage matcher did."""

    surfaces: int = 0
    skipped_common: int = 0
    skipped_frequent: int = 0
    links: int = 0
    common_words: list[str] = Field(default_factory=list, exclude=True)
    """The corpus's `top_k_common` words (kept in the store for a delta add; not dumped)."""


def linkable(entity: Entity) -> bool:
    """Whether Phase 4 searches an entity's names: typed entities, and generic ones whose name
    looks like a name ("Teutberga"), not lower-case noun chunks ("film director")."""
    return linkable_name(entity.name, entity.types)


def linkable_name(name: str, types: Iterable[str]) -> bool:
    """`linkable` of an entity's name and types (rows read without making entities)."""
    if not set(types) <= GENERIC_TYPES:
        return True
    first = next((c for c in name if c.isalpha()), "")
    return first.isupper()


def word_hits(automaton: Any, text: str) -> Iterator[str]:
    """The keys of an Aho-Corasick `automaton` (values: the keys) found in `text` on word
    boundaries, one per occurrence (the matcher's rule)."""
    size = len(text)
    for end, key in automaton.iter(text):
        start = end - len(key) + 1
        if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            continue
        if end + 1 < size and (text[end + 1].isalnum() or text[end + 1] == "_"):
            continue
        yield key


def match_numbers(
    entities: Sequence[Entity],
    passages: Sequence[Passage],
    *,
    theta: int,
    top_k_common: int,
    min_chars: int = 2,
    only_named: bool = True,
) -> tuple[np.ndarray, np.ndarray, MatchReport]:
    """The passages naming each entity (Phase 4 rule; see the module docstring), as two int32
    columns: positions in `entities` and in `passages`, one row per link, sorted. With
    `only_named`, entities failing `linkable` are not searched."""
    import ahocorasick

    report = MatchReport()
    # each passage is normalised when read, twice (the common words, then the scan), not held
    # as a list of normalised copies of the corpus (which would be held at linking's top)
    common = top_common_words((normalize_text(p.content) for p in passages), top_k_common)
    report.common_words = sorted(common)
    surface_entities: dict[str, list[int]] = {}
    for k, entity in enumerate(entities):
        if only_named and not linkable(entity):
            continue
        for surface in entity.names:
            key = normalize_text(surface).strip()
            if len(key) >= min_chars and any(c.isalnum() for c in key):
                numbers = surface_entities.setdefault(key, [])
                if not numbers or numbers[-1] != k:  # a name and an alias with one key
                    numbers.append(k)
    automaton = ahocorasick.Automaton()
    for key in surface_entities:
        if key in common:
            report.skipped_common += 1
            continue
        automaton.add_word(key, key)
    report.surfaces = len(surface_entities)
    none = np.zeros(0, dtype=np.int32)
    if len(automaton) == 0:
        return none, none, report
    automaton.make_automaton()
    counts: Counter[str] = Counter()
    hits: dict[str, set[int]] = defaultdict(set)
    for n, passage in enumerate(passages):
        for key in word_hits(automaton, normalize_text(passage.content)):
            counts[key] += 1
            hits[key].add(n)
    codes = array("q")
    width = max(len(passages), 1)
    for key, found in hits.items():
        if counts[key] >= theta:
            report.skipped_frequent += 1
            continue
        for e in surface_entities[key]:
            codes.extend(e * width + n for n in found)
    unique = np.unique(np.frombuffer(codes, dtype=np.int64))
    del codes
    report.links = len(unique)
    return (unique // width).astype(np.int32), (unique % width).astype(np.int32), report
