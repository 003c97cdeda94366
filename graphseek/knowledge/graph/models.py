"""Pydantic models of the HiGra graph and of the raw extractions it is built from.

Two layers:

- what an extractor returns for one passage (`Extraction`): `Mention`s (an entity as one passage
  names it, with a mention id ``<passage id>#m<k>``), `RawRelation`s between mentions and
  `RawFact`s (n-ary facts over mentions);
- the aligned graph (`Entity`, `Relation`, `HyperEdge`, `Topic`): every entity keeps the mention
  ids and passage ids it was merged from (its provenance).

Hyperedges are linearised for an LLM as G-RAGent §2.1 does:
``HyperEdge_j: <relation> involves [name_1, ..., name_k]`` (`linearise_hyperedge`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Generic entity type of noun-chunk mentions (concepts, unnamed things).
CONCEPT = "CONCEPT"
#: Type of mentions whose extractor gives no type (e.g. HippoRAG's OpenIE entities).
UNTYPED = "ENTITY"

RelationKind = Literal["extracted", "cooccurrence", "similar", "predicted"]
"""Where an entity-entity edge comes from: an extracted relation (Phase 1), co-occurrence in a
sentence or passage (offline Phase 3), similarity inside an embedding cluster without a merge
(offline Phase 3) or an LLM prediction inside a cluster (Phase 3)."""

LinkKind = Literal["mention", "match"]
"""How an entity is linked to a passage: extracted from it, or found by the name matcher
(Phase 4)."""


def mention_id(passage_id: str, k: int) -> str:
    """Id of the `k`-th mention extracted from a passage."""
    return f"{passage_id}#m{k}"


def fact_id(passage_id: str, k: int) -> str:
    """Id of the `k`-th fact extracted from a passage."""
    return f"{passage_id}#f{k}"


# -- raw extraction -------------------------------------------------------------------------------


class Mention(BaseModel):
    """An entity as one passage names it (before alignment)."""

    id: str = Field(description="Mention id, `<passage id>#m<k>`.")
    passage_id: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    types: list[str] = Field(default_factory=list)
    sentence: int = Field(default=-1, description="Sentence index in the passage, -1 if unknown.")
    start: int = Field(
        default=-1,
        description="Start of the name in `Passage.content` (characters), -1 if unknown. "
        "Used while the passage is encoded (contextual alignment vectors); not stored.",
    )
    end: int = Field(default=-1, description="End of that span (exclusive), -1 if unknown.")


class RawRelation(BaseModel):
    """A relation between two mentions of one passage."""

    passage_id: str
    source: str = Field(description="Mention id of the subject.")
    label: str
    target: str = Field(description="Mention id of the object.")
    sentence: int = -1


class RawFact(BaseModel):
    """An n-ary fact of one passage: a relation text over the mentions it involves."""

    id: str = Field(description="Fact id, `<passage id>#f<k>`.")
    passage_id: str
    relation: str
    mentions: list[str] = Field(description="Mention ids, in order of appearance.")
    sentence: int = -1


class Extraction(BaseModel):
    """Everything an extractor found in one passage."""

    passage_id: str
    mentions: list[Mention] = Field(default_factory=list)
    relations: list[RawRelation] = Field(default_factory=list)
    facts: list[RawFact] = Field(default_factory=list)


# -- the aligned graph ----------------------------------------------------------------------------


class Entity(BaseModel):
    """An aligned entity: HiGra's (id, Name, Aliases, Description, Types) plus provenance."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    types: list[str] = Field(default_factory=list)
    passage_ids: list[str] = Field(
        default_factory=list, description="Passages it was extracted from (mention provenance)."
    )
    mention_ids: list[str] = Field(
        default_factory=list, description="The source mentions merged into this entity."
    )

    @property
    def names(self) -> list[str]:
        """The name followed by the aliases."""
        return [self.name, *self.aliases]


class Relation(BaseModel):
    """A directed, labelled edge between two entities, with the passages that support it."""

    model_config = ConfigDict(frozen=True)

    id: str
    source: str
    label: str
    target: str
    passage_ids: list[str] = Field(default_factory=list)
    weight: float = 1.0
    kind: RelationKind = "extracted"


class HyperEdge(BaseModel):
    """An n-ary fact over entities (G-RAGent's hyperedge), with passage provenance and topic."""

    model_config = ConfigDict(frozen=True)

    id: str
    relation: str
    entity_ids: list[str]
    passage_ids: list[str] = Field(default_factory=list)
    topic_id: str | None = None


class Topic(BaseModel):
    """A cluster of hyperedges, named by its top keywords."""

    model_config = ConfigDict(frozen=True)

    id: str
    label: str
    keywords: list[str] = Field(default_factory=list)
    size: int = 0


class TopicSubgraph(BaseModel):
    """A topic's sub-hypergraph: its hyperedges and the entities they involve."""

    topic: Topic
    hyperedges: list[HyperEdge]
    entities: list[Entity]

    def linearise(self) -> str:
        """The hyperedges as lines of ``HyperEdge_j: <relation> involves [names]``."""
        names = {e.id: e.name for e in self.entities}
        return "\n".join(
            linearise_hyperedge(edge, names, j) for j, edge in enumerate(self.hyperedges, 1)
        )


def linearise_hyperedge(edge: HyperEdge, names: Mapping[str, str], index: int | str) -> str:
    """``HyperEdge_<index>: <relation> involves [name_1, ..., name_k]`` (G-RAGent §2.1)."""
    members = ", ".join(names.get(eid, eid) for eid in edge.entity_ids)
    return f"HyperEdge_{index}: <{edge.relation}> involves [{members}]"


def linearise_hyperedges(edges: Sequence[HyperEdge], names: Mapping[str, str]) -> str:
    """Several hyperedges, numbered from 1, one per line."""
    return "\n".join(linearise_hyperedge(e, names, j) for j, e in enumerate(edges, 1))
