"""Stage 1, extraction: coreference (optional), then the extractor, one `Extraction` (mentions,
raw relations, n-ary facts) per passage, in the passages' order, spooled to disk as they come
(`graphseek.knowledge.graph.memory`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphseek.knowledge.graph import memory
from graphseek.knowledge.graph.extract.base import Coreferencer, Extractor
from graphseek.knowledge.graph.models import Extraction
from graphseek.knowledge.graph.stages import timed
from graphseek.knowledge.passages import Passage


def model_of(llm: Any, role: str) -> Any:
    """The chat model `llm` gives `role` (``"extractor"``, ``"aligner"``), or None."""
    from graphseek.knowledge.graph.extract.llm import resolve_model

    return resolve_model(llm, role)


def resolve_extractor(
    extractor: Extractor | str | None, llm: Any, show_progress: bool, max_concurrency: int
) -> Extractor:
    """The extractor a build runs: `extractor` itself, or the one it names (``"offline"``,
    ``"llm"``); None picks ``"llm"`` when `llm` gives an extractor model, else ``"offline"``."""
    if extractor is not None and not isinstance(extractor, str):
        if not isinstance(extractor, Extractor):
            raise TypeError(f"{type(extractor).__name__} has no extract(passages) method")
        return extractor
    kind = extractor or ("llm" if model_of(llm, "extractor") is not None else "offline")
    if kind == "offline":
        from graphseek.knowledge.graph.extract.offline import OfflineExtractor

        return OfflineExtractor(show_progress=show_progress)
    if kind == "llm":
        from graphseek.knowledge.graph.extract.llm import LLMExtractor

        return LLMExtractor(llm, max_concurrency=max_concurrency, show_progress=show_progress)
    raise ValueError(f"unknown extractor {kind!r}: use 'offline', 'llm' or an Extractor")


def extract(
    passages: Sequence[Passage],
    extractor: Extractor,
    coreferencer: Coreferencer | None,
    timings: dict[str, Any],
    ahead: memory.RunAhead | None = None,
) -> memory.ExtractionSpool:
    """The extractions of `passages`, spooled to disk as the extractor makes them (one that
    streams, ``extract_to``) or once it returns them. `ahead`: the passage pass's first
    batches, run while the extractor loads its model."""
    inputs: Sequence[Passage] = passages
    if coreferencer is not None:
        with timed(timings, "coreference", len(passages)):
            inputs = coreferencer.resolve(passages)
    with timed(timings, "extract", len(passages)) as recorded:
        if ahead is not None:
            ahead.load_model()
        who = type(extractor).__name__
        spool = memory.ExtractionSpool()
        stream = getattr(extractor, "extract_to", None)
        if inputs and coreferencer is None and callable(stream):
            stream(inputs, spool)
            check_extractions(passages, spool, who)
        elif inputs:
            extractions = extractor.extract(inputs)
            check_extractions(passages, extractions, who)
            if coreferencer is not None:
                # spans point into the resolved text, not the passage: drop those that may
                # have moved
                for passage, resolved, x in zip(passages, inputs, extractions, strict=True):
                    if resolved.text != passage.text:
                        for m in x.mentions:
                            m.start = m.end = -1
            spool.extend(extractions)
        recorded["passages"] = len(passages)
    return spool


def check_extractions(
    passages: Sequence[Passage], extractions: Sequence[Extraction], who: str
) -> None:
    """One extraction per passage, in the passages' order (`who` made them)."""
    if len(extractions) != len(passages):
        raise RuntimeError(
            f"{who} returned {len(extractions)} extractions for {len(passages)} passages"
        )
    k = memory.first_misplaced(passages, extractions)
    if k is not None:
        raise RuntimeError(
            f"{who} returned the extraction of {extractions[k].passage_id} for passage "
            f"{passages[k].id}"
        )
