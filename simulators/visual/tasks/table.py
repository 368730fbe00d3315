"""Table QA: a dense table of small numbers; read one cell or add two."""

from __future__ import annotations

import numpy as np
from agentgym.simulators.visual.scene import Readout, Scene, SceneObject
from agentgym.simulators.visual.tasks.common import canvas, is_legible, legible_text, tiny_text
from agentgym.simulators.visual.text import TextLayer, text_size
from PIL import ImageDraw

CITIES = [
    "Oslo",
    "Lima",
    "Kyiv",
    "Pune",
    "Bern",
    "Doha",
    "Rome",
    "Lodz",
    "Nice",
    "Kobe",
    "Riga",
    "Baku",
]


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty)
    legible = is_legible(rng)
    n_rows = (
        int(rng.integers(4, 6)) if legible else {"easy": 10, "medium": 16, "hard": 22}[difficulty]
    )
    n_cols = int(rng.integers(3, 5)) if legible else {"easy": 5, "medium": 7, "hard": 9}[difficulty]
    cols = [str(c) for c in rng.choice(CITIES, size=n_cols, replace=False)]
    rows = [f"R{i + 1}" for i in range(n_rows)]
    head = legible_text(s)
    cell = legible_text(s) if legible else tiny_text(s)
    values = rng.integers(10, 1000, size=(n_rows, n_cols))
    pen = ImageDraw.Draw(image)
    ink = TextLayer(image.size)
    x0, y0 = 20 * s, 20 * s
    row_h = (image.height - y0 - 20 * s) / (n_rows + 1)
    col_w = (image.width - x0 - 20 * s) / (n_cols + 1)
    objects: list[SceneObject] = []
    cell_boxes: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for r in range(n_rows + 2):
        y = y0 + r * row_h
        pen.line([(x0, y), (x0 + col_w * (n_cols + 1), y)], fill=(150, 150, 150), width=1)
    for c in range(n_cols + 2):
        x = x0 + c * col_w
        pen.line([(x, y0), (x, y0 + row_h * (n_rows + 1))], fill=(150, 150, 150), width=1)
    for c, name in enumerate(cols):
        w, h = text_size(name, head)
        x = x0 + (c + 1.5) * col_w - w / 2
        box = ink.add((x, y0 + (row_h - h) / 2), name, head)
        objects.append(SceneObject("header", f"column header {name}", box))
    for r, name in enumerate(rows):
        y = y0 + (r + 1) * row_h
        w, h = text_size(name, head)
        hbox = ink.add((x0 + (col_w - w) / 2, y + (row_h - h) / 2), name, head)
        objects.append(SceneObject("header", f"row header {name}", hbox))
        for c in range(n_cols):
            text = str(int(values[r, c]))
            w, h = text_size(text, cell)
            box = ink.add((x0 + (c + 1.5) * col_w - w / 2, y + (row_h - h) / 2), text, cell)
            cell_boxes[(r, c)] = box
            objects.append(SceneObject("cell", f"cell row {name} column {cols[c]}", box))
    ink.paste_onto(image, (20, 20, 20))
    r = int(rng.integers(n_rows))
    if rng.random() < 0.6:
        c = int(rng.integers(n_cols))
        question = f"What is the value in row {rows[r]}, column {cols[c]}?"
        answer = int(values[r, c])
        picks = [(r, c)]
    else:
        c1, c2 = (int(v) for v in rng.choice(n_cols, size=2, replace=False))
        question = (
            f"What is the sum of the values in row {rows[r]}, columns {cols[c1]} and {cols[c2]}?"
        )
        answer = int(values[r, c1] + values[r, c2])
        picks = [(r, c1), (r, c2)]
    boxes = [cell_boxes[p] for p in picks]
    target = (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )
    return Scene(
        task_type="table",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=question,
        answer=str(answer),
        answer_type="int",
        hint="Answer with the number only, e.g. <answer>123</answer>.",
        target=target,
        needs_tools=not legible,
        objects=objects,
        readouts=[Readout(b, r"(\d+)") for b in boxes],
        combine="sum" if len(boxes) > 1 else "single",
        seed=seed,
    )
