"""Retrieval actions: plain-Python graph retrieval and the LangChain tools that wrap it.

Modules (import what you need; nothing heavy is imported here):

- `retrievers`: the registry of ``fn(index, query, k) -> list[Hit]`` (bm25, dense, hybrid, and
  higra / progressive from `graph_retrievers`).
- `ppr`: personalised PageRank on scipy sparse matrices.
- `graph_access`: `GraphView` (the graph as arrays), `graph_view(index)`, mention matching.
- `higra`: HiGraRetriever (HiGraAgent §4).
- `progressive`: A2RAG's local -> bridge -> PPR retriever with sufficiency checks (§III-C).
- `dual_channel`: GraphSearch's semantic and relational (triple-pattern) queries (§3.2).
- `hypergraph`: G-RAGent's RetrieveSubgraph / NodeFeature / NeighborCheck (§2.2).
- `lc_tools`: the LangChain tools (`all_tools()`), taking the index from the runtime context.
"""
