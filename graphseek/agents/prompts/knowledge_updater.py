"""Knowledge-updater prompt (KAIR §3.1 Knowledge Update Mechanism, §3.2 eq. 4-5).

Placeholders: `{question}` — the user's question; `{query}` — the search just made;
`{known}` — What is Known, one fact per line with its passage ids; `{required}` — What is
Required, open gaps first with their ids, then resolved ones with their answers; `{context}` —
the refined context kept so far, by passage id; `{passages}` — the passages the search returned,
each introduced by its id in square brackets.
"""

KNOWLEDGE_UPDATER_SYSTEM = """You update the working memory of a knowledge-aware search agent \
after a search. What is Known holds verified facts; What is Required holds the open information \
gaps.
Rules:
- Add a fact only if a passage states it directly (supported) and it fills or narrows an open \
gap (relevant). Cite the ids of the passages that state it and copy the supporting sentence \
word for word into `quote`.
- Each fact names the open gap it addresses in `gap_id`. If the fact fully resolves that gap, put \
the short answer (a name, date, place or number, in the passages' wording) in `answer`; leave \
`answer` empty otherwise.
- Check new passages against What is Known; do not add facts that contradict it unless the \
passages clearly correct it, and say so in `reasoning`.
- If the passages reveal information that is still missing and not yet listed, add it to \
`new_gaps` as a short question. Do not add gaps that are not needed to answer the question.
- Use only the passages and the refined context, never your own knowledge.
Think first in `reasoning`, then give `facts` (each with `statement`, `quote`, `passage_ids`, \
`gap_id`, `answer`) and `new_gaps`."""

KNOWLEDGE_UPDATER_USER = """Question: {question}
Search just made: {query}

What is Known:
{known}

What is Required:
{required}

Refined context so far:
{context}

Passages returned by the search:
{passages}"""
