"""Minimum spanning trees (forests, for graphs that are not connected)."""

from __future__ import annotations

import heapq
import itertools

from graphs.errors import GraphError
from graphs.graph import Graph, Node
from graphs.unionfind import UnionFind


def _undirected(graph: Graph) -> None:
    if graph.directed:
        raise GraphError("spanning trees need an undirected graph")


def kruskal(graph: Graph) -> list[tuple[Node, Node, float]]:
    """The edges of a minimum spanning forest, lightest first (ties in edge order)."""
    _undirected(graph)
    sets = UnionFind(graph.nodes())
    tree = []
    for u, v, w in sorted(graph.edges(), key=lambda e: e[2]):
        if sets.union(u, v):
            tree.append((u, v, w))
    return tree


def prim(graph: Graph, start: Node | None = None) -> list[tuple[Node, Node, float]]:
    """The edges of a minimum spanning tree of ``start``'s component, in the order added."""
    _undirected(graph)
    if len(graph) == 0:
        return []
    start = graph.nodes()[0] if start is None else start
    if start not in graph:
        raise GraphError(f"no node {start!r}")
    counter = itertools.count()
    visited = {start}
    heap = [(graph.weight(start, v), next(counter), start, v) for v in graph.neighbors(start)]
    heapq.heapify(heap)
    tree = []
    while heap:
        w, _, u, v = heapq.heappop(heap)
        if v in visited:
            continue
        visited.add(v)
        tree.append((u, v, w))
        for nxt in graph.neighbors(v):
            if nxt not in visited:
                heapq.heappush(heap, (graph.weight(v, nxt), next(counter), v, nxt))
    return tree


def total_weight(edges: list[tuple[Node, Node, float]]) -> float:
    return sum(w for _, _, w in edges)
