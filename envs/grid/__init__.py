"""Grid puzzles: small text worlds that prove the contract and train on a CPU."""

from agentgym.registry import register

#: id suffix -> (height, width, boxes, turn budget, shortest solution at least)
SOKOBAN_SIZES = {
    "Tiny": (5, 5, 1, 10, 2),
    "Small": (6, 6, 1, 15, 4),
    "Medium": (7, 7, 2, 30, 6),
    "Large": (8, 8, 3, 40, 8),
}

for _name, (_h, _w, _boxes, _turns, _min_moves) in SOKOBAN_SIZES.items():
    register(
        f"agentgym/Sokoban-{_name}-v0",
        "agentgym.envs.grid.sokoban:SokobanEnv",
        family="games",
        kwargs={
            "height": _h,
            "width": _w,
            "num_boxes": _boxes,
            "min_moves": _min_moves,
            "max_turns": _turns,
        },
        description=f"Sokoban {_h}x{_w}, {_boxes} box{'es' if _boxes > 1 else ''}, "
        f"{_turns} turns; push every box onto a goal",
    )
