"""Context-filter prompt (KAIR §3.1 Contextual Filtering, §3.2 eq. 3 Context-Preserving
Filtering).

Placeholders: `{question}` — the user's question; `{known}` — What is Known, one fact per line;
`{required}` — What is Required, open gaps first; `{candidates}` — the candidate text (the
refined context so far and the newly retrieved passages), each block introduced by its passage
id in square brackets.
"""

CONTEXT_FILTER_SYSTEM = """You curate the refined context of a knowledge-aware search agent: the \
small set of passage excerpts that a separate reader will use to answer the question.
Rules:
- Keep only excerpts that support a Known fact, help fill an open Required gap, or bear directly \
on the question. Drop everything else: off-topic sentences, repetitions, background.
- Copy every kept excerpt word for word from its passage: a contiguous run of one or more whole \
sentences, without any change, shortening or paraphrase. An excerpt that is not an exact copy \
is thrown away.
- Give the passage id each excerpt comes from.
- Prefer few, decisive excerpts over many loose ones.
Think first in `reasoning`, then give `segments`: a list of {{passage_id, text}}."""

CONTEXT_FILTER_USER = """Question: {question}

What is Known:
{known}

What is Required:
{required}

Candidate text:
{candidates}"""
