"""What a reading profile is: the data-set knowledge an offline policy may consult.

The offline policies (`graphseek.agents.offline`) are written against this shape and never
against a data set. A profile bundles the tables that only make sense for one kind of corpus,
so that they are consulted only when the run's context selects that profile
(`Context.profile`). The `general` profile has none of them: its questions are read by the
general reader (`graphseek.agents.reading`), for any documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import BaseModel, Field


class Relation(BaseModel):
    """A relation a question can ask about, with the answer labels it expects."""

    key: str
    labels: list[str]
    nouns: list[str] = Field(default_factory=list, description="Nouns that name it in a question.")
    person: bool = False


# (regex, where the answer stands relative to the match, weight); where is "after" (the answer
# follows the cue), "before" (it precedes it) or "subject" (the answer is the passage's title
# and the question's entity follows the cue)
Cue = tuple[str, str, float]


def collapse_whitespace(text: str) -> str:
    """The neutral passage clean-up: runs of whitespace become one space."""
    return " ".join(text.split())


@dataclass(frozen=True, eq=False)
class Profile:
    """One reading profile. Hashable by identity, so functions may cache per profile."""

    name: str
    description: str
    relations: Mapping[str, Relation] = field(default_factory=dict)
    """Relation lexicon: key -> the relation and the labels its answer takes."""
    attribute_patterns: Sequence[tuple[str, str]] = ()
    """(regex over the lower-cased question, relation key), tried in order."""
    relation_verbs: Mapping[str, str] = field(default_factory=dict)
    """Verb in a who/which question -> relation key ("directed" -> "director")."""
    inferred_chains: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Two-hop relation nouns and the one-hop relations they chain ("grandfather")."""
    rephrasings: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Relation key -> re-ask templates over the focus entity `{f}`."""
    canonical: Sequence[tuple[str, str]] = ()
    """(regex, template) rewrites of a plan's last step into the wording retrieval handles."""
    cues: Mapping[str, Sequence[Cue]] = field(default_factory=dict)
    """Relation key -> phrases near which its answer stands in a passage."""
    title_types: Sequence[tuple[str, str]] = ()
    """(regex over a passage's first description, label of what its title names)."""
    person_words: str = ""
    """Regex of nouns that describe a person in a passage's first sentence."""
    clean_text: Callable[[str], str] = collapse_whitespace
    """Repairs of the corpus's text before parsing."""
    name_titles: str = ""
    """Regex of the titles a person's full name may carry after a comma ("Carlos, Duke of
    Madrid"): a person span is extended over ", <title> of <Name>"."""
    category_words: Sequence[str] = ()
    """Type words that stand before a name ("film Blood Street") and name the kind of a
    comparison's options, longest matched first where they compete."""
    head_nouns: Sequence[tuple[Sequence[str], str]] = ()
    """(entity labels, nouns) for the head noun of a "which/what N" question, beyond the
    general noun classes (`answer_types.GENERAL_HEAD_NOUNS`): "film" names a work, "husband" a
    person."""
    focus_verbs: str = ""
    """Regex alternation of the verbs ending a "When was X <verb>?" question, beyond the
    general ones, so that X is read as the question's focus."""
    focus_frames: Sequence[str] = ()
    """Further question frames (regexes with a group `f`, the focus), tried after the general
    ones ("Who directed X?")."""
    comparison_bridges: Sequence[str] = ()
    """Regexes over a lower-cased comparison whose group 1 is the noun of the options' bridge
    entity ("the director who ..."), tried in order; mapped through `relation_nouns`."""
    comparison_events: Sequence[tuple[str, str, str]] = ()
    """(regex over a comparative criterion, attribute, pick) tried before the event verbs:
    pick "min" / "max", or "" to read it from the criterion's first / later words."""
    comparison_event_verbs: str = ""
    """Regex alternation of the verbs of "Was A or B <verb> first?", beyond the general ones."""
    date_verbs: str = ""
    """Regex alternation of the event verbs whose date a comparison compares ("Which film was
    premiered first?"), beyond the general ones (released, published, created, ...)."""
    category_date_verbs: Mapping[str, str] = field(default_factory=dict)
    """Options' category -> the verb of the date step of a comparison that names no event
    ("When was <film> released?", "When was <band> founded?"); the general step asks when
    the option was established."""
    older_words: str = ""
    """Regex alternation of the comparatives of age ("older"): the earlier `age_attribute`
    wins for persons, the earlier date otherwise; none in the general reader."""
    younger_words: str = ""
    """Regex alternation of the comparatives of youth ("younger"), the later value winning."""
    person_criterion: str = ""
    """Regex over such a criterion that makes its options persons."""
    age_attribute: str = "date"
    """The attribute "older" / "younger" compare for persons."""
    same_attribute: Callable[[str, str, str | None], str | None] | None = None
    """The attribute a "same ..." question compares, from (its text, the options' category,
    the bridge relation); None: the general rule (`answer_types.general_same_attribute`)."""
    same_as_verbs: str = ""
    """Regex alternation of the predicates of "Does A <verb> the same X as B?", beyond the
    general ones."""
    same_verbs: str = ""
    """Regex alternation of the predicates of "Are A and B <verb> ... the same X?", beyond the
    general ones."""
    option_prefixes: str = ""
    """Regex alternation of type words dropped before a comparison option ("films"),
    beyond the general ones."""
    option_suffixes: str = ""
    """Regex alternation of type words dropped after a comparison option."""
    bridge_prefix: str = ""
    """Regex of a bridge noun before the options of a "same" question ("directors of")."""
    implied_category: tuple[str, str] = ("", "")
    """(regex over a "same" question, category) read when its options name no category."""
    origin_attributes: Mapping[str, str] = field(default_factory=dict)
    """Category -> the attribute a "same nationality" question compares for it (a film's
    country of origin)."""
    attribute_questions: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Compared attribute -> the sub-questions (templates over `{s}`) that fetch it for one
    option, beyond the general ones (date, country, quantity)."""
    duration_attributes: frozenset[str] = frozenset()
    """Compared attributes measured as the time between the dates of their two steps."""
    nationality_relations: frozenset[str] = frozenset()
    """Relations whose answers are compared by the country they name ("American" = "USA")."""
    place_relations: frozenset[str] = frozenset()
    """Relations whose answer is a town rather than a country."""
    date_range_ends: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Relation -> (which end of a date range "(1900 - 1980)" its answer is, "start" or
    "end"; regex of the words just before a date that mark the other end)."""
    relation_phrases: Mapping[str, str] = field(default_factory=dict)
    """Relation key -> its keyword-query wording, where not the key's words."""
    titled_relations: frozenset[str] = frozenset()
    """Relations whose re-ask names the focus with its category ("X (film)")."""
    object_tail: str = ""
    """Regex of the predicate that ends a relation chain's object ("... was born in")."""
    title_weight: float = 0.0
    """Weight of a passage's title matching the question's focus in the cue reader (passages
    about their title, as encyclopedia articles are)."""
    person_title: str = ""
    """Regex over a passage's title and the 80 characters after it that makes the title a
    person (life dates in brackets)."""
    honorifics: str = ""
    """Regex alternation of the titles dropped before a person's name drafted as an answer
    ("Prince Norodom Sutharot" -> "Norodom Sutharot") when a name follows them."""
    work_names_person: Callable[[str], bool] | None = None
    """Whether a first description typed as a work still names a person."""
    mention_nouns: frozenset[str] = frozenset()
    """Type words never taken as an entity mention on their own, nor as a relation seed, by
    the graph tools (`graphseek.tools.names.register_profile_words`)."""
    mention_verbs: frozenset[str] = frozenset()
    """Event verbs never taken as an entity mention on their own (they stay relation seeds)."""
    operating_point: float = 0.5
    """The offline reader's abstention threshold for this profile, chosen on its dev slices by
    one rule (`graphseek.evaluation.calibration`) and stored in `operating_points.json` beside
    the profiles (`stored_operating_point`)."""

    @property
    def reads_by_cues(self) -> bool:
        """A profile with a cue table drafts factoid answers by its cues and title rules; one
        without reads them with the general reader (`graphseek.agents.reading`)."""
        return bool(self.cues)

    @cached_property
    def relation_nouns(self) -> dict[str, str]:
        """Noun naming a person relation -> relation key."""
        return {n: r.key for r in self.relations.values() if r.person for n in r.nouns}

    @cached_property
    def compiled_cues(self) -> dict[str, list[tuple[re.Pattern[str], str, float]]]:
        return {
            key: [(re.compile(rx, re.I), where, w) for rx, where, w in cues]
            for key, cues in self.cues.items()
        }

    @cached_property
    def object_tail_re(self) -> re.Pattern[str] | None:
        return re.compile(self.object_tail) if self.object_tail else None

    @cached_property
    def person_words_re(self) -> re.Pattern[str] | None:
        return re.compile(self.person_words, re.I) if self.person_words else None

    @cached_property
    def honorifics_re(self) -> re.Pattern[str] | None:
        if not self.honorifics:
            return None
        return re.compile(rf"^(?:{self.honorifics})\s+(?=[A-Z]\S*\s+\S)")

    @cached_property
    def name_title_re(self) -> re.Pattern[str] | None:
        if not self.name_titles:
            return None
        word = r"[A-Z][\w'’-]*"
        link = r"(?:of|de|the|and|von|van|la|le|du|del|zu)\s+"
        name = rf"{word}(?:(?:\s+|-)(?:{link})?{word})*"
        return re.compile(rf",\s+(?:{self.name_titles})\s+of\s+(?:the\s+)?{name}")

    def __repr__(self) -> str:
        return f"Profile({self.name!r})"


def stored_operating_point(name: str) -> float:
    """The operating point `benchmarks/calibrate.py --write` stored for profile `name` in
    `operating_points.json` (0.5, the general reader's neutral point, when none is stored)."""
    import json
    from importlib import resources

    try:
        text = resources.files("graphseek.agents.profiles").joinpath("operating_points.json")
        return float(json.loads(text.read_text(encoding="utf-8"))[name]["threshold"])
    except (OSError, KeyError, ValueError, TypeError):
        return 0.5
