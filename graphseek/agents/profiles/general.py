"""The `general` profile: no data-set tables at all (the default).

Questions are read by the general reader (`graphseek.agents.reading`): spaCy's parse and entity
types, the packaged sentence embedder and the knowledge graph, with weights fitted on the dev
slices (`benchmarks/fit_reader.py`). Relation lexicons, cue tables, title rules and corpus
clean-up belong to named profiles (`graphseek.agents.profiles.wikipedia`).
"""

from __future__ import annotations

from graphseek.agents.profiles.base import Profile, stored_operating_point

GENERAL = Profile(
    name="general",
    operating_point=stored_operating_point("general"),
    description="for any documents: the general reader, no data-set tables",
)
