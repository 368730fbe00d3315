import pytest
from graphs import Graph, GraphError


def test_undirected_edges_go_both_ways():
    g = Graph.from_edges([("a", "b", 2.0)])
    assert g.has_edge("b", "a")
    assert g.weight("b", "a") == 2.0


def test_directed_edges_go_one_way():
    g = Graph.from_edges([("a", "b")], directed=True)
    assert g.has_edge("a", "b") and not g.has_edge("b", "a")


def test_nodes_keep_insertion_order():
    g = Graph.from_edges([("c", "a"), ("b", "c")])
    assert g.nodes() == ["c", "a", "b"]
    assert g.neighbors("c") == ["a", "b"]


def test_edges_listed_once_when_undirected():
    g = Graph.from_edges([("a", "b"), ("b", "c"), ("c", "a")])
    assert len(list(g.edges())) == 3


def test_remove_edge_and_node():
    g = Graph.from_edges([("a", "b"), ("b", "c")])
    g.remove_edge("a", "b")
    assert not g.has_edge("b", "a")
    g.remove_node("c")
    assert g.nodes() == ["a", "b"] and g.neighbors("b") == []


def test_missing_things_raise():
    g = Graph.from_edges([("a", "b")])
    with pytest.raises(GraphError):
        g.neighbors("z")
    with pytest.raises(GraphError):
        g.remove_edge("a", "z")
    with pytest.raises(GraphError):
        g.weight("b", "z")


def test_degree_counts_self_loops_twice():
    g = Graph()
    g.add_edge("a", "a")
    g.add_edge("a", "b")
    assert g.degree("a") == 3
    assert g.degree("b") == 1


def test_reversed_directed_graph():
    g = Graph.from_edges([("a", "b", 5)], directed=True).reversed()
    assert g.has_edge("b", "a") and g.weight("b", "a") == 5 and not g.has_edge("a", "b")


def test_len_and_contains():
    g = Graph.from_edges([(1, 2), (2, 3)])
    assert len(g) == 3 and 2 in g and 4 not in g
