"""Reading profiles: data-set knowledge for the offline policies, selected by name.

`get_profile("general")` (the default) carries no data-set tables; `get_profile("wikipedia")`
carries the relation lexicon, cue tables, title rules and dump clean-up tuned to 2Wiki-style
questions over Wikipedia passages. `Context.profile` names the profile of a run.
"""

from __future__ import annotations

from graphseek.agents.profiles.base import Cue, Profile, Relation
from graphseek.agents.profiles.general import GENERAL
from graphseek.agents.profiles.wikipedia import WIKIPEDIA
from graphseek.errors import ContextError
from graphseek.state.validation import check_name
from graphseek.tools.names import register_profile_words

PROFILES: dict[str, Profile] = {p.name: p for p in (GENERAL, WIKIPEDIA)}
for _profile in PROFILES.values():
    # the graph tools read a run's profile words by its name (tools do not import agents)
    register_profile_words(_profile.name, _profile.mention_nouns, _profile.mention_verbs)


def get_profile(profile: str | Profile | None = None) -> Profile:
    """The profile named `profile` (None: `general`); a Profile is returned as is."""
    if isinstance(profile, Profile):
        return profile
    name = check_name("profile", profile or "general", PROFILES, error=ContextError)
    return PROFILES[name]


__all__ = ["GENERAL", "PROFILES", "WIKIPEDIA", "Cue", "Profile", "Relation", "get_profile"]
