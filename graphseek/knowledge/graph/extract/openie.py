"""`OpenIEImporter`: HippoRAG's OpenIE result files as extractions.

The file is ``{"docs": [{"title", "text", "passage", "extracted_entities": [str],
"extracted_triples": [[subject, predicate, object]]}, ...], ...}`` (it may hold a bare ``NaN``,
which Python's json reads). Docs are matched to passages by ``passage_id(title, text)``, so the
order of the corpus does not matter and MuSiQue's repeated titles are no problem.

Every entity and every triple end becomes a mention typed ``ENTITY`` (HippoRAG's NER has no
types); mentions of one passage with the same normalised name are one mention. Each well-formed
triple is a relation and a 2-entity fact (``"subject predicate object"``). A triple that is not a
list of exactly three non-empty values is malformed: it is skipped and counted
(`OpenIEStats.malformed_arity`, `OpenIEStats.malformed_empty`), so
``triples_valid + triples_malformed == triples_total``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from graphseek.errors import CorpusError
from graphseek.knowledge.graph.models import (
    UNTYPED,
    Extraction,
    Mention,
    RawFact,
    RawRelation,
    fact_id,
    mention_id,
)
from graphseek.knowledge.passages import Passage, passage_id
from graphseek.knowledge.text import normalize_name


class OpenIEStats(BaseModel):
    """Counts over the whole file."""

    docs: int = 0
    entities_total: int = 0
    triples_total: int = 0
    triples_valid: int = 0
    triples_malformed: int = 0
    malformed_arity: int = 0
    malformed_empty: int = 0


def _clean(value: Any) -> str:
    if value is None or isinstance(value, bool | dict | list):
        return ""
    if isinstance(value, float) and value != value:  # NaN
        return ""
    return " ".join(str(value).split())


def _triple(raw: Any) -> tuple[str, str, str] | str:
    """The cleaned triple, or why it is malformed ("arity" / "empty")."""
    if not isinstance(raw, list | tuple) or len(raw) != 3:
        return "arity"
    s, p, o = (_clean(v) for v in raw)
    if not s or not p or not o:
        return "empty"
    return s, p, o


class OpenIEImporter:
    """Reads a HippoRAG OpenIE file; an `Extractor` over the passages it covers."""

    def __init__(self, path: str | os.PathLike[str], *, source: str = "") -> None:
        self.path = Path(path)
        try:
            with self.path.open(encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError as exc:
            raise CorpusError(f"OpenIE file not found: {self.path}") from exc
        except (OSError, ValueError) as exc:
            raise CorpusError(f"cannot read OpenIE file {self.path}: {exc}") from exc
        docs = data.get("docs") if isinstance(data, dict) else None
        if not isinstance(docs, list):
            raise CorpusError(f"{self.path} has no 'docs' list; is it a HippoRAG OpenIE file?")
        self.source = source or self.path.name
        self.docs: list[dict[str, Any]] = docs
        self.stats = OpenIEStats(docs=len(docs))
        self._by_id: dict[str, Extraction] = {}
        self._passages: list[Passage] = []
        for n, doc in enumerate(docs):
            if not isinstance(doc, dict) or "text" not in doc:
                raise CorpusError(f"{self.path}: docs[{n}] has no 'text'")
            passage = Passage.from_title_text(
                _clean_title(doc.get("title")), str(doc["text"]), source=self.source
            )
            self._passages.append(passage)
            extraction = self._convert(passage.id, doc)
            self._by_id.setdefault(passage.id, extraction)
            # the corpus loader strips titles and texts; accept those ids too
            stripped = passage_id(passage.title.strip(), passage.text.strip())
            if stripped != passage.id and stripped not in self._by_id:
                self._by_id[stripped] = extraction

    def passages(self) -> list[Passage]:
        """The docs as passages, in file order (ids match `passage_id(title, text)`)."""
        return list(self._passages)

    def _convert(self, pid: str, doc: dict[str, Any]) -> Extraction:
        mentions: list[Mention] = []
        index: dict[str, str] = {}

        def mention(name: str) -> str:
            key = normalize_name(name) or name.lower()
            mid = index.get(key)
            if mid is None:
                mid = index[key] = mention_id(pid, len(mentions))
                mentions.append(Mention(id=mid, passage_id=pid, name=name, types=[UNTYPED]))
            return mid

        entities = doc.get("extracted_entities") or []
        self.stats.entities_total += len(entities)
        for entity in entities:
            name = _clean(entity)
            if name:
                mention(name)
        relations: list[RawRelation] = []
        facts: list[RawFact] = []
        for raw in doc.get("extracted_triples") or []:
            self.stats.triples_total += 1
            triple = _triple(raw)
            if isinstance(triple, str):
                self.stats.triples_malformed += 1
                if triple == "arity":
                    self.stats.malformed_arity += 1
                else:
                    self.stats.malformed_empty += 1
                continue
            self.stats.triples_valid += 1
            s, p, o = triple
            source, target = mention(s), mention(o)
            relations.append(RawRelation(passage_id=pid, source=source, label=p, target=target))
            members = [source] if source == target else [source, target]
            facts.append(
                RawFact(
                    id=fact_id(pid, len(facts)),
                    passage_id=pid,
                    relation=f"{s} {p} {o}",
                    mentions=members,
                )
            )
        return Extraction(passage_id=pid, mentions=mentions, relations=relations, facts=facts)

    def extract(self, passages: Sequence[Passage]) -> list[Extraction]:
        """The extractions of `passages`; a passage the file does not cover gets an empty one.

        Mention, relation and fact ids are rewritten to the given passage's id.
        """
        out: list[Extraction] = []
        for p in passages:
            found = self._by_id.get(p.id) or self._by_id.get(
                passage_id(p.title.strip(), p.text.strip())
            )
            out.append(Extraction(passage_id=p.id) if found is None else _rebase(found, p.id))
        return out

    def covers(self, passage: Passage) -> bool:
        return passage.id in self._by_id


def _rebase(extraction: Extraction, pid: str) -> Extraction:
    old = extraction.passage_id
    if old == pid:
        return extraction

    def fix(value: str) -> str:
        return pid + value[len(old) :] if value.startswith(old + "#") else value

    return Extraction(
        passage_id=pid,
        mentions=[replace(m, id=fix(m.id), passage_id=pid) for m in extraction.mentions],
        relations=[
            replace(r, source=fix(r.source), target=fix(r.target), passage_id=pid)
            for r in extraction.relations
        ],
        facts=[
            replace(f, id=fix(f.id), passage_id=pid, mentions=[fix(m) for m in f.mentions])
            for f in extraction.facts
        ],
    )


def _clean_title(value: Any) -> str:
    return "" if value is None else str(value)
