"""graphs: graph algorithms over a simple adjacency-map graph."""

from graphs.components import connected_components, is_bipartite, strongly_connected_components
from graphs.errors import GraphError, NegativeCycleError, NoPathError, NotADAGError
from graphs.flow import max_flow
from graphs.graph import Graph
from graphs.mst import kruskal, prim
from graphs.shortest import bellman_ford, dijkstra, shortest_path
from graphs.topo import find_cycle, topological_sort
from graphs.traversal import bfs_order, bfs_path, dfs_order

__all__ = [
    "Graph",
    "GraphError",
    "NegativeCycleError",
    "NoPathError",
    "NotADAGError",
    "bellman_ford",
    "bfs_order",
    "bfs_path",
    "connected_components",
    "dfs_order",
    "dijkstra",
    "find_cycle",
    "is_bipartite",
    "kruskal",
    "max_flow",
    "prim",
    "shortest_path",
    "strongly_connected_components",
    "topological_sort",
]
