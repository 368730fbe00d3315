import pytest
from graphs import (
    Graph,
    GraphError,
    NegativeCycleError,
    NoPathError,
    bellman_ford,
    bfs_order,
    bfs_path,
    dfs_order,
    dijkstra,
    shortest_path,
)


def grid():
    return Graph.from_edges(
        [("a", "b", 4), ("a", "c", 1), ("c", "b", 2), ("b", "d", 1), ("c", "d", 5), ("d", "e", 3)]
    )


def test_bfs_order():
    assert bfs_order(grid(), "a") == ["a", "b", "c", "d", "e"]


def test_dfs_order_follows_neighbour_order():
    assert dfs_order(grid(), "a") == ["a", "b", "c", "d", "e"]
    tree = Graph.from_edges([(1, 2), (1, 3), (2, 4), (3, 5)])
    assert dfs_order(tree, 1) == [1, 2, 4, 3, 5]


def test_bfs_path_fewest_edges():
    assert bfs_path(grid(), "a", "e") == ["a", "b", "d", "e"]


def test_bfs_path_to_itself():
    assert bfs_path(grid(), "c", "c") == ["c"]


def test_bfs_path_unreachable():
    g = grid()
    g.add_node("z")
    with pytest.raises(NoPathError):
        bfs_path(g, "a", "z")


def test_dijkstra_distances():
    dist, _ = dijkstra(grid(), "a")
    assert dist == {"a": 0, "b": 3, "c": 1, "d": 4, "e": 7}


def test_shortest_path_nodes_and_weight():
    assert shortest_path(grid(), "a", "e") == (7, ["a", "c", "b", "d", "e"])


def test_shortest_path_unreachable():
    g = grid()
    g.add_node("z")
    with pytest.raises(NoPathError):
        shortest_path(g, "a", "z")


def test_dijkstra_refuses_negative_weights():
    g = Graph.from_edges([("a", "b", -1)], directed=True)
    with pytest.raises(GraphError):
        dijkstra(g, "a")


def test_dijkstra_with_mixed_node_types_does_not_compare_nodes():
    g = Graph.from_edges([(1, "x", 1), (1, (2, 3), 1)])
    dist, _ = dijkstra(g, 1)
    assert dist == {1: 0, "x": 1, (2, 3): 1}


def test_bellman_ford_negative_edges():
    g = Graph.from_edges(
        [("s", "a", 4), ("s", "b", 5), ("b", "a", -3), ("a", "c", 2)], directed=True
    )
    assert bellman_ford(g, "s") == {"s": 0, "a": 2, "b": 5, "c": 4}


def test_bellman_ford_detects_negative_cycle():
    g = Graph.from_edges([("s", "a", 1), ("a", "b", -2), ("b", "a", 1)], directed=True)
    with pytest.raises(NegativeCycleError):
        bellman_ford(g, "s")


def test_bellman_ford_leaves_out_unreachable():
    g = Graph.from_edges([("s", "a", 1), ("b", "c", 1)], directed=True)
    assert bellman_ford(g, "s") == {"s": 0, "a": 1}


def test_bellman_ford_matches_dijkstra_on_positive_graph():
    assert bellman_ford(grid(), "a") == dijkstra(grid(), "a")[0]
