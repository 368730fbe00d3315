"""Line tracing: follow one of several tangled thin lines from a letter to a number."""

from __future__ import annotations

import numpy as np
from agentgym.simulators.visual.scene import Scene, SceneObject
from agentgym.simulators.visual.tasks.common import canvas, is_legible, legible_text
from agentgym.simulators.visual.text import TextLayer, text_size
from PIL import ImageDraw

LINE_COLORS = [
    (214, 39, 40),
    (31, 119, 180),
    (44, 160, 44),
    (255, 127, 14),
    (148, 103, 189),
    (140, 86, 75),
]


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty)
    legible = is_legible(rng)
    k = int(rng.integers(3, 5)) if legible else {"easy": 5, "medium": 6, "hard": 8}[difficulty]
    pen = ImageDraw.Draw(image)
    ink = TextLayer(image.size)
    size = legible_text(s)
    left, right = 50 * s, image.width - 50 * s
    top, bottom = 40 * s, image.height - 40 * s
    ys = np.linspace(top, bottom, k)
    perm = rng.permutation(k)
    stations = np.linspace(left, right, 7)
    letters = "ABCDEFGH"[:k]
    objects: list[SceneObject] = []
    width = 4 * s if legible else max(1, s // 2 + 1)
    for i in range(k):
        y_end = ys[perm[i]]
        path = [(left, ys[i])]
        for x in stations[1:-1]:
            path.append((float(x), float(rng.uniform(top, bottom))))
        path.append((right, y_end))
        color = LINE_COLORS[i % len(LINE_COLORS)] if legible else (40, 40, 40)
        pen.line(path, fill=color, width=width, joint="curve")
        w, h = text_size(letters[i], size)
        box = ink.add((left - w - 12 * s, ys[i] - h / 2), letters[i], size)
        objects.append(SceneObject("label", f"start label {letters[i]}", box))
    for j in range(k):
        w, h = text_size(str(j + 1), size)
        box = ink.add((right + 12 * s, ys[j] - h / 2), str(j + 1), size)
        objects.append(SceneObject("label", f"end label {j + 1}", box))
    ink.paste_onto(image, (20, 20, 20))
    i = int(rng.integers(k))
    return Scene(
        task_type="lines",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=f"Follow the line that starts at letter {letters[i]}. At which number does it end?",
        answer=str(int(perm[i]) + 1),
        answer_type="int",
        hint="Answer with the number, e.g. <answer>3</answer>.",
        target=None,
        needs_tools=not legible,
        objects=objects,
        seed=seed,
    )
