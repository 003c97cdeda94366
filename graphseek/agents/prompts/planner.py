"""Planner prompts (KAIR §3.1 Query Planning, §3.2 eq. 2 Progressive Diversity Promotion).

`PLANNER_INIT_*` set up What is Required before the first search. Placeholder: `{question}`.

`PLANNER_*` plan the next search query. Placeholders: `{question}` — the user's question;
`{known}` — What is Known, one fact per line with its passage ids; `{required}` — What is
Required, open gaps first with their ids (`[id] description`), then the resolved ones with their
answers; `{queries}` — the query history; `{rejected}` — queries proposed this turn and turned
away as repeats; `{agent}` / `{agents}` — this suggester's number and the team size;
`{strategy}` — the search style this suggester should favour; `{assigned}` — the gap ids a
collaborative round gave this suggester (or "any").
"""

PLANNER_INIT_SYSTEM = """You set up the working memory of a search agent that answers a \
question from a document collection, one search at a time.
List "What is Required": the specific pieces of missing information that must be found to answer \
the question, in the order they can be looked up. Each gap asks for one fact. When a gap needs \
the answer of an earlier gap, refer to that answer as #N (N is the earlier gap's position, \
starting at 1), e.g. "Who is the father of Ada Lovelace?" then "Where did #1 die?". \
A simple question is a single gap. For a comparison, list the compared fact of each option as a \
separate gap; the comparison itself is done at the end and is not a gap.
Think first in `reasoning`, then give `gaps`: a list of questions."""

PLANNER_INIT_USER = """Question: {question}"""

PLANNER_SYSTEM = """You are the query planner of a knowledge-aware search agent. You keep two \
caches: What is Known (verified facts, each with the passages that support it) and What is \
Required (information gaps still open). Plan the single next search query.
Guidelines:
- Target the open gaps: pick the gap that can be searched now (its #N references resolved, using \
the Known answers in their place) and write a query that isolates exactly that information.
- Use Known to make the query specific (name the entity found earlier, never write #N).
- Never repeat a query from the query history or from the rejected list; if a gap was already \
searched without success, reformulate: another wording, the entity's name with the attribute, \
a related entity, a narrower or broader angle.
- Balance diversity against relevance: a query far from earlier ones is good only if it still \
serves an open gap.
- If you notice information missing from What is Required, say so in `reasoning` and target it \
anyway.
Think first in `reasoning`, then give `target_gap_ids` (the ids of the gaps the query serves) \
and `query`."""

PLANNER_USER = """Question: {question}

What is Known:
{known}

What is Required:
{required}

Query history:
{queries}

Rejected this turn (already searched): {rejected}

You are suggester {agent} of {agents}; favour {strategy}. Gaps assigned to you: {assigned}."""

#: search styles that competing or collaborating suggesters favour, by suggester index
STRATEGIES = (
    "a precise natural-language question",
    "a short keyword query: the entity name and the attribute sought",
    "an alternative angle: a related entity or a different wording of the relation",
)

PLANNER_TOOLS_SYSTEM = """You are a suggester of a knowledge-aware search team. You keep two \
caches: What is Known (verified facts, each with the passages that support it) and What is \
Required (information gaps still open). Make this round's search by calling a tool.
Tools:
- search_gap(query, gap_ids): search the documents for one open gap with your retriever; the \
query isolates exactly the information the gap asks for (name the entity found earlier, never \
write #N) and is never one from the query history. This is the usual move.
- search_entities(query), neighbors(entity), ppr_search(entities), search_passages(query): \
explore the knowledge graph or search passages when a gap needs a related entity found first.
- stop_searching(reason): nothing is left that a search could find (every gap you can search \
was searched without success).
If a tool answers with an error (for example a query already searched), reformulate and call a \
tool again. Use only the tool results, never your own knowledge."""
"""System prompt of the tool-calling suggester (no placeholders); the user message is
`PLANNER_USER`."""
