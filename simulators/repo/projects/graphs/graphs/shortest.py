"""Shortest paths: Dijkstra (non-negative weights) and Bellman-Ford (any weights)."""

from __future__ import annotations

import heapq
import itertools
import math

from graphs.errors import GraphError, NegativeCycleError, NoPathError
from graphs.graph import Graph, Node


def dijkstra(graph: Graph, source: Node) -> tuple[dict[Node, float], dict[Node, Node | None]]:
    """Distances from ``source`` to every reachable node, and each node's predecessor.

    Raises:
        GraphError: an edge has a negative weight.
    """
    if source not in graph:
        raise GraphError(f"no node {source!r}")
    dist: dict[Node, float] = {source: 0.0}
    prev: dict[Node, Node | None] = {source: None}
    counter = itertools.count()  # ties broken by insertion, never by comparing nodes
    heap = [(0.0, next(counter), source)]
    done: set[Node] = set()
    while heap:
        d, _, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for nxt in graph.neighbors(node):
            w = graph.weight(node, nxt)
            if w < 0:
                raise GraphError(f"negative weight on {node!r} -> {nxt!r}; use bellman_ford")
            nd = d + w
            if nd < dist.get(nxt, math.inf):
                dist[nxt] = nd
                prev[nxt] = node
                heapq.heappush(heap, (nd, next(counter), nxt))
    return dist, prev


def bellman_ford(graph: Graph, source: Node) -> dict[Node, float]:
    """Distances from ``source``; unreachable nodes are left out.

    Raises:
        NegativeCycleError: a negative cycle is reachable from ``source``.
    """
    if source not in graph:
        raise GraphError(f"no node {source!r}")
    dist: dict[Node, float] = {source: 0.0}
    edges = list(graph.edges())
    if not graph.directed:
        edges += [(v, u, w) for u, v, w in edges]
    for _ in range(len(graph) - 1):
        changed = False
        for u, v, w in edges:
            if u in dist and dist[u] + w < dist.get(v, math.inf):
                dist[v] = dist[u] + w
                changed = True
        if not changed:
            break
    for u, v, w in edges:
        if u in dist and dist[u] + w < dist.get(v, math.inf):
            raise NegativeCycleError(f"negative cycle through {v!r}")
    return dist


def shortest_path(graph: Graph, source: Node, target: Node) -> tuple[float, list[Node]]:
    """The total weight and the nodes of a lightest path (Dijkstra)."""
    dist, prev = dijkstra(graph, source)
    if target not in dist:
        raise NoPathError(f"no path from {source!r} to {target!r}")
    path = []
    node: Node | None = target
    while node is not None:
        path.append(node)
        node = prev[node]
    return dist[target], path[::-1]
