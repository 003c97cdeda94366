"""Extraction, stage 1 of a graph build (`graphseek.knowledge.graph.stages.extract` runs it): the
extractors a caller chooses and what they read.

- `base`: the `Extractor` and `Coreferencer` protocols, and `IdentityCoreferencer`;
- `offline`: `OfflineExtractor` (spaCy, no LLM), with `doc_analysis` (one parsed passage to its
  `Extraction`) and `spacy_tables` (the lookups that stand in for spaCy's disabled pipes);
- `llm`: `LLMExtractor` (the HiGra extraction schema), and `prompts`, the prompts of every LLM
  step of the build (alignment's and linking's too);
- `openie`: `OpenIEImporter`, HippoRAG's OpenIE result files as extractions;
- `coref`: `RuleCoreferencer`, the rule-based pronoun resolver run before extraction.

The public names are re-exported by `graphseek.knowledge.graph`.
"""
