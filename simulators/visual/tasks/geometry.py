"""Geometry drawn to scale: measure a side or an angle of a triangle against a scale bar."""

from __future__ import annotations

import math

import numpy as np
from agentgym.simulators.visual.scene import Scene, SceneObject
from agentgym.simulators.visual.tasks.common import canvas, is_legible, legible_text
from agentgym.simulators.visual.text import TextLayer, text_size
from PIL import ImageDraw


def _angle(a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> float:
    v1, v2 = (a[0] - b[0], a[1] - b[1]), (c[0] - b[0], c[1] - b[1])
    cos = (v1[0] * v2[0] + v1[1] * v2[1]) / (math.hypot(*v1) * math.hypot(*v2))
    return math.degrees(math.acos(max(-1.0, min(1.0, cos))))


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty)
    legible = is_legible(rng)
    pen = ImageDraw.Draw(image)
    ink = TextLayer(image.size)
    label = legible_text(s)
    cm = float(rng.uniform(40, 70)) * s  # source px per cm
    while True:
        pts = [(float(rng.uniform(60, 580)) * s, float(rng.uniform(50, 380)) * s) for _ in range(3)]
        sides = [math.dist(pts[i], pts[(i + 1) % 3]) for i in range(3)]
        angles = [_angle(pts[i - 1], pts[i], pts[(i + 1) % 3]) for i in range(3)]
        distinct = not legible or sorted(sides)[-1] > 1.25 * sorted(sides)[-2]
        if min(sides) > 80 * s and min(angles) > 25 and distinct:
            break
    names = "ABC"
    pen.polygon(pts, outline=(20, 20, 20), width=max(1, s // 2 + 1))
    objects: list[SceneObject] = []
    centroid = (sum(p[0] for p in pts) / 3, sum(p[1] for p in pts) / 3)
    for name, (x, y) in zip(names, pts):
        dx, dy = x - centroid[0], y - centroid[1]
        norm = math.hypot(dx, dy) or 1.0
        w, h = text_size(name, label)
        ink.add((x + dx / norm * 14 * s - w / 2, y + dy / norm * 14 * s - h / 2), name, label)
        r = 2 * s
        pen.ellipse((x - r, y - r, x + r, y + r), fill=(20, 20, 20))
        objects.append(SceneObject("vertex", f"vertex {name}", (x - r, y - r, x + r, y + r)))
    # scale bar: 2 cm
    bx, by = 20 * s, image.height - 25 * s
    pen.line([(bx, by), (bx + 2 * cm, by)], fill=(20, 20, 20), width=s)
    for x in (bx, bx + cm, bx + 2 * cm):
        pen.line([(x, by - 4 * s), (x, by + 4 * s)], fill=(20, 20, 20), width=s)
    ink.add((bx + 2 * cm + 8 * s, by - label / 2), "2 cm", label)
    objects.append(SceneObject("scale", "scale bar", (bx, by - 4 * s, bx + 2 * cm, by + 4 * s)))
    ink.paste_onto(image, (20, 20, 20))
    side_names = [names[i] + names[(i + 1) % 3] for i in range(3)]
    to_view = lambda p: (p[0] / s, p[1] / s)  # noqa: E731
    if legible:
        longest = side_names[int(np.argmax(sides))]
        question = "Which side of triangle ABC is the longest: AB, BC or CA?"
        answer, answer_type, tolerance = longest, "text", 0.0
        hint = "Answer with the side's name, e.g. <answer>BC</answer>."
        points: list[tuple[float, float]] = []
    elif rng.random() < 0.5:
        i = int(rng.integers(3))
        question = f"How long is side {side_names[i]} in cm, by the 2 cm scale bar?"
        answer, answer_type, tolerance = f"{sides[i] / cm:.2f}", "number", 0.1
        hint = "Answer in cm to within 0.1 cm, e.g. <answer>4.35</answer>."
        points = [to_view(pts[i]), to_view(pts[(i + 1) % 3])]
    else:
        i = int(rng.integers(3))
        question = f"What is the angle at vertex {names[i]} of triangle ABC, in degrees?"
        answer, answer_type, tolerance = f"{angles[i]:.1f}", "number", 1.5
        hint = "Answer in degrees to within 1.5 degrees, e.g. <answer>47</answer>."
        points = [to_view(pts[i - 1]), to_view(pts[i]), to_view(pts[(i + 1) % 3])]
    return Scene(
        task_type="geometry",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=question,
        answer=answer,
        answer_type=answer_type,
        tolerance=tolerance,
        hint=hint,
        needs_tools=not legible,
        objects=objects,
        units_per_px=1.0 / cm,
        oracle_points=points,
        seed=seed,
    )
