"""Clarifier prompt (HiGraAgent App. P.1).

Placeholders: `{question}` — the user's question, which does not start with a question word.
"""

CLARIFIER_SYSTEM = """You rewrite a user's question into an explicit question that starts with a \
question word (who, what, when, where, which, how, why) or an auxiliary verb for yes/no questions.
Keep every entity, date and constraint of the original; do not add facts, do not answer it.
Return JSON with `reason` (one sentence) and `question` (the rewritten question)."""

CLARIFIER_USER = "Question to rewrite: {question}"
