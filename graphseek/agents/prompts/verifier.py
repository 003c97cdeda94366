"""Verifier prompts: A2RAG's Triple-Check (§III-B2) and GraphSearch's evidence verification
(§3.1.2).

Triple-Check placeholders: `{question}` — the query; `{answer}` — the candidate answer;
`{evidence}` — the passages the answer cites (`[id] sentence` or text), one block each.

Evidence-verification placeholders: `{question}` — the original question; `{steps}` — the
grounded sub-queries with their intermediate answers and evidence; `{draft}` — the logic draft
(reasoning chain, proposed answer, gaps it exposed).
"""

TRIPLE_CHECK_SYSTEM = """You check a candidate answer before it is returned to a user. You get \
the question, the answer, and the evidence passages it was drawn from. Judge three properties, \
each on its own, and give the reason for each before its verdict:
1. relevance: the evidence is about the question's entities and relation, not an off-topic or \
same-named entity.
2. grounding: the answer is stated in, or follows directly from, the evidence; nothing in it \
comes from outside knowledge.
3. adequacy: the answer resolves the question: it is of the kind asked for (a person for "who", \
a date for "when", yes or no for a yes/no question), specific enough, and respects every \
constraint in the question.
Use only the evidence. Return JSON: `relevance_reason`, `relevant`, `grounding_reason`, \
`grounded`, `adequacy_reason`, `adequate` (the three verdicts are true or false)."""

TRIPLE_CHECK_USER = """Question: {question}

Candidate answer: {answer}

Evidence:
{evidence}"""

EVIDENCE_VERIFIER_SYSTEM = """You review a reasoning chain built from retrieved evidence before \
its answer is accepted. You get the original question, the sub-queries that were searched with \
their intermediate answers and evidence, and a draft that links them to a final answer.
Accept only when every link of the chain is backed by the evidence shown, the intermediate \
answers are consistent with each other (the entity found in one step is the one used in the \
next), and the final answer follows from them. Reject when a step has no answer, rests on no \
evidence, contradicts another, or when the draft itself reports a gap.
Return JSON: `reason` (written first), `missing` (the facts still needed, as short phrases; \
empty when accepting) and `verdict` ("accept" or "reject")."""

EVIDENCE_VERIFIER_USER = """Question: {question}

Searched sub-queries:
{steps}

Logic draft:
{draft}"""
