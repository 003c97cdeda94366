"""The graph build reads as its algorithm: `build.py` runs the stages of `graph/stages/` in the
paper's order, a delta add (`delta.py`) runs each stage's variant for a stored graph from the same
stage modules in the same order, and what keeps a build's memory bounded is `graph/memory/`'s
alone (no stage frees, spills or tunes memory in its own code). These read the source (`ast`);
the tests that builds give the same store byte for byte are in test_bounded_build.py, the delta
add's stored reference is test_graph_delta.py's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import graphseek.knowledge.graph as graph_package
from graphseek.errors import InvalidRequestError
from graphseek.knowledge.graph.settings import GraphSettings, RunOptions, graph_arguments

GRAPH = Path(graph_package.__file__).parent
STAGES = sorted((GRAPH / "stages").glob("*.py"))
"""The stages, their interface (`stages/__init__.py`: `Run`, `timed`) and its timer (`clock`)."""
PIPELINE = [GRAPH / "build.py", GRAPH / "delta.py", GRAPH / "store" / "stored.py", *STAGES]
"""The pipelines (a build's, a delta add's), the stored graph a delta reads, and the stages."""


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
    calls = _calls(_function(GRAPH / "build.py", "build_graph_with_vectors"))
    assert _in_order(calls, ["_extract", "passage_pass", "assemble", "write", "write_sentences"])


def test_assemble_runs_align_link_topics_in_order() -> None:
    calls = _calls(_function(GRAPH / "build.py", "assemble"))
    expected = ["align", "begin_entity_vectors", "begin", "link", "cluster", "graph_vectors",
                "finish", "graph_data"]  # fmt: skip
    assert _in_order(calls, expected), calls


def _stage_calls(function: ast.FunctionDef) -> list[str]:
    """The calls of `function` made on a module (``align.align_new(...)``) as
    ``"align.align_new"``, in source order."""
    names = []
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            names.append((node.lineno, node.col_offset, f"{node.func.value.id}.{node.func.attr}"))
    return [name for _, _, name in sorted(names)]


DELTA_STAGES = ["align.new_bases", "align.near_stored", "align.align_new", "link.link_onto",
                "topics.topics_onto", "embed.graph_vectors_onto", "write.write_onto"]  # fmt: skip
"""Stages 3-6 of a delta add, in the build's order: each stage module's variant for a stored
graph."""


def test_the_delta_runs_the_same_stage_modules_in_order() -> None:
    """The delta path is the build's stages 1-2 (`add_passages_with_vectors`), then
    `delta.py`'s thin driver calling stages 3-6 from the stage modules in the build's order."""
    calls = _calls(_function(GRAPH / "build.py", "add_passages_with_vectors"))
    assert _in_order(calls, ["extract", "new_passage_pass", "delta_add"]), calls
    tree = ast.parse((GRAPH / "delta.py").read_text())
    stage_modules = {
        alias.name
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module == "graphseek.knowledge.graph.stages"
        for alias in n.names
    }
    assert {"align", "link", "topics", "embed", "write"} <= stage_modules
    calls = _stage_calls(_function(GRAPH / "delta.py", "_apply"))
    assert _in_order(calls, DELTA_STAGES), calls
    assert "write.copy_store" in _stage_calls(_function(GRAPH / "delta.py", "delta_add"))
    for call in [*DELTA_STAGES, "write.copy_store"]:  # each defined in its stage's module
        module, name = call.split(".")
        _function(GRAPH / "stages" / f"{module}.py", name)


BOTH_VARIANTS = {
    "align": ("align", "align_new"),
    "link": ("link", "link_onto"),
    "topics": ("HyperedgeTopics", "topics_onto"),
    "embed": ("graph_vectors", "graph_vectors_onto"),
    "write": ("write", "write_onto"),
}


def test_each_stage_module_holds_its_build_and_its_delta_variant() -> None:
    for module, names in BOTH_VARIANTS.items():
        tree = ast.parse((GRAPH / "stages" / f"{module}.py").read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        assert set(names) <= defined, (module, sorted(set(names) - defined))


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
    for path in PIPELINE:
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


MECHANISMS = {p.stem for p in (GRAPH / "memory").glob("*.py") if p.stem != "__init__"}
"""The memory package's modules: its mechanisms, behind its interface (`memory/__init__.py`)."""
MEMORY_MODULES = {f"graphseek.knowledge.graph.memory.{name}" for name in MECHANISMS} | {
    "graphseek.knowledge.graph.stages.clock",  # times a stage: `stages.timed`
    "graphseek.knowledge.heap",
}


def test_the_memory_mechanisms_are_modules_of_the_memory_package() -> None:
    """The modules that exist to bound a build's memory or time-share it live in
    `graph/memory/`, none beside the pipeline, the stages, the algorithms, the extractors or the
    store."""
    expected = {"spool", "budget", "run_ahead", "read_sequence", "id_columns", "model_columns",
                "mention_columns", "relation_columns", "mention_table", "merge_pairs",
                "passage_links"}  # fmt: skip
    assert expected <= MECHANISMS
    elsewhere = {p.stem for p in GRAPH.rglob("*.py") if p.parent.name != "memory"}
    assert not elsewhere & MECHANISMS


LAYOUT = {
    "__init__.py",  # the public names
    "build.py",  # the pipeline
    "delta.py",  # the delta add's driver
    "settings.py",  # what a build is and how it runs
    "models.py",  # the graph's types
    "stages",  # one module per stage
    "memory",  # the memory interface and its mechanisms
    "algorithms",  # what the stages compute with: alignment, linking, hyperedges, vectors
    "extract",  # the extractors a caller chooses, their prompts and spaCy tables
    "store",  # the store on disk: reading, writing, statistics
}


def test_the_graph_package_is_the_pipeline_and_one_package_per_concern() -> None:
    """A newcomer finds the build in `build.py`, a stage in `stages/`, memory in `memory/`:
    graph/'s top level holds nothing else but the types and settings a caller passes or gets
    and the packages the stages call into."""
    found = {p.name for p in GRAPH.iterdir() if p.name != "__pycache__"}
    assert found == LAYOUT, (sorted(found - LAYOUT), sorted(LAYOUT - found))


def test_the_pipeline_and_stages_reach_memory_only_through_its_module() -> None:
    """Spilling, reading back, the columns a stage holds, the budget, the peak and running
    ahead go through `graph/memory/`'s interface; a stage's time through `stages.timed`: neither
    the pipeline nor a stage imports their modules."""
    for path in PIPELINE:
        tree = ast.parse(path.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {  # `from graphseek.knowledge.graph.memory import spool`
            f"{n.module}.{a.name}"
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module == "graphseek.knowledge.graph.memory"
            for a in n.names
        }
        interface = path.name == "__init__.py"  # `stages/__init__.py`: `timed` runs the clock
        allowed = {"graphseek.knowledge.graph.stages.clock"} if interface else set()
        assert not (imported & MEMORY_MODULES) - allowed, path.name


# -- settings in one object, the run in another -------------------------------------------------


def test_the_build_takes_its_settings_and_its_run_as_one_object_each() -> None:
    """No entry point of the build repeats a `GraphSettings` or `RunOptions` field as a
    parameter of its own: what is built is `settings`, how it runs is `run`."""
    import inspect

    from graphseek.knowledge.graph.build import (
        add_passages,
        add_passages_with_vectors,
        build_graph,
        build_graph_with_vectors,
        delete_passages,
        map_passages,
    )

    fields = set(GraphSettings.__dataclass_fields__) | set(RunOptions.__dataclass_fields__)
    entries = (build_graph, build_graph_with_vectors, map_passages, add_passages,
               add_passages_with_vectors, delete_passages)  # fmt: skip
    for entry in entries:
        repeated = set(inspect.signature(entry).parameters) & fields
        assert not repeated, f"{entry.__name__} repeats {sorted(repeated)}"


def test_flat_graph_options_become_settings_and_a_run() -> None:
    options = {"tau": 0.4, "vectors": "minilm", "memory_budget": "2G", "llm": "openai:m"}
    arguments = graph_arguments(options, False)
    assert arguments == {
        "settings": GraphSettings(tau=0.4, vectors="minilm"),
        "run": RunOptions(memory_budget="2G", show_progress=False),
        "llm": "openai:m",
    }
    assert options == {"tau": 0.4, "vectors": "minilm", "memory_budget": "2G", "llm": "openai:m"}
    whole = GraphSettings(theta=7)
    assert graph_arguments({"settings": whole}, True)["settings"] is whole
    assert graph_arguments(None, True) == {"settings": GraphSettings(), "run": RunOptions()}
    update = graph_arguments({"delta": True, "max_concurrency": 2}, True, update=True)
    assert update == {"delta": True, "run": RunOptions(max_concurrency=2)}


def test_graph_options_the_build_does_not_take_are_refused() -> None:
    with pytest.raises(InvalidRequestError, match="unknown graph options: delta, tua"):
        graph_arguments({"tua": 0.5, "delta": True}, False)
    with pytest.raises(InvalidRequestError, match="unknown graph option: theta"):
        graph_arguments({"theta": 50}, False, update=True)  # an update keeps the store's
    with pytest.raises(InvalidRequestError, match="both settings and its fields"):
        graph_arguments({"settings": GraphSettings(), "theta": 50}, False)


SHARED_WITH_THE_BUILD = {
    "exact_groups",  # stage 3: the exact rule
    "name_pairs",  # stage 3: candidates
    "_decide_offline",  # stage 3: the offline merge decision
    "extracted_relations",  # stage 4: the extracted relations of aligned mentions
    "cooccurrence_edges",  # stage 4: co-occurrence edges
    "similarity_edges",  # stage 4: similarity edges of pairs kept apart
    "build_hyperedges",  # stage 5: n-ary facts -> hyperedges
    "hyperedge_vectors",  # stage 5: the hyperedges' vectors
    "embedded_relations",  # stage 5: which relations get a vector
    "insert_passages",  # stage 6: the store's table writers
    "insert_entities",
    "insert_relations",
    "insert_hyperedges",
}


def _reached(path: Path, entries: list[str]) -> set[str]:
    """The names called by the functions `entries` of the module at `path` and by the module's
    functions they call, transitively."""
    tree = ast.parse(path.read_text())
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    called: set[str] = set()
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        calls = set(_calls(functions[name]))
        called |= calls
        todo += sorted(calls & functions.keys())
    return called


def test_the_delta_variants_call_the_build_stage_functions_they_share() -> None:
    """Where a stage's variant for a stored graph computes what the build's computes, it calls
    the same function (each stage module says why the rest of its variant is its own)."""
    called: set[str] = set()
    for call in [*DELTA_STAGES, "write.copy_store"]:
        module, name = call.split(".")
        called |= _reached(GRAPH / "stages" / f"{module}.py", [name])
    assert SHARED_WITH_THE_BUILD <= called, sorted(SHARED_WITH_THE_BUILD - called)
