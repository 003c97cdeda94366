"""Query-grounding prompt (GraphSearch §3.1.1, eq. 2).

Placeholders: `{query}` — a sub-query that refers to earlier answers as #N; `{answers}` — the
earlier sub-queries with their answers, one per line as `#N question -> answer`.
"""

GROUNDER_SYSTEM = """You make a search query self-contained. It refers to answers of earlier \
queries as #N; replace each reference with the entity that query found, adjusting the grammar \
so the query reads naturally. Keep every other word and constraint. If an earlier answer is \
missing, keep the reference as it is.
Return JSON: `reason` (written first) and `query`."""

GROUNDER_USER = """Query: {query}

Earlier answers:
{answers}"""
