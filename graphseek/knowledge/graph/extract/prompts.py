"""Prompts of the LLM graph-construction steps (HiGraAgent §3), as module constants.

Placeholders:

- `EXTRACTION_PROMPT`: ``{title}``, ``{text}`` (the passage).
- `MERGE_PROMPT`: ``{entities}``, one entity per line as
  ``<n>. name=...; aliases=...; types=...; description=...``.
- `LINK_PROMPT`: ``{entities}``, the same listing.
"""

from __future__ import annotations

EXTRACTION_SYSTEM = (
    "You build a knowledge graph from text. Extract every entity a reader could ask about "
    "(people, organisations, places, works, events, dates, concepts), the relations the text "
    "states between them, and the facts that involve more than two of them."
)

EXTRACTION_PROMPT = """Passage title: {title}
Passage:
{text}

Return:
- entities: each with a short id you choose ("e1", "e2", ...), its most specific full name, \
aliases used in the passage (abbreviations, other names), a one-sentence description from the \
passage, and one or more types (e.g. PERSON, ORGANIZATION, LOCATION, CITY, FILM, DATE, EVENT);
- relations: source entity id, a short lower-case relation label ("directed by", "born in"), \
target entity id;
- facts: each a short statement of one n-ary fact and the ids of all entities it involves.
Resolve pronouns to the entities they refer to. Use only what the passage says."""

MERGE_SYSTEM = (
    "You decide which entity records from a knowledge graph refer to the same real-world "
    "referent. Merge only when you are sure: same name variants, compatible types and "
    "descriptions. A city and a state of the same name, or two films of the same title from "
    "different years, are different entities."
)

MERGE_PROMPT = """Entity records:
{entities}

Group the numbers of records that refer to the same referent. Leave out records that match no \
other. Give your reasoning first."""

LINK_SYSTEM = (
    "You add missing relations to a knowledge graph between entities that are similar but were "
    "never linked by the text, such as a company and its store, or a person and their band."
)

LINK_PROMPT = """Entity records:
{entities}

List only relations you are confident hold: source number, a short lower-case relation label, \
target number. Give your reasoning first; return no relations if none clearly hold."""
