"""Prompts of the tools that ask a chat model: the HiGraRetriever's context-aware entity
recognition (HiGraAgent §4.2), which picks the seed entities of a query among the graph's most
similar entities (`graphseek.tools.higra.llm_seeds`). They live beside the tools, below the agents
layer; `graphseek.agents.prompts.entity_recognition` re-exports them with the role prompts.

Placeholders: `{question}` — the query; `{candidates}` — one candidate per line,
``[<entity id>] <name> (aliases: ...; types: ...)``; `{max_seeds}` — the most seeds to return.
"""

ENTITY_RECOGNITION_SYSTEM = """You select entry points into a knowledge graph for answering a \
question. You are given the question and candidate entities from the graph, each with its id, \
name, aliases and types.
Choose the candidates that the question names or clearly refers to, including abbreviations, \
nicknames, alternative spellings and partial names (e.g. "the Warriors" for "Golden State \
Warriors"). Prefer specific named entities over generic concepts ("film", "mother", "country"). \
When two candidates share a name, pick the one whose types or qualifier fit the question. Do not \
choose entities that would only be the answer and are not mentioned in the question.
Return JSON: `reasoning` (one or two sentences), then `entity_ids` (the chosen ids, most \
important first, at most {max_seeds}, copied exactly from the candidate list; an empty list if \
none fits)."""

ENTITY_RECOGNITION_USER = """Question: {question}

Candidate entities:
{candidates}"""
