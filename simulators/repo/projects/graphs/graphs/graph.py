"""``Graph``: nodes and weighted edges, directed or not, kept as adjacency maps."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator

from graphs.errors import GraphError

Node = Hashable


class Graph:
    """``Graph(directed=False)``; ``add_edge(u, v, weight=1.0)`` adds missing nodes.

    Nodes keep their insertion order, and so do each node's neighbours, which makes every
    algorithm here deterministic.
    """

    def __init__(self, directed: bool = False):
        self.directed = directed
        self._adj: dict[Node, dict[Node, float]] = {}

    @classmethod
    def from_edges(cls, edges: Iterable[tuple], directed: bool = False) -> Graph:
        """Edges as ``(u, v)`` or ``(u, v, weight)``."""
        graph = cls(directed)
        for edge in edges:
            graph.add_edge(*edge)
        return graph

    def add_node(self, node: Node) -> None:
        self._adj.setdefault(node, {})

    def add_edge(self, u: Node, v: Node, weight: float = 1.0) -> None:
        self.add_node(u)
        self.add_node(v)
        self._adj[u][v] = weight
        if not self.directed:
            self._adj[v][u] = weight

    def remove_edge(self, u: Node, v: Node) -> None:
        try:
            del self._adj[u][v]
            if not self.directed:
                del self._adj[v][u]
        except KeyError:
            raise GraphError(f"no edge {u!r} -> {v!r}") from None

    def remove_node(self, node: Node) -> None:
        if node not in self._adj:
            raise GraphError(f"no node {node!r}")
        del self._adj[node]
        for targets in self._adj.values():
            targets.pop(node, None)

    def nodes(self) -> list[Node]:
        return list(self._adj)

    def neighbors(self, node: Node) -> list[Node]:
        if node not in self._adj:
            raise GraphError(f"no node {node!r}")
        return list(self._adj[node])

    def weight(self, u: Node, v: Node) -> float:
        try:
            return self._adj[u][v]
        except KeyError:
            raise GraphError(f"no edge {u!r} -> {v!r}") from None

    def has_edge(self, u: Node, v: Node) -> bool:
        return v in self._adj.get(u, {})

    def edges(self) -> Iterator[tuple[Node, Node, float]]:
        """Every edge once (an undirected edge in the direction it is first met)."""
        seen: set[frozenset] = set()
        for u, targets in self._adj.items():
            for v, w in targets.items():
                if not self.directed:
                    key = frozenset((u, v))
                    if key in seen:
                        continue
                    seen.add(key)
                yield u, v, w

    def degree(self, node: Node) -> int:
        """Out-degree for directed graphs; a self-loop counts twice when undirected."""
        targets = self._adj.get(node)
        if targets is None:
            raise GraphError(f"no node {node!r}")
        if not self.directed and node in targets:
            return len(targets) + 1
        return len(targets)

    def reversed(self) -> Graph:
        """A directed graph with every edge turned around (an undirected copy otherwise)."""
        other = Graph(self.directed)
        for node in self._adj:
            other.add_node(node)
        for u, v, w in self.edges():
            if self.directed:
                other.add_edge(v, u, w)
            else:
                other.add_edge(u, v, w)
        return other

    def __contains__(self, node: object) -> bool:
        return node in self._adj

    def __len__(self) -> int:
        return len(self._adj)
