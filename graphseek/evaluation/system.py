"""The system under test: `system(index, question, config) -> result`.

The default, `ApiSystem`, is `graphseek.api.ask` with the configuration's settings; tests and
callers may pass any function with the same shape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from graphseek.evaluation.configs import EvalConfig
from graphseek.evaluation.datasets import EvalQuestion

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

__all__ = ["ApiSystem", "SystemFn"]

_OFFLINE_SPECS = {"offline", "scripted", "none", ""}

SystemFn = Callable[["IndexStore", EvalQuestion, EvalConfig], Any]
"""`system(index, question, config) -> result` with the attributes (or keys) of
`graphseek.api.Result`: answer, abstained, evidence, retrieved_ids, trace, usage, diagnostics."""


class ApiSystem:
    """The default system: `graphseek.api.ask` with the configuration's settings.

    A model spec string (other than "offline"/"scripted") becomes one chat model per
    configuration from `graphseek.llm.make_chat_model(spec, cache=config.cache)`, so repeated
    prompts are answered from the on-disk response cache.
    """

    def __init__(self) -> None:
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _llm(self, config: EvalConfig) -> Any:
        if not config.cache:
            return config.llm
        with self._lock:
            if config.name not in self._models:
                self._models[config.name] = _with_cache(config.llm, config.cache)
            return self._models[config.name]

    def __call__(self, index: IndexStore, question: EvalQuestion, config: EvalConfig) -> Any:
        from graphseek.api import ask

        return ask(
            index,
            question.question,
            topology=config.topology,
            llm=self._llm(config),
            retriever=config.retriever,
            **config.context,
        )


def _with_cache(llm: Any, cache: str) -> Any:
    """Spec strings (also the values of a role -> spec mapping) as models with the cache."""
    if isinstance(llm, Mapping):
        return {role: _with_cache(v, cache) for role, v in llm.items()}
    if not isinstance(llm, str) or llm.strip().lower() in _OFFLINE_SPECS:
        return llm
    from graphseek.llm import make_chat_model

    return make_chat_model(llm, cache=cache)
