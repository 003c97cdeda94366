"""No import cycles: every graphseek module imports on its own, and module-level imports form a DAG.

`test_every_module_imports_alone` starts one fresh interpreter and, for each module, forgets every
graphseek module it has seen, then imports that one alone: an import cycle among graphseek modules
shows up as an ImportError ("partially initialized module") for the module that enters the cycle
from the wrong side. (Third-party packages stay loaded between modules, which only saves time:
they cannot take part in a cycle of graphseek's.) `test_imports_have_no_cycle_even_lazy_ones`
reads every import statement of every module, at module level or inside a function (a lazy
import that closes a loop, like a registry importing the module that registers into it, is a
cycle too), and checks that the graph they form has no cycle at all. (A package's `__init__` importing its own
submodules is not an edge back from them: Python runs the package first, and a submodule that
imports a sibling by `from pkg import sibling` gets the sibling, not the half-built package.)
"""

from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import graphseek

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(graphseek.__file__).parent

SCRIPT = r"""
import importlib, pkgutil, sys, traceback
import graphseek
names = sorted(m.name for m in pkgutil.walk_packages(graphseek.__path__, "graphseek.")
               if not m.name.endswith(".__main__"))
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m == "graphseek" or m.startswith("graphseek.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print(len(names))
print("\n".join(failed))
"""


def _modules() -> list[str]:
    """Every graphseek module but `__main__`s (importing one runs the program)."""
    return sorted(
        m.name
        for m in pkgutil.walk_packages(graphseek.__path__, "graphseek.")
        if not m.name.endswith(".__main__")
    )


def _run(script: str, timeout: int) -> list[str]:
    """The stdout lines of `script` run by a fresh interpreter from the repository."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=timeout,
    ).stdout.splitlines()


def test_every_module_imports_alone() -> None:
    out = _run(SCRIPT, timeout=600)
    assert int(out[0]) == len(_modules()) > 50
    assert [line for line in out[1:] if line] == []


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """graphseek modules `module` imports, at import time or later inside a function
    (`if TYPE_CHECKING:` blocks excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                for a in node.names:  # `from pkg import submodule` needs the submodule only
                    sub = f"{base}.{a.name}"
                    found.add(sub if sub in known else base)
            else:
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    children = getattr(node, field, None)
                    if isinstance(children, list):
                        visit([c for c in children if isinstance(c, ast.stmt)])
                for handler in getattr(node, "handlers", []) or []:
                    visit(handler.body)
                for case in getattr(node, "cases", []) or []:
                    visit(case.body)

    visit(tree.body)
    return {name for name in found if name in known and name != module}


def test_imports_have_no_cycle_even_lazy_ones() -> None:
    files = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    graph = {m: _imports(p, m, known) for m, p in files.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def walk(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n) :] + [n])
            elif n not in state:
                walk(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m)
    assert cycles == []


IMPORT_COST = r"""
import sys, threading
import graphseek.knowledge.graph, graphseek.knowledge.index
lazy = "langgraph" not in sys.modules
from graphseek.knowledge.nlp import get_nlp
nlp = get_nlp(("lemmatizer",))
import thinc.compat
parsed = [e.text for e in nlp("Stephen Curry plays for the Golden State Warriors.").ents]
print(lazy, "torch" in sys.modules, thinc.compat.has_torch, parsed)
import torch  # refused only to the thread that imported spaCy, and only while it did
from graphseek.state import RunState
print(RunState.__name__, torch.__name__)
"""


def test_knowledge_layer_skips_langgraph_and_spacy_skips_torch() -> None:
    """An index build imports neither LangGraph (the workflow schema loads on first use) nor
    torch (thinc probes it while spaCy imports: about 1.3 s); both import fine afterwards."""
    out = _run(IMPORT_COST, timeout=300)
    assert out[0] == "True False False ['Stephen Curry', 'the Golden State Warriors']"
    assert out[1] == "RunState torch"


def test_torch_is_refused_to_the_spacy_importing_thread_only() -> None:
    from graphseek.knowledge.nlp import _NoTorchHere

    finder = _NoTorchHere(threading.get_ident())
    with pytest.raises(ImportError, match="spaCy"):
        finder.find_spec("torch.utils.dlpack")
    assert finder.find_spec("torchvision_like_but_not_torch") is None
    found: list[object] = []
    other = threading.Thread(target=lambda: found.append(finder.find_spec("torch")))
    other.start()
    other.join()
    assert found == [None]  # another thread: left to the other finders


#: the layers, lowest first: a module imports its own layer and the layers below it, never one
#: above (`graphseek` is the package's own `__init__`)
LAYERS = (
    ("errors", "version"),
    ("state",),
    ("llm",),
    ("testing",),  # test doubles (the scripted chat model), built on llm
    ("knowledge",),
    ("tools",),
    ("agents",),
    ("graphs",),
    ("api",),
    ("evaluation",),
    ("cli",),
    ("graphseek",),
)

#: imports that point up on purpose, each with its reason; nothing else may
LAYER_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("graphseek.llm", "graphseek.testing.scripted"): (
        "`from graphseek.llm import ScriptedChatModel` kept for older callers (lazy, PEP 562)"
    ),
    ("graphseek.llm.factory", "graphseek.testing.scripted"): (
        "the model spec 'scripted' builds the test double (lazy, when the spec is used)"
    ),
    ("graphseek.state.validation", "graphseek.knowledge.loaders"): (
        "one check of text input (`text_problem`) for questions and documents alike (lazy)"
    ),
    ("graphseek.state.context", "graphseek.knowledge.postgres.uri"): (
        "a served run's index URI is matched, without its password, to the server's list by "
        "the one PostgreSQL URI parser (lazy, `allowed_index_uri`)"
    ),
}


def _layer(module: str) -> int:
    parts = module.split(".")
    name = parts[1] if len(parts) > 1 else "graphseek"
    for rank, names in enumerate(LAYERS):
        if name in names:
            return rank
    raise AssertionError(f"{module}: no layer for {name!r}; add it to LAYERS")


def test_layers_point_down_only() -> None:
    """graphs -> agents -> tools -> knowledge -> llm -> state: every import of every module
    (module level or lazy) goes to its own layer or one below, except `LAYER_EXCEPTIONS`."""
    files = {_module_of(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    upward = {
        (m, n) for m, p in files.items() for n in _imports(p, m, known) if _layer(n) > _layer(m)
    }
    assert sorted(upward - set(LAYER_EXCEPTIONS)) == []
    assert sorted(set(LAYER_EXCEPTIONS) - upward) == []  # an exception no longer needed goes


def test_the_layer_check_sees_a_lazy_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "tool.py"
    module.write_text("def f():\n    from graphseek.agents import prompts\n", encoding="utf-8")
    known = {"graphseek.tools.tool", "graphseek.agents", "graphseek.agents.prompts"}
    found = _imports(module, "graphseek.tools.tool", known)
    assert found == {"graphseek.agents.prompts"}
    assert _layer("graphseek.agents.prompts") > _layer("graphseek.tools.tool")


def test_tools_live_in_the_tools_layer() -> None:
    """A LangChain tool (`@tool`) is an action over the index: it lives in `graphseek.tools`, and
    the graphs only bind and run it."""
    defined = []
    for path in PACKAGE.rglob("*.py"):
        if _module_of(path).split(".")[1:2] == ["tools"]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for deco in node.decorator_list:
                    target = deco.func if isinstance(deco, ast.Call) else deco
                    if isinstance(target, ast.Name) and target.id == "tool":
                        defined.append(f"{_module_of(path)}.{node.name}")
    assert defined == []


def test_the_llm_layer_knows_no_graph_run() -> None:
    """`graphseek.llm` is handed the run's budget guard (``callbacks=``); it never looks for a
    LangGraph run (no `langgraph` import, lazy ones included)."""
    found = []
    for path in (PACKAGE / "llm").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "langgraph"]
    assert found == []
