"""The HiGra knowledge graph (HiGraAgent §3, G-RAGent §2.1): extraction, alignment, linking,
hyperedges with topics, and a persistent store.

Build and read::

    from graphseek.knowledge.graph import build_graph, SQLiteGraphStore
    store = build_graph(passages, "index/graph")           # offline (spaCy + MiniLM)
    store = SQLiteGraphStore.open("index/graph")
    store.find_entities("Stephen Curry"), store.relations_of(eid), store.passages_of(eid)
    csr, node_ids = store.adjacency(include_passages=True)

Update: `add_passages(dir, passages)`, `delete_passages(dir, ids)`. Statistics: `graph_stats`,
`format_stats`.

Where things are:

- `build`: the pipeline, top to bottom (`build_graph`, `add_passages`, `delete_passages`;
  `build_graph_with_vectors` also gives the passage pass's vectors, which an index stores);
  `delta`: a delta add, the later stages run onto a stored graph;
- `settings`: what a build is (`GraphSettings`) and how it runs (`RunOptions`); `models`: the
  graph's types (`Entity`, `Relation`, `HyperEdge`, `Extraction`, ...) (name normalisation,
  which the tools share, is `graphseek.knowledge.text`);
- `stages`: one module per stage (extract, passage_pass, align, link, topics, embed, write),
  each a function with typed inputs and outputs, timed by `stages.timed` (its `clock`: wall and
  CPU time and the peak RSS, for the manifest's timings);
- `extract`: the extractors a caller chooses (`offline`, `llm`, `openie`, `coref`, the
  protocols in `base`), their prompts and spaCy tables;
- `algorithms`: what the stages compute with: alignment (`align`, `exact`, `candidates`,
  `records`, `contextual` mention vectors), `link`, `hyper`, `vectors`;
- `memory`: how a build stays within its memory (spill a column, read it back, hold as
  columns, release, the budget, running ahead while the extractor loads): the pipeline and the
  stages reach memory only through its interface (`memory/__init__.py`). Its modules are the
  mechanisms: `spool` (temporary files), the compact containers (`id_columns`, `model_columns`,
  `mention_columns`, `relation_columns`, `mention_table`, `merge_pairs`, `passage_links`,
  `read_sequence`), each behaving as the list or dict it replaces, so an algorithm reads as if
  it were one; `budget` (a build's peak estimated), `run_ahead`;
- `store`: the store on disk: reading it (`store/__init__.py`: `GraphStore`,
  `SQLiteGraphStore`), writing it (`writer`, `sentence_write`), its sentence layer (sentences
  as nodes: `sentences`), a stored graph as a delta add reads it (`stored`), one neighbourhood
  at a time (`neighbourhood`), its statistics (`stats`).
"""

# first: the memory interface imports algorithm modules (align, contextual) that import its
# mechanisms (`memory.spool`, ...); loaded before them, it is there when they ask
from graphseek.knowledge.graph import memory  # noqa: F401
from graphseek.knowledge.graph.algorithms.align import Aligner, AlignmentCache, MergeGroups
from graphseek.knowledge.graph.algorithms.records import types_compatible
from graphseek.knowledge.graph.build import add_passages, build_graph, delete_passages
from graphseek.knowledge.graph.extract.base import Coreferencer, Extractor, IdentityCoreferencer
from graphseek.knowledge.graph.extract.coref import RuleCoreferencer
from graphseek.knowledge.graph.extract.llm import HiGraExtraction, LLMExtractor
from graphseek.knowledge.graph.extract.offline import OfflineExtractor
from graphseek.knowledge.graph.extract.openie import OpenIEImporter, OpenIEStats
from graphseek.knowledge.graph.models import (
    CONCEPT,
    UNTYPED,
    Entity,
    Extraction,
    HyperEdge,
    Mention,
    RawFact,
    RawRelation,
    Relation,
    Topic,
    TopicSubgraph,
    linearise_hyperedge,
    linearise_hyperedges,
)
from graphseek.knowledge.graph.settings import GraphSettings, RunOptions
from graphseek.knowledge.graph.store import GraphStore, SQLiteGraphStore
from graphseek.knowledge.graph.store.stats import format_stats, graph_stats

__all__ = [
    "CONCEPT",
    "UNTYPED",
    "Aligner",
    "AlignmentCache",
    "Coreferencer",
    "Entity",
    "Extraction",
    "Extractor",
    "GraphSettings",
    "GraphStore",
    "HiGraExtraction",
    "HyperEdge",
    "IdentityCoreferencer",
    "LLMExtractor",
    "Mention",
    "MergeGroups",
    "OfflineExtractor",
    "OpenIEImporter",
    "OpenIEStats",
    "RawFact",
    "RawRelation",
    "Relation",
    "RuleCoreferencer",
    "RunOptions",
    "SQLiteGraphStore",
    "Topic",
    "TopicSubgraph",
    "add_passages",
    "build_graph",
    "delete_passages",
    "format_stats",
    "graph_stats",
    "linearise_hyperedge",
    "linearise_hyperedges",
    "types_compatible",
]
