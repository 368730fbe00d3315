"""Object grid: many small coloured shapes; count a kind or judge where two stand."""

from __future__ import annotations

import math

import numpy as np
from agentgym.simulators.visual.scene import Scene, SceneObject, union_box
from agentgym.simulators.visual.tasks.common import canvas, is_legible
from PIL import ImageDraw

COLORS = {
    "red": (214, 39, 40),
    "green": (44, 160, 44),
    "blue": (31, 119, 180),
    "orange": (255, 127, 14),
    "purple": (148, 103, 189),
}
SHAPES = ("circle", "square", "triangle", "diamond")


def _shape(
    pen: ImageDraw.ImageDraw, shape: str, cx: float, cy: float, r: float, fill: tuple[int, int, int]
) -> None:
    if shape == "circle":
        pen.ellipse((cx - r, cy - r, cx + r, cy + r), fill=fill)
    elif shape == "square":
        k = r * 0.85
        pen.rectangle((cx - k, cy - k, cx + k, cy + k), fill=fill)
    elif shape == "triangle":
        pen.polygon(
            [
                (cx, cy - r),
                (cx + r * math.sqrt(3) / 2, cy + r / 2),
                (cx - r * math.sqrt(3) / 2, cy + r / 2),
            ],
            fill=fill,
        )
    else:
        pen.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=fill)


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty, (246, 246, 246))
    legible = is_legible(rng)
    if legible:
        cell, radius, n = 80 * s, 22 * s, int(rng.integers(6, 14))
    else:
        cell = {"easy": 16, "medium": 12, "hard": 10}[difficulty] * s
        radius = int(1.6 * s + 1)
        n = {"easy": 60, "medium": 110, "hard": 160}[difficulty]
    cols, rows = image.width // cell, image.height // cell
    cells = rng.choice(cols * rows, size=min(n, cols * rows), replace=False)
    pen = ImageDraw.Draw(image)
    objects: list[SceneObject] = []
    color_names = list(COLORS)
    for idx in cells:
        r, c = divmod(int(idx), cols)
        cx = (c + 0.5) * cell + rng.uniform(-0.15, 0.15) * cell
        cy = (r + 0.5) * cell + rng.uniform(-0.15, 0.15) * cell
        color = color_names[int(rng.integers(len(color_names)))]
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        _shape(pen, shape, cx, cy, radius, COLORS[color])
        box = (cx - radius, cy - radius, cx + radius, cy + radius)
        objects.append(
            SceneObject(
                shape, f"{color} {shape}", box, {"color": color, "shape": shape, "center": (cx, cy)}
            )
        )
    kinds: dict[str, list[SceneObject]] = {}
    for obj in objects:
        kinds.setdefault(obj.label, []).append(obj)
    unique = [group[0] for group in kinds.values() if len(group) == 1]
    if len(unique) >= 2 and rng.random() < 0.3:
        a, b = (unique[int(i)] for i in rng.choice(len(unique), size=2, replace=False))
        ax, bx = a.attrs["center"][0], b.attrs["center"][0]
        if abs(ax - bx) < radius:  # too close to call: compare heights instead
            question = f"Is the {a.label} above the {b.label}? Answer yes or no."
            answer = "yes" if a.attrs["center"][1] < b.attrs["center"][1] else "no"
        else:
            question = f"Is the {a.label} to the left of the {b.label}? Answer yes or no."
            answer = "yes" if ax < bx else "no"
        target = union_box([a.box, b.box])
        hint = "Answer yes or no, e.g. <answer>yes</answer>."
        answer_type = "text"
    else:
        label = list(kinds)[int(rng.integers(len(kinds)))]
        question = f"How many {label}s are there in the image?"
        answer = str(len(kinds[label]))
        target = None
        hint = "Answer with the number only, e.g. <answer>7</answer>."
        answer_type = "int"
    return Scene(
        task_type="objects",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=question,
        answer=answer,
        answer_type=answer_type,
        hint=hint,
        target=target,
        needs_tools=not legible,
        objects=objects,
        seed=seed,
    )
