"""Graph retrieval for one run of a workflow: HiGraRetriever context, A2RAG's progressive
stages, GraphSearch's two channels and G-RAGent's hypergraph primitives, each returning passages
(`Hit`s, the text the Librarian reads) and linearised graph lines.

The algorithms live in the other `graphseek.tools` modules; this one adapts them to a run's
`Context`: it resolves the index and its knowledge graph, picks the seed-recognition model (with
the run's budget guard), converts results, and — when the index has no graph — falls back to
passage search so that a workflow still answers (each result says so in `note`). The relational
channel takes its triple pattern from the caller (`graphseek.graphs.graph_context.triple_pattern`
reads it off the sub-query with the agents' question analysis).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphseek.knowledge.passages import Hit
from graphseek.llm import model_for_context
from graphseek.llm.budget import run_callbacks
from graphseek.state.context import Context
from graphseek.state.models import SentenceBridge, Usage
from graphseek.tools.retrievers import resolve_index, retrieve

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

log = logging.getLogger(__name__)

#: A2RAG's stages, in escalation order
STAGES = ("local", "bridge", "ppr")
NO_GRAPH = "the index has no knowledge graph: passage search instead"
NO_GRAPH_NOTE = NO_GRAPH
NO_SENTENCES = (
    "the index has no sentence nodes for the bridge retriever (rebuild it with `graphseek "
    "index CORPUS --out DIR`): passage search instead"
)
#: graph lines handed to a role at most
MAX_LINES = 40
_WORD = re.compile(r"\w+")
_NAME = re.compile(r"\b[A-Z][\w'’-]+(?:\s+(?:of|de|the|von|van)?\s*[A-Z][\w'’-]+)*")


@dataclass
class GraphResult:
    """Passages (best first), graph lines, the LLM usage of the retrieval, and a note."""

    hits: list[Hit]
    lines: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    note: str = ""
    state: Any = None  # the progressive retriever's state (adaptive)


def knowledge_graph(index: IndexStore) -> Any | None:
    """The index's `GraphView`, or None when it has none."""
    from graphseek.tools.graph_access import GraphNotFoundError, graph_view

    try:
        return graph_view(index)
    except (GraphNotFoundError, NotImplementedError) as exc:
        log.debug("no knowledge graph for %r: %s", index, exc)
        return None


def has_knowledge_graph(index: IndexStore) -> bool:
    """Whether the index has a knowledge graph, without loading one kept in its store
    (PostgreSQL: read per query)."""
    from graphseek.tools.graph_access import reads_neighbourhoods

    if reads_neighbourhoods(index):
        return bool(getattr(index, "has_graph", False))
    return knowledge_graph(index) is not None


def relation_line(source: str, label: str, target: str) -> str:
    return f"{source} | {label} | {target}"


def _usage(value: Any) -> Usage:
    return value if isinstance(value, Usage) else Usage()


def _merge(*groups: Sequence[Hit], k: int) -> list[Hit]:
    seen: dict[str, Hit] = {}
    for group in groups:
        for hit in group:
            seen.setdefault(hit.passage.id, hit)
    return [h.model_copy(update={"rank": i}) for i, h in enumerate(list(seen.values())[:k], 1)]


# -- HiGraRetriever (HiGraAgent §4) ---------------------------------------------------------------


def higra_context(context: Context, query: str) -> GraphResult:
    """HiGraRetriever's final context for `query`: top relations and the combined passages."""
    index = resolve_index(context)
    if not has_knowledge_graph(index):
        return GraphResult(hits=retrieve(index, query, context.top_k, "hybrid"), note=NO_GRAPH)
    from graphseek.tools.graph_retrievers import higra_retriever

    retriever = higra_retriever(index)
    result = retriever.retrieve(
        query,
        model=model_for_context(context, "entity_recognition"),
        max_retries=context.max_retries,
        callbacks=run_callbacks(context),
        extra_seeds=_bridged(context, index, query),
    )
    hits = result.hits or retriever.hits(result, 2 * context.top_k)
    lines = [relation_line(r.source, r.label, r.target) for r in result.relations]
    return GraphResult(hits=hits, lines=lines, usage=_usage(result.usage), note=result.note)


def librarian_context(context: Context, question: str) -> GraphResult:
    """The Librarian's retrieval for `question`: HiGraRetriever's (relations, passages) when the
    run's retriever is "higra", else the retriever's passages alone."""
    if context.retriever == "higra":
        return higra_context(context, question)
    if context.retriever == "bridge":
        return bridge_context(context, question)
    hits = retrieve(resolve_index(context), question, context.top_k, context.retriever)
    return GraphResult(hits=hits)


def bridge_context(context: Context, question: str) -> GraphResult:
    """The bridge retriever's passages; on an index without sentence nodes (built before they
    existed, or with ``sentences="none"``) or without a graph, hybrid search with a note saying
    why."""
    from graphseek.tools.bridge import NoSentenceLayerError
    from graphseek.tools.graph_access import GraphNotFoundError

    index = resolve_index(context)
    try:
        return GraphResult(hits=retrieve(index, question, context.top_k, "bridge"))
    except GraphNotFoundError:
        return GraphResult(hits=retrieve(index, question, context.top_k, "hybrid"), note=NO_GRAPH)
    except NoSentenceLayerError:
        hits = retrieve(index, question, context.top_k, "hybrid")
        return GraphResult(hits=hits, note=NO_SENTENCES)


# -- A2RAG's progressive retriever (§III-C) ------------------------------------------------------


def progressive_stage(
    context: Context, stage: str, query: str, previous: Any = None, hits: Sequence[Hit] = ()
) -> GraphResult:
    """Run one stage (local, bridge or ppr) for `query`, carrying the retriever state of the
    stages before (`previous`). Evidence accumulates: the result holds every passage and
    relation found so far in this retrieval."""
    index = resolve_index(context)
    k = 2 * context.top_k
    from graphseek.tools import progressive as pr
    from graphseek.tools.graph_access import passage_search_for
    from graphseek.tools.neighbourhood import local_graph, run_stage

    # a graph kept in its store (PostgreSQL) is read one stage's neighbourhood at a time
    local = local_graph(index) if getattr(index, "has_graph", False) else None
    view = local.base if local is not None else knowledge_graph(index)
    if view is None:
        return GraphResult(hits=_fallback_stage(index, stage, query, hits, context), note=NO_GRAPH)
    search = passage_search_for(index)
    step: pr.StepName
    if stage == "local" or previous is None:
        step = "stage_local"
        state = pr.start(
            view,
            query,
            query_vector=search.embed(query) if query.strip() else None,
            extra_seeds=[e for e, _ in _bridged(context, index, query)],
        )
    else:
        step = "stage_bridge" if stage == "bridge" else "stage_ppr"
        state = previous
    ranking = [pid for pid, _ in search(query, k)] if step == "stage_ppr" else []
    view, state = run_stage(
        local if local is not None else view, step, state, passage_ranking=ranking
    )
    passages = pr.evidence_passages(view, state)[:k]
    found = [
        Hit(passage=index.get(pid), score=1.0 / r, rank=r)
        for r, pid in enumerate(passages, 1)
        if pid in index
    ]
    lines = []
    for rid in state.relations[:MAX_LINES]:
        pos = view.relation_pos.get(rid)
        if pos is not None:
            lines.append(relation_line(*view.relation_triple(pos)))
    note = "" if state.entity_seeds else "no entity of the query is in the graph"
    return GraphResult(hits=found, lines=lines, note=note, state=state)


def _bridged(context: Context, index: IndexStore, query: str) -> list[tuple[str, float]]:
    """The entities semantic bridging adds to the seeds when `context.bridge_seeds` is on."""
    if not context.bridge_seeds:
        return []
    from graphseek.tools.graph_retrievers import bridge_seeds_for

    return bridge_seeds_for(index, query)


#: sentence bridges a run offers its Seeker at most (`question_bridges`)
MAX_QUESTION_BRIDGES = 8


def follows_bridges(context: Context) -> bool:
    """Whether a run's retrieval bridges through sentences (retriever "bridge", or `bridge_seeds`
    with higra or progressive): then `dual_agent` offers the entities bridging reaches as next
    hops' subjects. Off for every other retriever, so their runs do not change."""
    if context.retriever == "bridge":
        return True
    return bool(context.bridge_seeds) and context.retriever in ("higra", "progressive")


def question_bridges(
    context: Context, question: str, limit: int = MAX_QUESTION_BRIDGES
) -> list[SentenceBridge]:
    """The entities semantic bridging reaches from the ones `question` names, each with the
    sentence that led there (`BridgeRetriever.bridges`): best activation first, one per entity,
    none the question names itself, at most `limit`. [] when the run does not bridge
    (`follows_bridges`), or the index has no graph or no sentence nodes."""
    if not follows_bridges(context):
        return []
    from graphseek.tools.bridge import NoSentenceLayerError
    from graphseek.tools.graph_access import GraphNotFoundError
    from graphseek.tools.graph_retrievers import bridge_retriever

    index = resolve_index(context)
    try:
        found = bridge_retriever(index).bridges(question)
    except (GraphNotFoundError, NoSentenceLayerError, NotImplementedError) as exc:
        log.debug("no sentence bridges for %r: %s", question, exc)
        return []
    asked = f" {' '.join(_WORD.findall(question.casefold()))} "
    best: dict[str, SentenceBridge] = {}
    for bridge in found:
        types = bridge.target_types or tuple(() for _ in bridge.targets)
        for name, kinds in zip(bridge.targets, types, strict=False):
            key = " ".join(_WORD.findall(name.casefold()))
            if not key or f" {key} " in asked or key == bridge.source.casefold():
                continue
            item = SentenceBridge(
                entity=name,
                types=list(kinds),
                source=bridge.source,
                sentence=bridge.sentence,
                passage_id=bridge.passage_id,
                round=bridge.round,
                weight=round(bridge.weight, 4),
            )
            if key not in best or item.weight > best[key].weight:
                best[key] = item
    ranked = sorted(best.values(), key=lambda b: (-b.weight, b.round))
    return ranked[:limit]


def _fallback_stage(
    index: IndexStore, stage: str, query: str, hits: Sequence[Hit], context: Context
) -> list[Hit]:
    """Passage-only stand-ins: local = hybrid search; bridge = BM25 on the query plus the names
    the passages found so far mention (a 2-hop expansion); ppr = a deeper dense search."""
    k = context.top_k
    if stage == "local":
        return retrieve(index, query, k, "hybrid")
    if stage == "bridge":
        known = {n.lower() for n in _NAME.findall(query)}
        names: list[str] = []
        for hit in hits[:3]:
            for name in [hit.passage.title, *_NAME.findall(hit.passage.text)]:
                if name and name.lower() not in known and name not in names:
                    names.append(name)
        expanded = f"{query} {' '.join(names[:6])}".strip()
        return _merge(hits, retrieve(index, expanded, k, "bm25"), k=2 * k)
    return _merge(hits, retrieve(index, query, 3 * k, "dense"), k=3 * k)


# -- GraphSearch's dual channels (§3.2) ----------------------------------------------------------


def semantic_channel(context: Context, query: str) -> GraphResult:
    """The semantic channel: passages for one sub-query (chunk-level text)."""
    from graphseek.tools.dual_channel import semantic_query

    return GraphResult(hits=semantic_query(resolve_index(context), query, context.top_k))


def relational_channel(
    context: Context, query: str, pattern: tuple[str, str, str] | None
) -> GraphResult:
    """The relational channel: the triples matching `pattern` (the sub-query's (focus entity,
    relation words, ?x), None when it names no entity), and the passages they were extracted
    from. Without a graph: BM25 passages (lexical matches of the names)."""
    index = resolve_index(context)
    if not has_knowledge_graph(index):
        return GraphResult(hits=retrieve(index, query, context.top_k, "bm25"), note=NO_GRAPH)
    from graphseek.tools.dual_channel import relational_query

    if pattern is None:
        return GraphResult(hits=[], note=f"no entity to anchor a triple pattern in {query!r}")
    result = relational_query(index, [pattern], top_k=context.top_k)
    lines = [relation_line(t.subject, t.label, t.object) for t in result.triples[:MAX_LINES]]
    hits = [
        Hit(passage=index.get(pid), score=1.0 / r, rank=r)
        for r, pid in enumerate(result.passage_ids[: context.top_k], 1)
        if pid in index
    ]
    return GraphResult(hits=hits, lines=lines, note="; ".join(result.unresolved))


# -- G-RAGent's hypergraph primitives (§2.2) -----------------------------------------------------


def topic_labels(context: Context) -> list[str]:
    """The semantic topics of the index's hypergraph ([] without a graph); over a graph kept
    in its store (PostgreSQL), read without loading the graph."""
    from graphseek.tools.hypergraph import topics_of

    return [f"{t.label}" for t in topics_of(resolve_index(context)) or []]


def hypergraph_action(
    context: Context, primitive: str, query: str, topic: str = "", entity: str = "", attr: str = ""
) -> GraphResult:
    """Run one primitive (retrieve_subgraph(topic), node_feature(entity, attr),
    neighbor_check(entity, relation)); the observation is its linearised text, grounded by the
    passages it maps back to, ranked by the query's hybrid search (unmatched ones after).
    Without a graph, or when the primitive finds nothing: the query's hybrid passages
    (`graphseek.tools.lc_tools.run_primitive`, which the react workflow's tools run)."""
    from graphseek.tools.lc_tools import run_primitive

    found = run_primitive(
        resolve_index(context), primitive, query, topic, entity, attr, k=context.top_k
    )
    note = NO_GRAPH if found.note == NO_GRAPH_NOTE else found.note
    return GraphResult(hits=found.hits, lines=found.lines, note=note)
