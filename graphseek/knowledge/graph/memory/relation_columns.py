"""A build's relations as columns: a `Sequence[Relation]` sorted by relation id.

A build holds every relation of the graph from linking to the store write (similarity edges,
co-occurrences and extracted relations, several a passage). As `Relation` models, even made
without validation (`graph_record`), each would cost hundreds of bytes beside its id string and
passage list. `RelationColumns` keeps the ids (ASCII as `relation_id` makes them: one array of
bytes, `AsciiIds`, 14 bytes an id), an int32 code for
each end, label and passage into that field's distinct values, the weights as float64 and the
kinds as int8: 21 bytes a relation and 4 a supporting passage. Item k is made as a `Relation`
when it is read; the store write and the adjacency matrix read the columns directly
(`rows`, `passage_rows`, `endpoints`). Written here for the reasons `mention_columns` gives.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, get_args

import numpy as np

from graphseek.knowledge.graph.memory.id_columns import AsciiIds
from graphseek.knowledge.graph.memory.mention_columns import Distinct
from graphseek.knowledge.graph.memory.read_sequence import ReadSequence
from graphseek.knowledge.graph.models import Relation, RelationKind, graph_record

KINDS: tuple[str, ...] = get_args(RelationKind)
"""The relation kinds, by their int8 code."""


class RelationColumns(ReadSequence[Relation]):
    """Relations sorted by id (stably: relations of one id keep the order they were added
    in), held as columns. Build with `RelationBuilder`."""

    ITEM = "relation"

    def __init__(
        self,
        ids: Sequence[str],
        source: np.ndarray,
        target: np.ndarray,
        nodes: list[str],
        label: np.ndarray,
        labels: list[str],
        weight: np.ndarray,
        kind: np.ndarray,
        offsets: np.ndarray,
        passage: np.ndarray,
        passages: list[str],
    ) -> None:
        self.ids = ids
        self.source = source
        self.target = target
        self.nodes = nodes
        """The entity ids `source` and `target` code."""
        self.label = label
        self.labels = labels
        self.weight = weight
        self.kind = kind
        self.offsets = offsets
        """Relation k's passages are ``passage[offsets[k]:offsets[k + 1]]``."""
        self.passage = passage
        self.passages = passages
        """The passage ids `passage` codes."""

    def __len__(self) -> int:
        return len(self.ids)

    def _item(self, k: int) -> Relation:
        lo, hi = int(self.offsets[k]), int(self.offsets[k + 1])
        return graph_record(
            Relation,
            id=self.ids[k],
            source=self.nodes[self.source[k]],
            label=self.labels[self.label[k]],
            target=self.nodes[self.target[k]],
            passage_ids=[self.passages[p] for p in self.passage[lo:hi].tolist()],
            weight=float(self.weight[k]),
            kind=KINDS[self.kind[k]],
        )

    def kind_counts(self) -> dict[str, int]:
        """How many relations of each kind there are, in the order kinds first occur."""
        counts: dict[str, int] = {}
        for code in self.kind.tolist():
            name = KINDS[code]
            counts[name] = counts.get(name, 0) + 1
        return counts

    def rows(self, start: int = 0) -> Iterator[tuple[Any, ...]]:
        """The store's `relations` rows: (ord from `start`, id, source, label, target, weight,
        kind)."""
        nodes, labels = self.nodes, self.labels
        for n, (rid, s, lab, t, w, kind) in enumerate(
            zip(
                self.ids,
                self.source.tolist(),
                self.label.tolist(),
                self.target.tolist(),
                self.weight.tolist(),
                self.kind.tolist(),
                strict=True,
            )
        ):
            yield start + n, rid, nodes[s], labels[lab], nodes[t], w, KINDS[kind]

    def passage_rows(self) -> Iterator[tuple[str, str]]:
        """The store's `relation_passages` rows: (relation id, passage id), in relation
        order, each relation's passages in their order."""
        bounds = self.offsets.tolist()
        codes = self.passage.tolist()
        passages = self.passages
        for k, rid in enumerate(self.ids):
            for p in codes[bounds[k] : bounds[k + 1]]:
                yield rid, passages[p]

    def endpoints(self, positions: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """Each relation's source and target as positions in `positions` (an entity id's
        position; -1 for an id it does not have)."""
        at = np.fromiter(
            (positions.get(node, -1) for node in self.nodes), dtype=np.int64, count=len(self.nodes)
        )
        return at[self.source], at[self.target]


class RelationBuilder:
    """Relations added part by part (each part's objects can be freed once added), then
    `finish`ed into `RelationColumns` sorted by id."""

    def __init__(self) -> None:
        self._finished = False
        self.ids: list[str] = []
        self._source = array("i")
        self._target = array("i")
        self._label = array("i")
        self._weight = array("d")
        self._kind = array("b")
        self._offsets = array("q", [0])
        self._passage = array("i")
        self._nodes = Distinct[str]()
        self._labels = Distinct[str]()
        self._passages = Distinct[str]()
        self._kinds = {name: k for k, name in enumerate(KINDS)}

    def add(self, relations: Iterable[Relation]) -> None:
        self._check()
        nodes, labels, passages = self._nodes.code, self._labels.code, self._passages.code
        for r in relations:
            self.ids.append(r.id)
            self._source.append(nodes(r.source))
            self._target.append(nodes(r.target))
            self._label.append(labels(r.label))
            self._weight.append(r.weight)
            self._kind.append(self._kinds[r.kind])
            self._passage.extend(passages(p) for p in r.passage_ids)
            self._offsets.append(len(self._passage))

    def finish(self) -> RelationColumns:
        """The relations added, sorted by id (a stable sort, as `list.sort` would). A builder
        is finished once."""
        self._check()
        ids = self.ids
        order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
        offsets = np.frombuffer(self._offsets, dtype=np.int64)
        passage = np.frombuffer(self._passage, dtype=np.int32)
        counts = np.diff(offsets)[order]
        new_offsets = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(counts, out=new_offsets[1:])
        # each relation's passage codes, in the new order: start of its run, plus 0..count-1
        starts = np.repeat(offsets[:-1][order] - new_offsets[:-1], counts)
        taken = passage[np.arange(int(new_offsets[-1]), dtype=np.int64) + starts]
        columns = RelationColumns(
            ids=AsciiIds.of([ids[k] for k in order.tolist()]),
            source=np.frombuffer(self._source, dtype=np.int32)[order],
            target=np.frombuffer(self._target, dtype=np.int32)[order],
            nodes=self._nodes.values,
            label=np.frombuffer(self._label, dtype=np.int32)[order],
            labels=self._labels.values,
            weight=np.frombuffer(self._weight, dtype=np.float64)[order],
            kind=np.frombuffer(self._kind, dtype=np.int8)[order],
            offsets=new_offsets,
            passage=taken.astype(np.int32, copy=False),
            passages=self._passages.values,
        )
        # the columns are copies: free what was added
        self._finished = True
        self.ids = []
        self._source, self._target, self._label = array("i"), array("i"), array("i")
        self._weight, self._kind, self._offsets = array("d"), array("b"), array("q")
        self._passage = array("i")
        return columns

    def _check(self) -> None:
        if self._finished:
            raise RuntimeError("this RelationBuilder is finished; start a new one")
