"""The extractor and coreference protocols, and the identity coreferencer.

An extractor turns passages into one `Extraction` each (same order, same passage ids). Three ship
with graphseek: `OfflineExtractor` (spaCy, no LLM), `LLMExtractor` (HiGra schema through
structured output) and `OpenIEImporter` (HippoRAG's OpenIE result files).

A coreferencer rewrites passages before extraction (HiGra §3.1 forms P' from P). The default is
`IdentityCoreferencer`. HiGra uses fastcoref, which downloads its model from the Hugging Face hub
at first use, so it cannot run offline here; `RuleCoreferencer`
(graphseek.knowledge.graph.extract.coref) is a small rule-based pronoun resolver instead.
`OfflineExtractor` resolves pronouns on its own parse (no second spaCy pass), so it needs no
coreferencer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.passages import Passage


@runtime_checkable
class Extractor(Protocol):
    """Turns passages into extractions: ``extract(passages)[i].passage_id == passages[i].id``."""

    def extract(self, passages: Sequence[Passage]) -> list[Extraction]: ...


class ExtractionSink(Protocol):
    """Where an extractor that streams (``extract_to(passages, sink)``, as `OfflineExtractor`
    has) puts its extractions, in order: a list, or a build's
    `graphseek.knowledge.graph.memory.spool.ExtractionSpool`."""

    def extend(self, extractions: Iterable[Extraction], /) -> None: ...


@runtime_checkable
class Coreferencer(Protocol):
    """Rewrites passages so that pronouns name their antecedents (ids and titles unchanged)."""

    def resolve(self, passages: Sequence[Passage]) -> list[Passage]: ...


class IdentityCoreferencer:
    """The default coreferencer: passages pass through unchanged."""

    def resolve(self, passages: Sequence[Passage]) -> list[Passage]:
        return list(passages)
