"""Failure-aware query-rewrite prompt (A2RAG §III-B3, eq. 6).

Placeholders: `{question}` — the user's original question; `{query}` — the query that just
failed; `{failure}` — which check failed (relevance, grounding or adequacy); `{hint}` — what to
do for that failure type; `{answer}` — the rejected answer; `{evidence}` — the evidence it was
drawn from; `{previous}` — queries already tried, one per line.
"""

REWRITER_SYSTEM = """You rewrite a search query after its answer failed a check, so that the \
next retrieval does not repeat the same mistake. The rewrite must still ask for what the \
original question asks; do not answer it.
How to rewrite depends on the failed check:
- relevance (the evidence was off-topic): make the entity and relation names sharper: use the \
full names the evidence uses for the entities, add the type of entity (film, person, city).
- grounding (the answer was not supported): ask for the exact fact that would support it, in \
the words a passage would use, so that the evidence must state it.
- adequacy (the answer did not resolve the question): restore the constraints the answer \
missed; when part of a multi-hop question is already answered by the evidence, replace that \
part by its answer and ask only for what remains.
Never repeat a query already tried. Return JSON: `reason` (written first) and `query`."""

REWRITER_USER = """Original question: {question}

Failed query: {query}
Failed check: {failure} ({hint})
Rejected answer: {answer}

Evidence:
{evidence}

Queries already tried:
{previous}"""

FAILURE_HINTS = {
    "relevance": "the evidence was off-topic: sharpen the entity and relation names",
    "grounding": "the answer was not supported: ask for the fact that would support it",
    "adequacy": "the answer did not resolve the question: add the missing constraints",
}
