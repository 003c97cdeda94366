"""The `Passage` model: the unit of retrieval and of grounding."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict, Field

from graphseek.errors import CorpusError


def passage_id(title: str, text: str) -> str:
    """A stable id from a passage's title and text (same content, same id, across runs)."""
    digest = hashlib.sha1(f"{title}\x1f{text}".encode()).hexdigest()
    return f"p-{digest[:12]}"


class Passage(BaseModel):
    """One retrievable passage: an id, a title, the text and where it came from."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="Stable passage id, unique within an index.")
    title: str = Field(default="", description="Title of the document the passage belongs to.")
    text: str = Field(description="The passage text.")
    source: str = Field(default="", description="Where it came from: a file path, a dataset name.")

    @classmethod
    def from_title_text(cls, title: str, text: str, source: str = "") -> Passage:
        return cls(id=passage_id(title, text), title=title, text=text, source=source)

    @property
    def content(self) -> str:
        """Title and text together, the string that indexes embed and search."""
        return content_of(self.title, self.text)


EMPTY_CORPUS = "Empty corpus: there are no passages to index."
"""The `CorpusError` message of a build given no passages."""


def check_passage(item: object, k: int) -> Passage:
    """`item` (item `k` of a corpus to index, from 0) if it is a `Passage`; `TypeError`
    naming it otherwise."""
    if not isinstance(item, Passage):
        raise TypeError(f"Index.build expects Passage objects; item {k} is {type(item).__name__}")
    return item


def duplicate_id(pid: str, k: int) -> CorpusError:
    """The error of a corpus whose item `k` repeats the passage id `pid`."""
    return CorpusError(f"Duplicate passage id {pid!r} (item {k}); passage ids must be unique.")


def content_of(title: str, text: str) -> str:
    """`Passage.content` of a title and a text (for rows read without making passages)."""
    return f"{title}\n{text}" if title else text


class Hit(BaseModel):
    """A passage returned by a search, with its score (higher is better) and 1-based rank."""

    model_config = ConfigDict(frozen=True)

    passage: Passage
    score: float
    rank: int = 0
