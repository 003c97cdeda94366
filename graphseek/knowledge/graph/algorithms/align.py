"""Phase 2 of HiGra (§3.2): entity alignment, from mentions to entities.

1. **Exact-match merging**: two mentions merge when they share a normalised name or alias *and*
   at least one type (union-find over ``(name key, type)`` buckets, which is exactly the paper's
   pairwise condition closed transitively), or share a name key inside one passage (one sense
   per discourse; NER types of one name often differ between sentences; see `exact_groups`).
   The groups are the *base entities*.
2. **Semantic merging**: base entities are embedded (by default the normalised sum of their
   mentions' contextual vectors from the passage pass,
   `graphseek.knowledge.graph.algorithms.contextual`, an entity without one getting no vector or,
   with `embed_outside`, its record string's; else MiniLM over ``"name; aliases; types"``); every
   pair within cosine distance `tau` of each other (FAISS range search, at most
   `max_neighbors` per entity; above `EXACT_PAIRS_MAX` base entities an HNSW search that
   finds nearly all of them in n log n instead of n^2 work) is a candidate, i.e. the clusters
   are the connected components of the radius graph (DBSCAN with ``min_samples=1``). Merges
   inside a cluster are decided
   - by the LLM (structured output, `MergeGroups`), one call per cluster chunk of at most
     `max_cluster_size` entities, in parallel; or
   - offline, per candidate pair: a name or alias of one matches one of the other
     (`names_match`: variants, acronyms, plurals; rapidfuzz for typos), the types are
     compatible (shared, same NER family, or one side generic ``CONCEPT``/``ENTITY`` with a
     capitalised name), and the descriptions, when both have one, are not unrelated
     (cosine >= `description_min`). A generic entity whose accepted partners have incompatible
     types is ambiguous and merges with none of them.
   Accepted pairs are closed transitively (union-find).

Provenance is kept: every entity lists the mention ids and passage ids it came from.

Incremental use: `AlignmentCache` carries the previous run's base-entity embeddings and pair
decisions. Base entities whose member mentions did not change keep their decisions with each
other; only new or changed base entities are searched and decided. With the offline decision this
gives exactly the entities of a full rebuild (up to `EXACT_PAIRS_MAX` base entities; above it the
approximate search of a rebuild can find a few pairs the update's did not, or the reverse); with
an LLM, clusters touched by new entities are re-asked (answers for unchanged prompts come from
the response cache).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from graphseek.knowledge.background import Background
from graphseek.knowledge.graph.algorithms.candidates import (
    name_pairs,
    radius_pair_rows,
    variant_pairs,
)
from graphseek.knowledge.graph.algorithms.contextual import (
    BASE_ROWS,
    base_vector_blocks,
    base_vectors,
)
from graphseek.knowledge.graph.algorithms.exact import UnionFind, exact_groups, raw_entity_count
from graphseek.knowledge.graph.algorithms.records import (
    GENERIC_TYPES,
    EntityRecord,
    aggregate,
    any_name_match,
    describe,
    generic_may_join,
    types_compatible,
)
from graphseek.knowledge.graph.memory.id_columns import ABSENT
from graphseek.knowledge.graph.memory.mention_columns import mention_columns
from graphseek.knowledge.graph.memory.mention_table import MentionTable
from graphseek.knowledge.graph.memory.merge_pairs import MergePairs
from graphseek.knowledge.graph.memory.model_columns import EntityColumns
from graphseek.knowledge.graph.memory.spool import SpilledArray, stack_rows
from graphseek.knowledge.graph.models import Entity, Mention, graph_record
from graphseek.knowledge.heap import give_back_free_heap
from graphseek.knowledge.text import normalize_name, stable_id

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], np.ndarray]


class MergeGroups(BaseModel):
    """The LLM's merge decision for one cluster."""

    reason: str = Field(default="", description="Why these records are or are not the same.")
    groups: list[list[int]] = Field(
        default_factory=list,
        description="Each group lists the numbers of records that name one referent.",
    )


@dataclass
class AlignmentCache:
    """What a previous alignment leaves for the next: vectors by text, base entity ids, and
    decided candidate pairs ``(base id a, base id b) -> (cosine, merged)`` with a < b."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    base_ids: set[str] = field(default_factory=set)
    pairs: Mapping[tuple[str, str], tuple[float, bool]] = field(default_factory=dict)
    base_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    """Contextual base vectors by base id: a base entity whose id is here has the same
    mentions (the id hashes them), so its row is reused instead of summed again."""


@dataclass
class AlignmentResult:
    entities: EntityColumns
    """Sorted by id."""
    mention_entity: MentionTable[str]
    base_ids: list[str]
    base_texts: list[str]
    base_vectors: SpilledArray
    base_entity: list[str]
    """The final entity id of each base entity."""
    pairs: MergePairs
    mention_base: MentionTable[str]
    counts: dict[str, int]
    raw_nodes: MentionTable[int] | None
    """Each mention's node in the graph before alignment (see `raw_entity_count`); the build
    drops it once read."""
    llm_usage: Any = None


def cached_encode(
    texts: Sequence[str], embed: Embed, cache: MutableMapping[str, np.ndarray]
) -> np.ndarray:
    """Vectors for `texts`, encoding only those not in `cache` (which is updated).

    The cache keeps the new texts' rows as views of the returned array, not of the encoder's
    output, so that output is freed once copied: a build holds each vector once (the graph's
    entity, relation and hyperedge vectors grow with the corpus). Callers must not write into
    the returned array."""
    missing = sorted({t for t in texts if t not in cache})
    if missing and getattr(embed, "per_text", False):
        return _encode_per_text(texts, embed, cache)
    if missing:
        vectors = embed(missing)
        for text, vector in zip(missing, vectors, strict=True):
            cache[text] = np.asarray(vector, dtype=np.float32)
        del vectors
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    out = np.stack([cache[t] for t in texts]).astype(np.float32, copy=False)
    if missing:
        fresh = set(missing)
        for k, text in enumerate(texts):
            if text in fresh:
                cache[text] = out[k]
                fresh.discard(text)
    return out


def _encode_per_text(
    texts: Sequence[str], embed: Any, cache: MutableMapping[str, np.ndarray]
) -> np.ndarray:
    """`cached_encode` with an encoder whose vectors depend on each text alone (``per_text``,
    ``encode_into``): the texts not cached are encoded a chunk at a time into their rows of
    the output, which the cache then views. The same rows as encoding them all at once,
    without the encoder's output and its stacked copy both held (four times the vectors'
    size, with the encoder's own temporaries)."""
    out = np.empty((len(texts), embed.dim), dtype=np.float32)
    first: dict[str, int] = {}
    fresh: list[int] = []
    for k, text in enumerate(texts):
        if text in cache:
            out[k] = cache[text]
        elif text in first:
            continue  # a repeat: copied from its first row below
        else:
            first[text] = k
            fresh.append(k)
    for start in range(0, len(fresh), FRESH_CHUNK):
        rows = fresh[start : start + FRESH_CHUNK]
        block = np.zeros((len(rows), embed.dim), dtype=np.float32)
        embed.encode_into([texts[k] for k in rows], block)
        out[rows] = block
    for k, text in enumerate(texts):
        at = first.get(text)
        if at is not None and at != k:
            out[k] = out[at]
    for text, k in first.items():
        cache[text] = out[k]
    return out


FRESH_CHUNK = 65_536
"""Rows `_encode_per_text` encodes at a time (one block beside the output)."""


def spill_per_text(
    texts: Sequence[str], embed: Any, cache: Mapping[str, np.ndarray]
) -> SpilledArray:
    """The rows `cached_encode` gives `texts` with a ``per_text`` encoder, written to a
    temporary file `SPILL_CHUNK` texts at a time (`SpilledArray.of_blocks`) for vectors only
    the store write reads: `cache` is read, not written, and a text met twice is encoded
    twice, to the same vector. Only one chunk is in memory at a time, not the whole output."""
    if not texts:
        return SpilledArray(np.zeros((0, 0), dtype=np.float32))

    def blocks() -> Iterator[np.ndarray]:
        for start in range(0, len(texts), SPILL_CHUNK):
            chunk = texts[start : start + SPILL_CHUNK]
            block = np.zeros((len(chunk), embed.dim), dtype=np.float32)
            fresh = []
            for k, text in enumerate(chunk):
                vector = cache.get(text)
                if vector is None:
                    fresh.append(k)
                else:
                    block[k] = vector
            if fresh:
                encoded = np.zeros((len(fresh), embed.dim), dtype=np.float32)
                embed.encode_into([chunk[k] for k in fresh], encoded)
                block[fresh] = encoded
            yield block

    return SpilledArray.of_blocks(blocks(), embed.dim)


SPILL_CHUNK = 16_384
"""Texts `spill_per_text` encodes and writes at a time."""


def _kept_and_summed(
    base: Sequence[EntityRecord],
    base_ids: Sequence[str],
    fresh: Sequence[int],
    stored: Mapping[str, np.ndarray],
    mention_vectors: Mapping[str, np.ndarray],
    dim: int,
    missing: list[int],
) -> Iterator[np.ndarray]:
    """The base vectors of an update, `BASE_ROWS` rows at a time: the stored row of each base
    entity in `stored` (read from the store's file), the sum of its mentions' vectors for the
    `fresh` ones (`base_vectors`; those with none are zero and appended to `missing`)."""
    summed, gaps = base_vectors([base[k].mention_ids for k in fresh], mention_vectors, dim)
    missing.extend(fresh[j] for j in gaps)
    row_of = np.full(len(base), -1, dtype=np.int64)
    row_of[np.asarray(fresh, dtype=np.int64)] = np.arange(len(fresh))
    for begin in range(0, len(base), BASE_ROWS):
        end = min(len(base), begin + BASE_ROWS)
        block = np.zeros((end - begin, dim), dtype=np.float32)
        here = row_of[begin:end]
        kept = np.flatnonzero(here < 0)
        if len(kept):
            block[kept] = stack_rows(stored, [base_ids[begin + k] for k in kept.tolist()])
        new = np.flatnonzero(here >= 0)
        block[new] = summed[here[new]]
        yield block


def entity_id_choices(record: EntityRecord) -> tuple[str, str]:
    """An aligned entity's id, and the one it takes when another entity of the build has that
    id already: from its name key and first type, then its name, type and first mention."""
    return (
        stable_id("e", normalize_name(record.name) or record.name, record.types[0]),
        stable_id("e", record.name, record.types[0], record.mention_ids[0]),
    )


def record_entity(record: EntityRecord, eid: str) -> Entity:
    """The entity of an aligned group's record, with the id `eid`."""
    return graph_record(
        Entity,
        id=eid,
        name=record.name,
        aliases=record.aliases,
        description=record.description,
        types=record.types,
        passage_ids=record.passage_ids,
        mention_ids=record.mention_ids,
    )


def ambiguous_generics(base: Sequence[EntityRecord], pairs: MergePairs) -> set[int]:
    """Generic-only (``CONCEPT``/``ENTITY``) base entities (positions in `base`) whose accepted
    partners have incompatible types ("Paris" the concept matching both the city and the
    person): merging them would chain unrelated entities, so none of their merges is applied."""
    partners: dict[int, list[int]] = defaultdict(list)
    for a, b in zip(pairs.a[pairs.merged].tolist(), pairs.b[pairs.merged].tolist(), strict=True):
        partners[a].append(b)
        partners[b].append(a)
    blocked: set[int] = set()
    for k, others in partners.items():
        if not set(base[k].types) <= GENERIC_TYPES:
            continue
        typed = [base[o].types for o in others if not set(base[o].types) <= GENERIC_TYPES]
        if any(not types_compatible(x, y) for n, x in enumerate(typed) for y in typed[n + 1 :]):
            blocked.add(k)
    return blocked


def ambiguous_among(
    records: Sequence[EntityRecord],
    first: Sequence[int],
    second: Sequence[int],
    sims: Sequence[float],
    merged: np.ndarray,
) -> set[int]:
    """`ambiguous_generics` over decided pairs of positions in `records` (`first`, `second`,
    their cosines and decisions): a delta add's new base entities and stored entities."""
    decided = MergePairs.of(
        [f"{k:012d}" for k in range(len(records))],  # sorted, as `MergePairs` needs
        np.asarray(first),
        np.asarray(second),
        np.asarray(sims),
        merged,
    )
    return ambiguous_generics(records, decided)


def clusters_of(pairs: Iterable[tuple[int, int]], max_size: int) -> list[list[int]]:
    """Connected components of the candidate graph, split into chunks of at most `max_size`."""
    pairs = list(pairs)
    nodes = sorted({i for p in pairs for i in p})
    position = {n: k for k, n in enumerate(nodes)}
    uf = UnionFind(len(nodes))
    for a, b in pairs:
        uf.union(position[a], position[b])
    out: list[list[int]] = []
    for group in uf.groups():
        members = [nodes[k] for k in group]
        for start in range(0, len(members), max(2, max_size)):
            chunk = members[start : start + max(2, max_size)]
            if len(chunk) > 1:
                out.append(chunk)
    return out


class Aligner:
    """Runs exact and semantic merging (see the module docstring)."""

    def __init__(
        self,
        *,
        embed: Embed,
        tau: float = 0.25,
        max_neighbors: int = 30,
        description_min: float = 0.2,
        model: Any = None,
        max_cluster_size: int = 12,
        max_concurrency: int = 8,
        max_retries: int = 2,
        show_progress: bool = False,
        embed_outside: bool = False,
    ) -> None:
        """`embed_outside`: with contextual vectors, a base entity with none (all its
        mentions past the encoder's window) gets its record string's vector from `embed`;
        otherwise it has no vector (a zero row), and its merge candidates come by name."""
        if not 0.0 <= tau <= 2.0:
            raise ValueError(f"tau is a cosine distance in [0, 2], got {tau}")
        self.embed = embed
        self.tau = tau
        self.max_neighbors = max_neighbors
        self.description_min = description_min
        self.model = model
        self.max_cluster_size = max_cluster_size
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.show_progress = show_progress
        self.embed_outside = embed_outside

    def align(
        self,
        mentions: Iterable[Mention],
        cache: AlignmentCache | None = None,
        mention_vectors: Mapping[str, np.ndarray] | None = None,
    ) -> AlignmentResult:
        """Exact, then semantic merging of `mentions`. Base entities are compared by the
        vectors of their record strings, or, given `mention_vectors` (contextual vectors by
        mention id, `graphseek.knowledge.graph.algorithms.contextual`), by the normalised sum of
        their mentions' vectors (those with none: see `embed_outside`). `mentions` may be
        `MentionColumns` (a build's: `graphseek.knowledge.graph.stages.align`); other mentions are
        made into columns first."""
        cache = cache or AlignmentCache()
        mentions = mention_columns(mentions)  # sorted by id
        raw_count, raw_nodes = raw_entity_count(mentions)
        groups = exact_groups(mentions)
        base = [aggregate([mentions[i] for i in g], mentions.id_list(g)) for g in groups]
        base_ids = [stable_id("b", *r.mention_ids, length=16) for r in base]
        order = sorted(range(len(base)), key=lambda k: base_ids[k])
        base = [base[k] for k in order]
        base_ids = [base_ids[k] for k in order]
        members = groups.take(order)  # each base entity's mention indices
        del groups, order
        texts = [r.embedding_text() for r in base]
        changed = [k for k, bid in enumerate(base_ids) if bid not in cache.base_ids]

        def by_name() -> set[tuple[int, int]]:
            named = name_pairs(base, changed, self.max_neighbors)
            if mention_vectors is not None:
                named |= variant_pairs(base, changed, self.max_neighbors)
            return named

        # candidates by name (Python) while the base vectors are made and searched (the
        # encoder's and FAISS's threads release the GIL), so the two share the cores
        named_pairs = Background(by_name)
        vectors = self._base_vectors(base, base_ids, texts, cache, mention_vectors)
        # the blocks of mention vectors summed are freed into the C heap, which the radius
        # search's FAISS index (mapped anew) would not reuse
        give_back_free_heap()

        # decisions kept from the previous run: both ends unchanged
        kept = MergePairs.from_mapping(base_ids, cache.pairs)
        first, second, sims = radius_pair_rows(vectors, changed, self.tau, self.max_neighbors)
        n = max(len(base_ids), 1)
        named = np.array(sorted(named_pairs.result()), dtype=np.int64).reshape(-1, 2)
        named = named[~np.isin(named[:, 0] * n + named[:, 1], first * n + second)]
        ends = vectors.take(named.ravel()).reshape(len(named), 2, vectors.shape[1])
        named_sims = [float(a @ b) for a, b in ends]
        del ends
        first = np.concatenate([first, named[:, 0]])
        second = np.concatenate([second, named[:, 1]])
        sims = np.concatenate([sims.astype(np.float64), np.array(named_sims, dtype=np.float64)])
        del named, named_sims
        fresh = ~np.isin(first * n + second, kept.codes)
        first, second, sims = first[fresh], second[fresh], sims[fresh]
        usage = None
        pairs = kept
        if len(first):
            if self.model is None:
                merged = self._decide_offline(first, second, sims, base, cache)
                decided = MergePairs.of(base_ids, first, second, sims, merged)
            else:
                asked = {
                    (base_ids[i], base_ids[j]): sim
                    for i, j, sim in zip(
                        first.tolist(), second.tolist(), sims.tolist(), strict=True
                    )
                }
                position = {bid: k for k, bid in enumerate(base_ids)}
                answered, usage = self._decide_llm(asked, base, position)
                decided = MergePairs.from_mapping(base_ids, answered)
            pairs = decided.join(kept)  # an LLM's answer replaces a kept decision
        del first, second, sims, kept

        blocked = ambiguous_generics(base, pairs) if self.model is None else set()
        uf = UnionFind(len(base))
        joined = pairs.merged.copy()
        if blocked:
            out = np.fromiter(blocked, dtype=np.int64, count=len(blocked))
            joined &= ~np.isin(pairs.a, out) & ~np.isin(pairs.b, out)
        for a, b in zip(pairs.a[joined].tolist(), pairs.b[joined].tolist(), strict=True):
            uf.union(a, b)
        entities = EntityColumns(mentions.ids)
        base_entity = [""] * len(base)
        used: set[str] = set()
        for group in uf.groups():
            if len(group) == 1:  # `aggregate` of one base entity's mentions is its record
                record = base[group[0]]
            else:
                taken = [i for k in group for i in members[k]]
                record = aggregate([mentions[i] for i in taken], mentions.id_list(taken))
            preferred, fallback = entity_id_choices(record)
            eid = fallback if preferred in used else preferred
            used.add(eid)
            for k in group:
                base_entity[k] = eid
            entities.add(eid, record)
        entities.finish()  # sorted by id
        ids = mentions.ids
        mention_base = members.labels(len(mentions))
        del members
        entity_of_base = np.fromiter(
            (entities.position(eid) for eid in base_entity), dtype=np.int32, count=len(base_entity)
        )
        if len(entity_of_base) and entity_of_base.min() == ABSENT:  # every group has an entity
            raise ValueError("a base entity was left without an aligned entity")
        counts = {
            "mentions": len(mentions),
            "before_alignment": raw_count,
            "after_exact": len(base),
            "after_semantic": len(entities),
            "candidate_pairs": len(pairs),
            "merged_pairs": int(np.count_nonzero(pairs.merged)),
        }
        return AlignmentResult(
            entities=entities,
            mention_entity=MentionTable(ids, entity_of_base[mention_base], entities.ids),
            base_ids=base_ids,
            base_texts=texts,
            base_vectors=vectors,
            base_entity=base_entity,
            pairs=pairs,
            mention_base=MentionTable(ids, mention_base, base_ids),
            counts=counts,
            raw_nodes=MentionTable(ids, raw_nodes),
            llm_usage=usage,
        )

    def _base_vectors(
        self,
        base: Sequence[EntityRecord],
        base_ids: Sequence[str],
        texts: list[str],
        cache: AlignmentCache,
        mention_vectors: Mapping[str, np.ndarray] | None,
    ) -> SpilledArray:
        """Each base entity's vector, in a temporary file (the radius search and the store
        write read it a block at a time, so it is not held beside the search's own copy). With
        contextual vectors an unchanged base entity's is the cache's (an update would otherwise
        read every stored mention vector back), the others' are summed from their mentions, a
        block at a time."""
        if not base:  # (one column, as the store's empty file has always had)
            return SpilledArray(np.zeros((0, 1), dtype=np.float32))
        if not mention_vectors:
            return SpilledArray(cached_encode(texts, self.embed, cache.vectors))
        dim = len(next(iter(mention_vectors.values())))
        stored = cache.base_vectors
        fresh = [k for k, bid in enumerate(base_ids) if bid not in stored]
        missing: list[int] = []
        if len(fresh) == len(base):
            members = [r.mention_ids for r in base]
            blocks = base_vector_blocks(members, mention_vectors, dim, missing)
        else:
            blocks = _kept_and_summed(base, base_ids, fresh, stored, mention_vectors, dim, missing)
        vectors = SpilledArray.of_blocks(blocks, dim)
        if missing and self.embed_outside:
            outside = cached_encode([texts[k] for k in missing], self.embed, cache.vectors)
            vectors.put(missing, outside)
        return vectors

    # -- decisions ------------------------------------------------------------------------------

    def _decide_offline(
        self,
        first: np.ndarray,
        second: np.ndarray,
        sims: np.ndarray,
        base: Sequence[EntityRecord],
        cache: AlignmentCache,
    ) -> np.ndarray:
        """Whether each candidate pair (positions `first[k]`, `second[k]` in `base`) merges."""
        decided: list[bool] = []
        need_description: list[int] = []
        for k, (a, b) in enumerate(zip(first.tolist(), second.tolist(), strict=True)):
            ra, rb = base[a], base[b]
            ok = (
                types_compatible(ra.types, rb.types)
                and generic_may_join(ra, rb)
                and any_name_match(ra, rb)
            )
            decided.append(ok)
            if ok and ra.description and rb.description and ra.description != rb.description:
                need_description.append(k)
        out = np.array(decided, dtype=bool)
        if need_description and self.description_min > -1.0:
            pairs = [(int(first[k]), int(second[k])) for k in need_description]
            texts = sorted({base[x].description for pair in pairs for x in pair})
            vecs = cached_encode(texts, self.embed, cache.vectors)
            row = {t: k for k, t in enumerate(texts)}
            for k, (a, b) in zip(need_description, pairs, strict=True):
                va = vecs[row[base[a].description]]
                vb = vecs[row[base[b].description]]
                if float(va @ vb) < self.description_min:
                    out[k] = False
        return out

    def _decide_llm(
        self,
        fresh: dict[tuple[str, str], float],
        base: Sequence[EntityRecord],
        position: dict[str, int],
    ) -> tuple[dict[tuple[str, str], tuple[float, bool]], Any]:
        from graphseek.knowledge.graph.extract.llm import UsageMeter, parallel_map
        from graphseek.knowledge.graph.extract.prompts import MERGE_PROMPT, MERGE_SYSTEM

        index_pairs = [(position[a], position[b]) for a, b in fresh]
        clusters = clusters_of(index_pairs, self.max_cluster_size)
        meter = UsageMeter()

        def ask(cluster: list[int]) -> list[tuple[int, int]]:
            from graphseek.errors import LLMOutputError
            from graphseek.llm import invoke_structured

            records = [base[k] for k in cluster]
            messages = [
                ("system", MERGE_SYSTEM),
                ("human", MERGE_PROMPT.format(entities=describe(records))),
            ]
            try:
                result, usage = invoke_structured(
                    self.model, MergeGroups, messages, max_retries=self.max_retries
                )
            except LLMOutputError as exc:
                meter.fail(getattr(exc, "usage", None))
                log.warning("merge decision failed for a cluster of %d: %s", len(cluster), exc)
                return []
            meter.add(usage)
            merged: list[tuple[int, int]] = []
            for group in result.groups:
                members = [cluster[n - 1] for n in group if 1 <= n <= len(cluster)]
                members = sorted(set(members))
                merged.extend((members[0], other) for other in members[1:])
            return merged

        answers = parallel_map(
            ask,
            clusters,
            max_concurrency=self.max_concurrency,
            desc="align (LLM)",
            show_progress=self.show_progress,
        )
        uf = UnionFind(len(base))
        for merged in answers:
            for a, b in merged:
                uf.union(a, b)
        out: dict[tuple[str, str], tuple[float, bool]] = {}
        for (sa, sb), sim in fresh.items():
            out[(sa, sb)] = (sim, uf.find(position[sa]) == uf.find(position[sb]))
        # merges the LLM made between cluster members that were not candidate pairs
        ids = {k: bid for bid, k in position.items()}
        for merged in answers:
            for i, j in merged:
                key = (ids[i], ids[j]) if ids[i] < ids[j] else (ids[j], ids[i])
                out.setdefault(key, (0.0, True))
        return out, meter
