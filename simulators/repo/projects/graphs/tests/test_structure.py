import pytest
from graphs import (
    Graph,
    GraphError,
    NotADAGError,
    connected_components,
    find_cycle,
    is_bipartite,
    kruskal,
    max_flow,
    prim,
    strongly_connected_components,
    topological_sort,
)
from graphs.mst import total_weight
from graphs.unionfind import UnionFind

WEIGHTED = [
    ("a", "b", 4),
    ("a", "c", 1),
    ("b", "c", 2),
    ("b", "d", 5),
    ("c", "d", 8),
    ("d", "e", 3),
]


def test_kruskal_edges_lightest_first():
    tree = kruskal(Graph.from_edges(WEIGHTED))
    assert tree == [("a", "c", 1), ("b", "c", 2), ("d", "e", 3), ("b", "d", 5)]


def test_prim_matches_kruskal_weight():
    g = Graph.from_edges(WEIGHTED)
    assert total_weight(prim(g)) == total_weight(kruskal(g)) == 11


def test_prim_order_of_growth():
    assert [v for _, v, _ in prim(Graph.from_edges(WEIGHTED), "a")] == ["c", "b", "d", "e"]


def test_kruskal_on_forest():
    g = Graph.from_edges([("a", "b", 1), ("c", "d", 2)])
    assert len(kruskal(g)) == 2


def test_spanning_tree_needs_undirected_graph():
    with pytest.raises(GraphError):
        kruskal(Graph.from_edges([("a", "b")], directed=True))


def test_union_find():
    sets = UnionFind(range(5))
    assert sets.union(0, 1) and sets.union(3, 4)
    assert not sets.union(1, 0)
    assert sets.connected(0, 1) and not sets.connected(1, 3)


def test_topological_sort():
    g = Graph.from_edges(
        [
            ("shirt", "tie"),
            ("tie", "jacket"),
            ("trousers", "shoes"),
            ("trousers", "belt"),
            ("belt", "jacket"),
            ("shirt", "belt"),
        ],
        directed=True,
    )
    assert topological_sort(g) == ["shirt", "trousers", "tie", "shoes", "belt", "jacket"]


def test_topological_sort_keeps_isolated_nodes():
    g = Graph.from_edges([("a", "b")], directed=True)
    g.add_node("z")
    assert topological_sort(g) == ["a", "z", "b"]


def test_topological_sort_reports_cycle():
    g = Graph.from_edges([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")], directed=True)
    with pytest.raises(NotADAGError) as info:
        topological_sort(g)
    assert info.value.cycle == ["a", "b", "c", "a"]


def test_find_cycle_none_in_dag():
    assert find_cycle(Graph.from_edges([("a", "b"), ("a", "c"), ("b", "c")], directed=True)) is None


def test_find_cycle_self_loop():
    assert find_cycle(Graph.from_edges([("a", "a")], directed=True)) == ["a", "a"]


def test_connected_components():
    g = Graph.from_edges([(1, 2), (2, 3), (4, 5)])
    g.add_node(6)
    assert connected_components(g) == [[1, 2, 3], [4, 5], [6]]


def test_strongly_connected_components():
    g = Graph.from_edges([(1, 2), (2, 3), (3, 1), (3, 4), (4, 5), (5, 4), (6, 5)], directed=True)
    components = strongly_connected_components(g)
    assert sorted(sorted(c) for c in components) == [[1, 2, 3], [4, 5], [6]]


def test_components_need_the_right_kind_of_graph():
    with pytest.raises(GraphError):
        connected_components(Graph(directed=True))
    with pytest.raises(GraphError):
        strongly_connected_components(Graph())


def test_bipartite():
    assert is_bipartite(Graph.from_edges([(1, 2), (2, 3), (3, 4), (4, 1)]))
    assert not is_bipartite(Graph.from_edges([(1, 2), (2, 3), (3, 1)]))


def test_max_flow():
    g = Graph.from_edges(
        [("s", "a", 10), ("s", "b", 5), ("a", "b", 15), ("a", "t", 5), ("b", "t", 10)],
        directed=True,
    )
    value, flows = max_flow(g, "s", "t")
    assert value == 15
    assert sum(f for (u, _), f in flows.items() if u == "s") == 15


def test_max_flow_bottleneck():
    g = Graph.from_edges([("s", "a", 3), ("a", "b", 1), ("b", "t", 3)], directed=True)
    assert max_flow(g, "s", "t")[0] == 1


def test_max_flow_rejects_same_source_and_sink():
    with pytest.raises(GraphError):
        max_flow(Graph.from_edges([("s", "t", 1)], directed=True), "s", "s")
