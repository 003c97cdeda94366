"""Stage 4, linking: entity-entity relations (HiGra Phase 3: the extracted relations, then
co-occurrence and similarity edges offline, or the aligner model's predicted relations inside
clusters) and entity-passage links (Phase 4: each entity's mentions, plus the Aho-Corasick
matcher under the theta / top-K-common-words rule) (`graphseek.knowledge.graph.algorithms.link`):
`link`. Onto a stored graph (a delta add), only the new passages' relations and links: `link_onto`
(below, with why it is its own function)."""

from __future__ import annotations

import json
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.algorithms.align import AlignmentResult
from graphseek.knowledge.graph.algorithms.link import (
    COOCCURRENCE_MAX_GROUP,
    MatchReport,
    cooccurrence_edges,
    linkable_name,
    match_numbers,
    predicted_edges,
    relation_id,
    similar_relations,
    similarity_edges,
    word_hits,
)
from graphseek.knowledge.graph.algorithms.records import GENERIC_TYPES
from graphseek.knowledge.graph.algorithms.vectors import set_stage
from graphseek.knowledge.graph.models import Entity, Extraction, Relation, graph_record
from graphseek.knowledge.graph.settings import GraphSettings
from graphseek.knowledge.graph.stages import Run, timed
from graphseek.knowledge.graph.stages.align import Alignment, DeltaAlignment
from graphseek.knowledge.graph.store import aliases_and_types
from graphseek.knowledge.graph.store.stored import StoredGraph, name_key
from graphseek.knowledge.graph.store.writer import MATCHER
from graphseek.knowledge.passages import Passage, content_of
from graphseek.knowledge.progress import bar as progress_bar
from graphseek.knowledge.text import normalize_text, top_common_words


@dataclass
class Links:
    """What linking gives: the relations between entities (sorted by id), each entity's links
    to passages, what the passage matcher did (for the manifest), and the model's usage by
    stage (``"align"``, ``"link"``) when a model aligned."""

    relations: memory.RelationColumns
    passages: memory.PassageLinks
    matcher: MatchReport
    llm_usage: dict[str, Any] = field(default_factory=dict)


def link(
    passages: Sequence[Passage],
    extractions: Sequence[Extraction],
    aligned: Alignment,
    settings: GraphSettings,
    run: Run,
) -> Links:
    """Phase 3, then Phase 4, over the aligned entities."""
    set_stage(run.embed, "linking")
    with progress_bar("linking", 2, run.show_progress, unit="step") as bar:
        with timed(run.timings, "link_entities", len(passages)):
            relations, llm_usage = link_entities(extractions, aligned, settings, run)
        bar.update(1)
        with timed(run.timings, "link_passages", len(passages)):
            links, report = link_passages(passages, aligned.merged.entities, settings)
        bar.update(1)
    return Links(relations, links, report, llm_usage)


def link_entities(
    extractions: Iterable[Extraction], aligned: Alignment, settings: GraphSettings, run: Run
) -> tuple[memory.RelationColumns, dict[str, Any]]:
    """Phase 3: the extracted relations, the co-occurrence edges of named entities, and the
    similarity edges of the merge pairs kept apart (offline) or the model's predicted
    relations; with the model's usage."""
    merged = aligned.merged
    entities = merged.entities
    by_id = entities.by_id()
    building = memory.relation_columns()
    building.add(extracted_relations(extractions, merged.mention_entity))
    building.add(
        cooccurrence_edges(extractions, _named_mentions(merged), scope=settings.cooccurrence)
    )
    base_entity = dict(zip(merged.base_ids, merged.base_entity, strict=True))
    llm_usage: dict[str, Any] = {}
    if merged.llm_usage is not None:
        llm_usage["align"] = merged.llm_usage.usage.model_dump()
    if run.model is None:
        building.add(
            similar_relations(merged.pairs, base_entity, by_id, max_per_entity=settings.max_similar)
        )
    else:
        predicted, meter = predicted_edges(
            merged.pairs,
            base_entity,
            by_id,
            run.model,
            max_cluster_size=settings.max_cluster_size,
            max_concurrency=run.max_concurrency,
            show_progress=run.show_progress,
        )
        known = set(building.ids)
        building.add(r for r in predicted if r.id not in known)
        llm_usage["link"] = meter.usage.model_dump()
    return building.finish(), llm_usage


def extracted_relations(
    extractions: Iterable[Extraction], mention_entity: Mapping[str, str]
) -> list[Relation]:
    """The aligned graph's extracted relations: one per (source entity, normalised label,
    target entity), supported by the passages whose raw relations give it (one pass over
    `extractions`)."""
    support: dict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
    for x in extractions:
        for r in x.relations:
            s, t = mention_entity.get(r.source), mention_entity.get(r.target)
            label = " ".join(r.label.lower().split())
            if s is None or t is None or s == t or not label:
                continue
            support[(s, label, t)][r.passage_id] += 1
    return [
        graph_record(
            Relation,
            id=relation_id(s, label, t),
            source=s,
            label=label,
            target=t,
            passage_ids=sorted(pids),
            weight=float(sum(pids.values())),
            kind="extracted",
        )
        for (s, label, t), pids in sorted(support.items())
    ]


def link_passages(
    passages: Sequence[Passage], entities: memory.EntityColumns, settings: GraphSettings
) -> tuple[memory.PassageLinks, MatchReport]:
    """Phase 4: each entity to the passages it was extracted from (its mentions') and to those
    the matcher finds its names in (`match_numbers`)."""
    matched_entity, matched_passage, report = match_numbers(
        entities, passages, theta=settings.theta, top_k_common=settings.top_k_common
    )
    mentioned = _mentioned(entities, passages)
    links = memory.PassageLinks.of(
        entities.ids, [p.id for p in passages], mentioned, (matched_entity, matched_passage)
    )
    return links, report


def _named_mentions(merged: AlignmentResult) -> memory.MentionTable[str]:
    """The mentions of entities with a type other than the generic ones, and their entities."""
    entities = merged.entities
    named = {
        eid
        for k, eid in enumerate(entities.ids)
        if not set(entities.items_of("types", k)) <= GENERIC_TYPES
    }
    return merged.mention_entity.where(named.__contains__)


def _mentioned(
    entities: memory.EntityColumns, passages: Sequence[Passage]
) -> tuple[np.ndarray, np.ndarray]:
    """Each entity's links to the passages of its mentions: entity and passage numbers."""
    number = {p.id: k for k, p in enumerate(passages)}
    entity, passage = array("i"), array("i")
    for k in range(len(entities)):
        for pid in entities.items_of("passage_ids", k):
            entity.append(k)
            passage.append(number[pid])
    return np.frombuffer(entity, dtype=np.int32), np.frombuffer(passage, dtype=np.int32)


# -- onto a stored graph (a delta add) ----------------------------------------------------------
#
# `link` links over the whole corpus: Phase 4's occurrence counts (`theta`) and common words
# (`top_k_common`) are corpus-wide, which `link_passages` gets by matching every passage. A
# delta add links the new passages onto a stored graph: its relations are only the new
# passages' (a relation the store has gains their weight and passages; similarity edges are
# capped against the stored ones: `new_relations`), and its matcher counts only the names it
# hits, in the new passages and then in the stored ones (`match_links`; the common words are
# the store's, kept in ``matcher.json``). It shares `extracted_relations`,
# `cooccurrence_edges` and `similarity_edges`.


@dataclass
class DeltaLinks:
    """What linking onto a stored graph gives: the relations the new passages give
    (`new_relations`) and the ids of those the store has already, the aliases stored entities
    gain (each new name key by its most frequent surface), the new entity-passage links by
    (entity, passage), ``"mention"`` or ``"match"``, and the store's common words."""

    relations: list[Relation]
    stored_relations: set[str]
    new_aliases: dict[str, list[str]]
    passages: dict[tuple[str, str], str]
    common: frozenset[str]


@dataclass
class StoredSurfaces:
    """The matcher's surfaces of the stored entities: key -> ids of the linkable entities named
    so, and each entity's names (name first) and types."""

    entities: dict[str, set[str]]
    names: dict[str, list[str]]
    types: dict[str, list[str]]


def link_onto(
    stored: StoredGraph,
    new: Sequence[Passage],
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    settings: GraphSettings,
    timings: dict[str, Any],
    surfaces: StoredSurfaces | None = None,
) -> DeltaLinks:
    """Phase 3, then Phase 4, of the `new` passages onto the `stored` graph. `surfaces`:
    `stored_surfaces(stored)`, if read already."""
    with timed(timings, "link_entities", len(new)):
        relations, stored_relations = new_relations(stored, extracted, aligned, settings)
        new_aliases = _new_aliases(aligned)
    with timed(timings, "link_passages", len(new)):
        matched, common = match_links(
            stored, new, aligned.new_entities, new_aliases, settings, surfaces
        )
        links: dict[tuple[str, str], str] = {}
        for x in extracted:
            for m in x.mentions:
                owner = aligned.mention_entity.get(m.id)
                if owner is not None:
                    links[(owner, m.passage_id)] = "mention"
        for eid, pids in matched.items():
            for pid in pids:
                links.setdefault((eid, pid), "match")
    return DeltaLinks(relations, stored_relations, new_aliases, links, common)


def _new_aliases(aligned: DeltaAlignment) -> dict[str, list[str]]:
    """The aliases stored entities gain: each name key of their new mentions that they do not
    have, by its most frequent surface."""
    new_aliases: dict[str, list[str]] = {}
    for eid, gained in aligned.joined.items():
        known = aligned.stored[eid].keys() if eid in aligned.stored else set()
        surfaces: dict[str, Counter[str]] = defaultdict(Counter)
        for m in gained:
            for surface in (m.name, *m.aliases):
                key = name_key(surface)
                if key and key not in known:
                    surfaces[key][surface] += 1
        if surfaces:
            new_aliases[eid] = [
                min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0]
                for _, c in sorted(surfaces.items())
            ]
    return new_aliases


def _types_of(
    stored: StoredGraph, aligned: DeltaAlignment, ids: Iterable[str]
) -> dict[str, list[str]]:
    """Entity id -> types, for the new entities and the stored ones among `ids`."""
    out = {e.id: list(e.types) for e in aligned.new_entities}
    out.update({eid: s.types for eid, s in aligned.stored.items()})
    missing = [eid for eid in ids if eid not in out]
    for eid, kind in stored.rows(
        "SELECT entity_id, type FROM entity_types WHERE entity_id IN ({}) "
        "ORDER BY entity_id, position",
        missing,
    ):
        out.setdefault(eid, []).append(kind)
    return out


@dataclass
class _Types:
    """An entity's types, all `similarity_edges` reads of it."""

    types: list[str]


def new_relations(
    stored: StoredGraph,
    extracted: Sequence[Extraction],
    aligned: DeltaAlignment,
    settings: GraphSettings,
) -> tuple[list[Relation], set[str]]:
    """The relations the new passages give: extracted, co-occurrence and similarity edges
    (the first two with the new passages' weights and provenance only), and the ids of those
    the store has already (a similarity edge it has is not given again)."""
    me = aligned.mention_entity
    types = _types_of(stored, aligned, set(me.values()))
    relations = extracted_relations(extracted, me)
    named = {m: e for m, e in me.items() if not set(types.get(e, [])) <= GENERIC_TYPES}
    relations += cooccurrence_edges(
        extracted, named, scope=settings.cooccurrence, max_group=COOCCURRENCE_MAX_GROUP
    )
    stored_base_entity = dict(
        stored.rows(
            "SELECT id, entity_id FROM base_entities WHERE id IN ({})",
            {x for pair in aligned.pairs for x in pair},
        )
    )
    base_entity = {
        **stored_base_entity,
        **dict(zip(aligned.base_ids, aligned.base_entity, strict=True)),
    }
    entities = {eid: _Types(t) for eid, t in types.items()}
    for eid in base_entity.values():
        entities.setdefault(eid, _Types([]))
    similar = similarity_edges(
        aligned.pairs, base_entity, entities, max_per_entity=settings.max_similar
    )
    # the build's cap counts every similarity edge of an entity: the stored ones too (best
    # first, as `similarity_edges` takes them)
    ends = {x for r in similar for x in (r.source, r.target)}
    held: Counter[str] = Counter()
    for column in ("source", "target"):
        held.update(
            dict(
                stored.rows(
                    f"SELECT {column}, COUNT(*) FROM relations WHERE kind = 'similar' "
                    f"AND {column} IN ({{}}) GROUP BY {column}",
                    ends,
                )
            )
        )
    stored_ids = {
        r[0]
        for r in stored.rows(
            "SELECT id FROM relations WHERE id IN ({})",
            [r.id for r in (*relations, *similar)],
        )
    }
    for r in sorted(similar, key=lambda r: (-r.weight, r.id)):
        if r.id in stored_ids:
            continue
        if held[r.source] >= settings.max_similar or held[r.target] >= settings.max_similar:
            continue
        held[r.source] += 1
        held[r.target] += 1
        relations.append(r)
    return relations, stored_ids


def _common_words(stored: StoredGraph, settings: GraphSettings) -> frozenset[str]:
    """The store's `top_k_common` words (kept in ``matcher.json`` once counted)."""
    path = stored.dir / MATCHER
    if path.exists():
        kept = json.loads(path.read_text(encoding="utf-8"))
        if kept.get("top_k_common") == settings.top_k_common:
            return frozenset(kept["common_words"])
    texts = (
        normalize_text(content_of(t, x))
        for t, x in stored.con.execute("SELECT title, text FROM passages ORDER BY ord")
    )
    return top_common_words(texts, settings.top_k_common)


def stored_surfaces(stored: StoredGraph) -> StoredSurfaces:
    """Every stored entity's names as the matcher searches them (`StoredSurfaces`)."""
    names, types = _stored_names(stored)
    out: dict[str, set[str]] = defaultdict(set)
    for eid, surfaces in names.items():
        _add_surfaces(out, eid, surfaces, types.get(eid, []), surfaces[0])
    return StoredSurfaces(out, names, types)


def _stored_names(stored: StoredGraph) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Every stored entity's names (name first), and its types (the aliases as read are not
    kept past the return)."""
    aliases, types = aliases_and_types(stored.con.execute)
    names = {
        eid: [name, *aliases.get(eid, ())]
        for eid, name in stored.con.execute("SELECT id, name FROM entities")
    }
    return names, types


def _add_surfaces(
    out: dict[str, set[str]],
    eid: str,
    surfaces: Iterable[str],
    entity_types: Sequence[str],
    name: str,
) -> set[str]:
    """Add a linkable entity's surfaces to `out` (key -> entity ids); the keys added."""
    added: set[str] = set()
    if not linkable_name(name, entity_types):
        return added
    for surface in surfaces:
        key = normalize_text(surface).strip()
        if len(key) >= 2 and any(c.isalnum() for c in key):
            out[key].add(eid)
            added.add(key)
    return added


def _surfaces(
    stored: StoredSurfaces, new_entities: Sequence[Entity], new_aliases: Mapping[str, list[str]]
) -> tuple[dict[str, set[str]], set[str]]:
    """Key -> ids of the linkable entities named so (stored and new), and the keys new to the
    store (the new entities' names, the stored entities' new aliases)."""
    out = stored.entities
    fresh: set[str] = set()
    for e in new_entities:
        fresh |= _add_surfaces(out, e.id, e.names, e.types, e.name)
    for eid, aliases in new_aliases.items():
        if eid in stored.names:
            name = stored.names[eid][0]
            fresh |= _add_surfaces(out, eid, aliases, stored.types.get(eid, []), name)
    return out, fresh


def _automaton(keys: Iterable[str]) -> Any:
    import ahocorasick

    automaton = ahocorasick.Automaton()
    for key in keys:
        automaton.add_word(key, key)
    if len(automaton):
        automaton.make_automaton()
    return automaton


def match_links(
    stored: StoredGraph,
    new: Sequence[Passage],
    new_entities: Sequence[Entity],
    new_aliases: Mapping[str, list[str]],
    settings: GraphSettings,
    surfaces: StoredSurfaces | None = None,
) -> tuple[dict[str, set[str]], frozenset[str]]:
    """Entity id -> passage ids, the matcher's new links, and the corpus's common words (to
    keep): the `new` passages searched for every stored and new name, a name's occurrence
    count (`theta`) taken over the whole corpus for the names it hits; the names new to the
    store (`new_entities`, `new_aliases`) are searched in the stored passages too.
    `surfaces`: `stored_surfaces(stored)`, if read already (it is extended here)."""
    common = _common_words(stored, settings)
    read = surfaces if surfaces is not None else stored_surfaces(stored)
    surface_entities, fresh = _surfaces(read, new_entities, new_aliases)
    automaton = _automaton(k for k in surface_entities if k not in common)
    links: dict[str, set[str]] = defaultdict(set)
    if not len(automaton):
        return links, common
    counts: Counter[str] = Counter()
    hits: dict[str, set[str]] = defaultdict(set)
    for p in new:
        for key in word_hits(automaton, normalize_text(p.content)):
            counts[key] += 1
            hits[key].add(p.id)
    fresh -= common
    wanted = set(hits) | fresh
    if wanted:
        scan = _automaton(wanted)
        for title, text, pid in stored.con.execute(
            "SELECT title, text, id FROM passages ORDER BY ord"
        ):
            for key in word_hits(scan, normalize_text(content_of(title, text))):
                counts[key] += 1
                if key in fresh:
                    hits[key].add(pid)
    for key, pids in hits.items():
        if counts[key] >= settings.theta:
            continue
        for eid in surface_entities[key]:
            links[eid] |= pids
    return links, common
