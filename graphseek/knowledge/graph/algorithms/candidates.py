"""Semantic merging's candidate pairs: base entities near in vector space, or sharing a name.

Near: within cosine distance `tau` (`radius_pairs`: an exact FAISS range search, or above
`EXACT_PAIRS_MAX` base entities an approximate HNSW one). By name: a shared normalised name or
alias (`name_pairs`), or multi-word names that are variants of each other (`variant_pairs`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from graphseek.knowledge.graph.algorithms.records import EntityRecord, any_name_match
from graphseek.knowledge.graph.memory.spool import SpilledArray
from graphseek.knowledge.text import normalize_name

EXACT_PAIRS_MAX = 100_000
"""Up to this many base entities, semantic-merge candidates come from an exact search, which
compares every pair: n^2 work, hours at a million base entities. Above it they come from an
HNSW graph (`hnsw_neighbours`: n log n, most but not all of the exact pairs).
`benchmarks/alignment_scaling.py` compares the two."""
HNSW_LINKS = 32
"""Links per vector of the approximate search's HNSW graph (FAISS `IndexHNSWFlat`)."""
HNSW_BUILD_DEPTH = 40
"""Candidates kept while the HNSW graph is built (``efConstruction``)."""
HNSW_SEARCH_DEPTH = 64
"""Candidates kept per query while it searches (``efSearch``; at least the neighbours asked)."""
HNSW_ADD_ROWS = 16_384
"""Rows added to the HNSW graph at a time: FAISS reads the rows given to one add until that
add ends, so a single add of every row would hold them all beside the graph's own copy."""

Rows = np.ndarray | SpilledArray
"""Vectors searched: an array, or a `SpilledArray` read a block of rows at a time."""


def radius_pairs(
    vectors: Rows,
    queries: Sequence[int],
    tau: float,
    max_neighbors: int,
    *,
    exact_max: int | None = None,
) -> dict[tuple[int, int], float]:
    """Index pairs (i < j) with cosine >= 1 - tau, i or j in `queries`; at most `max_neighbors`
    (the nearest) per query. Exact while it compares at most `exact_max`² pairs (default
    `EXACT_PAIRS_MAX`): every pair of up to `exact_max` vectors, or a few queries against many
    more vectors (an update of a large store, where building an HNSW graph over all of them
    would cost more than the exact search); above, the nearest come from `hnsw_neighbours`
    (approximate: a few pairs are missed). As a dict: `radius_pair_rows`."""
    i, j, sim = radius_pair_rows(vectors, queries, tau, max_neighbors, exact_max=exact_max)
    return dict(zip(zip(i.tolist(), j.tolist(), strict=True), sim.tolist(), strict=True))


def radius_pair_rows(
    vectors: Rows,
    queries: Sequence[int],
    tau: float,
    max_neighbors: int,
    *,
    exact_max: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`radius_pairs` as columns (i < j, cosine), in (i, j) order: a pair found from both ends
    has the cosine of the query that found it first (the two can differ in the last bit)."""
    none = np.zeros(0, dtype=np.int64)
    if len(vectors) < 2 or not len(queries):
        return none, none, np.zeros(0, dtype=np.float32)
    kept = [
        nearest_others(*block, max_neighbors)
        for block in radius_hits(vectors, queries, tau, max_neighbors, exact_max=exact_max)
    ]
    return pairs_once(kept, len(vectors))


def radius_hits(
    data: Rows,
    queries: Sequence[int],
    tau: float,
    max_neighbors: int,
    *,
    exact_max: int | None = None,
) -> Iterator[Hits]:
    """The hits of `radius_pair_rows`' search, a block of queries at a time: every row within
    `tau` (exact), or the `max_neighbors + 1` nearest within it (HNSW; the query itself is
    usually one of them), as `radius_pairs` chooses. The exact search reads `data` whole."""
    q = np.asarray(queries, dtype=np.int64)
    threshold = 1.0 - tau - 1e-6
    limit = EXACT_PAIRS_MAX if exact_max is None else exact_max
    if len(q) * len(data) <= limit * limit:
        return _exact_radius(np.ascontiguousarray(data, dtype=np.float32), q, threshold)
    return hnsw_neighbours(data, q, max_neighbors + 1, threshold)


def pairs_once(
    kept: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query, row, similarity) columns of `kept` (in query order) as pairs i < j of rows
    of `n`, each once, in (i, j) order: a pair found from both ends keeps the first finding."""
    a = np.concatenate([k[0] for k in kept])
    b = np.concatenate([k[1] for k in kept])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    del a, b
    _, first = np.unique(lo * n + hi, return_index=True)
    return lo[first], hi[first], np.concatenate([k[2] for k in kept])[first]


Hits = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""A block of queries' search results: the query rows, offsets into the hits (query k's are
``lims[k]:lims[k + 1]``), the rows found and their similarities."""


def nearest_others(
    queries: np.ndarray, lims: np.ndarray, found: np.ndarray, sims: np.ndarray, limit: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each query's hits other than itself, the `limit` most similar (ties: the lower row),
    as columns (query, row found, similarity) in the order of `queries`: a few arrays per
    block of queries, not three small arrays per query (their overhead adds up over every
    base entity)."""
    counts: np.ndarray = np.diff(np.asarray(lims, dtype=np.int64))
    position = np.repeat(np.arange(len(queries), dtype=np.int64), counts)
    found = np.asarray(found, dtype=np.int64)
    sims = np.asarray(sims, dtype=np.float32)
    order = np.lexsort((found, -sims, position))
    position, found, sims = position[order], found[order], sims[order]
    owner = np.asarray(queries, dtype=np.int64)[position]
    other = found != owner
    position, owner, found, sims = position[other], owner[other], found[other], sims[other]
    index = np.arange(len(position), dtype=np.int64)
    starts = np.ones(len(position), dtype=bool)
    starts[1:] = position[1:] != position[:-1]
    rank = index - np.maximum.accumulate(np.where(starts, index, 0))
    keep = rank < limit
    return owner[keep], found[keep], sims[keep]


def _exact_radius(data: np.ndarray, queries: np.ndarray, threshold: float) -> Iterator[Hits]:
    """Per block of queries, in order: every row with inner product >= `threshold`. Searched
    4,096 queries at a time, so only one block's results are held (every row as a query:
    `_exact_radius_all`)."""
    import faiss

    if len(queries) == len(data) and bool((queries == np.arange(len(data))).all()):
        yield from _exact_radius_all(data, threshold)
        return
    index = faiss.IndexFlatIP(data.shape[1])
    index.add(data)
    for start in range(0, len(queries), 4096):
        ids = queries[start : start + 4096]
        lims, sims, found = index.range_search(data[ids], threshold)
        yield ids, lims, found, sims


def _exact_radius_all(data: np.ndarray, threshold: float, block: int = 4096) -> Iterator[Hits]:
    """`_exact_radius` with every row as a query, each pair's inner product computed once (half
    the work of searching every row against every row): rows ``[s, e)`` are searched against
    rows ``s..`` only, and a hit beyond the block is also a hit of that row's list."""
    import faiss

    n = len(data)
    rows: list[np.ndarray] = []
    cands: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for start in range(0, n, block):
        stop = min(n, start + block)
        index = faiss.IndexFlatIP(data.shape[1])
        index.add(data[start:])
        lims, found_sims, found = index.range_search(data[start:stop], threshold)
        query = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(lims).astype(np.int64))
        found = found.astype(np.int64) + start
        beyond = found >= stop
        rows += [query, found[beyond]]
        cands += [found, query[beyond]]
        sims += [found_sims, found_sims[beyond]]
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")
    row, cand, sim = row[order], np.concatenate(cands)[order], np.concatenate(sims)[order]
    del order
    bounds = np.searchsorted(row, np.arange(n + 1))
    del row
    for start in range(0, n, block):
        stop = min(n, start + block)
        lo, hi = bounds[start], bounds[stop]
        yield (
            np.arange(start, stop, dtype=np.int64),
            bounds[start : stop + 1] - lo,
            cand[lo:hi],
            sim[lo:hi],
        )


def hnsw_neighbours(data: Rows, queries: np.ndarray, k: int, threshold: float) -> Iterator[Hits]:
    """Per block of queries: each query's `k` nearest rows with inner product >= `threshold`,
    from a FAISS HNSW graph over `data` (approximate: a near pair can be missed; the
    similarities of what it finds are exact). Building and searching grow as n log n; the
    rows are read `HNSW_ADD_ROWS` at a time to build it and a block of queries at a time to
    search it (`hnsw_graph`)."""
    index, row_of = hnsw_graph(data)
    index.hnsw.efSearch = max(HNSW_SEARCH_DEPTH, k)
    for start in range(0, len(queries), 4096):
        ids = queries[start : start + 4096]
        sims, found = index.search(_take(data, ids), k)
        keep = (found >= 0) & (sims >= threshold)
        lims = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(keep.sum(axis=1), out=lims[1:])
        yield ids, lims, row_of[found[keep]], sims[keep]


def hnsw_graph(data: Rows) -> tuple[Any, np.ndarray]:
    """A FAISS HNSW graph of the rows of `data`, added `HNSW_ADD_ROWS` at a time, and the row
    of `data` each of its vectors is. Each vector's level is drawn first, as one add of every
    row would draw it, and the vectors of the upper levels are added first, as one add inserts
    them, so the blocks find about the pairs one add's graph finds
    (`benchmarks/radius_search.py --graphs` compares them with the exact pairs)."""
    import faiss

    index = faiss.IndexHNSWFlat(data.shape[1], HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_BUILD_DEPTH
    draw = index.hnsw.random_level  # type: ignore[attr-defined]  # (not in FAISS's stubs)
    levels = np.fromiter((draw() for _ in range(len(data))), dtype=np.int32, count=len(data))
    row_of = np.argsort(-levels, kind="stable")  # upper levels first, then row order
    _reserve(index, levels)
    added_levels = levels[row_of] + 1  # FAISS's form (a level's number + 1), in add order
    for start in range(0, len(data), HNSW_ADD_ROWS):
        added = min(len(data), start + HNSW_ADD_ROWS)
        # the levels of the rows added so far: FAISS takes them instead of drawing its own
        faiss.copy_array_to_vector(added_levels[:added], index.hnsw.levels)
        index.add(_take(data, row_of[start:added]))
    return index, row_of


def _reserve(index: Any, levels: np.ndarray) -> None:
    """Make room in `index` (an empty `IndexHNSWFlat`) for the vectors of `levels` at once:
    each add grows its vectors and links as a `std::vector` grows, to twice their size, with
    the old and the new copies held together while it moves them. A vector keeps its room
    when resized down."""
    import faiss

    storage: Any = faiss.downcast_index(index.storage)  # an IndexFlat (its stubs: an Index)
    storage.codes.resize(len(levels) * storage.code_size)
    storage.codes.resize(0)
    per_level = np.bincount(levels)
    slots = sum(int(n) * index.hnsw.cum_nb_neighbors(int(lv) + 1) for lv, n in enumerate(per_level))
    index.hnsw.neighbors.resize(slots)
    index.hnsw.neighbors.resize(0)


def _take(data: Rows, rows: np.ndarray) -> np.ndarray:
    """Rows `rows` of `data`, contiguous float32."""
    if isinstance(data, SpilledArray):
        return np.ascontiguousarray(data.take(rows), dtype=np.float32)
    return np.ascontiguousarray(data[rows], dtype=np.float32)


def _blocked_pairs(
    keys: Sequence[set[Any]],
    queries: Sequence[int],
    max_group: int,
    accept: Callable[[int, int], bool] | None = None,
) -> set[tuple[int, int]]:
    """Index pairs (i < j) of items sharing a blocking key (`keys[k]`: item k's keys), i or j
    in `queries`, that `accept` (when given) accepts. Keys of more than `max_group` items are
    skipped."""
    by_key: dict[Any, list[int]] = defaultdict(list)
    for k, found in enumerate(keys):
        for key in found:
            by_key[key].append(k)
    out: set[tuple[int, int]] = set()
    for i in queries:
        for key in keys[i]:
            group = by_key[key]
            if len(group) > max_group:
                continue
            for j in group:
                pair = (i, j) if i < j else (j, i)
                if j != i and pair not in out and (accept is None or accept(i, j)):
                    out.add(pair)
    return out


def name_pairs(
    base: Sequence[EntityRecord], queries: Sequence[int], max_group: int
) -> set[tuple[int, int]]:
    """Index pairs (i < j) of base entities sharing a normalised name or alias (their types
    differ, or exact merging would have joined them), i or j in `queries`. Keys shared by more
    than `max_group` entities are skipped."""
    keys = [{normalize_name(n) for n in record.names} - {""} for record in base]
    return _blocked_pairs(keys, queries, max_group)


def variant_pairs(
    base: Sequence[EntityRecord], queries: Sequence[int], max_group: int
) -> set[tuple[int, int]]:
    """Index pairs (i < j) of multi-word base entities whose names are variants of each other
    (`any_name_match`: ``"Steph Curry"``/``"Stephen Curry"``), i or j in `queries`. Candidates
    come from blocks of names with the same word count and the same word at one position;
    blocks of more than `max_group` entities are skipped. Contextual vectors place a name's
    variants apart when their passages differ; this finds the variants record vectors did."""
    keys: list[set[tuple[int, int, str]]] = []
    for record in base:
        found: set[tuple[int, int, str]] = set()
        for name in record.names[:10]:
            words = normalize_name(name).split()
            if len(words) > 1:
                found.update((len(words), p, w) for p, w in enumerate(words) if len(w) >= 3)
        keys.append(found)
    return _blocked_pairs(keys, queries, max_group, lambda i, j: any_name_match(base[i], base[j]))
