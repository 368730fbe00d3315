"""Maximum flow (Edmonds-Karp: shortest augmenting paths by BFS)."""

from __future__ import annotations

from collections import deque

from graphs.errors import GraphError
from graphs.graph import Graph, Node


def max_flow(graph: Graph, source: Node, sink: Node) -> tuple[float, dict[tuple, float]]:
    """The value of a maximum flow from ``source`` to ``sink`` (edge weights are
    capacities) and the flow on each edge that carries some."""
    if not graph.directed:
        raise GraphError("max_flow needs a directed graph")
    if source not in graph or sink not in graph:
        raise GraphError("source and sink must be in the graph")
    if source == sink:
        raise GraphError("source and sink must differ")
    residual: dict[Node, dict[Node, float]] = {n: {} for n in graph.nodes()}
    for u, v, w in graph.edges():
        if w < 0:
            raise GraphError("capacities must not be negative")
        residual[u][v] = residual[u].get(v, 0.0) + w
        residual[v].setdefault(u, 0.0)
    total = 0.0
    while True:
        parent: dict[Node, Node] = {}
        queue = deque([source])
        while queue and sink not in parent:
            node = queue.popleft()
            for nxt, cap in residual[node].items():
                if cap > 0 and nxt not in parent and nxt != source:
                    parent[nxt] = node
                    queue.append(nxt)
        if sink not in parent:
            break
        bottleneck = float("inf")
        node = sink
        while node != source:
            bottleneck = min(bottleneck, residual[parent[node]][node])
            node = parent[node]
        node = sink
        while node != source:
            residual[parent[node]][node] -= bottleneck
            residual[node][parent[node]] += bottleneck
            node = parent[node]
        total += bottleneck
    flows = {}
    for u, v, w in graph.edges():
        used = w - residual[u][v]
        if used > 0:
            flows[(u, v)] = used
    return total, flows
