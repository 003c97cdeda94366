"""What the stages of a graph build compute with (`graphseek.knowledge.graph.stages` runs them):

- alignment (stage 3, HiGra Phase 2): `align` (`Aligner`, semantic merging), `exact` (the exact
  rule), `candidates` (the pairs semantic merging judges), `records` (entity records compared),
  `contextual` (the mention vectors the passage pass leaves for alignment);
- `link` (stage 4, Phases 3 and 4): entity-entity relations and entity-passage links;
- `hyper` (stage 5): n-ary facts as hyperedges, and their topics;
- `vectors` (stage 5, `embed`): the texts the graph embeds, its embedder and their cache.

These modules use the memory package's mechanisms (`graphseek.knowledge.graph.memory`'s
modules) directly, so that the stages need only its interface.
"""
