"""LangChain tools over the passage index and the knowledge graph, for tool-calling agents.

Thin wrappers: each tool validates its arguments with a pydantic schema, finds the index of the
run through the runtime context (``runtime.context``, a `graphseek.state.Context`: `index` or
`index_path`), calls the plain-Python retrieval code of `graphseek.tools`, and returns text sized
for a prompt (at most ``context.tool_char_budget`` characters, default
`DEFAULT_CHAR_BUDGET`) that names the passage ids grounding it. The tools use
``response_format="content_and_artifact"``: the `ToolMessage` content is the text, its artifact a
dict with ``passage_ids`` (and ``entity_ids`` where relevant), so a workflow can collect evidence
without parsing text.

A graph tool on an index without a graph answers with a message saying so (and suggesting
`search_passages`) rather than failing the run.

`all_tools()` lists them; `passage_tools()` / `graph_tools()` split them. `react_tools()` is
the action set of the ``react`` workflow (and of tool-calling agents generally): passage search,
entity search, neighbours, PPR expansion, relational queries, G-RAGent's three hypergraph
primitives and `finish`, which carries the final answer and its evidence passage ids and ends the
run (the workflow routes on it; running it only echoes the answer).

G-RAGent's primitives (`retrieve_subgraph`, `node_feature`, `neighbor_check`) take an optional
``query``: the sub-question the step resolves. With it the result is grounded as the ``react``
workflow needs (`run_primitive`): the passages the primitive maps back to, ranked by the query's
hybrid search, then the query's own passages; and without a knowledge graph, the query's
passages alone. Their artifact then also carries ``scores``, ``lines`` and ``note``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.tools import BaseTool, tool
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, Field

from graphseek.knowledge.passages import Hit
from graphseek.state.bounds import Name, Names, Reasoning
from graphseek.state.context import Context
from graphseek.tools import dual_channel, hypergraph, progressive
from graphseek.tools.graph_access import (
    GraphNotFoundError,
    GraphText,
    graph_view,
    label_similarity,
    reads_neighbourhoods,
    resolve_entity,
)
from graphseek.tools.neighbourhood import local_graph, run_stage
from graphseek.tools.retrievers import resolve_index, retrieve

if TYPE_CHECKING:
    from graphseek.knowledge.storage import IndexStore

DEFAULT_CHAR_BUDGET = 4000
NO_GRAPH = (
    "This index has no knowledge graph, so graph tools cannot run; use search_passages "
    "instead (a graph is built with `graphseek index --graph`)."
)


Artifact = dict[str, Any]
ToolOutput = tuple[str, Artifact]
#: graph lines an observation keeps at most
MAX_LINES = 40
NO_GRAPH_NOTE = "the index has no knowledge graph: passage search instead"


# -- output sizing --------------------------------------------------------------------------------


def char_budget(context: Any) -> int:
    try:
        return max(200, int(getattr(context, "tool_char_budget", DEFAULT_CHAR_BUDGET)))
    except (TypeError, ValueError):
        return DEFAULT_CHAR_BUDGET


def fit_lines(lines: Sequence[str], budget: int, footer: str = "") -> str:
    """Lines cut to `budget` characters in all; the footer (e.g. the passage ids) is always
    kept, and a note says how many lines were left out."""
    room = budget - (len(footer) + 1 if footer else 0)
    out: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        cost = len(line) + (1 if out else 0)
        reserve = 40 if i < len(lines) - 1 else 0
        if used + cost + reserve > room:
            cut = i
            if not out:  # a first line too long on its own: shorten it
                out.append(line[: max(0, room - 45)].rstrip() + " ...")
                cut = i + 1
            if len(lines) - cut:
                out.append(f"... ({len(lines) - cut} more lines cut to fit)")
            break
        out.append(line)
        used += cost
    text = "\n".join(out)
    return f"{text}\n{footer}" if footer else text


def format_passages(passages: Sequence[Any], budget: int, scores: Sequence[float] = ()) -> str:
    """``[id] Title: text`` blocks, texts shortened evenly so that all fit in `budget`."""
    if not passages:
        return "No passages found."
    footer = "Passage ids: " + ", ".join(p.id for p in passages)
    room = max(200, budget - len(footer) - 2)
    per = max(80, room // len(passages) - 2)
    blocks = []
    for p in passages:
        head = f"[{p.id}] {p.title}: " if p.title else f"[{p.id}] "
        text = " ".join(p.text.split())
        allowed = max(20, per - len(head))
        if len(text) > allowed:
            text = text[: allowed - 4].rstrip() + " ..."
        blocks.append(head + text)
    return fit_lines(blocks, budget, footer)


def _graph_output(result: GraphText, budget: int) -> ToolOutput:
    footer = "Passage ids: " + (", ".join(result.passage_ids[:40]) or "(none)")
    if len(result.passage_ids) > 40:
        footer += f" (+{len(result.passage_ids) - 40} more)"
    text = fit_lines(result.text.splitlines(), budget, footer)
    return text, {"passage_ids": list(result.passage_ids), "entity_ids": list(result.entity_ids)}


def _run_graph(
    runtime: ToolRuntime[Context], fn: Callable[[IndexStore, int], ToolOutput]
) -> ToolOutput:
    index = resolve_index(runtime.context)
    if reads_neighbourhoods(index):  # a graph kept in its store
        if not getattr(index, "has_graph", False):
            return NO_GRAPH, {"passage_ids": []}
    else:
        try:
            graph_view(index)
        except GraphNotFoundError:
            return NO_GRAPH, {"passage_ids": []}
    return fn(index, char_budget(runtime.context))


def _graph_reader(index: IndexStore) -> tuple[Any, Any]:
    """(view to find entities in, `LocalGraph` or None): over a graph kept in its store
    (PostgreSQL) the catalogue view and a reader of neighbourhoods, so a tool reads the rows
    around its entities; otherwise the whole graph's view and None."""
    local = local_graph(index)
    return (local.base if local is not None else graph_view(index)), local


# -- argument schemas -----------------------------------------------------------------------------


class SearchPassagesArgs(BaseModel):
    query: str = Field(description="What to look for, as a short question or keyword phrase.")
    k: int = Field(default=5, ge=1, le=20, description="How many passages to return.")
    method: Literal["hybrid", "bm25", "dense"] = Field(
        default="hybrid",
        description="hybrid (default): keywords and meaning; bm25: exact words (names, "
        "numbers); dense: meaning, for paraphrases.",
    )


class SearchEntitiesArgs(BaseModel):
    query: str = Field(description="A name, an alias or a description of the entity.")
    k: int = Field(default=8, ge=1, le=30, description="How many entities to return.")


class EntityArgs(BaseModel):
    entity: str = Field(description="The entity: its id (e.g. from search_entities) or name.")


class NeighborsArgs(EntityArgs):
    relation: str | None = Field(
        default=None,
        description="Optional relation words to keep only matching edges, e.g. 'born in', "
        "'director', 'mother'.",
    )
    k: int = Field(default=15, ge=1, le=50, description="At most this many edges.")


class QueryArgs(BaseModel):
    query: str = Field(description="The question (or sub-question) to retrieve evidence for.")
    k: int = Field(default=5, ge=1, le=20, description="How many passages to return.")


class SeedsArgs(BaseModel):
    entities: list[str] = Field(
        min_length=1,
        max_length=8,
        description="Entity ids or names to start from (two or more for bridge discovery).",
    )


class BridgeArgs(SeedsArgs):
    hops: int = Field(default=2, ge=1, le=3, description="Hop budget from each entity.")


class PPRArgs(SeedsArgs):
    k: int = Field(default=5, ge=1, le=20, description="How many passages to return.")


class TripleArg(BaseModel):
    subject: str = Field(description="Subject entity name, or a placeholder such as ?x.")
    relation: str = Field(description="Relation words, e.g. 'director', 'place of birth'.")
    object: str = Field(description="Object entity name, or a placeholder such as ?y.")


class RelationalArgs(BaseModel):
    patterns: list[TripleArg] = Field(
        min_length=1,
        max_length=5,
        description="One triple pattern, or a chain where a placeholder found by one pattern "
        "is used in the next: [(Film X, director, ?d), (?d, place of birth, ?p)].",
    )


class StepQuery(BaseModel):
    query: str = Field(
        default="",
        description="The sub-question this step resolves; the passages found are ranked by it.",
    )


class TopicArgs(StepQuery):
    topic: str = Field(description="A topic id (t-0001) or a few words describing the topic.")


class NodeFeatureArgs(EntityArgs, StepQuery):
    attr: Literal["name", "aliases", "types", "description", "passages", "all"] = Field(
        default="all", description="Which attribute to read."
    )


class NeighborCheckArgs(EntityArgs, StepQuery):
    relation: str | None = Field(
        default=None, description="Optional relation words to filter the facts, e.g. 'married'."
    )


# -- passage and entity tools ---------------------------------------------------------------------


@tool(args_schema=SearchPassagesArgs, response_format="content_and_artifact")
def search_passages(
    query: str,
    runtime: ToolRuntime[Context],
    k: int = 5,
    method: Literal["hybrid", "bm25", "dense"] = "hybrid",
) -> ToolOutput:
    """Search the document collection for passages relevant to a query. Returns passages as
    [passage id] Title: text. Use the passage ids to cite evidence."""
    index = resolve_index(runtime.context)
    hits = index.search(query, k=k, method=method)
    passages = [h.passage for h in hits]
    text = format_passages(passages, char_budget(runtime.context))
    return text, {"passage_ids": [p.id for p in passages]}


@tool(args_schema=SearchEntitiesArgs, response_format="content_and_artifact")
def search_entities(query: str, runtime: ToolRuntime[Context], k: int = 8) -> ToolOutput:
    """Find entities (people, places, works, organisations, concepts) in the knowledge graph
    by name or description. Returns their ids, names, aliases and types, for the other graph
    tools."""

    def run(index: IndexStore, budget: int) -> ToolOutput:
        view, local = _graph_reader(index)
        qv = index.embed([query])[0] if query.strip() else None
        ranked = view.rank_entities(query, k, view.graph_query(query, qv))
        if local is not None:
            local.link([e for e, _ in ranked])
            view = local.view()
        lines, pids = [], []
        for e, _ in ranked:
            extra = []
            if view.aliases[e]:
                extra.append("aliases: " + ", ".join(view.aliases[e][:4]))
            if view.types[e]:
                extra.append("types: " + ", ".join(view.types[e][:3]))
            passages = view.passages_of(e)
            pids.extend(passages[:3])
            more = f" +{len(passages) - 3}" if len(passages) > 3 else ""
            lines.append(
                f"[{view.entity_ids[e]}] {view.names[e]} ({'; '.join(extra)}) "
                f"in passages: {', '.join(passages[:3])}{more}"
            )
        text = fit_lines(lines or ["No entity found."], budget)
        return text, {
            "passage_ids": list(dict.fromkeys(pids)),
            "entity_ids": [view.entity_ids[e] for e, _ in ranked],
        }

    return _run_graph(runtime, run)


@tool(args_schema=NeighborsArgs, response_format="content_and_artifact")
def neighbors(
    entity: str, runtime: ToolRuntime[Context], relation: str | None = None, k: int = 15
) -> ToolOutput:
    """List the relations of an entity in the knowledge graph, as (subject, relation, object)
    with the passages they come from. Give relation words to keep only matching ones."""

    def run(index: IndexStore, budget: int) -> ToolOutput:
        view, local = _graph_reader(index)
        e = resolve_entity(view, entity)
        if e is None:
            return f"No entity matches {entity!r}.", {"passage_ids": []}
        if local is not None:
            local.expand([e])
            view = local.view()
        rels = [int(r) for r in view.relations_of(e)]
        if relation:
            scored = [(label_similarity(relation, view.rel_labels[r]), r) for r in rels]
            rels = [r for s, r in sorted(scored, key=lambda x: (-x[0], x[1])) if s > 0]
        else:
            kinds = view.rel_kinds
            rels.sort(key=lambda r: (kinds[r] != "extracted", r))
        rels = rels[:k]
        lines = [f"Relations of {view.names[e]} ({view.entity_ids[e]}):"]
        pids: list[str] = []
        for r in rels:
            s, label, t = view.relation_triple(r)
            lines.append(f"({s}, {label}, {t}) [{', '.join(view.rel_passages[r][:3])}]")
            pids.extend(view.rel_passages[r])
        if not rels:
            lines.append("(none found)")
        found = GraphText("\n".join(lines), list(dict.fromkeys(pids)), [view.entity_ids[e]])
        return _graph_output(found, budget)

    return _run_graph(runtime, run)


# -- HiGraRetriever and the progressive stages ----------------------------------------------------


@tool(args_schema=QueryArgs, response_format="content_and_artifact")
def higra_retrieve(query: str, runtime: ToolRuntime[Context], k: int = 5) -> ToolOutput:
    """Retrieve evidence for a question with the graph retriever: it finds the entities the
    question names, walks their graph neighbourhood and returns the most relevant relations
    and passages. Good for questions about named entities and their connections."""

    def run(index: IndexStore, budget: int) -> ToolOutput:
        from graphseek.llm import model_for_context
        from graphseek.llm.budget import run_callbacks
        from graphseek.tools.graph_retrievers import higra_retriever

        retriever = higra_retriever(index)
        model = model_for_context(runtime.context, "entity_recognizer")
        result = retriever.retrieve(
            query,
            model=model,
            max_retries=getattr(runtime.context, "max_retries", 2),
            callbacks=run_callbacks(runtime.context),
        )
        hits = retriever.hits(result, k)
        seeds = ", ".join(s.name for s in result.seeds) or "(none)"
        relations = [f"({r.source}, {r.label}, {r.target})" for r in result.relations[:8]]
        head = f"Entities: {seeds}\nRelations:\n" + ("\n".join(relations) or "(none)")
        passages = format_passages([h.passage for h in hits], max(300, budget - len(head) - 12))
        text = f"{head}\nPassages:\n{passages}"[:budget]
        return text, {
            "passage_ids": [h.passage.id for h in hits],
            "entity_ids": [s.entity_id for s in result.seeds],
        }

    return _run_graph(runtime, run)


def _seed_state(view: Any, entities: Sequence[str]) -> progressive.ProgressiveState:
    ids = []
    for name in entities:
        e = resolve_entity(view, name)
        if e is not None:
            ids.append(view.entity_ids[e])
    return progressive.start(view, " ".join(entities), entity_seeds=ids)


@tool(args_schema=BridgeArgs, response_format="content_and_artifact")
def bridge_discovery(
    entities: list[str], runtime: ToolRuntime[Context], hops: int = 2
) -> ToolOutput:
    """Find how several entities are connected: bridge entities within a few hops of at least
    two of them, and the short relation paths through them, with their passages. Use it when
    a question links entities that no single passage mentions together."""

    def run(index: IndexStore, budget: int) -> ToolOutput:
        view, local = _graph_reader(index)
        state = _seed_state(view, entities)
        if len(state.entity_seeds) < 2:
            found = ", ".join(view.names[view.entity_pos[e]] for e in state.entity_seeds)
            return (
                f"Bridge discovery needs two known entities; found only: {found or '(none)'}.",
                {"passage_ids": []},
            )
        cfg = progressive.ProgressiveConfig(bridge_hops=hops)
        view, state = run_stage(local if local is not None else view, "stage_bridge", state, cfg)
        names = [view.names[view.entity_pos[b]] for b in state.bridges]
        lines = [
            "Seeds: " + ", ".join(view.names[view.entity_pos[e]] for e in state.entity_seeds),
            "Bridges: " + (", ".join(names) or "(none within the hop budget)"),
        ]
        pids: list[str] = []
        for rid in state.relations:
            r = view.relation_pos[rid]
            s, label, t = view.relation_triple(r)
            lines.append(f"({s}, {label}, {t}) [{', '.join(view.rel_passages[r][:3])}]")
            pids.extend(view.rel_passages[r])
        return _graph_output(
            GraphText("\n".join(lines), list(dict.fromkeys(pids)), state.bridges), budget
        )

    return _run_graph(runtime, run)


@tool(args_schema=PPRArgs, response_format="content_and_artifact")
def ppr_search(entities: list[str], runtime: ToolRuntime[Context], k: int = 5) -> ToolOutput:
    """Rank passages by their graph proximity to some entities (personalised PageRank from
    them, mapped back to the passages the top entities come from). Use it when direct search
    fails and the answer lies a few hops from entities you know."""

    def run(index: IndexStore, budget: int) -> ToolOutput:
        view, local = _graph_reader(index)
        state = _seed_state(view, entities)
        if not state.entity_seeds:
            return "None of these entities is in the graph.", {"passage_ids": []}
        cfg = progressive.ProgressiveConfig(max_passages=k)
        view, state = run_stage(local if local is not None else view, "stage_ppr", state, cfg)
        passages = [index.get(pid) for pid in state.passages]
        text = format_passages(passages, budget)
        return text, {"passage_ids": list(state.passages), "entity_ids": state.entity_seeds}

    return _run_graph(runtime, run)


# -- GraphSearch relational channel and G-RAGent primitives ---------------------------------------


@tool(args_schema=RelationalArgs, response_format="content_and_artifact")
def relational_query(patterns: list[TripleArg], runtime: ToolRuntime[Context]) -> ToolOutput:
    """Query the knowledge graph with (subject, relation, object) triple patterns. Use
    placeholders like ?x for unknowns; a chain of patterns resolves them hop by hop. Returns the
    matching triples, the values found for each placeholder, and their passages."""

    def run(index: IndexStore, budget: int) -> ToolOutput:
        items = [
            dual_channel.TriplePattern(p.subject, p.relation, p.object)
            if isinstance(p, TripleArg)
            else dual_channel.TriplePattern.parse(
                (p["subject"], p["relation"], p["object"]) if isinstance(p, dict) else p
            )
            for p in patterns
        ]
        return _graph_output(dual_channel.relational_query(index, items).to_text(), budget)

    return _run_graph(runtime, run)


@dataclass
class PrimitiveResult:
    """What a hypergraph primitive found for a step: passages (best first), linearised graph
    lines, and a note (no graph; nothing found)."""

    hits: list[Hit]
    lines: list[str] = field(default_factory=list)
    note: str = ""


def _merge_hits(*groups: Sequence[Hit], k: int) -> list[Hit]:
    seen: dict[str, Hit] = {}
    for group in groups:
        for hit in group:
            seen.setdefault(hit.passage.id, hit)
    return [h.model_copy(update={"rank": i}) for i, h in enumerate(list(seen.values())[:k], 1)]


def run_primitive(
    index: IndexStore,
    primitive: str,
    query: str,
    topic: str = "",
    entity: str = "",
    attr: str = "",
    k: int = 5,
) -> PrimitiveResult:
    """One G-RAGent primitive (retrieve_subgraph(topic), node_feature(entity, attr),
    neighbor_check(entity, relation)) grounded for a step: the passages it maps back to, ranked
    by the query's hybrid search (unmatched ones after), then the query's own passages. Without
    a graph, or when the primitive finds nothing: the query's hybrid passages."""
    topics = hypergraph.topics_of(index)
    if topics is None:
        return PrimitiveResult(
            hits=retrieve(index, query or topic, k, "hybrid"), note=NO_GRAPH_NOTE
        )
    if primitive == "node_feature" and entity:
        found = hypergraph.node_feature(index, entity, attr or "all")
    elif primitive == "neighbor_check" and entity:
        found = hypergraph.neighbor_check(index, entity, attr or None)
    else:
        by_label = {t.label: t.id for t in topics}
        found = hypergraph.retrieve_subgraph(index, by_label.get(topic, topic) or query)
    lines = [line for line in found.text.splitlines() if line.strip()][:MAX_LINES]
    searched = retrieve(index, query or topic, k, "hybrid")
    if not found.found:
        return PrimitiveResult(hits=searched, lines=lines, note=lines[0] if lines else "")
    order = {h.passage.id: i for i, h in enumerate(searched)}
    grounded = sorted(
        (pid for pid in found.passage_ids if pid in index),
        key=lambda pid: (order.get(pid, len(order)), found.passage_ids.index(pid)),
    )[:k]
    hits = [Hit(passage=index.get(pid), score=1.0 / r, rank=r) for r, pid in enumerate(grounded, 1)]
    return PrimitiveResult(hits=_merge_hits(hits, searched, k=2 * k), lines=lines)


def _primitive_output(
    runtime: ToolRuntime[Context], primitive: str, query: str, **args: str
) -> ToolOutput:
    """`run_primitive` as a tool result: graph lines, then the passages with their text."""
    context = runtime.context
    index = resolve_index(context)
    result = run_primitive(index, primitive, query, k=getattr(context, "top_k", 5), **args)
    budget = char_budget(context)
    head = fit_lines(result.lines, budget // 2) if result.lines else ""
    passages = format_passages([h.passage for h in result.hits], max(300, budget - len(head) - 40))
    parts = [
        p for p in (head, f"Passages:\n{passages}", f"({result.note})" if result.note else "") if p
    ]
    return "\n".join(parts)[:budget], {
        "passage_ids": [h.passage.id for h in result.hits],
        "scores": [h.score for h in result.hits],
        "lines": result.lines,
        "note": result.note,
    }


@tool("retrieve_subgraph", args_schema=TopicArgs, response_format="content_and_artifact")
def retrieve_subgraph_tool(
    topic: str, runtime: ToolRuntime[Context], query: str = ""
) -> ToolOutput:
    """Fetch the facts (hyperedges) of one topic of the knowledge graph, each as
    HyperEdge_j: <fact> involves [entities]. Give a topic id or a few words about the topic,
    and the sub-question you are resolving as query to also get the passages behind them."""
    if query:
        return _primitive_output(runtime, "retrieve_subgraph", query, topic=topic)
    return _run_graph(
        runtime,
        lambda index, budget: _graph_output(hypergraph.retrieve_subgraph(index, topic), budget),
    )


@tool("node_feature", args_schema=NodeFeatureArgs, response_format="content_and_artifact")
def node_feature_tool(
    entity: str, runtime: ToolRuntime[Context], attr: str = "all", query: str = ""
) -> ToolOutput:
    """Read one attribute of an entity: name, aliases, types, description, the passages that
    mention it, or all of them."""
    if query:
        return _primitive_output(runtime, "node_feature", query, entity=entity, attr=attr)
    return _run_graph(
        runtime,
        lambda index, budget: _graph_output(hypergraph.node_feature(index, entity, attr), budget),
    )


@tool("neighbor_check", args_schema=NeighborCheckArgs, response_format="content_and_artifact")
def neighbor_check_tool(
    entity: str, runtime: ToolRuntime[Context], relation: str | None = None, query: str = ""
) -> ToolOutput:
    """List the facts (hyperedges and relations) an entity takes part in, optionally only those
    about a relation (e.g. 'born', 'married'), with the passages they come from."""
    if query:
        return _primitive_output(
            runtime, "neighbor_check", query, entity=entity, attr=relation or ""
        )
    return _run_graph(
        runtime,
        lambda index, budget: _graph_output(
            hypergraph.neighbor_check(index, entity, relation), budget
        ),
    )


# -- finishing ------------------------------------------------------------------------------------


class FinishArgs(BaseModel):
    answer: Name = Field(
        description="The final answer in the exact words of the evidence; empty to abstain "
        "when nothing supports an answer."
    )
    passage_ids: Names = Field(
        default_factory=list, description="The ids of the passages that support the answer."
    )
    reason: Reasoning = Field(default="", description="Why, in one or two sentences.")


FINISH = "finish"


@tool(FINISH, args_schema=FinishArgs)
def finish_tool(answer: str, passage_ids: list[str] | None = None, reason: str = "") -> str:
    """Give the final answer with the ids of the passages that support it, and stop. Call it
    as soon as the evidence found suffices; with an empty answer when nothing supports one."""
    cited = ", ".join(passage_ids or []) or "none"
    return f"Final answer: {answer or '(abstained)'} (passages: {cited})"


def passage_tools() -> list[BaseTool]:
    return [search_passages]


def graph_tools() -> list[BaseTool]:
    return [
        search_entities,
        neighbors,
        higra_retrieve,
        bridge_discovery,
        ppr_search,
        relational_query,
        retrieve_subgraph_tool,
        node_feature_tool,
        neighbor_check_tool,
    ]


def all_tools() -> list[BaseTool]:
    """Every retrieval tool, passage search first."""
    return [*passage_tools(), *graph_tools()]


def react_tools() -> list[BaseTool]:
    """The actions of the ``react`` workflow: G-RAGent's primitives first, then passage and
    entity search, neighbours, PPR expansion, relational queries, and `finish`."""
    return [
        retrieve_subgraph_tool,
        node_feature_tool,
        neighbor_check_tool,
        search_passages,
        search_entities,
        neighbors,
        ppr_search,
        relational_query,
        finish_tool,
    ]
