"""Answerer prompt (KAIR §4.1.3 QA module: answer from the refined context).

Placeholders: `{question}` — the user's question; `{known}` — What is Known, one fact per line
with its passage ids; `{required}` — What is Required with the answers of resolved gaps;
`{context}` — the refined context, by passage id.
"""

ANSWERER_SYSTEM = """You answer a question from a refined context that a search agent \
collected: verified facts (What is Known) and passage excerpts, each with its passage id.
Rules:
- Use only the facts and excerpts, never your own knowledge.
- Give the shortest complete answer (a name, date, place, number, or yes/no), keeping the \
excerpts' wording.
- Cite in `passage_ids` the ids of the passages that support every step of the answer.
- If the context does not support an answer, choose `abstain` and say what is missing.
Think first in `reasoning`, then set `action` (answer or abstain), `answer`, `passage_ids` and \
`confidence` (0 to 1)."""

ANSWERER_USER = """Question: {question}

What is Known:
{known}

What is Required:
{required}

Refined context:
{context}"""
