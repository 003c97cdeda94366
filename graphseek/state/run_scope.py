"""One run's scope: what a run builds once and every node of it shares.

A run is one `invoke` / `stream` of a compiled workflow with its `Context` (LangGraph hands the
same `Context` object to every node, tool and subgraph of the run, and rebuilds a fresh one from
the dict a LangGraph server client sends, once per run). The first `run_scope(context)` of a run
attaches a `RunScope` to that object, and every later call gets the same scope; the scope goes
when the `Context` does. No process-wide table is kept, and nothing is keyed by `id()`.

What a scope holds is built on first use by the layer that owns it, through `RunScope.get`:

- ``"roles"``: every role's policy (`graphseek.agents.registry.get_roles`);
- ``"guard"``: the budget guard that every model call of the run reports to and that refuses a
  call past the budget (`graphseek.llm.budget.guard_for`).

The scope rides on the `Context` as a private attribute rather than a dataclass field, so that the
settings (`dataclasses.fields`, `asdict`, the Studio form, `Context ==`) stay what they are. A
`Context` object stands for one run: give each run its own (`graphseek.ask` and the LangGraph
server do). A deep copy or a pickle of a `Context` is a new run: its scope starts empty.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: the attribute of a `Context` object that holds its run's scope
SCOPE_ATTRIBUTE = "_run_scope"

_ATTACH_LOCK = threading.Lock()


class RunScope:
    """Per-run objects, each built once by its first `get` (parallel branches wait for it)."""

    def __init__(self) -> None:
        self._items: dict[str, Any] = {}
        self._lock = threading.RLock()

    def get(self, name: str, build: Callable[[], T]) -> T:
        """The run's `name`, built by `build()` on the first call (None is a value too)."""
        with self._lock:
            if name not in self._items:
                self._items[name] = build()
            return self._items[name]  # type: ignore[no-any-return]

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._items

    # a copied or pickled context is another run: it starts with an empty scope
    def __copy__(self) -> RunScope:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> RunScope:
        return RunScope()

    def __reduce__(self) -> tuple[type[RunScope], tuple[()]]:
        return (RunScope, ())


def run_scope(context: Any) -> RunScope:
    """The scope of the run whose settings are `context`, attached to it on the first call.

    An object that cannot carry an attribute (None, a mapping, a slotted object) gets a fresh
    scope each call, so each caller builds its own."""
    scope = getattr(context, SCOPE_ATTRIBUTE, None)
    if isinstance(scope, RunScope):
        return scope
    with _ATTACH_LOCK:
        scope = getattr(context, SCOPE_ATTRIBUTE, None)
        if isinstance(scope, RunScope):
            return scope
        scope = RunScope()
        try:  # `Context` is frozen: set past its __setattr__, as dataclasses do in __init__
            object.__setattr__(context, SCOPE_ATTRIBUTE, scope)
        except (AttributeError, TypeError):
            pass
        return scope


__all__ = ["SCOPE_ATTRIBUTE", "RunScope", "run_scope"]
