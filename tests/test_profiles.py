"""Reading profiles: data-set tables live in their profile and only there."""

from __future__ import annotations

import ast
import dataclasses
import re
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


def test_every_data_set_field_of_the_general_profile_is_empty() -> None:
    neutral = {"name", "description", "clean_text", "operating_point", "age_attribute"}
    for f in dataclasses.fields(GENERAL):
        if f.name not in neutral:
            general, wikipedia = getattr(GENERAL, f.name), getattr(WIKIPEDIA, f.name)
            assert not (any(general) if isinstance(general, tuple) else general), f.name
            assert any(wikipedia) if isinstance(wikipedia, tuple) else wikipedia, f.name
    assert GENERAL.age_attribute == "date" and WIKIPEDIA.age_attribute == "birth_date"


def test_the_relation_lexicon_is_consulted_only_under_its_profile() -> None:
    assert expected_answer("Who is the father of Lothair II?", WIKIPEDIA).relation == "father"
    assert expected_answer("Who is the father of Lothair II?").relation is None
    # kinship chains are two hops only in the wikipedia lexicon
    question = "Who is the paternal grandfather of Raghnall Mac Ruaidhrí?"
    assert len(decompose_question(question, WIKIPEDIA)) == 2
    assert len(decompose_question(question)) == 1


def test_the_graph_tools_skip_a_profiles_words_only_under_that_profile() -> None:
    from graphseek.tools.names import QUESTION_WORDS, mention_stopwords, seed_stopwords

    assert mention_stopwords("general") == seed_stopwords("general") == QUESTION_WORDS
    assert {"film", "born"} <= mention_stopwords("wikipedia")
    # an event verb names a relation ("born" -> "born in"); a type word does not
    assert "film" in seed_stopwords("wikipedia") and "born" not in seed_stopwords("wikipedia")
    assert mention_stopwords() == QUESTION_WORDS  # outside a run: the general words


def test_offline_roles_resolve_their_profile() -> None:
    assert OfflineLibrarian().profile is GENERAL
    assert OfflineLibrarian(profile="wikipedia").profile is WIKIPEDIA


# -- the profile boundary: no wikipedia vocabulary in any rule outside the profiles ----------

PACKAGE = AGENTS.parent

# Film and life-event words of the wikipedia profile's cue and question tables.
_FILM_AND_LIFE = {
    "film", "movie", "director", "directed", "screenwriter", "cinematographer", "lyricist",
    "performer", "composer", "born", "died", "buried", "birth", "death", "burial",
    "birthplace", "birthday", "nationality", "citizenship", "married",
}  # fmt: skip

# Words of that vocabulary that are genuinely general, each with its reason.
_GENERAL_WORDS = {
    "child": "tree and process vocabulary (child nodes, child processes)",
    "children": "tree vocabulary (a node's children)",
    "sibling": "document-tree vocabulary (an HTML element's next sibling)",
    "partner": "business vocabulary",
}

# Places where the vocabulary is allowed, each with its reason: module, or (module, name).
_ALLOWED: dict[str | tuple[str, str], str] = {
    "agents/prompts": "prompt text shown to a model: examples, not rules the offline roles run",
    "knowledge/graph/prompts.py": "prompt text shown to the extraction model",
    "tools/prompts.py": "prompt text shown to a model",
    ("agents/offline/answer_types.py", "_HEAD_NOUNS"): "English noun classes: what a head noun "
    "names (a 'father' is a person), the answer type of any question",
    ("agents/reading/question.py", "PERSON_NOUNS"): "the general reader's English noun classes",
    ("agents/reading/question.py", "PLACE_NOUNS"): "the general reader's English noun classes",
    ("agents/reading/question.py", "GROUP_NOUNS"): "the general reader's English noun classes",
    ("agents/reading/decompose.py", "_ENTITY_NOUNS"): "the general reader's English noun "
    "classes (nouns that name a thing one can look up)",
    ("knowledge/graph", "_ALIAS_PREFIX"): "index-time alias pattern of the offline extractor "
    "('(born X)' gives a birth name); no profile reaches an index build yet",
}


def wikipedia_vocabulary() -> set[str]:
    """The relation and kinship vocabulary of the wikipedia profile: its relation keys and
    compared attributes, its kinship terms (the two-hop chains, the relations they chain and
    their nouns), its event words and its film and life-event words."""
    w = WIKIPEDIA
    kin = set(w.inferred_chains) | {rel for chain in w.inferred_chains.values() for rel in chain}
    kin |= {noun for key in kin if key in w.relations for noun in w.relations[key].nouns}
    keys = {key for key in w.relations if "_" in key} | set(w.attribute_questions)
    keys |= set(w.duration_attributes) | set(w.nationality_relations) | set(w.place_relations)
    keys |= {attribute for _, attribute, _ in w.comparison_events} | set(w.relation_phrases)
    words = kin | keys | set(w.mention_verbs) | _FILM_AND_LIFE
    return {word.lower() for word in words} - set(_GENERAL_WORDS)


def _vocabulary_re(words: set[str]) -> re.Pattern[str]:
    alternation = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    return re.compile(rf"(?<![a-z])(?:{alternation})(?:e?s)?(?![a-z])", re.I)


def _literal_strings(tree: ast.AST) -> list[tuple[int, str, str]]:
    r"""(line, enclosing top-level name, text) of each string literal that can be part of a
    rule: docstrings, bare string statements and `description=` texts (shown to a model or a
    reader, never matched) are left out. Regex escapes (\b, \s, ...) are blanked."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
        if isinstance(node, ast.keyword) and node.arg == "description":
            skip.update(id(n) for n in ast.walk(node.value))
    out: list[tuple[int, str, str]] = []
    for top in tree.body if isinstance(tree, ast.Module) else [tree]:
        names = [
            t.id
            for t in getattr(top, "targets", [getattr(top, "target", None)])
            if isinstance(t, ast.Name)
        ]
        owner = getattr(top, "name", names[0] if names else "")
        for node in ast.walk(top):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
            ):
                text = re.sub(r"\\[bBsSdDwWAZ]", " ", node.value)
                out.append((node.lineno, owner, text))
    return out


def vocabulary_leaks(source: str, module: str, pattern: re.Pattern[str]) -> list[str]:
    """'module:line name: words' for each rule literal of `source` holding vocabulary."""
    leaks = []
    for line, owner, text in _literal_strings(ast.parse(source)):
        if any(
            (module == place or module.startswith(place + "/")) and owner == name
            for place, name in (key for key in _ALLOWED if isinstance(key, tuple))
        ):
            continue
        found = sorted({m.group(0).lower() for m in pattern.finditer(text)})
        if found:
            leaks.append(f"{module}:{line} {owner}: {found}")
    return leaks


def test_the_guard_catches_an_inline_rule_and_spares_docstrings() -> None:
    pattern = _vocabulary_re(wikipedia_vocabulary())
    source = (
        '"""Reads "born in" questions."""\n'
        "import re\n"
        'BORN = re.compile(r"\\bborn\\b|\\bdied\\b")\n'
        "def f(q):\n"
        '    """When was X born?"""\n'
        '    return q.replace("grandfather", "father") if "(film)" in q else q\n'
    )
    leaks = vocabulary_leaks(source, "x.py", pattern)
    assert sorted(leaks) == [
        "x.py:3 BORN: ['born', 'died']",
        "x.py:6 f: ['father']",
        "x.py:6 f: ['film']",
        "x.py:6 f: ['grandfather']",
    ]
    assert vocabulary_leaks('X = "films?|directors of"', "x.py", pattern)
    assert not vocabulary_leaks('X = "a child process, filmic, unborn"', "x.py", pattern)


def test_no_wikipedia_vocabulary_outside_the_profiles() -> None:
    """No string literal or regex of any module outside `graphseek/agents/profiles/` holds the
    wikipedia profile's relation, kinship, film or life-event words: such a rule would fire
    under every profile. The profile's tables are consulted through `Profile` fields."""
    vocabulary = wikipedia_vocabulary()
    assert {"father", "spouse", "grandfather", "born", "died", "director", "film"} <= vocabulary
    assert {"birth_date", "origin_country", "lifespan"} <= vocabulary
    pattern = _vocabulary_re(vocabulary)
    leaks: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.startswith("agents/profiles/") or any(
            module == key or module.startswith(key + "/")
            for key in _ALLOWED
            if isinstance(key, str)
        ):
            continue
        leaks += vocabulary_leaks(path.read_text(encoding="utf-8"), module, pattern)
    assert not leaks, "wikipedia vocabulary outside the profiles:\n" + "\n".join(leaks)


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
