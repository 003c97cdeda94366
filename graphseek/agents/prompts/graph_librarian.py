"""The Librarian's prompt with graph relations (HiGraAgent §4.6: relations + passages).

The system prompt is the Librarian's (`graphseek.agents.prompts.librarian.LIBRARIAN_SYSTEM`);
the user message starts as `LIBRARIAN_USER` does and adds the retrieved relations.

Placeholders: `{question}` — one sub-question; `{relations}` — graph relations, one per line as
`source | relation | target`; `{passages}` — passages, each introduced by its id.
"""

GRAPH_LIBRARIAN_USER = """Question: {question}

Graph relations (extracted from the passages; use them to find the right passages):
{relations}

Evidence (the passages' most relevant sentences, or whole passages, each under its [id] and title):
{passages}"""
