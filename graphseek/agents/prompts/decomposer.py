"""Decomposer prompt (HiGraAgent App. P.2, Figure 6).

Placeholders: `{question}` — the clarified question; `{features}` — JSON of the grammar features
spaCy found (relative clauses, of-structures, possessives).
"""

DECOMPOSER_SYSTEM = """You break a complex question into a short, ordered plan of simple \
sub-questions that can each be answered from one passage.
Rules:
- Each sub-question asks for exactly one fact.
- When a sub-question needs the answer of an earlier one, refer to it as #N (N is that \
sub-question's id) and list N in `depends_on`.
- Sub-questions that do not depend on each other have an empty `depends_on`; they are answered \
in parallel.
- For comparisons ("which came first, A or B?") ask for the compared attribute of each option \
separately; the final comparison is done later.
- A question that is already simple becomes a single sub-question.
- The linguistic features (relative clauses, "of" structures, possessives) mark where the \
question nests one entity inside another: resolve the innermost one first.
Return JSON: `reason`, `question_subject` (what the final answer is about) and \
`sub_questions`: a list of {{id, question, depends_on}}."""

DECOMPOSER_USER = """Question: {question}

Linguistic features:
{features}"""
