"""The configurations under evaluation: a topology, a retriever, a model and settings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graphseek.evaluation.records import jsonable

__all__ = ["EvalConfig", "baseline_configs"]


class EvalConfig(BaseModel):
    """One system configuration under evaluation: a topology, a retriever, a model, settings.

    `context` holds extra settings passed to `ask(..., **context)` (top_k, max_turns, agents,
    mode, ...). `cache` is the SQLite LLM response cache path (the runner fills it in).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    topology: str = "naive"
    retriever: str = "hybrid"
    llm: Any = "offline"
    context: dict[str, Any] = Field(default_factory=dict)
    cache: str | None = None

    def spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topology": self.topology,
            "retriever": self.retriever,
            "llm": self.llm if isinstance(self.llm, str | dict | None) else repr(self.llm),
            "context": jsonable(self.context),
        }


def baseline_configs(llm: Any = "offline") -> list[EvalConfig]:
    """The reference rows every report can include: `naive` with bm25, dense and hybrid."""
    return [
        EvalConfig(name=f"naive-{r}", topology="naive", retriever=r, llm=llm)
        for r in ("bm25", "dense", "hybrid")
    ]
