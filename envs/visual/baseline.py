"""The no-tool baseline: answer at once from the downscaled view, never calling a tool.

It is the reference the tool-using oracle is compared with, and it is generous: it knows
*where* the detail is (the scene graph), so it measures only what the view's resolution
allows, not search.

* Text tasks (doc, chart, table, signs): tesseract reads the target's region **of the view**
  (upscaled back to source size, which adds no information), with the same parsing as the
  oracle. This is a real measurement: OCR either reads the tiny text or it does not.
* Pixel tasks (objects, clock, geometry, maze, lines): an idealised view reader. It is right
  when the generator drew the detail at a legible size, and otherwise falls back to the best
  cheap guess a reader of the view could make: the shortest grid distance for a maze, the
  straight-across end for a line, the average count for counting, "yes" for a relation,
  12:00 for a clock, the nearest major tick for a gauge, and for geometry an estimate by eye (a length to the nearest half
  centimetre, an angle to the nearest 10 degrees; without a ruler no finer reading is honest).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from agentgym.envs.visual.env import read_answer
from agentgym.simulators.visual.ocr import read_text
from agentgym.simulators.visual.scene import Scene, pad_box
from agentgym.simulators.visual.tools import prepare_for_ocr
from PIL import Image

from agentgym.agents.base import Generation, PolicyInput
from agentgym.parsing import render_answer


def view_ocr(
    scene: Scene, box: tuple[float, float, float, float], angle: float, enhance: bool
) -> str:
    """OCR of a source box as seen in the view (the view crop scaled back up)."""
    width, height = scene.view_size
    vb = pad_box(scene.to_view(box), 2, (width, height))
    crop = Image.fromarray(scene.view).crop(
        (math.floor(vb[0]), math.floor(vb[1]), math.ceil(vb[2]), math.ceil(vb[3]))
    )
    crop = crop.resize(
        (crop.width * scene.scale, crop.height * scene.scale), Image.Resampling.LANCZOS
    )
    return "OCR:\n" + read_text(prepare_for_ocr(crop, angle % 360.0, enhance))


def _by_eye(scene: Scene) -> str:
    """A geometry reading by eye: lengths to 0.5 cm, angles to 10 degrees."""
    value = float(scene.answer)
    if len(scene.oracle_points) == 2:
        return f"{round(value * 2) / 2:.1f}"
    return f"{round(value / 10) * 10:.0f}"


def no_tool_answer(scene: Scene) -> str:
    """What the no-tool baseline answers for ``scene`` (see the module docstring)."""
    if scene.readouts:
        texts = [view_ocr(scene, r.box, r.angle, r.enhance) for r in scene.readouts]
        return read_answer(scene, texts)
    if not scene.needs_tools:
        return scene.answer
    if scene.oracle_points:
        return _by_eye(scene)
    if scene.task_type == "maze":
        attrs = scene.objects[0].attrs
        (r0, c0), (r1, c1) = attrs["start"], attrs["goal"]
        return str(abs(r0 - r1) + abs(c0 - c1))
    if scene.task_type == "lines":
        letter = scene.question.split("letter ")[1][0]
        return str("ABCDEFGH".index(letter) + 1)
    if scene.task_type == "objects":
        if scene.answer_type == "int":
            return str(max(1, round(len(scene.objects) / 20)))
        return "yes"
    if scene.task_type == "clock":
        return "12:00"
    if scene.task_type == "gauge":  # by eye: the nearest labelled major tick
        top = float(next(o.attrs["top"] for o in scene.objects if o.box == scene.target))
        return f"{round(float(scene.answer) / (top / 10)) * top / 10:g}"
    return ""


class NoToolPolicy:
    """A :class:`agentgym.agents.Policy` that answers every task on its first turn, from the view."""

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        out = []
        for item in inputs:
            env = item.env.unwrapped if hasattr(item.env, "unwrapped") else item.env
            out.append(Generation(text=render_answer(no_tool_answer(env.scene))))
        return out
