"""Tiny-text document lookup: find one record on a dense page and read its code."""

from __future__ import annotations

import numpy as np
from agentgym.simulators.visual.scene import Readout, Scene, SceneObject
from agentgym.simulators.visual.tasks.common import (
    canvas,
    code,
    is_legible,
    legible_text,
    tiny_text,
)
from agentgym.simulators.visual.text import TextLayer, draw_text, text_size


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty, (250, 248, 240))
    legible = is_legible(rng)
    size = legible_text(s) if legible else tiny_text(s)
    cols = 1 if legible else {"easy": 2, "medium": 3, "hard": 3}[difficulty]
    header = legible_text(s) + 6
    draw_text(image, (40 * s // 3, 20 * s // 3), "SHIPPING MANIFEST", header, (30, 30, 90))
    top = 20 * s // 3 + header + 30
    line_h = int(size * 1.9)
    rows = max(1, min((image.height - top - 20) // line_h, 8 if legible else 60))
    n = rows * cols
    orders = rng.choice(np.arange(1000, 9999), size=n, replace=False)
    col_w = (image.width - 80) // cols
    objects: list[SceneObject] = []
    codes: list[str] = []
    boxes = []
    ink = TextLayer(image.size)
    for i in range(n):
        c, r = divmod(i, rows)
        x, y = 40 + c * col_w, top + r * line_h
        qty = int(rng.integers(1, 99))
        ref = code(rng)
        head = f"Order {orders[i]}  qty {qty:>2}  ref "
        w, _ = text_size(head, size)
        line_box = ink.add((x, y), head + ref, size)
        box = ink.ink_within((x + w, y, line_box[2], y + line_h))
        objects.append(SceneObject("line", f"record line order {orders[i]}", line_box))
        objects.append(SceneObject("text", f"ref code order {orders[i]}", box))
        codes.append(ref)
        boxes.append(box)
    ink.paste_onto(image, (25, 25, 25))
    k = int(rng.integers(n))
    target = boxes[k]
    return Scene(
        task_type="doc",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=f"What is the ref code of order {orders[k]}?",
        answer=codes[k],
        hint="Answer with the code exactly as printed, e.g. <answer>AC3-X7K</answer>.",
        target=target,
        needs_tools=not legible,
        objects=objects,
        readouts=[Readout(target, r"([A-Z0-9]{3}\s?-\s?[A-Z0-9]{3})")],
        seed=seed,
    )
