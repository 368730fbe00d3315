"""Mazes: the length of the shortest path between two marked cells of a fine-walled maze."""

from __future__ import annotations

from collections import deque

import numpy as np
from agentgym.simulators.visual.scene import Scene, SceneObject
from agentgym.simulators.visual.tasks.common import canvas, is_legible, legible_text
from agentgym.simulators.visual.text import TextLayer, text_size
from PIL import ImageDraw

Cell = tuple[int, int]


def carve(rng: np.random.Generator, n: int, extra: float = 0.08) -> set[frozenset[Cell]]:
    """Open passages of an n x n maze: a random spanning tree plus a few extra openings."""
    opened: set[frozenset[Cell]] = set()
    seen = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        r, c = stack[-1]
        nbrs = [(r + dr, c + dc) for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))]
        nbrs = [p for p in nbrs if 0 <= p[0] < n and 0 <= p[1] < n and p not in seen]
        if not nbrs:
            stack.pop()
            continue
        nxt = nbrs[int(rng.integers(len(nbrs)))]
        opened.add(frozenset(((r, c), nxt)))
        seen.add(nxt)
        stack.append(nxt)
    for r in range(n):
        for c in range(n):
            for nxt in ((r, c + 1), (r + 1, c)):
                if nxt[0] < n and nxt[1] < n and rng.random() < extra:
                    opened.add(frozenset(((r, c), nxt)))
    return opened


def shortest(n: int, opened: set[frozenset[Cell]], start: Cell, goal: Cell) -> int:
    """Moves on the shortest path from ``start`` to ``goal`` (BFS)."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            return dist[cell]
        r, c = cell
        for nxt in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if nxt not in dist and frozenset((cell, nxt)) in opened:
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    raise ValueError("goal unreachable")  # cannot happen: the passages span every cell


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty, (250, 250, 250))
    legible = is_legible(rng)
    n = int(rng.integers(4, 7)) if legible else {"easy": 10, "medium": 14, "hard": 18}[difficulty]
    side = (420 if legible else 190) * s
    cell = side // n
    side = cell * n
    x0 = int(rng.integers(10 * s, image.width - side - 10 * s))
    y0 = int(rng.integers(10 * s, image.height - side - 10 * s))
    opened = carve(rng, n)
    pen = ImageDraw.Draw(image)
    wall = (3 * s) if legible else max(1, s // 2)
    color = (30, 30, 30)
    for r in range(n):
        for c in range(n):
            x, y = x0 + c * cell, y0 + r * cell
            if c + 1 == n or frozenset(((r, c), (r, c + 1))) not in opened:
                pen.line([(x + cell, y), (x + cell, y + cell)], fill=color, width=wall)
            if r + 1 == n or frozenset(((r, c), (r + 1, c))) not in opened:
                pen.line([(x, y + cell), (x + cell, y + cell)], fill=color, width=wall)
    pen.line([(x0, y0), (x0 + side, y0)], fill=color, width=wall)
    pen.line([(x0, y0), (x0, y0 + side)], fill=color, width=wall)
    while True:
        start = (int(rng.integers(n)), int(rng.integers(n)))
        goal = (int(rng.integers(n)), int(rng.integers(n)))
        if abs(start[0] - goal[0]) + abs(start[1] - goal[1]) >= n // 2:
            break
    ink = TextLayer(image.size)
    size = max(8, int(cell * 0.6))
    for name, (r, c), fill in (("S", start, (30, 140, 40)), ("G", goal, (200, 40, 40))):
        w, h = text_size(name, size)
        cx, cy = x0 + (c + 0.5) * cell, y0 + (r + 0.5) * cell
        ink.add((cx - w / 2, cy - h / 2), name, size)
        ink.paste_onto(image, fill)
        ink = TextLayer(image.size)
    box = (x0 - wall, y0 - wall, x0 + side + wall, y0 + side + wall)
    title = TextLayer(image.size)
    title.add((x0, max(0, y0 - legible_text(s) - 6 * s)), "Maze", legible_text(s))
    title.paste_onto(image, (60, 60, 60))
    return Scene(
        task_type="maze",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=(
            "In the maze, how many moves does the shortest path from S to G take? "
            "A move goes to a neighbouring cell (up, down, left, right) through an opening."
        ),
        answer=str(shortest(n, opened, start, goal)),
        answer_type="int",
        hint="Answer with the number of moves, e.g. <answer>12</answer>.",
        target=box,
        needs_tools=not legible,
        objects=[SceneObject("maze", "maze", box, {"n": n, "start": start, "goal": goal})],
        seed=seed,
    )
