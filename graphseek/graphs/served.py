"""The graphs the LangGraph server serves (`langgraph.json` names them): each topology's compiled
graph (`graphseek.graphs.get_workflow`) with `ServedContext` as its context schema.

The server makes the run's context from the client's JSON with the graph's context schema, so
every served run, from Studio or the SDK, confines its index to what the server's configuration
names (`ServedContext.index_location`): a directory under `$GRAPHSEEK_INDEX_DIR` (else the
server's working directory) or a URI listed in `$GRAPHSEEK_INDEX_URIS`. Nothing else differs:
the nodes, the input and output schemas and the context's fields are the topology's own. Python
callers, the CLI and `ask` use the topologies' graphs with a `Context`, which opens any path.

A new topology is served by adding `<name> = serve("<name>")` here and
`"<name>": "./graphseek/graphs/served.py:<name>"` to `langgraph.json`.
"""

from __future__ import annotations

from langgraph.graph.state import CompiledStateGraph

from graphseek.graphs import get_workflow
from graphseek.state.context import ServedContext


def serve(name: str) -> CompiledStateGraph:
    """Topology `name`'s compiled graph (the same nodes and settings) taking a `ServedContext`."""
    graph: CompiledStateGraph = get_workflow(name).copy({"context_schema": ServedContext})
    return graph


naive = serve("naive")
dual_agent = serve("dual_agent")
higra_retriever = serve("higra_retriever")
adaptive = serve("adaptive")
deep_search = serve("deep_search")
react = serve("react")
knowledge_aware = serve("knowledge_aware")
