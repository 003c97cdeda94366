"""Models of the HiGra graph and of the raw extractions it is built from.

Two layers:

- what an extractor returns for one passage (`Extraction`): `Mention`s (an entity as one passage
  names it, with a mention id ``<passage id>#m<k>``), `RawRelation`s between mentions and
  `RawFact`s (n-ary facts over mentions). These are slotted dataclasses, not pydantic models:
  a build reads every one of them (about 20 mentions per passage), and a pydantic instance's
  field dict and fields-set would make them several times as large;
- the aligned graph (`Entity`, `Relation`, `HyperEdge`, `Topic`): every entity keeps the mention
  ids and passage ids it was merged from (its provenance).

Hyperedges are linearised for an LLM as G-RAGent §2.1 does:
``HyperEdge_j: <relation> involves [name_1, ..., name_k]`` (`linearise_hyperedge`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

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


@dataclass(slots=True, kw_only=True)
class Mention:
    """An entity as one passage names it (before alignment).

    `id`: the mention id, ``<passage id>#m<k>``. `sentence`: the sentence index in the
    passage, -1 if unknown. `start` / `end`: the name's span in `Passage.content` (characters,
    end exclusive), -1 if unknown; used while the passage is encoded (contextual alignment
    vectors), not stored."""

    id: str
    passage_id: str
    name: str
    aliases: list[str] = field(default_factory=list)
    description: str = ""
    types: list[str] = field(default_factory=list)
    sentence: int = -1
    start: int = -1
    end: int = -1


@dataclass(slots=True, kw_only=True)
class RawRelation:
    """A relation between two mentions of one passage (`source`: the subject's mention id,
    `target`: the object's)."""

    passage_id: str
    source: str
    label: str
    target: str
    sentence: int = -1


@dataclass(slots=True, kw_only=True)
class RawFact:
    """An n-ary fact of one passage: a relation text over the mentions it involves (`id`:
    ``<passage id>#f<k>``; `mentions`: mention ids, in order of appearance)."""

    id: str
    passage_id: str
    relation: str
    mentions: list[str]
    sentence: int = -1


@dataclass(slots=True, kw_only=True)
class Extraction:
    """Everything an extractor found in one passage."""

    passage_id: str
    mentions: list[Mention] = field(default_factory=list)
    relations: list[RawRelation] = field(default_factory=list)
    facts: list[RawFact] = field(default_factory=list)


# -- the aligned graph ----------------------------------------------------------------------------

_Model = TypeVar("_Model", bound=BaseModel)
_FIELDS_SET: dict[type[BaseModel], set[str]] = {}


def graph_record(cls: type[_Model], **values: Any) -> _Model:
    """``cls(**values)`` for the graph's own records (entities, relations, hyperedges made by a
    build or read from a store), whose values already have the fields' types: made without
    validation, every instance of a class sharing one fields-set (these models are frozen, so
    it never changes; `model_copy` copies it before an update): validation is time, and the
    validated instance's own fields-set is memory, for every record a build or a store read
    makes."""
    fields = _FIELDS_SET.get(cls)
    if fields is None:
        fields = _FIELDS_SET[cls] = set(cls.model_fields)
    return cls.model_construct(_fields_set=fields, **values)


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
    mention_ids: Annotated[list[str], PlainSerializer(list, return_type=list[str])] = Field(
        default_factory=list,
        description="The source mentions merged into this entity, sorted. A build's entities "
        "hold a read-only view of alignment's ids here (`id_columns.IdList`), dumped as a "
        "list.",
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
