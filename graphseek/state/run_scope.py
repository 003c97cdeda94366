"""One run's scope: what a run builds once and every node of it shares.

A run is one `invoke` / `stream` of a compiled workflow with its `Context` (LangGraph hands the
same `Context` object to every node, tool and subgraph of the run, and rebuilds a fresh one from
the dict a LangGraph server client sends, once per run). The first `run_scope(context)` of a run
attaches a `RunScope` to that object, and every later call gets the same scope; the scope goes
when the `Context` does. No process-wide table is kept, and nothing is keyed by `id()`.

What a scope holds is built on first use by the layer that owns it, through `RunScope.get`:

- ``"roles"``: every role's policy (`graphseek.agents.registry.get_roles`);
- ``"guard"``: the budget guard that every model call of the run reports to and that refuses a
  call past the budget (`graphseek.llm.budget.guard_for`);
- ``"degraded"``: the `Notes` of the steps whose failed model call the role's offline policy
  answered (``on_model_failure="offline"``), "role: reason", in the order they happened
  (`graphseek.agents.structured_role.Fallback`); `finalize_answer` adds those no node recorded;
- ``"tool_results"``: a `CallRecord` of the tool calls run so far (`graphseek.graphs.tool_loop`),
  so that a call identical to one made anywhere in the run (a parallel Librarian, an earlier
  round) is answered with the earlier result instead of running again.

The scope rides on the `Context` as a private attribute rather than a dataclass field, so that the
settings (`dataclasses.fields`, `asdict`, the Studio form, `Context ==`) stay what they are. A
`Context` object stands for one run: give each run its own (`graphseek.ask` and the LangGraph
server do). A deep copy or a pickle of a `Context` is a new run: its scope starts empty.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

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


class Notes:
    """A run's list of notes, appended to from parallel branches."""

    def __init__(self) -> None:
        self._items: list[str] = []
        self._lock = threading.Lock()

    def add(self, note: str) -> None:
        with self._lock:
            self._items.append(note)

    def items(self) -> list[str]:
        with self._lock:
            return list(self._items)


class CallRecord:
    """The results of a run's calls by key, for callers in parallel threads: the first to
    `claim` a key runs the call and `settle`s it (with its result, or None when it has none to
    share); a later claim of a settled key gets its result, one made while it runs is told to
    `wait` for it."""

    def __init__(self) -> None:
        self._results: dict[str, Any] = {}
        self._running: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def claim(self, key: str) -> tuple[Literal["run", "done", "wait"], Any]:
        """("run", None): the caller runs it and must settle it; ("done", result); ("wait",
        None): another caller runs it now."""
        with self._lock:
            if key in self._results:
                return "done", self._results[key]
            if key in self._running:
                return "wait", None
            self._running[key] = threading.Event()
            return "run", None

    def settle(self, key: str, result: Any = None) -> None:
        """The claimed call of `key` is over: its `result` is kept for later callers (None:
        nothing to share, the next claim runs it again)."""
        with self._lock:
            if result is not None:
                self._results.setdefault(key, result)
            event = self._running.pop(key, None)
        if event is not None:
            event.set()

    def result(self, key: str, timeout: float = 0.0) -> Any:
        """The result of `key`, waiting up to `timeout` seconds while another caller runs it;
        None when there is none (not run, nothing to share, or still running)."""
        with self._lock:
            if key in self._results:
                return self._results[key]
            event = self._running.get(key)
        if event is not None and timeout > 0:
            event.wait(timeout)
        with self._lock:
            return self._results.get(key)

    def running(self, key: str) -> bool:
        with self._lock:
            return key in self._running

    async def aresult(self, key: str, timeout: float = 0.0, poll: float = 0.01) -> Any:
        """`result` for a caller on an event loop (polls instead of blocking the loop)."""
        deadline = time.monotonic() + timeout
        while self.running(key) and time.monotonic() < deadline:
            await asyncio.sleep(poll)
        return self.result(key)


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


def degraded_notes(context: Any) -> Notes:
    """The run's record of degraded steps (the scope's ``"degraded"``)."""
    return run_scope(context).get("degraded", Notes)


__all__ = ["SCOPE_ATTRIBUTE", "CallRecord", "Notes", "RunScope", "degraded_notes", "run_scope"]
