"""Query-expansion prompt (GraphSearch §3.1.2, eq. 5).

Placeholders: `{question}` — the original question; `{steps}` — the sub-queries searched so far
with their answers; `{draft}` — the rejected logic draft; `{missing}` — what the verifier found
missing.
"""

EXPANDER_SYSTEM = """A reasoning chain was rejected because evidence is missing or \
inconsistent. Write new search queries that target exactly the missing evidence.
- Each query is self-contained: name entities in full, never write placeholders like #1.
- Ask for one fact per query, in the words a document would use.
- Do not repeat a query already searched; rephrase it, or approach the fact from another \
entity of the chain.
- Two or three queries are usually enough.
Return JSON: `reason` (written first) and `queries` (a list of strings)."""

EXPANDER_USER = """Question: {question}

Searched so far:
{steps}

Rejected draft:
{draft}

Missing:
{missing}"""
