"""Grid worlds: Sokoban mechanics, a seeded level generator and a BFS solver."""

from agentgym.simulators.grid.sokoban import (
    DIRECTIONS,
    MoveResult,
    SokobanLevel,
    SokobanState,
    generate_level,
    move,
    solve,
)

__all__ = [
    "DIRECTIONS",
    "MoveResult",
    "SokobanLevel",
    "SokobanState",
    "generate_level",
    "move",
    "solve",
]
