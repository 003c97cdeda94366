"""Runtime context: the settings of a run, passed at call time (`graph.invoke(inp, context=...)`).

Budgets are settings here; counters live in the state. Studio sends the context as JSON, so the
index can be named by `index_path` and the model by a spec string.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

RetrieverName = Literal["bm25", "dense", "hybrid", "higra", "progressive"]


@dataclass(frozen=True)
class Context:
    # where to look: an opened `graphseek.Index`, or a path to one
    index: Any = None
    index_path: str | None = None
    # the model: a spec ("offline", "openai:gpt-4o-mini", "scripted"), a mapping role -> spec
    # (key "default" for the rest), or a chat model instance (tests pass a scripted model)
    llm: Any = None
    retriever: RetrieverName = "hybrid"
    top_k: int = 5
    # budgets
    max_turns: int = 6
    max_llm_calls: int = 60
    max_tokens: int = 400_000
    max_retries: int = 2
    # seconds one model request may take (None: $GRAPHSEEK_LLM_TIMEOUT, else 300)
    llm_timeout: float | None = None
    # longest model reply in tokens: one number, or a mapping role -> number with an optional
    # "default" (None: $GRAPHSEEK_LLM_MAX_TOKENS, else 1024)
    max_reply_tokens: int | Mapping[str, int] | None = None
    # multi-agent options (knowledge_aware)
    agents: int = 1
    mode: Literal["single", "competitive", "collaborative"] = "single"
    # offline policies: abstain when the best answer's confidence is below this
    abstain_threshold: float = 0.15
    seed: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
