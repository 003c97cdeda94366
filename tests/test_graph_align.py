"""Alignment (HiGra Phase 2): name helpers, exact-match merging, semantic merging offline (real
MiniLM) and with a scripted LLM, provenance and counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from floats import assert_close

from graphseek.knowledge import text
from graphseek.knowledge.graph import Aligner, AlignmentCache, Mention
from graphseek.knowledge.graph.algorithms import candidates
from graphseek.knowledge.graph.algorithms.candidates import radius_pairs
from graphseek.knowledge.graph.algorithms.exact import exact_groups, raw_entity_count
from graphseek.knowledge.graph.algorithms.records import types_compatible
from graphseek.knowledge.graph.memory.id_columns import IdList, MentionIds
from graphseek.knowledge.graph.memory.mention_columns import MentionColumns
from graphseek.knowledge.text import (
    clear_name_caches,
    is_acronym_of,
    names_match,
    normalize_name,
    split_qualifier,
    top_common_words,
)
from graphseek.llm import ScriptedChatModel


def mention(pid: str, k: int, name: str, types: Sequence[str], **kw: object) -> Mention:
    return Mention(id=f"{pid}#m{k}", passage_id=pid, name=name, types=list(types), **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def embed():  # type: ignore[no-untyped-def]
    from graphseek.knowledge.embedder import get_embedder

    return get_embedder().encode


# -- helpers ------------------------------------------------------------------------------------


def test_normalize_name_and_qualifiers() -> None:
    assert normalize_name("The Golden State Warriors'") == "golden state warriors"
    assert normalize_name("U.S.") == "us"
    assert normalize_name("Pelé") == "pele"
    assert split_qualifier("Seven Women (1944 film)") == ("Seven Women", "1944 film")
    assert split_qualifier("Paris") == ("Paris", "")


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Steph Curry", "Stephen Curry", True),
        ("NBA", "National Basketball Association", True),
        ("film", "films", True),
        ("Lothair II", "King Lothair II", True),
        ("John Smith", "Joan Smith", False),
        ("art", "artist", False),
        ("Curry", "Stephen Curry", False),
        ("11 November 875", "12 November 875", False),
    ],
)
def test_names_match(a: str, b: str, same: bool) -> None:
    assert names_match(a, b) is same
    assert names_match(b, a) is same


def test_name_caches_are_emptied_and_refill_to_the_same_answers() -> None:
    pairs = [("NBA", "National Basketball Association"), ("Steph Curry", "Stephen Curry")]
    before = [names_match(a, b) for a, b in pairs] + [normalize_name("The U.S.")]
    cached = (text.normalize_name, text._name_parts, text._acronym_letters, text._initials_forms)
    assert all(f.cache_info().currsize for f in cached)
    clear_name_caches()
    assert [f.cache_info().currsize for f in cached] == [0, 0, 0, 0]
    assert [names_match(a, b) for a, b in pairs] + [normalize_name("The U.S.")] == before
    assert before == [True, True, "us"]


def test_acronyms_and_common_words() -> None:
    assert is_acronym_of("BoA", "Bank of America")
    assert not is_acronym_of("NBA", "Basketball")
    assert top_common_words(["the cat and the dog", "the end"], 1) == {"the"}


def test_types_compatible() -> None:
    assert types_compatible(["PERSON"], ["PERSON", "ARTIST"])
    assert types_compatible(["GPE"], ["LOC"])  # one NER family
    assert types_compatible(["CONCEPT"], ["ORG"])  # generic side
    assert not types_compatible(["CITY"], ["STATE"])
    assert not types_compatible(["PERSON"], ["ORG"])


# -- exact merging ------------------------------------------------------------------------------


def test_exact_merge_needs_a_shared_key_and_type() -> None:
    mentions = [
        mention("p1", 0, "Stephen Curry", ["PERSON"]),
        mention("p2", 0, "Curry", ["PERSON"], aliases=["Stephen Curry"]),
        mention("p3", 0, "Wardell Curry", ["PERSON"], aliases=["Curry"]),  # joins via "curry"
        mention("p4", 0, "Stephen Curry", ["ORG"]),  # same name, no shared type
        mention("p5", 0, "Paris", ["GPE"]),
        mention("p5", 1, "Paris", ["ORG"]),  # same passage, same name: one entity
        mention("p6", 0, "Paris", ["GPE"]),  # joins the p5 entity (bucketed as GPE)
        mention("p7", 0, "Paris", ["ORG"]),  # does not: no chain from GPE to every ORG
    ]
    assert exact_groups(mentions) == [[0, 1, 2], [3], [4, 5, 6], [7]]


def _reference_exact_groups(mentions: Sequence[Mention]) -> list[list[int]]:
    """The exact-match rule stated pair by pair and closed transitively: two mentions of one
    passage sharing a key are one; two passage groups sharing a key and one of their bucket
    types are one (the whole corpus's keys held, every pair compared)."""
    from graphseek.knowledge.graph.algorithms.exact import UnionFind, _bucket_types

    keys = [{normalize_name(s) for s in (m.name, *m.aliases)} - {""} for m in mentions]
    n = len(mentions)
    local = UnionFind(n)
    for i in range(n):
        for j in range(i + 1, n):
            if mentions[i].passage_id == mentions[j].passage_id and keys[i] & keys[j]:
                local.union(i, j)
    groups = local.groups()
    buckets = [
        {
            (k, t)
            for k in set().union(*(keys[i] for i in g))
            for t in _bucket_types([mentions[i] for i in g])
        }
        for g in groups
    ]
    uf = UnionFind(n)
    for g in groups:
        for i in g[1:]:
            uf.union(g[0], i)
    for a in range(len(groups)):
        for b in range(a + 1, len(groups)):
            if buckets[a] & buckets[b]:
                uf.union(groups[a][0], groups[b][0])
    return uf.groups()


@pytest.mark.parametrize("seed", range(6))
def test_exact_groups_agree_with_the_rule_stated_pair_by_pair(seed: int) -> None:
    rng = np.random.default_rng(seed)
    names = ["Paris", "paris", "Akron", "Curry", "Stephen Curry", "GSW", "the Warriors"]
    names += [f"Place {k}" for k in range(30)] + [""]
    types = [["GPE"], ["ORG"], ["PERSON"], ["CONCEPT"], ["ENTITY"], [], ["GPE", "ORG"]]
    types += [["ORG", "GPE"], ["GPE", "GPE"]]  # type lists that are one set
    mentions = []
    for k in range(int(rng.integers(1, 160))):
        passage = f"p{int(rng.integers(0, 30))}"
        aliases = [names[int(a)] for a in rng.integers(0, len(names), int(rng.integers(0, 2)))]
        mentions.append(
            mention(
                passage,
                k,
                names[int(rng.integers(0, len(names) - 1))],
                types[int(rng.integers(0, len(types)))],
                aliases=aliases,
            )
        )
    mentions.sort(key=lambda m: m.id)
    assert exact_groups(mentions) == _reference_exact_groups(mentions)
    assert exact_groups([]) == []
    # alignment's columns (their passage codes number passages in another order) agree
    columns = MentionColumns.of(reversed(mentions))
    assert list(columns) == mentions
    assert exact_groups(columns) == exact_groups(mentions)
    count, nodes = raw_entity_count(columns)
    assert (count, nodes.tolist()) == _reference_raw_nodes(mentions)


def _reference_raw_nodes(mentions: Sequence[Mention]) -> tuple[int, list[int]]:
    """Entities before alignment stated directly: one per (normalised name, type set), in order
    of first sight."""
    keys = [(normalize_name(m.name) or m.name.lower(), frozenset(m.types)) for m in mentions]
    number = {k: n for n, k in enumerate(dict.fromkeys(keys))}
    return len(number), [number[k] for k in keys]


def test_alignment_counts_and_provenance(embed) -> None:  # type: ignore[no-untyped-def]
    mentions = [
        mention("p1", 0, "Golden State Warriors", ["ORG"], aliases=["GSW"]),
        mention("p2", 0, "GSW", ["ORG"]),
        mention("p2", 1, "Golden State Warriors", ["ORG"]),
        mention("p3", 0, "Akron", ["GPE"]),
    ]
    result = Aligner(embed=embed).align(mentions)
    assert result.counts["mentions"] == 4
    assert result.counts["before_alignment"] == 3  # distinct (name, types)
    assert result.counts["after_exact"] == 2
    assert result.counts["after_semantic"] == 2
    warriors = next(e for e in result.entities if e.name == "Golden State Warriors")
    assert warriors.aliases == ["GSW"]
    assert warriors.mention_ids == ["p1#m0", "p2#m0", "p2#m1"]
    assert warriors.passage_ids == ["p1", "p2"]
    assert result.mention_entity["p2#m0"] == warriors.id
    # the extractors' ids are held as numbers: the provenance is a view of alignment's ids,
    # dumped as the list it stands for
    assert isinstance(result.mention_entity.ids, MentionIds)
    assert isinstance(warriors.mention_ids, IdList)
    assert warriors.model_dump()["mention_ids"] == ["p1#m0", "p2#m0", "p2#m1"]
    # ids of another form are kept as strings, with the same entities
    renamed = [replace(m, id=m.id.replace("#m", "/")) for m in mentions]
    again = Aligner(embed=embed).align(renamed)
    assert [e.mention_ids for e in again.entities] == [
        [mid.replace("#m", "/") for mid in e.mention_ids] for e in result.entities
    ]
    assert all(isinstance(e.mention_ids, list) for e in again.entities)


# -- semantic merging ---------------------------------------------------------------------------

CURRY_AND_NEW_YORK = [
    mention("p1", 0, "Stephen Curry", ["PERSON"], description="American basketball player"),
    mention("p2", 0, "Steph Curry", ["PERSON"], description="Golden State Warriors guard"),
    mention("p3", 0, "Seth Curry", ["PERSON"], description="American basketball player"),
    mention("p4", 0, "New York", ["CITY"], description="most populous city of the United States"),
    mention("p5", 0, "New York", ["STATE"], description="state in the northeastern United States"),
]


def test_semantic_merge_offline(embed) -> None:  # type: ignore[no-untyped-def]
    result = Aligner(embed=embed).align(CURRY_AND_NEW_YORK)
    names = sorted((e.name, tuple(e.aliases)) for e in result.entities)
    assert names == [
        ("New York", ()),
        ("New York", ()),
        ("Seth Curry", ()),
        ("Stephen Curry", ("Steph Curry",)),
    ]
    new_york = [e for e in result.entities if e.name == "New York"]
    assert {tuple(e.types) for e in new_york} == {("CITY",), ("STATE",)}
    assert len({e.id for e in new_york}) == 2
    assert result.counts["after_exact"] == 5 and result.counts["after_semantic"] == 4
    # the two New Yorks were candidates (same name) and were decided apart
    decided = {
        tuple(
            sorted(
                (
                    result.base_entity[result.base_ids.index(a)],
                    result.base_entity[result.base_ids.index(b)],
                )
            )
        ): m
        for (a, b), (_, m) in result.pairs.items()
    }
    assert tuple(sorted(e.id for e in new_york)) in decided
    assert decided[tuple(sorted(e.id for e in new_york))] is False


def test_generic_mention_matching_incompatible_entities_is_not_merged(embed) -> None:  # type: ignore[no-untyped-def]
    mentions = [
        mention("p1", 0, "Paris", ["GPE"]),
        mention("p2", 0, "Paris", ["PERSON"]),
        mention("p3", 0, "Paris", ["CONCEPT"]),
        mention("p4", 0, "Lothair II", ["PERSON"]),
        mention("p5", 0, "Lothair II", ["CONCEPT"]),
        mention("p6", 0, "film director", ["PERSON"]),  # a tagging error
        mention("p7", 0, "film director", ["CONCEPT"]),  # a lower-case class stays apart
    ]
    result = Aligner(embed=embed).align(mentions)
    assert sorted(e.name for e in result.entities) == [
        "Lothair II",
        "Paris",
        "Paris",
        "Paris",
        "film director",
        "film director",
    ]
    lothair = next(e for e in result.entities if e.name == "Lothair II")
    assert lothair.types == ["PERSON"] and lothair.passage_ids == ["p4", "p5"]


def test_incremental_alignment_matches_full(embed) -> None:  # type: ignore[no-untyped-def]
    aligner = Aligner(embed=embed)
    full = aligner.align(CURRY_AND_NEW_YORK)
    first = aligner.align(CURRY_AND_NEW_YORK[:2])
    cache = AlignmentCache(
        vectors=dict(zip(first.base_texts, first.base_vectors.load(), strict=True)),
        base_ids=set(first.base_ids),
        pairs=dict(first.pairs),
    )
    calls: list[int] = []

    def counting(texts: Sequence[str]) -> np.ndarray:
        calls.append(len(texts))
        return embed(texts)

    again = Aligner(embed=counting).align(CURRY_AND_NEW_YORK, cache)
    assert calls[0] == 3  # only the three new entities are embedded
    # entities hold no floats: compared exactly. Their merges come from a search of the 3 new
    # rows here and of all 5 in `full` (other FAISS calls), but no pair of the fixture is near
    # the candidate threshold (1 - tau = 0.75: the nearest cosine, 0.818, is 0.068 above it)
    assert [e.model_dump() for e in again.entities] == [e.model_dump() for e in full.entities]


def clustered_vectors(clusters: int, size: int, dim: int, seed: int = 0) -> np.ndarray:
    """`clusters` groups of `size` unit vectors, each group's members close to its centre."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim))
    points = np.repeat(centres, size, axis=0) + 0.45 * rng.standard_normal((clusters * size, dim))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    return points.astype(np.float32)


def test_approximate_candidate_search_finds_nearly_every_exact_pair() -> None:
    vectors = clustered_vectors(400, 8, 48)
    queries = list(range(len(vectors)))
    exact = radius_pairs(vectors, queries, 0.25, 5)
    approx = radius_pairs(vectors, queries, 0.25, 5, exact_max=0)
    assert len(exact) > 5_000  # the clusters hold many candidate pairs
    assert len(set(exact) & set(approx)) >= 0.97 * len(exact)
    for (i, j), sim in approx.items():  # what it finds is within the radius, scored exactly
        assert i < j and sim >= 0.75 - 1e-5
        assert sim == pytest.approx(float(vectors[i] @ vectors[j]), abs=1e-5)
    for i in (0, 100, 2_000):  # each has 6-7 neighbours in its cluster: the nearest 5 are kept
        alone = radius_pairs(vectors, [i], 0.25, 5, exact_max=0)
        assert len(alone) == 5 and all(i in pair for pair in alone)
    assert radius_pairs(vectors, queries, 0.25, 5, exact_max=0) == approx  # same input, same pairs


def test_the_hnsw_graph_is_added_a_block_at_a_time_upper_levels_first(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`hnsw_graph` adds `HNSW_ADD_ROWS` rows at a time: the vectors of the upper levels
    first, then the rest in row order; `row_of` maps the graph's vectors back to rows. A
    spilled array gives the graph and the pairs an array gives."""
    import faiss

    from graphseek.knowledge.graph.memory.spool import SpilledArray

    vectors = clustered_vectors(400, 8, 48)
    monkeypatch.setattr(candidates, "HNSW_ADD_ROWS", 500)
    adds: list[int] = []
    index, row_of = candidates.hnsw_graph(vectors)
    assert sorted(row_of.tolist()) == list(range(len(vectors)))
    levels = np.array([index.hnsw.levels.at(k) for k in range(len(vectors))])
    upper = int(np.count_nonzero(levels > 1))
    assert 0 < upper < len(vectors) and (levels[:upper] > 1).all() and (levels[upper:] == 1).all()
    assert row_of[upper:].tolist() == sorted(row_of[upper:].tolist())
    # `_reserve` made room for as many links as FAISS's own level tables ask for
    slots = sum(index.hnsw.cum_nb_neighbors(int(lv)) for lv in levels)
    assert index.hnsw.neighbors.size() == slots
    assert faiss.downcast_index(index.storage).codes.size() == vectors.nbytes
    sims, found = index.search(vectors, 1)  # each vector is its own nearest
    assert (row_of[found[:, 0]] == np.arange(len(vectors))).mean() > 0.99

    real_add = faiss.IndexHNSWFlat.add

    def counting_add(self, x):  # type: ignore[no-untyped-def]
        adds.append(len(x))
        return real_add(self, x)

    monkeypatch.setattr(faiss.IndexHNSWFlat, "add", counting_add)
    queries = list(range(len(vectors)))
    exact = radius_pairs(vectors, queries, 0.25, 5)
    approx = radius_pairs(vectors, queries, 0.25, 5, exact_max=0)
    assert adds == [500] * 6 + [200]  # 3,200 rows
    assert len(set(exact) & set(approx)) >= 0.97 * len(exact)
    assert radius_pairs(SpilledArray(vectors), queries, 0.25, 5, exact_max=0) == approx
    assert radius_pairs(SpilledArray(vectors), queries, 0.25, 5) == exact


def test_a_few_queries_against_many_vectors_stay_exact(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An update of a large store searches its few new entities exactly: comparing them with
    every vector costs less than building an HNSW graph over all of them."""
    vectors = clustered_vectors(400, 8, 48)
    few = [3, 1_000, 2_500]
    exact = radius_pairs(vectors, few, 0.25, 5, exact_max=len(vectors))

    def no_hnsw(*args: object) -> None:
        raise AssertionError("an HNSW graph was built for 3 queries")

    monkeypatch.setattr(candidates, "hnsw_neighbours", no_hnsw)
    assert exact and radius_pairs(vectors, few, 0.25, 5, exact_max=200) == exact  # 3 x 3,200
    with pytest.raises(AssertionError, match="HNSW"):  # every query: 3,200^2 > 200^2 pairs
        radius_pairs(vectors, list(range(len(vectors))), 0.25, 5, exact_max=200)


def test_alignment_above_the_exact_limit_gives_the_same_entities(embed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    exact = Aligner(embed=embed).align(CURRY_AND_NEW_YORK)
    monkeypatch.setattr(candidates, "EXACT_PAIRS_MAX", 0)  # every search goes through HNSW
    approx = Aligner(embed=embed).align(CURRY_AND_NEW_YORK)
    # the same entities (no floats in them) and the same pairs with the same decisions; the
    # pairs' cosines come from two float kernels (HNSW's distance computer, the exact search's
    # BLAS/SIMD one) and differ in the last bit on some CPUs (a CI run: 0.8972986340522766
    # and 0.8972985744476318), so they are compared within a tolerance. No pair is near the
    # candidate threshold (1 - tau = 0.75; the nearest cosine, 0.818, is 0.068 above it)
    assert [e.model_dump() for e in approx.entities] == [e.model_dump() for e in exact.entities]
    assert list(approx.pairs) == list(exact.pairs)
    assert approx.pairs.merged.tolist() == exact.pairs.merged.tolist()
    assert_close(dict(approx.pairs), dict(exact.pairs))


def test_semantic_merge_with_scripted_llm(embed) -> None:  # type: ignore[no-untyped-def]
    prompts: list[str] = []

    def script(messages: list) -> object:
        text = messages[-1].content
        prompts.append(text)
        lines = [line for line in text.splitlines() if line[:1].isdigit()]
        curry = [int(line.split(".")[0]) for line in lines if "name=Stephen Curry" in line]
        steph = [int(line.split(".")[0]) for line in lines if "name=Steph Curry" in line]
        groups = [curry + steph] if curry and steph else []
        return {"reason": "same player", "groups": groups}

    model = ScriptedChatModel(responses=script)
    result = Aligner(embed=embed, model=model, max_concurrency=1).align(CURRY_AND_NEW_YORK)
    names = sorted(e.name for e in result.entities)
    assert names == ["New York", "New York", "Seth Curry", "Stephen Curry"]
    assert any("types=CITY" in p and "types=STATE" in p for p in prompts)  # one cluster asked
    assert result.llm_usage.usage.llm_calls == len(model.calls)


def test_every_row_search_computes_each_pair_once_and_finds_what_per_query_search_finds() -> None:
    """With every row as a query, `_exact_radius` searches each block only against the rows
    from it on and mirrors the hits: the same neighbours as searching every row against all."""
    import faiss

    vectors = clustered_vectors(300, 6, 32, seed=3)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    lims, sims, found = index.range_search(vectors, 0.75 - 1e-6)
    blocks = list(candidates._exact_radius_all(vectors, 0.75 - 1e-6, block=256))
    assert len(blocks) == 2 * 4  # searched 256 rows at a time, yielded as many
    assert np.concatenate([b[0] for b in blocks]).tolist() == list(range(len(vectors)))
    rows = [
        (cand[lims[k] : lims[k + 1]], sim[lims[k] : lims[k + 1]])
        for _, lims, cand, sim in blocks
        for k in range(len(lims) - 1)
    ]
    assert len(rows) == len(vectors)
    for i, (cand, sim) in enumerate(rows):
        lo, hi = lims[i], lims[i + 1]
        expected = dict(zip(found[lo:hi].tolist(), sims[lo:hi].tolist(), strict=True))
        assert sorted(cand.tolist()) == sorted(expected)
        for j, s in zip(cand.tolist(), sim.tolist(), strict=True):
            assert s == pytest.approx(float(expected[j]), abs=1e-5)
    every = list(range(len(vectors)))
    # the pairs themselves (a threshold on cosines the two searches compute apart) exactly:
    # the fixture's cosine nearest the threshold is 3e-6 from it, about 50 float32 steps, and
    # no row has more than the 5 neighbours kept
    assert set(radius_pairs(vectors, every, 0.25, 5)) == set(
        radius_pairs(vectors, every[::-1], 0.25, 5)  # not every row in order: per-query search
    )


def test_groups_hold_lists_of_ints_as_two_arrays() -> None:
    from graphseek.knowledge.graph.algorithms.exact import Groups

    lists = [[0, 3], [1], [2, 4, 5], [6]]
    groups = Groups.of(lists)
    assert len(groups) == 4 and list(groups) == lists and groups == lists
    assert groups[2] == [2, 4, 5] and groups[-1] == [6] and groups[1:3] == [[1], [2, 4, 5]]
    with pytest.raises(IndexError):
        groups[4]
    assert groups.flat.dtype == np.int32 and groups.starts.tolist() == [0, 2, 3, 6, 7]
    reordered = groups.take([2, 0, 3, 1])
    assert list(reordered) == [[2, 4, 5], [0, 3], [6], [1]]
    assert reordered.labels(7).tolist() == [1, 3, 0, 1, 0, 0, 2]
    assert groups != [[0, 3]] and Groups.of([]) == [] and len(Groups.of([]).take([])) == 0


def _radius_pair_rows_per_query(
    vectors: np.ndarray, queries: list[int], tau: float, max_neighbors: int, exact: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rule `radius_pair_rows` keeps, query by query: each query's hits but itself, most
    similar first (ties: the lower row), at most `max_neighbors`; a pair once, with the
    similarity of the first query (in `queries` order) that found it."""
    import faiss

    data = np.ascontiguousarray(vectors, dtype=np.float32)
    threshold = 1.0 - tau - 1e-6
    if exact:
        index = faiss.IndexFlatIP(data.shape[1])
        index.add(data)
        lims, sims, found = index.range_search(data[queries], threshold)
        hits = [
            (found[lims[k] : lims[k + 1]], sims[lims[k] : lims[k + 1]]) for k in range(len(queries))
        ]
    else:
        hits = [
            (cand[lims[k] : lims[k + 1]], sim[lims[k] : lims[k + 1]])
            for _, lims, cand, sim in candidates.hnsw_neighbours(
                data, np.asarray(queries, dtype=np.int64), max_neighbors + 1, threshold
            )
            for k in range(len(lims) - 1)
        ]
    seen: dict[tuple[int, int], float] = {}
    for i, (cand, sim) in zip(queries, hits, strict=True):
        ranked = sorted(zip(cand.tolist(), sim.tolist(), strict=True), key=lambda h: (-h[1], h[0]))
        for j, s in [h for h in ranked if h[0] != i][:max_neighbors]:
            seen.setdefault((min(i, j), max(i, j)), s)
    pairs = sorted(seen)
    return (
        np.array([p[0] for p in pairs], dtype=np.int64),
        np.array([p[1] for p in pairs], dtype=np.int64),
        np.array([seen[p] for p in pairs], dtype=np.float32),
    )


@pytest.mark.parametrize("exact_max", [None, 0])  # exact search, then the HNSW graph
def test_radius_pair_rows_keeps_each_querys_nearest_others(exact_max: int | None) -> None:
    vectors = clustered_vectors(400, 8, 24, seed=5)
    vectors[7] = vectors[3]  # equal similarities: the lower row first
    vectors[11] = vectors[3]
    everyone = list(range(len(vectors)))
    some = [399, 3, 250, 11, 7, 120]  # not in order: the rows of an update's changed entities
    # the rows kept are compared exactly: both sides search with the same FAISS calls (one
    # block of every row, or the same 6 queries; the same HNSW graph), and apart from the
    # copies of row 3 the fixture's nearest tie at a cut is 1.1e-6 (at the cut of 1), its
    # nearest cosine to the threshold 3.9e-5 from it
    for queries in (everyone, some):
        for limit in (1, 3, 30):
            got = candidates.radius_pair_rows(vectors, queries, 0.3, limit, exact_max=exact_max)
            want = _radius_pair_rows_per_query(vectors, queries, 0.3, limit, exact_max is None)
            assert got[0].tolist() == want[0].tolist()
            assert got[1].tolist() == want[1].tolist()
            np.testing.assert_allclose(got[2], want[2], rtol=0, atol=1e-6)
            assert got[2].dtype == np.float32
