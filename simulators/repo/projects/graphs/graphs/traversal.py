"""Breadth-first and depth-first traversals."""

from __future__ import annotations

from collections import deque

from graphs.errors import GraphError, NoPathError
from graphs.graph import Graph, Node


def bfs_order(graph: Graph, start: Node) -> list[Node]:
    """Nodes reachable from ``start`` in breadth-first order."""
    if start not in graph:
        raise GraphError(f"no node {start!r}")
    seen = {start}
    order = []
    queue = deque([start])
    while queue:
        node = queue.popleft()
        order.append(node)
        for nxt in graph.neighbors(node):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return order


def dfs_order(graph: Graph, start: Node) -> list[Node]:
    """Nodes reachable from ``start`` in depth-first preorder (neighbours in their order)."""
    if start not in graph:
        raise GraphError(f"no node {start!r}")
    seen: set[Node] = set()
    order = []
    stack = [start]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(reversed(graph.neighbors(node)))
    return order


def bfs_path(graph: Graph, start: Node, goal: Node) -> list[Node]:
    """A path with the fewest edges from ``start`` to ``goal``.

    Raises:
        NoPathError: ``goal`` is not reachable.
    """
    if start not in graph or goal not in graph:
        raise GraphError("both nodes must be in the graph")
    parent: dict[Node, Node | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = []
            step: Node | None = node
            while step is not None:
                path.append(step)
                step = parent[step]
            return path[::-1]
        for nxt in graph.neighbors(node):
            if nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    raise NoPathError(f"no path from {start!r} to {goal!r}")
