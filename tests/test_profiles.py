"""Reading profiles: data-set tables live in their profile and only there."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

import graphseek.agents
from graphseek.agents.offline.answer_types import expected_answer
from graphseek.agents.offline.decomposer import decompose_question
from graphseek.agents.offline.librarian import OfflineLibrarian
from graphseek.agents.profiles import GENERAL, PROFILES, WIKIPEDIA, get_profile
from graphseek.errors import ContextError
from graphseek.state.context import Context
from graphseek.state.context import Profile as ProfileName

AGENTS = Path(graphseek.agents.__file__).parent


def test_the_context_names_exactly_the_registered_profiles() -> None:
    assert set(typing.get_args(ProfileName)) == set(PROFILES)
    assert get_profile(Context().profile) is GENERAL


def test_lookup_by_name_instance_or_default() -> None:
    assert get_profile(None) is GENERAL
    assert get_profile("wikipedia") is WIKIPEDIA
    assert get_profile(WIKIPEDIA) is WIKIPEDIA


def test_an_unknown_profile_is_one_clear_error() -> None:
    with pytest.raises(ContextError, match="Unknown profile 'medline'; known profiles: general"):
        get_profile("medline")
    with pytest.raises(ContextError, match="Unknown profile 'wikipeda'; did you mean 'wikipedia'?"):
        get_profile("wikipeda")


def test_the_general_profile_carries_no_data_set_tables() -> None:
    assert not GENERAL.relations and not GENERAL.cues and not GENERAL.rephrasings
    assert not GENERAL.inferred_chains and not GENERAL.canonical and not GENERAL.title_types
    assert GENERAL.clean_text("a  Name( born\n1942)") == "a Name( born 1942)"
    assert WIKIPEDIA.clean_text("a  Name( born\n1942)") == "a Name (born 1942)"


def test_the_relation_lexicon_is_consulted_only_under_its_profile() -> None:
    assert expected_answer("Who is the father of Lothair II?", WIKIPEDIA).relation == "father"
    assert expected_answer("Who is the father of Lothair II?").relation is None
    # kinship chains are two hops only in the wikipedia lexicon
    question = "Who is the paternal grandfather of Raghnall Mac Ruaidhrí?"
    assert len(decompose_question(question, WIKIPEDIA)) == 2
    assert len(decompose_question(question)) == 1


def test_offline_roles_resolve_their_profile() -> None:
    assert OfflineLibrarian().profile is GENERAL
    assert OfflineLibrarian(profile="wikipedia").profile is WIKIPEDIA


# names of the Wikipedia / 2Wiki tables; they may be assigned only in the profile module
_TABLES = {
    "PERSON_RELATIONS", "ATTRIBUTE_RELATIONS", "RELATIONS", "INFERRED_CHAINS",
    "ATTRIBUTE_PATTERNS", "RELATION_VERBS", "CUES", "TITLE_TYPES", "PERSON_WORDS", "REPHRASE",
    "CANONICAL",
}  # fmt: skip


def _assigned_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                names.add(target.id.lstrip("_"))
        if isinstance(node, ast.FunctionDef) and node.name == "clean_text":
            names.add("clean_text")
    return names


def test_wikipedia_tables_live_only_in_the_wikipedia_profile() -> None:
    home = AGENTS / "profiles" / "wikipedia.py"
    assert _TABLES <= _assigned_names(home)
    for path in sorted(AGENTS.rglob("*.py")):
        if path == home:
            continue
        leaked = (_TABLES | {"clean_text"}) & _assigned_names(path)
        assert not leaked, f"{path.relative_to(AGENTS)} defines {sorted(leaked)}"


def test_graph_nodes_import_no_offline_policy_internals() -> None:
    graphs = AGENTS.parent / "graphs"
    for path in sorted(graphs.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("graphseek.agents.offline"), path.name
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("graphseek.agents.offline"), path.name
