"""Node updates are typed: every node of the seven topologies (and of the Librarian and
suggester subgraphs) declares the partial update it returns as TypedDicts whose keys are the
state's channels with the state's value types (a reduced list may also be an `Overwrite`), and
mypy rejects a misspelt key or a `next_action` outside the topology's `Literal` in a node's body.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import types
from pathlib import Path
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

import pytest
from langgraph.types import Overwrite
from typing_extensions import ReadOnly, is_typeddict

from graphseek.graphs import build_workflow, topology_names
from graphseek.graphs.librarian_agent import build_librarian_agent
from graphseek.graphs.suggester_agent import build_suggester_agent
from graphseek.state.schema import TOPOLOGY_STATES, TOPOLOGY_UPDATES

ROOT = Path(__file__).resolve().parent.parent
GRAPHS = ROOT / "graphseek" / "graphs"

#: files of graphseek/graphs whose node updates are not typed yet, with the reason
UNTYPED: dict[str, str] = {}


def _builders() -> list[tuple[str, Any]]:
    named = [(name, build_workflow(name)) for name in topology_names()]
    return [*named, ("librarian", build_librarian_agent()), ("suggester", build_suggester_agent())]


def _node_functions(builder: Any) -> list[tuple[str, Any]]:
    """The graph's nodes written as functions here (not subgraphs or tool nodes)."""
    out = []
    for name, spec in builder.nodes.items():
        func = getattr(spec.runnable, "func", None)
        if inspect.isfunction(func) and func.__module__.startswith("graphseek.graphs"):
            out.append((name, func))
    return out


def _strip(hint: Any) -> tuple[Any, bool]:
    """A state key's value type without NotRequired / ReadOnly / Annotated, and whether it has
    a reducer (an Annotated channel)."""
    reduced = False
    while get_origin(hint) in (NotRequired, Required, ReadOnly, Annotated):
        reduced |= get_origin(hint) is Annotated
        hint = get_args(hint)[0]
    return hint, reduced


def _members(hint: Any) -> set[Any]:
    if get_origin(hint) in (Union, types.UnionType):
        return set(get_args(hint))
    return {hint}


def _check_update(update: type, state: type, where: str) -> list[str]:
    """What is wrong with `update` as a partial update of `state`."""
    channels = get_type_hints(state, include_extras=True)
    problems = []
    for key, hint in get_type_hints(update, include_extras=True).items():
        if key not in channels:
            problems.append(
                f"{where}: {update.__name__}.{key} is not a channel of {state.__name__}"
            )
            continue
        want, reduced = _strip(channels[key])
        got, _ = _strip(hint)
        if get_origin(want) is Literal:
            if get_origin(got) is not Literal or not set(get_args(got)) <= set(get_args(want)):
                problems.append(f"{where}: {update.__name__}.{key} = {got} is not within {want}")
        elif got != want and not (reduced and _members(got) == _members(want) | {Overwrite}):
            problems.append(f"{where}: {update.__name__}.{key} is {got}, the state's is {want}")
    return problems


def test_every_node_returns_typed_updates_of_its_state() -> None:
    problems: list[str] = []
    checked = 0
    for graph, builder in _builders():
        for name, func in _node_functions(builder):
            where = f"{graph}.{name}"
            returned = get_type_hints(func, include_extras=True).get("return")
            parts = _members(returned)
            if not all(is_typeddict(p) for p in parts):
                problems.append(f"{where} returns {returned}, not update TypedDicts")
                continue
            for part in parts:
                problems += _check_update(part, builder.state_schema, where)
            checked += 1
    assert not problems, "\n".join(problems)
    assert checked >= 35


@pytest.mark.parametrize("name", topology_names())
def test_each_topology_update_covers_its_state(name: str) -> None:
    """`XUpdate` holds every channel of `XState` a node may write (all but the question)."""
    update, state = TOPOLOGY_UPDATES[name], TOPOLOGY_STATES[name]
    assert not _check_update(update, state, name)
    assert set(get_type_hints(state)) - set(get_type_hints(update)) == {"question"}


def _returns_untyped_dict(node: ast.FunctionDef) -> bool:
    text = ast.unparse(node.returns) if node.returns else ""
    return text.replace(" ", "") in {"dict", "dict[str,Any]", "Dict[str,Any]"}


def test_no_function_in_graphs_returns_an_untyped_dict() -> None:
    found = []
    for path in sorted(GRAPHS.glob("*.py")):
        if path.name in UNTYPED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and _returns_untyped_dict(node):
                found.append(f"{path.name}:{node.lineno} {node.name}")
    assert not found, found


#: mistakes planted in copies of real nodes: (module, the line as written, as misspelt, the error)
PLANTED = [
    ("naive.py", '"retrieved_ids": [h.passage.id', '"retrieved_id": [h.passage.id', "retrieved_id"),
    ("adaptive.py", '"sufficient": verdict.sufficient,', '"sufficent": verdict.sufficient,',
     "sufficent"),
    ("dual_agent.py", '"next_action": "answer",', '"next_action": "answered",', "answered"),
    ("react.py", 'return update | {"next_action": "retrieve"}',
     'return update | {"next_action": "search"}', "Incompatible return value"),
    ("common.py", '"abstained": True,', '"abstained": "yes",', '"abstained"'),
]  # fmt: skip


def test_mypy_rejects_a_misspelt_key_or_an_impossible_next_action(tmp_path: Path) -> None:
    """Copies of real node modules with one mistake each fail mypy at that line; the same
    copies unchanged pass. The graphseek modules they import are not followed (they read as
    Any), so only the update types of `graphseek.state.schema` are checked: a few seconds."""
    pytest.importorskip("mypy")
    files = []
    for module, line, planted, _ in PLANTED:
        source = (GRAPHS / module).read_text()
        assert source.count(line) == 1, f"{module}: {line!r} not found once"
        (tmp_path / f"good_{module}").write_text(source)
        (tmp_path / f"planted_{module}").write_text(source.replace(line, planted))
        files += [f"good_{module}", f"planted_{module}"]
    command = [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=skip",
               "--config-file", str(ROOT / "pyproject.toml"), *files,
               str(ROOT / "graphseek" / "state" / "schema.py")]  # fmt: skip
    out = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert not [e for e in errors if e.startswith("good_")], out.stdout
    for module, _, planted, expected in PLANTED:
        source = (tmp_path / f"planted_{module}").read_text().splitlines()
        lineno = next(i for i, text in enumerate(source, 1) if planted in text)
        mine = [e for e in errors if e.startswith(f"planted_{module}:")]
        assert any(expected in e for e in mine), (module, mine, out.stdout)
        # the error is reported where the mistake is, or at the statement that holds it
        assert any(abs(int(e.split(":")[1]) - lineno) <= 12 for e in mine), (module, mine)
