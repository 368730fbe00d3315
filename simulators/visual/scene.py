"""Scenes: a rendered source image, its downscaled view, and exact ground truth.

A task generator draws a *source* image at high resolution and records a scene graph: every
object it drew, with its kind, a label for grounding and its exact box. The agent sees a
*view*: the source shrunk by an integer factor ``scale`` (box filter), small enough that the
tiny details a question asks about are not legible without zooming. All coordinates the agent
uses are view pixels; tools map them to the source (``source = view * scale``).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

Box = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)`` with x to the right and y down; x1/y1 exclusive."""


@dataclass(frozen=True)
class SceneObject:
    """One drawn thing: a kind, words grounding can match, and its exact box in source px."""

    kind: str
    label: str
    box: Box
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Readout:
    """A region whose text the answer is computed from (exact source box + how to parse it).

    ``pattern`` is a regular expression whose first group (or whole match) is the value;
    ``angle`` is the rotation (degrees, counter-clockwise) that makes the text upright.
    """

    box: Box
    pattern: str
    angle: float = 0.0
    enhance: bool = False

    def parse(self, text: str) -> str | None:
        match = re.search(self.pattern, text.replace("\n", " "))
        if match is None:
            return None
        return (match.group(1) if match.groups() else match.group(0)).strip()


@dataclass
class Scene:
    """A rendered task with its ground truth.

    Attributes:
        task_type: The generator's name (``"doc"``, ``"chart"``...).
        image: The source image (RGB, high resolution).
        scale: Integer shrink factor from source to view.
        question: The question put to the agent.
        answer: The exact answer as text.
        answer_type: ``"text"`` (normalised string match), ``"int"`` or ``"number"``.
        tolerance: Absolute tolerance for ``"number"`` answers.
        target: Source box that holds the detail the question needs (None when spread out).
        needs_tools: False when the detail is legible in the view (the no-tool share).
        objects: The scene graph, for grounding.
        readouts: Text regions the answer is read from (OCR-based tasks).
        combine: How readouts make the answer: ``"single"`` or ``"sum"``.
        units_per_px: Scene units per source pixel (geometry), for ``measure``.
        hint: One line the instruction adds (answer format).
        oracle_points: Privileged points (view px) an oracle measures between.
        seed: The task seed (grounding noise is drawn from it).
    """

    task_type: str
    difficulty: str
    image: Image.Image
    scale: int
    question: str
    answer: str
    answer_type: str = "text"
    tolerance: float = 0.0
    target: Box | None = None
    needs_tools: bool = True
    objects: list[SceneObject] = field(default_factory=list)
    readouts: list[Readout] = field(default_factory=list)
    combine: str = "single"
    units_per_px: float | None = None
    hint: str = ""
    oracle_points: list[tuple[float, float]] = field(default_factory=list)
    seed: int = 0
    _view: np.ndarray | None = None

    @property
    def view(self) -> np.ndarray:
        """The downscaled view (HxWx3 uint8), built once."""
        if self._view is None:
            self._view = np.asarray(self.image.reduce(self.scale), dtype=np.uint8).copy()
        return self._view

    @property
    def view_size(self) -> tuple[int, int]:
        """View width and height in pixels."""
        return self.image.width // self.scale, self.image.height // self.scale

    def to_view(self, box: Box) -> Box:
        """A source box in view pixels (rounded outward to 0.1 px)."""
        s = self.scale
        return (
            math.floor(box[0] / s * 10) / 10,
            math.floor(box[1] / s * 10) / 10,
            math.ceil(box[2] / s * 10) / 10,
            math.ceil(box[3] / s * 10) / 10,
        )

    def digest(self) -> str:
        """A short hash of the source pixels (for tests of determinism)."""
        return hashlib.blake2b(self.image.tobytes(), digest_size=8).hexdigest()


def pad_box(box: Box, pad: float, limit: tuple[int, int] | None = None) -> Box:
    """``box`` grown by ``pad`` on every side, clipped to ``(width, height)`` when given."""
    x0, y0, x1, y1 = box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad
    if limit is not None:
        x0, y0 = max(0.0, x0), max(0.0, y0)
        x1, y1 = min(float(limit[0]), x1), min(float(limit[1]), y1)
    return (x0, y0, x1, y1)


def union_box(boxes: list[Box]) -> Box:
    """The smallest box holding all ``boxes``."""
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def contains(outer: Box, inner: Box) -> bool:
    """True when ``inner`` lies inside ``outer`` (edges included)."""
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and outer[2] >= inner[2]
        and outer[3] >= inner[3]
    )


def box_area(box: Box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])
