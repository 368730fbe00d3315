"""Chart reading: a bar or line chart whose exact values are printed in tiny labels."""

from __future__ import annotations

import numpy as np
from agentgym.simulators.visual.scene import Readout, Scene, SceneObject, pad_box
from agentgym.simulators.visual.tasks.common import canvas, is_legible, legible_text, tiny_text
from agentgym.simulators.visual.text import TextLayer, text_size
from PIL import ImageDraw

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
PALETTE = [(66, 114, 196), (237, 125, 49), (112, 173, 71), (165, 105, 189), (91, 155, 213)]


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty)
    legible = is_legible(rng)
    kind = "line" if rng.random() < 0.35 else "bar"
    n = int(rng.integers(5, 8)) if legible else {"easy": 8, "medium": 10, "hard": 12}[difficulty]
    start = int(rng.integers(0, 12 - n + 1))
    cats = MONTHS[start : start + n]
    top_value = int(rng.choice([200, 500, 1000]))
    values = [int(v) for v in rng.integers(top_value // 10, top_value, size=n)]
    label_size = legible_text(s) if legible else tiny_text(s)
    axis_size = legible_text(s)
    pen = ImageDraw.Draw(image)
    ink = TextLayer(image.size)
    left, right = 70 * s, image.width - 30 * s
    top, bottom = 60 * s, image.height - 50 * s
    title = f"Monthly {'orders' if kind == 'bar' else 'visitors'}"
    ink.add((left, 15 * s), title, axis_size + 4 * s)
    color = PALETTE[int(rng.integers(len(PALETTE)))]
    # axes and grid
    for i in range(6):
        v = top_value * i / 5
        y = bottom - (bottom - top) * v / top_value
        pen.line([(left, y), (right, y)], fill=(225, 225, 225), width=max(1, s // 2))
        text = f"{v:g}"
        w, h = text_size(text, axis_size)
        ink.add((left - w - 6 * s, y - h / 2), text, axis_size)
    pen.line([(left, top), (left, bottom), (right, bottom)], fill=(60, 60, 60), width=s)
    slot = (right - left) / n
    objects: list[SceneObject] = []
    label_boxes = []
    points = []
    for i, (cat, v) in enumerate(zip(cats, values)):
        cx = left + slot * (i + 0.5)
        y = bottom - (bottom - top) * v / top_value
        if kind == "bar":
            bw = slot * 0.6
            bar = (cx - bw / 2, y, cx + bw / 2, bottom)
            pen.rectangle(bar, fill=color)
            objects.append(SceneObject("bar", f"bar {cat}", bar))
        else:
            r = 4 * s
            bar = (cx - r, y - r, cx + r, y + r)
            points.append((cx, y))
            objects.append(SceneObject("point", f"point {cat}", bar))
        w, h = text_size(str(v), label_size)
        box = ink.add((cx - w / 2, y - h - (3 if kind == "bar" else 6) * s), str(v), label_size)
        label_boxes.append(box)
        objects.append(SceneObject("text", f"value label {cat}", box))
        cw, _ = text_size(cat, axis_size)
        cat_box = ink.add((cx - cw / 2, bottom + 6 * s), cat, axis_size)
        objects.append(SceneObject("text", f"category label {cat}", cat_box))
    if kind == "line":
        pen.line(points, fill=color, width=max(2, s))
        for x, y in points:
            pen.ellipse((x - 3 * s, y - 3 * s, x + 3 * s, y + 3 * s), fill=color)
        for box in label_boxes:  # keep labels readable where the line crosses them
            pen.rectangle(pad_box(box, s), fill=(255, 255, 255))
    ink.paste_onto(image, (40, 40, 40))
    k = int(rng.integers(n))
    what = "bar" if kind == "bar" else "point"
    return Scene(
        task_type="chart",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=f"What exact value is printed on the {what} for {cats[k]}?",
        answer=str(values[k]),
        answer_type="int",
        hint="Answer with the number only, e.g. <answer>123</answer>.",
        target=label_boxes[k],
        needs_tools=not legible,
        objects=objects,
        readouts=[Readout(label_boxes[k], r"(\d+)")],
        seed=seed,
    )
