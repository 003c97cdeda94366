"""The graph build reads as its algorithm: `build.py` runs the stages of `graph/stages/` in the
paper's order, and what keeps a build's memory bounded is `graph/memory.py`'s alone (no stage
frees, spills or tunes memory in its own code). These read the source (`ast`); the tests that
builds give the same store byte for byte are in test_bounded_build.py."""

from __future__ import annotations

import ast
from pathlib import Path

import graphseek.knowledge.graph as graph_package

GRAPH = Path(graph_package.__file__).parent
STAGES = sorted((GRAPH / "stages").glob("*.py"))


def _calls(function: ast.FunctionDef) -> list[str]:
    """The names called in `function`'s body, in source order (``f(...)`` as ``f``,
    ``x.f(...)`` as ``f``)."""
    names = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            names.append((node.lineno, node.col_offset, name))
    return [name for _, _, name in sorted(names)]


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    assert found, f"{path.name} has no function {name}"
    return found[0]


def _in_order(calls: list[str], expected: list[str]) -> bool:
    """`expected` is a subsequence of `calls`."""
    it = iter(calls)
    return all(name in it for name in expected)


def test_build_graph_runs_the_stages_in_order() -> None:
    calls = _calls(_function(GRAPH / "build.py", "build_graph"))
    assert _in_order(calls, ["_extract", "passage_pass", "assemble", "write", "write_sentences"])


def test_assemble_runs_align_link_topics_in_order() -> None:
    calls = _calls(_function(GRAPH / "build.py", "assemble"))
    expected = ["align", "begin_entity_vectors", "begin", "link", "cluster", "graph_vectors",
                "finish", "graph_data"]  # fmt: skip
    assert _in_order(calls, expected), calls


def test_the_delta_runs_the_same_stages_in_order() -> None:
    calls = _calls(_function(GRAPH / "delta.py", "_apply"))
    expected = ["_align", "_link_entities", "_link_passages", "_topics", "_graph_vectors",
                "_write"]  # fmt: skip
    assert _in_order(calls, expected), calls


MEMORY_CALLS = {
    "freeze",  # MentionVectors keyed by alignment's ids
    "release_memory",  # the encoder's buffers
    "clear_name_caches",
    "SpilledArray",
    "bound_heap",
    "plan_memory",
    "disable",  # gc
    "collect",
}


def test_no_stage_handles_memory_itself() -> None:
    """No ``del``, no `gc`, and none of the memory mechanisms (`MEMORY_CALLS`) in the pipeline
    or a stage: they go through `graphseek.knowledge.graph.memory`."""
    for path in [GRAPH / "build.py", *STAGES]:
        tree = ast.parse(path.read_text())
        dels = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Delete)]
        assert dels == [], f"{path.name}: del at lines {dels}"
        imported = {
            alias.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for alias in n.names
        }
        assert "gc" not in imported, path.name
        for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
            used = set(_calls(function)) & MEMORY_CALLS
            assert not used, f"{path.name}:{function.name} calls {sorted(used)}"
