"""Reading profiles: data-set tables live in their profile and only there."""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import typing
from pathlib import Path

import pytest

import graphseek.agents
from graphseek.agents.offline.answer_types import expected_answer
from graphseek.agents.offline.decomposer import decompose_question
from graphseek.agents.offline.librarian import OfflineLibrarian
from graphseek.agents.profiles import GENERAL, PROFILES, WIKIPEDIA, Profile, get_profile
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


def _alternatives(pattern: str) -> set[str]:
    """ "films?|directors of films?|pass away" -> {"film", "directors of film", "pass away"}."""
    out = set()
    for alternative in pattern.split("|"):
        text = re.sub(r"\(\?:[^()]*\)\??|\\s[+*]?|s\?(?![a-z])|[()?]", " ", alternative)
        out.add(" ".join(text.split()))
    return out


def _phrases(*collections: object) -> set[str]:
    """The strings of mappings' keys and values, sequences and sets, one level deep."""
    out: set[str] = set()
    for collection in collections:
        items = collection.items() if isinstance(collection, typing.Mapping) else [collection]
        for item in items:
            for value in item if isinstance(item, (tuple, list, set, frozenset)) else [item]:
                if isinstance(value, str):
                    out.add(value)
                elif isinstance(value, (tuple, list, set, frozenset)):
                    out |= {v for v in value if isinstance(v, str)}
    return out


# How each field of a profile names its vocabulary: relation keys, the nouns and verbs of its
# relations, its word tables and the alternations of its question grammar.
_VOCABULARY_OF: dict[str, typing.Callable[[typing.Any], set[str]]] = {
    "relations": lambda v: {k for k in v} | {n for r in v.values() for n in r.nouns},
    "relation_verbs": lambda v: _phrases(v),
    "inferred_chains": lambda v: _phrases(v),
    "rephrasings": lambda v: set(v),
    "cues": lambda v: set(v),
    "category_words": lambda v: set(v),
    "head_nouns": lambda v: {n for _, nouns in v for n in nouns.split()},
    "focus_verbs": _alternatives,
    "comparison_events": lambda v: {attribute for _, attribute, _ in v},
    "comparison_event_verbs": _alternatives,
    "date_verbs": _alternatives,
    "older_words": _alternatives,
    "younger_words": _alternatives,
    "age_attribute": lambda v: {v},
    "same_as_verbs": _alternatives,
    "same_verbs": _alternatives,
    "option_prefixes": _alternatives,
    "option_suffixes": _alternatives,
    "origin_attributes": lambda v: _phrases(v),
    "attribute_questions": lambda v: set(v),
    "duration_attributes": lambda v: set(v),
    "nationality_relations": lambda v: set(v),
    "place_relations": lambda v: set(v),
    "date_range_ends": lambda v: set(v),
    "relation_phrases": lambda v: _phrases(v),
    "titled_relations": lambda v: set(v),
    "mention_nouns": lambda v: set(v),
    "mention_verbs": lambda v: set(v),
}
# Fields that hold no vocabulary of their own: names, numbers, functions, and rules over passages
# or questions whose words are the vocabulary above or English wording around it.
_NOT_VOCABULARY = {
    "name", "description", "operating_point", "title_weight", "clean_text", "same_attribute",
    "work_names_person", "attribute_patterns", "canonical", "title_types", "person_words",
    "name_titles", "focus_frames", "comparison_bridges", "person_criterion", "bridge_prefix",
    "implied_category", "category_date_verbs", "object_tail", "person_title", "honorifics",
}  # fmt: skip

# Words of that vocabulary with a general sense that general rules use, each with its reason;
# a word not listed here is the profile's wherever it stands.
_GENERAL_SENSES = {
    "date": "a value type of any document (a release date, the DATE label)",
    "country": "a kind of place in any document",
    "location": "a kind of place in any document; a file's location",
    "company": "a kind of organisation in any document",
    "child": "tree and process vocabulary (child nodes, child processes)",
    "sibling": "document-tree vocabulary (an HTML element's next sibling)",
    "author": "software documentation names a package's author",
    "creator": "software documentation names a project's creator",
    "founder": "software documentation names a project's founder",
    "co-founder": "software documentation names a project's co-founder",
    "owner": "a file's, a database object's or a project's owner",
    "host": "a network host",
    "writer": "a stream or file writer",
    "created": "a file, table or index is created",
    "published": "a package or a release is published",
    "written": "a file is written",
    "recorded": "a value recorded in a manifest or a store",
    "single": "general English (a single step)",
    "show": "general English (a command shows)",
    "track": "general English (to track a change)",
}

# Single places where a word of the vocabulary stands outside the profiles for a reason the
# general reader does not share: (module, word) -> reason. Nothing is allowed by constant name.
_PROMPT = "an example in a prompt shown to a model, not a rule an offline policy runs"
_ALLOWED: dict[tuple[str, str], str] = {
    ("agents/prompts/planner.py", "die"): _PROMPT,
    ("agents/prompts/planner.py", "father"): _PROMPT,
    ("agents/prompts/rewriter.py", "film"): _PROMPT,
    ("agents/prompts/seeker.py", "father"): _PROMPT,
    ("agents/prompts/sufficiency.py", "born"): _PROMPT,
    ("agents/prompts/sufficiency.py", "director"): _PROMPT,
    ("agents/prompts/sufficiency.py", "film"): _PROMPT,
    ("knowledge/graph/extract/prompts.py", "born in"): _PROMPT,
    ("knowledge/graph/extract/prompts.py", "directed"): _PROMPT,
    ("knowledge/graph/extract/prompts.py", "film"): _PROMPT,
    ("knowledge/graph/extract/prompts.py", "band"): _PROMPT,
    ("tools/prompts.py", "film"): _PROMPT,
    ("tools/prompts.py", "mother"): _PROMPT,
    ("knowledge/graph/extract/doc_analysis.py", "born"): "the offline extractor's alias pattern at "
    "index time ('(born X)' gives a birth name); no profile reaches an index build",
    **{
        ("agents/reading/question.py", word): "one-hop kinship is English: a relative is a "
        "person, so the general reader splits 'Where did Ada Lovelace's father die?' in two"
        for word in ("father", "mother", "husband", "wife", "spouse", "son", "daughter")
    },
    ("agents/reading/question.py", "brother"): "one-hop kinship is English (as 'father')",
    ("agents/reading/question.py", "sister"): "one-hop kinship is English (as 'father')",
    ("evaluation/report.py", "older"): "a report note ('older runs'), not a question rule",
    ("llm/context_window.py", "older"): "an error message ('older steps dropped')",
    ("evaluation/cli.py", "wrote"): "a console message ('wrote <files>')",
}


def profile_vocabulary(profile: Profile = WIKIPEDIA) -> frozenset[str]:
    """The words and phrases a profile's tables name (`_VOCABULARY_OF`), less English function
    words."""
    from graphseek.agents.text import STOPWORDS

    words: set[str] = set()
    for name, vocabulary_of in _VOCABULARY_OF.items():
        words |= vocabulary_of(getattr(profile, name))
    return frozenset({w.lower().strip() for w in words} - {""} - set(STOPWORDS))


def wikipedia_vocabulary() -> frozenset[str]:
    """What general code may not say: the wikipedia profile's vocabulary less the words with a
    general sense (`_GENERAL_SENSES`)."""
    return profile_vocabulary(WIKIPEDIA) - set(_GENERAL_SENSES)


@functools.lru_cache(maxsize=4)
def _vocabulary_re(words: frozenset[str]) -> re.Pattern[str]:
    alternation = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    return re.compile(rf"(?<![a-z])(?:{alternation})(?:e?s)?(?![a-z])", re.I)


def _entry(found: str, words: frozenset[str]) -> str:
    """The vocabulary entry a match stands for ("films" -> "film", "churches" -> "church")."""
    return next((found[:end] for end in (None, -1, -2) if found[:end] in words), found)


def _literal_strings(tree: ast.AST) -> list[tuple[int, str, str]]:
    r"""(line, enclosing top-level name, text) of each string literal that can be part of a
    rule: docstrings, bare string statements and `description=` texts (shown to a model or a
    reader, never matched) are left out. Regex escapes (\b, \s, ...) are blanked and runs of
    whitespace made one space, so "pass\s+away" reads "pass away"."""
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
                text = re.sub(r"\\[bBsSdDwWAZ][+*?]?", " ", node.value)
                out.append((node.lineno, owner, " ".join(text.split())))
    return out


def vocabulary_leaks(
    source: str, module: str, used: set[tuple[str, str]] | None = None
) -> list[str]:
    """'module:line name: words' for each rule literal of `source` holding the wikipedia
    profile's vocabulary, less the words with a general sense and those `_ALLOWED` in `module`;
    what served is added to `used`: ("", word) for a general sense, (module, word) for an
    allowance."""
    words = profile_vocabulary(WIKIPEDIA)
    pattern = _vocabulary_re(words)
    leaks = []
    for line, owner, text in _literal_strings(ast.parse(source)):
        found = {_entry(m.group(0).lower(), words) for m in pattern.finditer(text)}
        senses = {("", w) for w in found if w in _GENERAL_SENSES}
        allowed = {(module, w) for w in found if (module, w) in _ALLOWED}
        if used is not None:
            used |= senses | allowed
        rest = found - {w for _, w in senses | allowed}
        if rest:
            leaks.append(f"{module}:{line} {owner}: {sorted(rest)}")
    return leaks


def test_the_vocabulary_comes_from_the_profiles_tables() -> None:
    """Every field of a profile is read for vocabulary or said to hold none, so a table added
    to the profile is guarded as soon as it is filled."""
    fields = {f.name for f in dataclasses.fields(WIKIPEDIA)}
    assert set(_VOCABULARY_OF) | _NOT_VOCABULARY == fields
    assert not set(_VOCABULARY_OF) & _NOT_VOCABULARY
    vocabulary = wikipedia_vocabulary()
    # relation nouns and verbs, kinship, works, life events, the encyclopedia's question grammar
    assert {"father", "spouse", "grandfather", "husband", "screenwriter", "lyricist"} <= vocabulary
    assert {"director", "producer", "publisher", "award", "nationality"} <= vocabulary
    assert {"film", "born", "died", "pass away", "birth_date", "origin_country"} <= vocabulary
    assert {"founded", "detained", "imprisoned", "educated", "headquartered"} <= vocabulary
    assert {"older", "younger", "premiered", "directors of"} <= vocabulary
    # general senses stay usable
    assert not {"date", "country", "released", "author", "the", "in"} & vocabulary


def test_the_guard_catches_an_inline_rule_and_spares_docstrings() -> None:
    source = (
        '"""Reads "born in" questions."""\n'
        "import re\n"
        'BORN = re.compile(r"\\bborn\\b|\\bdied\\b")\n'
        "def f(q):\n"
        '    """When was X born?"""\n'
        '    return q.replace("grandfather", "father") if "(film)" in q else q\n'
    )
    leaks = vocabulary_leaks(source, "x.py")
    assert sorted(leaks) == [
        "x.py:3 BORN: ['born', 'died']",
        "x.py:6 f: ['father']",
        "x.py:6 f: ['film']",
        "x.py:6 f: ['grandfather']",
    ]
    assert vocabulary_leaks('X = "films?|directors of"', "x.py")
    assert vocabulary_leaks('X = r"pass\\s+away"', "x.py")
    assert not vocabulary_leaks('X = "a child process, filmic, unborn"', "x.py")


def test_the_guard_fails_on_a_planted_rule_in_general_code() -> None:
    """A rule planted in the general reader's own tables or rules is caught: no constant is
    exempt by its name."""
    same = 'SAME = re.compile(r"\\bsame nationality\\b")\n'
    assert vocabulary_leaks(same, "agents/offline/answer_types.py")
    nouns = 'PERSON_NOUNS = frozenset("author maintainer screenwriter".split())\n'
    assert vocabulary_leaks(nouns, "agents/reading/question.py") == [
        "agents/reading/question.py:1 PERSON_NOUNS: ['screenwriter']"
    ]
    heads = 'GENERAL_HEAD_NOUNS = [(["PERSON"], "person husband")]\n'
    assert vocabulary_leaks(heads, "agents/offline/answer_types.py")
    frame = 'F = r"^who (?:founded|created) (?P<f>.+)$"\n'
    assert vocabulary_leaks(frame, "agents/offline/answer_types.py")
    ages = 'A = r"\\b(?:older|oldest)\\b"\n'
    assert vocabulary_leaks(ages, "agents/offline/answer_types.py")


def test_no_wikipedia_vocabulary_outside_the_profiles() -> None:
    """No string literal or regex of any module outside `graphseek/agents/profiles/` holds the
    wikipedia profile's vocabulary: such a rule would fire under every profile. The profile's
    tables are consulted through `Profile` fields. Every general sense and every allowance is
    still needed."""
    leaks: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if not module.startswith("agents/profiles/"):
            leaks += vocabulary_leaks(path.read_text(encoding="utf-8"), module, used)
    assert not leaks, "wikipedia vocabulary outside the profiles:\n" + "\n".join(leaks)
    assert set(_ALLOWED) <= used, f"allowances no longer needed: {set(_ALLOWED) - used}"
    senses = {w for module, w in used if not module}
    assert set(_GENERAL_SENSES) == senses, f"not needed: {set(_GENERAL_SENSES) - senses}"
    assert set(_GENERAL_SENSES) <= profile_vocabulary(WIKIPEDIA)


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
