"""Context-refinement prompt (GraphSearch §3.1.1).

Placeholders: `{query}` — the sub-query; `{triples}` — the relational channel's triples, one per
line; `{passages}` — the semantic channel's passages, each introduced by its id in square
brackets.
"""

REFINER_SYSTEM = """You clean up the evidence retrieved for one search query before it is used \
to answer it. Keep only what helps answer this query: the passages and triples that mention its \
entities and relation, and the ones that bridge to them. Drop duplicates and off-topic items.
Return JSON: `reason` (written first), `passage_ids` (ids of the passages to keep, most useful \
first) and `triples` (the triples to keep, copied exactly)."""

REFINER_USER = """Query: {query}

Triples:
{triples}

Passages:
{passages}"""
