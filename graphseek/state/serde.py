"""Checkpoint serialisation of graphseek state.

LangGraph's checkpoint serializer (`JsonPlusSerializer`) stores pydantic models with their module
and class name and rebuilds them on load; a type that is not on its msgpack allowlist is rebuilt
with a "Deserializing unregistered type" warning today and will be blocked later. `serializer()` is
a `JsonPlusSerializer` whose allowlist holds every model the graphseek state can contain (found by
walking every topology's state TypedDict and the `Send` payloads, plus the models passed in `extra`
for keys typed `Any`, whose types live in higher layers) and nothing else: any other type is blocked. LangChain messages are always allowed by LangGraph.

`graphseek.graphs.checkpoint_serializer()` (and `memory_saver()` / `sqlite_saver(path)` there) add
the types the topologies keep in `Any` keys; give it to any LangGraph saver::

    SqliteSaver(sqlite3.connect("runs.sqlite", check_same_thread=False), serde=serializer)
    PostgresSaver(conn, serde=serializer)
    InMemorySaver(serde=serializer)
"""

from __future__ import annotations

import typing
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel
from typing_extensions import is_typeddict


def _models_in(typ: Any, seen: set[int] | None = None) -> set[tuple[str, str]]:
    """(module, name) of every pydantic model reachable from a type annotation."""
    seen = set() if seen is None else seen
    if id(typ) in seen:
        return set()
    seen.add(id(typ))
    found: set[tuple[str, str]] = set()
    if isinstance(typ, type) and issubclass(typ, BaseModel):
        found.add((typ.__module__, typ.__name__))
        for f in typ.model_fields.values():
            found |= _models_in(f.annotation, seen)
        return found
    if is_typeddict(typ):
        for hint in typing.get_type_hints(typ).values():
            found |= _models_in(hint, seen)
        return found
    for arg in typing.get_args(typ):
        found |= _models_in(arg, seen)
    return found


def checkpoint_types() -> list[tuple[str, str]]:
    """The (module, class) pairs `serializer()` allows, sorted."""
    from graphseek.state import schema

    found: set[tuple[str, str]] = set()
    payloads = (schema.LibrarianTask, schema.SuggesterTask, schema.ChannelTask)
    for typ in (*schema.TOPOLOGY_STATES.values(), *payloads):
        found |= _models_in(typ)
    return sorted(found)


def serializer(extra: tuple[type[BaseModel], ...] = ()) -> JsonPlusSerializer:
    """A checkpoint serializer that rebuilds every graphseek state type (and `extra`) without
    warnings and blocks any other type."""
    types = set(checkpoint_types())
    for typ in extra:
        types |= _models_in(typ)
    return JsonPlusSerializer(allowed_msgpack_modules=sorted(types))
