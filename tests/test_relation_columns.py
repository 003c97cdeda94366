"""`RelationColumns`: a build's relations as columns, against the `Relation` objects they hold."""

from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from graphseek.knowledge.graph.memory.id_columns import AsciiIds
from graphseek.knowledge.graph.memory.relation_columns import (
    KINDS,
    RelationBuilder,
    RelationColumns,
)
from graphseek.knowledge.graph.models import Relation
from graphseek.knowledge.graph.store.writer import build_matrices, insert_relations


def _relations(seed: int, n: int) -> list[Relation]:
    rng = random.Random(seed)
    entities = [f"e-{k:03d}" for k in range(12)]
    passages = [f"p{k}" for k in range(9)]
    out = []
    for k in range(n):
        kind = rng.choice(KINDS)
        out.append(
            Relation(
                id=f"r-{rng.randrange(10**6):06d}-{k}",
                source=rng.choice(entities),
                label=rng.choice(["born in", "co-occurs with", "similar to", ""]),
                target=rng.choice([*entities, "e-outside"]),  # an end the matrix lacks
                passage_ids=rng.sample(passages, rng.randrange(4)),  # order kept, maybe none
                weight=rng.choice([1.0, 2.0, round(rng.random(), 6), 0.1 + 0.2]),
                kind=kind,
            )
        )
    return out


def _columns(parts: list[list[Relation]]) -> RelationColumns:
    building = RelationBuilder()
    for part in parts:
        building.add(iter(part))
    return building.finish()


def test_columns_hold_the_relations_sorted_by_id_stably() -> None:
    first, second = _relations(1, 40), _relations(2, 25)
    second[3] = second[3].model_copy(update={"id": first[5].id})  # one id twice: kept in order
    columns = _columns([first, second])
    expected = sorted(first + second, key=lambda r: r.id)
    assert len(columns) == len(expected)
    assert list(columns) == expected
    assert [columns[k] for k in range(len(columns))] == expected
    assert columns[-1] == expected[-1] and columns[2:7] == expected[2:7]
    assert columns.ids == [r.id for r in expected]
    assert isinstance(columns.ids, AsciiIds)  # ASCII ids: one array of bytes
    with pytest.raises(IndexError):
        columns[len(expected)]
    assert columns.kind_counts() == {
        kind: sum(r.kind == kind for r in expected)
        for kind in dict.fromkeys(r.kind for r in expected)
    }
    assert list(columns.kind_counts()) == list(dict.fromkeys(r.kind for r in expected))
    assert list(columns.passage_rows()) == [(r.id, p) for r in expected for p in r.passage_ids]
    empty = RelationBuilder().finish()
    assert len(empty) == 0 and list(empty) == [] and list(empty.passage_rows()) == []
    done = RelationBuilder()
    done.add(first)
    assert len(done.finish()) == len(first)
    for again in (done.finish, lambda: done.add(second)):
        with pytest.raises(RuntimeError, match="finished"):
            again()


def test_the_store_rows_and_the_matrix_are_the_objects_ones() -> None:
    relations = _relations(3, 60)
    columns = _columns([relations[:30], relations[30:]])
    ordered = sorted(relations, key=lambda r: r.id)
    rows = []
    for source in (columns, ordered):
        con = sqlite3.connect(":memory:")
        con.execute("CREATE TABLE relations (o, id, source, label, target, weight, kind)")
        insert_relations(con, source, start=5)
        rows.append(con.execute("SELECT * FROM relations").fetchall())
    assert rows[0] == rows[1] and len(rows[0]) == 60 and rows[0][0][0] == 5
    entities = [f"e-{k:03d}" for k in range(12)]
    got = build_matrices(entities, [], columns, None)[0]
    want = build_matrices(entities, [], ordered, None)[0]
    for a, b in ((got.indptr, want.indptr), (got.indices, want.indices)):
        assert np.array_equal(a, b)
    assert got.data.dtype == want.data.dtype == np.float32
    assert got.data.tobytes() == want.data.tobytes()  # summed in the same order


def reference_similarity_edges(pairs, base_entity, entities, *, max_per_entity):  # type: ignore[no-untyped-def]
    """The rule as `similarity_edges` had it before it read the pairs as columns: each two
    entities' best unmerged pair through a dict, ranked, capped per entity, sorted by id."""
    from collections import Counter

    from graphseek.knowledge.graph.algorithms.link import SIMILAR, relation_id
    from graphseek.knowledge.graph.algorithms.records import VALUE_TYPES

    best: dict[tuple[str, str], float] = {}
    for (a, b), (sim, merged) in pairs.items():
        if merged:
            continue
        ea, eb = base_entity.get(a), base_entity.get(b)
        if ea is None or eb is None or ea == eb:
            continue
        if not VALUE_TYPES.isdisjoint(entities[ea].types) or not VALUE_TYPES.isdisjoint(
            entities[eb].types
        ):
            continue
        key = (ea, eb) if ea < eb else (eb, ea)
        if sim > best.get(key, -1.0):
            best[key] = sim
    per_entity: Counter[str] = Counter()
    out = []
    for (a, b), sim in sorted(best.items(), key=lambda kv: (-kv[1], kv[0])):
        if per_entity[a] >= max_per_entity or per_entity[b] >= max_per_entity:
            continue
        per_entity[a] += 1
        per_entity[b] += 1
        out.append(
            Relation(
                id=relation_id(a, SIMILAR, b),
                source=a,
                label=SIMILAR,
                target=b,
                passage_ids=[],
                weight=round(float(sim), 6),
                kind="similar",
            )
        )
    return sorted(out, key=lambda r: r.id)


@pytest.mark.parametrize("seed", range(6))
def test_similar_relations_are_similarity_edges(seed: int) -> None:
    """The build's column form of the similarity edges gives the mapping form's relations: the
    best pair of each two entities, ranked best first, at most `max_per_entity` an entity,
    none between merged bases, one entity's bases or value-typed entities."""
    from types import SimpleNamespace

    from graphseek.knowledge.graph.algorithms.link import similar_relations, similarity_edges
    from graphseek.knowledge.graph.memory.merge_pairs import MergePairs

    rng = np.random.default_rng(seed)
    base_ids = [f"b-{k:03d}" for k in range(60)]
    entity_ids = [f"e-{k:02d}" for k in range(25)]
    entity_ids += ["e-only-merged"]  # no base of it is in an unmerged pair (see below)
    base_entity = {b: entity_ids[int(rng.integers(25))] for b in base_ids}
    del base_entity[base_ids[7]]  # a base without an entity
    base_entity[base_ids[59]] = "e-only-merged"
    types = {e: ["DATE"] if k % 9 == 4 else ["PERSON"] for k, e in enumerate(entity_ids)}
    entities = {e: SimpleNamespace(types=t) for e, t in types.items()}
    n = 400
    a, b = rng.integers(60, size=n), rng.integers(60, size=n)
    a[b == 59] = 58  # base 59 pairs only with 58, merged
    b[a == 59] = 58
    ok = a != b
    sims = rng.choice([0.71, 0.8, 0.8, 0.9, 0.93], size=n)  # ties: the lower ids first
    merged = (rng.random(n) < 0.2) | (a == 59) | (b == 59)
    pairs = MergePairs.of(base_ids, a[ok], b[ok], sims[ok], merged[ok])
    as_dict = dict(pairs.items())  # a delta add's form
    as_dict[(base_ids[5], base_ids[5])] = (0.99, False)  # a base with itself gives no edge
    for limit in (1, 2, 5):
        want = reference_similarity_edges(pairs, base_entity, entities, max_per_entity=limit)
        got = list(similar_relations(pairs, base_entity, entities, max_per_entity=limit))
        assert len(want) > 0
        assert sorted(got, key=lambda r: r.id) == want
        assert similarity_edges(pairs, base_entity, entities, max_per_entity=limit) == want
        assert similarity_edges(as_dict, base_entity, entities, max_per_entity=limit) == want
    # an entity neither reads (only in merged pairs) may be missing from `entities`
    read = set()
    for (x, y), (_, joined) in pairs.items():
        ex, ey = base_entity.get(x), base_entity.get(y)
        if not joined and ex is not None and ey is not None and ex != ey:
            read |= {ex, ey}
    assert "e-only-merged" not in read
    partial = {e: v for e, v in entities.items() if e in read}
    assert sorted(
        similar_relations(pairs, base_entity, partial, max_per_entity=5), key=lambda r: r.id
    ) == reference_similarity_edges(pairs, base_entity, partial, max_per_entity=5)
