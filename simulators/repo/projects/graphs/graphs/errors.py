"""Errors of the graph algorithms."""


class GraphError(Exception):
    """A bad graph operation (an unknown node, a negative weight where none is allowed)."""


class NoPathError(GraphError):
    """No path joins the two nodes."""


class NegativeCycleError(GraphError):
    """A cycle of negative total weight is reachable, so shortest paths are undefined."""


class NotADAGError(GraphError):
    """The directed graph has a cycle; ``cycle`` lists its nodes in order."""

    def __init__(self, cycle: list):
        super().__init__(f"graph has a cycle: {' -> '.join(map(str, cycle))}")
        self.cycle = cycle
