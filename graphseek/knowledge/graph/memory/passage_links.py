"""Entity-passage links (Phase 4's output, the ``entity_passages`` table), as columns.

A build links every entity to the passages that mention it and to those the passage matcher
finds its names in (about twenty a passage), held from linking to the store write. A dict of
dicts, entity id -> passage id -> kind, would cost an entry and its objects per link.
`PassageLinks` keeps an int32 entity number, an int32 passage number and a flag per link, 9
bytes, and the incidence matrix's coordinates are built from them as typed arrays.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

MENTION = "mention"
MATCH = "match"


class PassageLinks:
    """Links between `entity_ids[entity[k]]` and `passage_ids[passage[k]]`, one row per pair;
    `mention[k]`: the entity was extracted from that passage (kind ``"mention"``), else the
    matcher found one of its names there (``"match"``). Rows are in (entity id, passage id)
    order: the order the store writes them in (`of` sorts them)."""

    def __init__(
        self,
        entity_ids: Sequence[str],
        passage_ids: Sequence[str],
        entity: np.ndarray,
        passage: np.ndarray,
        mention: np.ndarray,
    ) -> None:
        self.entity_ids = entity_ids
        self.passage_ids = passage_ids
        self.entity = np.asarray(entity, dtype=np.int32)
        self.passage = np.asarray(passage, dtype=np.int32)
        self.mention = np.asarray(mention, dtype=bool)

    @classmethod
    def of(
        cls,
        entity_ids: Sequence[str],
        passage_ids: Sequence[str],
        mentioned: tuple[np.ndarray, np.ndarray],
        matched: tuple[np.ndarray, np.ndarray],
    ) -> PassageLinks:
        """The links of `mentioned` and `matched`, each a pair of arrays (entity numbers,
        passage numbers), in any order and with repeats: a pair in both is a mention."""
        entity = np.concatenate([np.asarray(x, dtype=np.int64) for x in (mentioned[0], matched[0])])
        passage = np.concatenate(
            [np.asarray(x, dtype=np.int64) for x in (mentioned[1], matched[1])]
        )
        if len(entity) and (entity.min() < 0 or entity.max() >= len(entity_ids)):
            raise ValueError("an entity-passage link names an entity out of range")
        if len(passage) and (passage.min() < 0 or passage.max() >= len(passage_ids)):
            raise ValueError("an entity-passage link names a passage out of range")
        # (entity id, passage id) order: the ranks of the ids as strings
        entity_rank = _ranks(entity_ids)
        passage_rank = _ranks(passage_ids)
        codes = entity_rank[entity] * max(len(passage_ids), 1) + passage_rank[passage]
        _, first = np.unique(codes, return_index=True)  # sorted; a repeat keeps its first row
        return cls(
            entity_ids,
            passage_ids,
            entity[first],
            passage[first],
            first < len(mentioned[0]),
        )

    @classmethod
    def from_mapping(
        cls,
        entity_ids: Sequence[str],
        passage_ids: Sequence[str],
        links: Mapping[str, Mapping[str, str]],
    ) -> PassageLinks:
        """The links of ``entity id -> passage id -> kind`` whose entity and passage are in
        `entity_ids` and `passage_ids` (a store's, read back)."""
        epos = {e: k for k, e in enumerate(entity_ids)}
        ppos = {p: k for k, p in enumerate(passage_ids)}
        rows: dict[bool, tuple[list[int], list[int]]] = {True: ([], []), False: ([], [])}
        for eid, kinds in links.items():
            e = epos.get(eid)
            if e is None:
                continue
            for pid, kind in kinds.items():
                p = ppos.get(pid)
                if p is not None:
                    entities, passages = rows[kind == MENTION]
                    entities.append(e)
                    passages.append(p)
        return cls.of(entity_ids, passage_ids, _arrays(rows[True]), _arrays(rows[False]))

    def __len__(self) -> int:
        return len(self.entity)

    @property
    def matches(self) -> int:
        """How many links the matcher made (kind ``"match"``)."""
        return int(len(self.mention) - np.count_nonzero(self.mention))

    def rows(self) -> Iterator[tuple[str, str, str]]:
        """``(entity id, passage id, kind)`` per link, in order."""
        for e, p, m in zip(
            self.entity.tolist(), self.passage.tolist(), self.mention.tolist(), strict=True
        ):
            yield self.entity_ids[e], self.passage_ids[p], MENTION if m else MATCH


def _ranks(ids: Sequence[str]) -> np.ndarray:
    """Each id's position in `ids` sorted."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[order] = np.arange(len(ids), dtype=np.int64)
    return ranks


def _arrays(columns: tuple[list[int], list[int]]) -> tuple[np.ndarray, np.ndarray]:
    return tuple(np.asarray(c, dtype=np.int64) for c in columns)  # type: ignore[return-value]
