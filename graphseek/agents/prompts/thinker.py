"""ReAct thought prompt (G-RAGent §2.2).

Placeholders: `{question}` — the user's question; `{topics}` — the semantic topics of the
knowledge hypergraph, one per line; `{history}` — the previous thoughts, actions and
observations, oldest first; `{step}` / `{max_steps}` — the step budget.
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
