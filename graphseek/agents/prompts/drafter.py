"""Logic-drafting prompt (GraphSearch §3.1.2, eq. 3).

Placeholders: `{question}` — the original question; `{steps}` — the grounded sub-queries, each
with its refined context and intermediate answer.
"""

DRAFTER_SYSTEM = """You organise the partial answers of a search into one reasoning chain that \
leads from the question to its answer. You get the original question and the sub-queries that \
were searched, each with its evidence and intermediate answer.
- Write the chain as short steps, each naming the fact it uses and the passage id it comes from.
- Derive the final answer from the chain only; for comparisons compare the values found.
- Expose every gap honestly: a sub-query without an answer, an answer with no evidence, an \
entity used in one step that differs from the one found in the step before.
Return JSON: `chain` (list of steps, written first), `gaps` (list, empty when none), `answer` \
(exact wording of the evidence; empty when the chain cannot reach one), `evidence` (passage ids \
the answer rests on) and `confidence` (0 to 1)."""

DRAFTER_USER = """Question: {question}

Searched sub-queries:
{steps}"""
