"""LLM side of graph construction: the HiGra extraction schema, `LLMExtractor`, and the parallel
call helper that alignment and linking share.

Models come from the LLM layer (`graphseek.llm.model_for`), calls go through
`invoke_structured` (validation, retries, token accounting), and responses are cached by the
layer's `SQLiteResponseCache` when one is attached (``cache=<path>`` here, or
``GRAPHSEEK_LLM_CACHE``). Passages are processed in parallel by a thread pool capped at
`max_concurrency` (HiGraAgent App. C uses a parallel limit of 200 against an API), with a tqdm
progress bar.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from graphseek.errors import LLMOutputError
from graphseek.knowledge.graph.extract.prompts import EXTRACTION_PROMPT, EXTRACTION_SYSTEM
from graphseek.knowledge.graph.models import (
    UNTYPED,
    Extraction,
    Mention,
    RawFact,
    RawRelation,
    fact_id,
    mention_id,
)
from graphseek.knowledge.passages import Passage
from graphseek.knowledge.text import normalize_name
from graphseek.state.models import Usage

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


# -- HiGra extraction schema ----------------------------------------------------------------------


class ExtractedEntity(BaseModel):
    """An entity of the passage (HiGra §3.1: id, Name, Aliases, Description, Types)."""

    id: str = Field(description='Short id, unique in this answer: "e1", "e2", ...')
    name: str = Field(description="The most specific full name used in the passage.")
    aliases: list[str] = Field(default_factory=list, description="Other names in the passage.")
    description: str = Field(default="", description="One sentence, from the passage.")
    types: list[str] = Field(default_factory=list, description="E.g. PERSON, CITY, FILM, DATE.")


class ExtractedRelation(BaseModel):
    """A relation stated in the passage between two extracted entities."""

    source: str = Field(description="Id of the source entity.")
    label: str = Field(description='Short lower-case relation label, e.g. "directed by".')
    target: str = Field(description="Id of the target entity.")


class ExtractedFact(BaseModel):
    """An n-ary fact: one statement and every entity it involves."""

    relation: str = Field(description="The fact as a short statement.")
    entities: list[str] = Field(description="Ids of the entities involved.")


class HiGraExtraction(BaseModel):
    """Everything extracted from one passage."""

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)
    facts: list[ExtractedFact] = Field(default_factory=list)


def to_extraction(passage_id: str, result: HiGraExtraction) -> Extraction:
    """Map the LLM's local ids to mention ids; relations and facts naming unknown entities are
    matched by name, else dropped."""
    mentions: list[Mention] = []
    by_id: dict[str, str] = {}
    by_name: dict[str, str] = {}
    for entity in result.entities:
        name = " ".join(entity.name.split())
        if not name:
            continue
        mid = mention_id(passage_id, len(mentions))
        types = [t.strip().upper() for t in entity.types if t.strip()] or [UNTYPED]
        mentions.append(
            Mention(
                id=mid,
                passage_id=passage_id,
                name=name,
                aliases=[a for a in (" ".join(x.split()) for x in entity.aliases) if a],
                description=entity.description.strip(),
                types=list(dict.fromkeys(types)),
            )
        )
        by_id.setdefault(entity.id.strip(), mid)
        for surface in (name, *entity.aliases):
            by_name.setdefault(normalize_name(surface), mid)

    def lookup(ref: str) -> str | None:
        ref = ref.strip()
        return by_id.get(ref) or by_name.get(normalize_name(ref))

    relations: list[RawRelation] = []
    seen: set[tuple[str, str, str]] = set()
    for rel in result.relations:
        source, target, label = lookup(rel.source), lookup(rel.target), rel.label.strip().lower()
        if source is None or target is None or source == target or not label:
            continue
        if (source, label, target) in seen:
            continue
        seen.add((source, label, target))
        relations.append(
            RawRelation(passage_id=passage_id, source=source, label=label, target=target)
        )
    facts: list[RawFact] = []
    for fact in result.facts:
        members = list(dict.fromkeys(m for m in (lookup(r) for r in fact.entities) if m))
        text = " ".join(fact.relation.split())
        if members and text:
            facts.append(
                RawFact(
                    id=fact_id(passage_id, len(facts)),
                    passage_id=passage_id,
                    relation=text,
                    mentions=members,
                )
            )
    return Extraction(passage_id=passage_id, mentions=mentions, relations=relations, facts=facts)


# -- calling ------------------------------------------------------------------------------------


def resolve_model(llm: Any, role: str, cache: str | os.PathLike[str] | None = None) -> Any:
    """The chat model for `role` from an ``llm`` setting (spec, mapping or instance), or None
    for offline; with `cache`, a copy of the model that uses that response cache."""
    if llm is None:
        return None
    from graphseek.llm import model_for

    model = model_for(llm, role)
    if model is not None and cache is not None:
        from graphseek.llm import open_cache

        model = model.model_copy(update={"cache": open_cache(cache)})
    return model


class UsageMeter:
    """Thread-safe sum of `Usage` over many calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage = Usage()
        self.failures = 0

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.usage = self.usage + usage

    def fail(self, usage: Usage | None = None) -> None:
        with self._lock:
            self.failures += 1
            if usage is not None:
                self.usage = self.usage + usage


def parallel_map(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    max_concurrency: int,
    desc: str,
    show_progress: bool,
) -> list[R]:
    """``[fn(x) for x in items]`` on a thread pool of `max_concurrency`, results in input order,
    with a tqdm bar."""
    if not items:
        return []
    workers = max(1, min(max_concurrency, len(items)))
    from graphseek.knowledge.progress import bar as progress_bar

    bar: Any = progress_bar(desc, len(items), show_progress, unit="call")

    def run(item: T) -> R:
        try:
            return fn(item)
        finally:
            if bar is not None:
                bar.update(1)

    try:
        if workers == 1:
            return [run(item) for item in items]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graphseek-llm") as pool:
            return list(pool.map(run, items))
    finally:
        if bar is not None:
            bar.close()


class LLMExtractor:
    """HiGra extraction with a chat model: one structured call per passage, in parallel.

    `llm` is anything `graphseek.llm.model_for` accepts (a spec like ``"openai:gpt-4o-mini"``,
    a mapping with an ``"extractor"`` key, or a chat model such as `ScriptedChatModel`).
    A passage whose reply stays malformed after `max_retries` gets an empty extraction (counted
    in ``meter.failures`` and logged) when ``on_error="skip"``; ``on_error="raise"`` re-raises
    `LLMOutputError`.
    """

    def __init__(
        self,
        llm: Any,
        *,
        max_concurrency: int = 8,
        max_retries: int = 2,
        cache: str | os.PathLike[str] | None = None,
        on_error: str = "skip",
        show_progress: bool = True,
    ) -> None:
        model = resolve_model(llm, "extractor", cache)
        if model is None:
            raise ValueError(
                "LLMExtractor needs a chat model; llm resolved to 'offline' "
                "(use OfflineExtractor for offline extraction)"
            )
        if on_error not in ("skip", "raise"):
            raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
        self.model = model
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.on_error = on_error
        self.show_progress = show_progress
        self.meter = UsageMeter()

    def messages(self, passage: Passage) -> list[tuple[str, str]]:
        return [
            ("system", EXTRACTION_SYSTEM),
            ("human", EXTRACTION_PROMPT.format(title=passage.title, text=passage.text)),
        ]

    def _one(self, passage: Passage) -> Extraction:
        from graphseek.llm import invoke_structured

        try:
            result, usage = invoke_structured(
                self.model,
                HiGraExtraction,
                self.messages(passage),
                max_retries=self.max_retries,
            )
        except LLMOutputError as exc:
            self.meter.fail(getattr(exc, "usage", None))
            if self.on_error == "raise":
                raise
            log.warning("extraction failed for passage %s: %s", passage.id, exc)
            return Extraction(passage_id=passage.id)
        self.meter.add(usage)
        return to_extraction(passage.id, result)

    def extract(self, passages: Sequence[Passage]) -> list[Extraction]:
        return parallel_map(
            self._one,
            list(passages),
            max_concurrency=self.max_concurrency,
            desc="extract (LLM)",
            show_progress=self.show_progress,
        )
