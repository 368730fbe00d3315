"""Topological order of a directed acyclic graph, and finding a cycle when there is one."""

from __future__ import annotations

from collections import deque

from graphs.errors import GraphError, NotADAGError
from graphs.graph import Graph, Node


def find_cycle(graph: Graph) -> list[Node] | None:
    """The nodes of one directed cycle (first node repeated at the end), or None."""
    if not graph.directed:
        raise GraphError("find_cycle needs a directed graph")
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph.nodes(), WHITE)
    parent: dict[Node, Node] = {}
    for root in graph.nodes():
        if colour[root] != WHITE:
            continue
        stack = [(root, iter(graph.neighbors(root)))]
        colour[root] = GREY
        while stack:
            node, children = stack[-1]
            for child in children:
                if colour[child] == GREY:
                    cycle = [child]
                    step = node
                    while step != child:
                        cycle.append(step)
                        step = parent[step]
                    cycle.append(child)
                    return cycle[::-1]
                if colour[child] == WHITE:
                    colour[child] = GREY
                    parent[child] = node
                    stack.append((child, iter(graph.neighbors(child))))
                    break
            else:
                colour[node] = BLACK
                stack.pop()
    return None


def topological_sort(graph: Graph) -> list[Node]:
    """Every node before the nodes its edges point to (Kahn's algorithm; among ready nodes,
    the one added to the graph first goes first).

    Raises:
        NotADAGError: the graph has a cycle (reported in the error).
    """
    if not graph.directed:
        raise GraphError("topological order needs a directed graph")
    indegree = dict.fromkeys(graph.nodes(), 0)
    for _, v, _ in graph.edges():
        indegree[v] += 1
    position = {node: i for i, node in enumerate(graph.nodes())}
    ready = deque(sorted((n for n, d in indegree.items() if d == 0), key=position.__getitem__))
    order = []
    while ready:
        node = ready.popleft()
        order.append(node)
        released = []
        for nxt in graph.neighbors(node):
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                released.append(nxt)
        ready.extend(sorted(released, key=position.__getitem__))
    if len(order) != len(graph):
        raise NotADAGError(find_cycle(graph) or [])
    return order
