"""Rotated or faint text: read the one word printed on a framed, tilted or low-contrast label."""

from __future__ import annotations

import numpy as np
from agentgym.simulators.visual.scene import Readout, Scene, SceneObject, pad_box
from agentgym.simulators.visual.tasks.common import WORDS, canvas, is_legible, legible_text
from agentgym.simulators.visual.text import GlyphFont
from PIL import Image, ImageDraw

FRAME_COLORS = {"orange": (245, 130, 20), "teal": (20, 150, 150), "magenta": (200, 40, 160)}


def _label(word: str, size: int, fg: int, bg: int, angle: float) -> tuple[Image.Image, Image.Image]:
    """The word on its own tile, rotated: returns (grey tile, paste mask)."""
    font = GlyphFont.get(size)
    text = font.mask(word)
    pad = size // 2
    tile = Image.new("L", (text.shape[1] + 2 * pad, text.shape[0] + 2 * pad), bg)
    tile.paste(fg, (pad, pad), Image.fromarray(text, "L"))
    mask = Image.new("L", tile.size, 255)
    return (
        tile.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=bg),
        mask.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=0),
    )


def generate(rng: np.random.Generator, difficulty: str, seed: int = 0) -> Scene:
    image, s = canvas(difficulty, (232, 232, 232))
    legible = is_legible(rng)
    pen = ImageDraw.Draw(image)
    words = [str(w) for w in rng.choice(WORDS, size=7, replace=False)]
    frames = list(FRAME_COLORS)
    frame = frames[int(rng.integers(len(frames)))]
    objects: list[SceneObject] = []
    slots = rng.permutation(12)[:7]
    target_box = None
    readout = None
    faint = False
    angle = 0.0
    for i, (word, slot) in enumerate(zip(words, slots)):
        is_target = i == 0
        col, row = int(slot) % 4, int(slot) // 4
        cx = (col + 0.5) * image.width / 4
        cy = (row + 0.5) * image.height / 3
        if is_target:
            mode = int(rng.integers(3))  # 0 rotated, 1 faint, 2 both
            faint = mode >= 1 and not legible
            angle = float(rng.choice([-1, 1]) * rng.uniform(25, 65)) if mode != 1 else 0.0
            size = (
                legible_text(s) + 2 * s
                if legible
                else {"easy": 18, "medium": 17, "hard": 18}[difficulty]
            )
            fg, bg = (200, 232) if faint else (20, 250)
        else:
            size = int(rng.choice([legible_text(s), int(legible_text(s) * 1.4)]))
            fg, bg = 30, 250
            angle_other = float(rng.uniform(-10, 10))
        tile, mask = _label(word, size, fg, bg, angle if is_target else angle_other)
        x, y = round(cx - tile.width / 2), round(cy - tile.height / 2)
        image.paste(Image.merge("RGB", (tile, tile, tile)), (x, y), mask)
        box = (x, y, x + tile.width, y + tile.height)
        if is_target:
            target_box = box
            frame_box = pad_box(box, 4 * s)
            pen.rectangle(frame_box, outline=FRAME_COLORS[frame], width=max(2, s))
            objects.append(SceneObject("frame", f"{frame} frame label", frame_box))
            readout = Readout(box, r"([A-Za-z]{3,})", angle=-angle, enhance=faint)
        else:
            objects.append(SceneObject("label", "label", box))
    assert target_box is not None and readout is not None
    return Scene(
        task_type="signs",
        difficulty=difficulty,
        image=image,
        scale=s,
        question=f"What word is written inside the {frame} frame?",
        answer=words[0],
        hint="Answer with the word in lower case, e.g. <answer>river</answer>.",
        target=target_box,
        needs_tools=not legible,
        objects=objects,
        readouts=[readout],
        seed=seed,
    )
