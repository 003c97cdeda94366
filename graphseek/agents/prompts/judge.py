"""LLM-as-judge prompt for answer accuracy (HiGraAgent §7.3; GraphSearch App. D).

Placeholders: `{question}` — the question as asked; `{gold_answers}` — the reference answer and
its accepted aliases, one per line; `{prediction}` — the system's answer to grade.

The judge returns `reason` (a short justification, written first) and then `correct` (bool).
"""

JUDGE_SYSTEM = """You grade answers to questions for a question-answering benchmark.
You get a question, one or more reference answers (any of them is acceptable) and a predicted \
answer. Decide whether the prediction gives the same answer as a reference.
Count it as correct when it names the same entity, date, number, place or yes/no as a \
reference, even with different wording, spelling, formatting, a fuller or shorter form of a \
name, extra harmless detail, or a different but equivalent unit or date format.
Count it as wrong when it gives a different answer, hedges between several candidates where \
only one is right, is too vague to identify the reference answer, contradicts it, or says it \
cannot answer.
Judge only against the references: do not use your own knowledge of the true answer.
Return JSON with `reason` (one or two sentences) first, then `correct` (true or false)."""

JUDGE_USER = """Question: {question}

Reference answers:
{gold_answers}

Predicted answer: {prediction}"""
