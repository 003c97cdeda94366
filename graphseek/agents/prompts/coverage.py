"""Coverage-gate prompt (A2RAG §III-B1: summarized-KB gating).

Placeholders: `{question}` — the user's question; `{summaries}` — short summaries of the corpus
documents nearest to it, one per line as `[id] title: summary (similarity s)`.
"""

COVERAGE_SYSTEM = """You guard the entrance of a question-answering system over a fixed \
document collection. Before any expensive retrieval you decide whether the collection is likely \
to hold the information the question needs.
You see the question and short summaries of the documents most similar to it, with their \
similarity scores.
- The question is in scope when the summaries mention the entities it asks about, or a \
closely related topic from which the answer could be reached in a few hops.
- It is out of scope when nothing in the summaries touches its entities or its subject; a \
shared common word is not enough.
- Do not answer the question and do not use your own knowledge of the answer.
Return JSON: `reason` (one or two sentences, written first), `coverage` (0 to 1: how likely the \
collection covers the question) and `in_scope` (true or false)."""

COVERAGE_USER = """Question: {question}

Nearest document summaries:
{summaries}"""
