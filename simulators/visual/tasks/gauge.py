"""Gauges: read the needle of one dial on an instrument panel against its fine tick marks."""

from __future__ import annotations

import math

import numpy as np
from agentgym.simulators.visual.scene import Scene, SceneObject
from agentgym.simulators.visual.tasks.common import canvas, is_legible, legible_text, tiny_text
from agentgym.simulators.visual.text import TextLayer, text_size
from PIL import ImageDraw

NAMES = ("PRESSURE", "TEMP", "FLOW", "LEVEL", "SPEED", "VOLTAGE")
SWEEP = 270.0  # degrees of arc from the scale's zero (lower left) to its maximum (lower right)


def _point(cx: float, cy: float, radius: float, degrees_from_top: float) -> tuple[float, float]:
    a = math.radians(degrees_from_top)
    return cx + radius * math.sin(a), cy - radius * math.cos(a)


def _angle(value: float, top: float) -> float:
    return -SWEEP / 2 + SWEEP * value / top


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty, (58, 62, 70))
    legible = is_legible(rng)
    pen = ImageDraw.Draw(image)
    ink = TextLayer(image.size)
    count = 1 if legible else {"easy": 3, "medium": 4, "hard": 6}[difficulty]
    names = [str(n) for n in rng.choice(NAMES, size=count, replace=False)]
    radius = (150 if legible else {"easy": 50, "medium": 40, "hard": 32}[difficulty]) * s
    cols = min(count, 3)
    rows = math.ceil(count / cols)
    objects: list[SceneObject] = []
    readings = []
    for i, name in enumerate(names):
        c, r = i % cols, i // cols
        cx = (c + 0.5) * image.width / cols
        cy = (r + 0.5) * image.height / rows + 10 * s
        top = int(rng.choice([50, 100, 200]))
        minor = top / 50  # 50 minor ticks on every scale
        step = minor * (5 if legible else 1)
        value = float(int(rng.integers(1, int(top / step))) * step)
        readings.append((value, top, minor))
        pen.ellipse(
            (cx - radius, cy - radius, cx + radius, cy + radius),
            fill=(245, 245, 240),
            outline=(20, 20, 20),
            width=max(2, radius // 30),
        )
        for k in range(51):
            v = k * minor
            major = k % 5 == 0
            outer = _point(cx, cy, radius * 0.92, _angle(v, top))
            inner = _point(cx, cy, radius * (0.78 if major else 0.85), _angle(v, top))
            pen.line(
                [inner, outer], fill=(20, 20, 20), width=max(1, radius // (40 if major else 90))
            )
            if k % 10 == 0:
                label = f"{v:g}"
                size = legible_text(s) if legible else tiny_text(s)
                w, h = text_size(label, size)
                lx, ly = _point(cx, cy, radius * 0.6, _angle(v, top))
                ink.add((lx - w / 2, ly - h / 2), label, size)
        tip = _point(cx, cy, radius * 0.8, _angle(value, top))
        pen.line([(cx, cy), tip], fill=(200, 30, 30), width=max(1, radius // 45))
        pen.ellipse(
            (cx - radius / 14, cy - radius / 14, cx + radius / 14, cy + radius / 14),
            fill=(40, 40, 40),
        )
        box = (cx - radius, cy - radius, cx + radius, cy + radius)
        objects.append(SceneObject("gauge", f"{name.lower()} gauge dial", box, {"top": top}))
    ink.paste_onto(image, (20, 20, 20))
    # the dial names sit on the dark panel: redraw them light
    names_layer = TextLayer(image.size)
    for i, name in enumerate(names):
        c, r = i % cols, i // cols
        cx = (c + 0.5) * image.width / cols
        cy = (r + 0.5) * image.height / rows + 10 * s
        nw, _ = text_size(name, legible_text(s))
        names_layer.add((cx - nw / 2, cy + radius + 6 * s), name, legible_text(s))
    names_layer.paste_onto(image, (235, 235, 235))
    k = int(rng.integers(count))
    value, top, minor = readings[k]
    return Scene(
        task_type="gauge",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=f"What value does the {names[k]} gauge show?",
        answer=f"{value:g}",
        answer_type="number",
        tolerance=minor / 2,
        hint=f"Answer with the number (to within {minor / 2:g}), e.g. <answer>42</answer>.",
        target=objects[k].box,
        needs_tools=not legible,
        objects=objects,
        seed=seed,
    )
