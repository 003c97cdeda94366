"""Retrieval actions: plain-Python graph retrieval and the LangChain tools that wrap it.

Modules (import what you need; nothing heavy is imported here):

- `retrievers`: the registry of ``fn(index, query, k) -> list[Hit]`` (bm25, dense, hybrid, and
  higra / progressive from `graph_retrievers`, named in a lazy table).
- `ppr`: personalised PageRank on scipy sparse matrices.
- `graph_access`: `graph_view(index)` (an index's graph as a `GraphView`, cached per revision),
  re-exporting the lookups of `graph_arrays` (`GraphView`, rankings, mention matching, name
  resolution), `names` (name tokens and keys) and `passage_search`.
- `higra`: HiGraRetriever (HiGraAgent §4).
- `progressive`: A2RAG's local -> bridge -> PPR retriever with sufficiency checks (§III-C).
- `dual_channel`: GraphSearch's semantic and relational (triple-pattern) queries (§3.2).
- `hypergraph`: G-RAGent's RetrieveSubgraph / NodeFeature / NeighborCheck (§2.2).
- `lc_tools`: the LangChain tools (`all_tools()`), taking the index from the runtime context.
"""
