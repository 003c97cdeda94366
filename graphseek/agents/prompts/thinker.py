"""ReAct thought prompt (G-RAGent §2.2).

Placeholders: `{question}` — the user's question; `{topics}` — the semantic topics of the
knowledge hypergraph, one per line; `{history}` — the previous thoughts, actions and
observations, oldest first; `{step}` / `{max_steps}` — the step budget.

Every prompt keeps what changes from step to step at its end (the history grows there, the step
counter comes last), so that a server's prefix cache reuses the rest.
"""

THINKER_SYSTEM = """You answer a multi-hop question step by step over a knowledge hypergraph \
whose facts are grouped by semantic topic. Each step you write one thought that sets the local \
objective and chooses exactly one decision:
- RETRIEVE: external knowledge is needed. Give the sub-question you are resolving as `query` \
and predict the most relevant `topic` from the list. By default the action fetches that topic's \
sub-hypergraph (`primitive` "retrieve_subgraph"); for a precise lookup use "node_feature" with \
`entity` and `attribute`, or "neighbor_check" with `entity` and the relation in `attribute`.
- REASON: the answer to the current sub-question can be derived from the observations so far \
without new retrieval; put that sub-answer in `answer`.
- FINISH: the observations are enough to answer the whole question; put the final answer, in \
the exact wording of the evidence, in `answer`.
Stop early: as soon as the accumulated observations suffice, set `sufficient` to true and \
choose FINISH instead of retrieving more. Do not retrieve the same topic for the same \
sub-question twice. If the budget is nearly spent, FINISH with the best supported answer, or \
with an empty answer when nothing supports one.
Return JSON: `reason` (written first), `decision`, `query`, `topic`, `primitive`, `entity`, \
`attribute`, `answer`, `sufficient`."""

THINKER_USER = """Question: {question}

Topics:
{topics}

History:
{history}

Step {step} of {max_steps}."""

THINKER_TOOLS_SYSTEM = """You answer a multi-hop question step by step over a knowledge \
hypergraph whose facts are grouped by semantic topic, by calling tools. Each step, think about \
the sub-question you are resolving now and call one tool:
- retrieve_subgraph(topic, query): the facts of the most relevant topic from the list, and the \
passages behind them; `query` is the sub-question.
- node_feature(entity, attr, query) or neighbor_check(entity, relation, query): a precise lookup \
about one entity.
- search_passages(query), search_entities(query), neighbors(entity), ppr_search(entities), \
relational_query(patterns): other ways to find evidence.
- finish(answer, passage_ids, reason): as soon as the observations suffice, give the final \
answer in the exact words of the evidence with the ids of the passages that support it. Stop \
early: do not retrieve more once you can answer. If the budget is nearly spent, finish with the \
best supported answer, or with an empty answer when nothing supports one.
Do not call the same tool with the same arguments twice."""
"""System prompt of the tool-calling thinker (no placeholders)."""

THINKER_TOOLS_USER = """Question: {question}

Topics:
{topics}"""
"""Placeholders `{question}` and `{topics}` as in `THINKER_USER`. No history: the tool calls and
results follow as messages; no step counter: it is `THINKER_TOOLS_STEP`, the last message, so
that the prompt up to it stays the same from step to step (a server's prefix cache reuses it)."""

THINKER_TOOLS_STEP = """Step {step} of {max_steps}: call a tool."""
"""The last message of a tool-calling step. Placeholders: `{step}` / `{max_steps}`."""
