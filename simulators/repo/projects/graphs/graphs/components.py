"""Connected components, strongly connected components and two-colouring."""

from __future__ import annotations

from collections import deque

from graphs.errors import GraphError
from graphs.graph import Graph, Node
from graphs.traversal import bfs_order


def connected_components(graph: Graph) -> list[list[Node]]:
    """Components of an undirected graph, each in BFS order from its first node; components
    in the order of their first node."""
    if graph.directed:
        raise GraphError("use strongly_connected_components for directed graphs")
    seen: set[Node] = set()
    out = []
    for node in graph.nodes():
        if node not in seen:
            component = bfs_order(graph, node)
            seen.update(component)
            out.append(component)
    return out


def strongly_connected_components(graph: Graph) -> list[set[Node]]:
    """Kosaraju: finish order on the graph, then components on the reversed graph."""
    if not graph.directed:
        raise GraphError("strongly connected components need a directed graph")
    finished: list[Node] = []
    seen: set[Node] = set()
    for root in graph.nodes():
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(graph.neighbors(root)))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(graph.neighbors(child))))
                    break
            else:
                finished.append(node)
                stack.pop()
    reverse = graph.reversed()
    assigned: set[Node] = set()
    components = []
    for node in reversed(finished):
        if node in assigned:
            continue
        component = set()
        queue = deque([node])
        assigned.add(node)
        while queue:
            current = queue.popleft()
            component.add(current)
            for nxt in reverse.neighbors(current):
                if nxt not in assigned:
                    assigned.add(nxt)
                    queue.append(nxt)
        components.append(component)
    return components


def is_bipartite(graph: Graph) -> bool:
    """True when the nodes split into two sides with every edge crossing (undirected)."""
    side: dict[Node, int] = {}
    for root in graph.nodes():
        if root in side:
            continue
        side[root] = 0
        queue = deque([root])
        while queue:
            node = queue.popleft()
            for nxt in graph.neighbors(node):
                if nxt not in side:
                    side[nxt] = 1 - side[node]
                    queue.append(nxt)
                elif side[nxt] == side[node]:
                    return False
    return True
