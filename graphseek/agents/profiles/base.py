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
    def person_words_re(self) -> re.Pattern[str] | None:
        return re.compile(self.person_words, re.I) if self.person_words else None

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
