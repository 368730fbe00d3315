"""Clocks: read the time on a small analogue clock hung among other wall objects."""

from __future__ import annotations

import math

import numpy as np
from agentgym.simulators.visual.scene import Scene, SceneObject
from agentgym.simulators.visual.tasks.common import canvas, is_legible
from PIL import ImageDraw


def _hand(cx: float, cy: float, length: float, turns: float) -> tuple[float, float]:
    """The tip of a hand ``turns`` of a full circle clockwise from 12 o'clock."""
    a = 2 * math.pi * turns
    return cx + length * math.sin(a), cy - length * math.cos(a)


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty, (226, 219, 205))
    legible = is_legible(rng)
    pen = ImageDraw.Draw(image)
    objects: list[SceneObject] = []
    # wall decoration: framed pictures (distractors with the same outline colour)
    for _ in range(int(rng.integers(3, 6))):
        w, h = rng.integers(60, 160, size=2) * s
        x, y = rng.integers(0, image.width - w), rng.integers(0, image.height - h)
        fill = tuple(int(v) for v in rng.integers(90, 200, size=3))
        pen.rectangle((x, y, x + w, y + h), fill=fill, outline=(60, 50, 40), width=3 * s)
        objects.append(SceneObject("picture", "picture frame", (x, y, x + w, y + h)))
    radius = (70 if legible else {"easy": 20, "medium": 14, "hard": 11}[difficulty]) * s
    cx = float(rng.uniform(radius + 10 * s, image.width - radius - 10 * s))
    cy = float(rng.uniform(radius + 10 * s, image.height - radius - 10 * s))
    step = 5 if difficulty != "hard" and not legible else (15 if legible else 1)
    hour = int(rng.integers(1, 13))
    minute = int(rng.integers(0, 60 // step)) * step
    pen.ellipse(
        (cx - radius, cy - radius, cx + radius, cy + radius),
        fill=(252, 252, 248),
        outline=(30, 30, 30),
        width=max(2, radius // 25),
    )
    for tick in range(60):
        outer = _hand(cx, cy, radius * 0.93, tick / 60)
        inner = _hand(cx, cy, radius * (0.78 if tick % 5 == 0 else 0.86), tick / 60)
        pen.line(
            [inner, outer], fill=(30, 30, 30), width=max(1, radius // (18 if tick % 5 == 0 else 50))
        )
    hour_tip = _hand(cx, cy, radius * 0.5, (hour % 12 + minute / 60) / 12)
    minute_tip = _hand(cx, cy, radius * 0.8, minute / 60)
    pen.line([(cx, cy), hour_tip], fill=(20, 20, 20), width=max(2, radius // 12))
    pen.line([(cx, cy), minute_tip], fill=(20, 20, 20), width=max(1, radius // 28))
    pen.ellipse(
        (cx - radius / 15, cy - radius / 15, cx + radius / 15, cy + radius / 15), fill=(150, 20, 20)
    )
    box = (cx - radius, cy - radius, cx + radius, cy + radius)
    objects.append(SceneObject("clock", "wall clock", box))
    return Scene(
        task_type="clock",
        difficulty=difficulty,
        image=image,
        scale=s,
        question="What time does the wall clock show?",
        answer=f"{hour}:{minute:02d}",
        answer_type="clock",
        hint="Answer as H:MM on a 12-hour clock, e.g. <answer>4:35</answer>.",
        target=box,
        needs_tools=not legible,
        objects=objects,
        seed=seed,
    )
