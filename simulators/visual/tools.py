"""The visual tools: real image operations on a :class:`~.scene.Scene`.

Every tool takes view coordinates (pixels of the image shown at reset; x right, y down) and
maps them to the high-resolution source. Each call returns a :class:`ToolResult`: text for
the agent, an optional output image, and an error message instead of an exception when the
arguments make no sense (out of range, NaN, zero area, absurd magnification). Output images
are bounded (:data:`MAX_OUTPUT_SIDE`), so no argument can make a tool allocate much memory.

The tools and their JSON schemas are declared in :data:`TOOLS`; the schemas are what the
agent reads, the functions below are what runs.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from agentgym.simulators.visual.calc import CalcError, calculate
from agentgym.simulators.visual.ocr import (
    OcrError,
    OcrUnavailableError,
    fit_for_tesseract,
    fitted_size,
    ocr_cost,
    read_text,
)
from agentgym.simulators.visual.scene import Box, Scene
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter, ImageOps

from agentgym.parsing import Tool

logger = logging.getLogger(__name__)

#: No tool returns an image with a side longer than this.
MAX_OUTPUT_SIDE = 1024
#: Zoomed crops smaller than this (long side) are magnified up to it, at most 4x the source.
MIN_OUTPUT_SIDE = 256
#: The largest magnification (output px per view px) ``zoom`` accepts.
MAX_ZOOM = 32.0
#: At most this many regions are listed by ``ground``.
MAX_GROUND_RESULTS = 40

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "all",
        "each",
        "every",
        "find",
        "where",
        "is",
        "are",
        "which",
        "what",
        "any",
        "with",
        "show",
        "me",
        "locate",
        "region",
        "regions",
        "object",
        "objects",
        "please",
    ]
)


@dataclass(frozen=True)
class ToolResult:
    """What one tool call gives back: text, an optional image, or an error."""

    text: str
    image: np.ndarray | None = None
    error: str | None = None
    region: Box | None = None  # the view box the call looked at, after clipping
    system_error: str | None = None  # the host cannot run this tool (not the agent's fault)
    cost: int = 0  # OCR pixels handed to tesseract (what an OCR budget meters)
    over_budget: bool = False  # not run: it would cost more than the budget left

    @property
    def ok(self) -> bool:
        return self.error is None


class ToolError(ValueError):
    """Bad arguments to a tool; the message is shown to the agent."""


# ---- schemas -----------------------------------------------------------------------------

_BOX = {
    "type": "array",
    "items": {"type": "number"},
    "minItems": 4,
    "maxItems": 4,
    "description": "[x0, y0, x1, y1] in view pixels (x right, y down), x0 < x1 and y0 < y1.",
}
_POINT = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


def _schema(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "zoom",
            "Crop a region of the image and show it at higher resolution (detail comes from the "
            "full-resolution original, not from the small view).",
            _schema(
                {
                    "box": _BOX,
                    "scale": {
                        "type": "number",
                        "description": f"Optional magnification relative to the view (0 < scale <= {MAX_ZOOM:g}); "
                        "default: as much detail as the original holds.",
                    },
                },
                ["box"],
            ),
        ),
        Tool(
            "ocr",
            "Read the text in a region with OCR (tesseract on the full-resolution original).",
            _schema(
                {
                    "box": _BOX,
                    "angle": {
                        "type": "number",
                        "description": "Rotate the region by this many degrees counter-clockwise first (to make slanted text upright).",
                    },
                    "enhance": {
                        "type": "boolean",
                        "description": "Stretch the contrast first (for faint text).",
                    },
                },
                ["box"],
            ),
        ),
        Tool(
            "ground",
            "Find the regions that match a short description (e.g. 'red triangle', 'bar Mar', "
            "'row Q3 column Oslo'); returns their boxes in view pixels.",
            _schema({"query": {"type": "string", "description": "What to look for."}}, ["query"]),
        ),
        Tool(
            "measure",
            "Measure between points: two points give a distance, three points the angle at the "
            "middle one. Distances are given in view pixels, source pixels and, where the image "
            "has a scale bar, in its units.",
            _schema(
                {
                    "points": {
                        "type": "array",
                        "items": _POINT,
                        "minItems": 2,
                        "maxItems": 3,
                        "description": "[[x, y], [x, y]] or [[x, y], [x, y], [x, y]] in view pixels.",
                    }
                },
                ["points"],
            ),
        ),
        Tool(
            "color_stats",
            "Colour statistics of a region: mean RGB and its main colours with their shares.",
            _schema({"box": _BOX}, ["box"]),
        ),
        Tool(
            "rotate",
            "Show a region rotated by an angle (degrees, counter-clockwise).",
            _schema(
                {
                    "box": _BOX,
                    "angle": {"type": "number", "description": "Degrees, counter-clockwise."},
                },
                ["box", "angle"],
            ),
        ),
        Tool(
            "enhance",
            "Show a region with stronger contrast (auto-levels, then a contrast factor), optionally sharpened or inverted.",
            _schema(
                {
                    "box": _BOX,
                    "contrast": {
                        "type": "number",
                        "description": "Contrast factor, 0.5..8 (default 2).",
                    },
                    "sharpen": {"type": "boolean"},
                    "invert": {"type": "boolean"},
                },
                ["box"],
            ),
        ),
        Tool(
            "draw",
            "Draw helpers on a copy of the view: a coordinate grid every `grid` view pixels, "
            "point marks and line segments. Returns the annotated image.",
            _schema(
                {
                    "grid": {
                        "type": "integer",
                        "description": "Grid spacing in view pixels (>= 10); 0 for none.",
                    },
                    "marks": {"type": "array", "items": _POINT, "maxItems": 50},
                    "lines": {
                        "type": "array",
                        "items": {
                            "type": "array",
                            "items": {"type": "number"},
                            "minItems": 4,
                            "maxItems": 4,
                        },
                        "maxItems": 50,
                        "description": "Segments [x0, y0, x1, y1] in view pixels.",
                    },
                },
                [],
            ),
        ),
        Tool(
            "calculate",
            "Evaluate an arithmetic expression safely (+ - * / // % **, sqrt, sin/cos/tan in degrees, atan2, hypot, round, min, max).",
            _schema({"expression": {"type": "string"}}, ["expression"]),
        ),
    )
}


# ---- argument checks ---------------------------------------------------------------------


def _finite(value: Any, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ToolError(f"{what} must be a number, got {value!r}.") from None
    if not math.isfinite(number):
        raise ToolError(f"{what} must be a finite number, got {value!r}.")
    return number


def view_box(scene: Scene, box: Sequence[Any]) -> tuple[Box, str]:
    """Validate a view box and clip it to the view; returns the box and a note if clipped."""
    if not isinstance(box, list | tuple) or len(box) != 4:
        raise ToolError("box must be [x0, y0, x1, y1].")
    x0, y0, x1, y1 = (_finite(v, f"box[{i}]") for i, v in enumerate(box))
    width, height = scene.view_size
    if x1 <= x0 or y1 <= y0:
        raise ToolError(
            f"box [{x0:g}, {y0:g}, {x1:g}, {y1:g}] has zero or negative area: need x0 < x1 and y0 < y1."
        )
    cx0, cy0 = max(0.0, x0), max(0.0, y0)
    cx1, cy1 = min(float(width), x1), min(float(height), y1)
    if cx1 <= cx0 or cy1 <= cy0:
        raise ToolError(
            f"box [{x0:g}, {y0:g}, {x1:g}, {y1:g}] lies outside the image, which spans "
            f"x 0..{width} and y 0..{height} (view pixels)."
        )
    if (cx1 - cx0) * scene.scale < 2 or (cy1 - cy0) * scene.scale < 2:
        raise ToolError(
            f"box is too small: at least {2 / scene.scale:.2f} view pixels on each side."
        )
    note = ""
    if (cx0, cy0, cx1, cy1) != (x0, y0, x1, y1):
        note = f" (clipped to the image: [{cx0:g}, {cy0:g}, {cx1:g}, {cy1:g}])"
    return (cx0, cy0, cx1, cy1), note


def _source_box(scene: Scene, box: Box) -> tuple[int, int, int, int]:
    """The source pixels under a view box (left, top, right, bottom), rounded outwards."""
    s = scene.scale
    return (
        math.floor(box[0] * s),
        math.floor(box[1] * s),
        math.ceil(box[2] * s),
        math.ceil(box[3] * s),
    )


def _source_crop(scene: Scene, box: Box) -> Image.Image:
    return scene.image.crop(_source_box(scene, box))


def _fit(image: Image.Image, long_side: int) -> Image.Image:
    long_side = max(1, min(long_side, MAX_OUTPUT_SIDE))
    factor = long_side / max(image.width, image.height)
    if abs(factor - 1.0) < 1e-9:
        return image
    size = (max(1, round(image.width * factor)), max(1, round(image.height * factor)))
    if factor < 1:  # shrink: box-reduce first, then Lanczos (much faster on big crops)
        return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=2.0)
    return image.resize(size, Image.Resampling.BICUBIC)


def _default_side(crop: Image.Image) -> int:
    side = max(crop.width, crop.height)
    if side < MIN_OUTPUT_SIDE:
        side = min(MIN_OUTPUT_SIDE, side * 4)
    return side


def _fmt_box(box: Box) -> str:
    return "[" + ", ".join(f"{v:g}" for v in (round(c, 1) for c in box)) + "]"


# ---- the tools ---------------------------------------------------------------------------


def zoom(scene: Scene, box: Sequence[Any], scale: Any = None) -> ToolResult:
    region, note = view_box(scene, box)
    crop = _source_crop(scene, region)
    long_view = max(region[2] - region[0], region[3] - region[1])
    if scale is None:
        side = _default_side(crop)
    else:
        factor = _finite(scale, "scale")
        if not 0 < factor <= MAX_ZOOM:
            raise ToolError(f"scale must be in (0, {MAX_ZOOM:g}], got {factor:g}.")
        side = max(1, round(long_view * factor))
    if side > MAX_OUTPUT_SIDE:
        note += f" (output capped at {MAX_OUTPUT_SIDE} px)"
    out = _fit(crop, side)
    shown = out.width / max(1e-9, region[2] - region[0])
    text = (
        f"Zoomed into {_fmt_box(region)}{note}: {out.width}x{out.height} px, {shown:.2f}x the view."
    )
    return ToolResult(text, np.asarray(out, dtype=np.uint8), region=region)


def prepare_for_ocr(crop: Image.Image, angle: float, enhance: bool) -> Image.Image:
    """Grey, optionally contrast-stretched and rotated: what ``ocr`` hands to tesseract."""
    img = crop.convert("L")
    if enhance:
        img = ImageOps.autocontrast(img, cutoff=1)
    if angle:
        img = img.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    return img


def rotated_size(width: int, height: int, angle: float) -> tuple[int, int]:
    """The size of ``Image.rotate(angle, expand=True)`` on a ``width`` x ``height`` image.

    Pillow's own arithmetic, done on four corners instead of pixels: a quarter turn swaps
    the sides (Pillow transposes); any other angle gives the bounding box of the rotated
    corners, rounded outwards (at 0 and 180 degrees that is the image's own size, the
    sines and cosines being rounded to 15 places as Pillow does).
    """
    angle = angle % 360.0
    if angle in (90.0, 270.0):
        return height, width
    rad = -math.radians(angle)
    a, b = round(math.cos(rad), 15), round(math.sin(rad), 15)
    d, e = round(-math.sin(rad), 15), round(math.cos(rad), 15)
    cx, cy = width / 2, height / 2
    c = a * -cx + b * -cy + cx  # the translation that keeps the centre in place
    f = d * -cx + e * -cy + cy
    corners = ((0, 0), (width, 0), (width, height), (0, height))
    xs = [a * x + b * y + c for x, y in corners]
    ys = [d * x + e * y + f for x, y in corners]
    return (
        math.ceil(max(xs)) - math.floor(min(xs)),
        math.ceil(max(ys)) - math.floor(min(ys)),
    )


def ocr_cost_of(scene: Scene, region: Box, angle: float) -> int:
    """What ``ocr`` of a (validated) view ``region`` at ``angle`` costs, from sizes alone.

    Equal to :func:`~.ocr.ocr_cost` of the image the call would hand to tesseract, but
    computed without cropping, rotating or scaling anything, so that a call the budget
    refuses costs no image work at all.
    """
    left, top, right, bottom = _source_box(scene, region)
    fitted_w, fitted_h = fitted_size(*rotated_size(right - left, bottom - top, angle))
    return fitted_w * fitted_h


def ocr(
    scene: Scene,
    box: Sequence[Any],
    angle: Any = 0.0,
    enhance: Any = False,
    budget_px: int | None = None,
) -> ToolResult:
    """Tesseract on a region; refused (``over_budget``) when it would cost over ``budget_px``.

    The cost is the pixel count handed to tesseract (:func:`~.ocr.ocr_cost`), known from
    the box and the angle before any image work (:func:`ocr_cost_of`), so a budget bounds
    OCR time without timing anything (deterministic) and a refused call prepares nothing.
    """
    region, note = view_box(scene, box)
    turn = _finite(angle, "angle") if angle is not None else 0.0
    cost = ocr_cost_of(scene, region, turn)
    if budget_px is not None and cost > budget_px:
        text = (
            f"ocr of {_fmt_box(region)} was not run: it would read {cost / 1e6:.2f} MP, more "
            f"than the {max(0, budget_px) / 1e6:.2f} MP left in the OCR budget"
            f"{' (spent)' if budget_px <= 0 else ''}. OCR a tighter box around the text (OCR "
            "time grows with the pixels read), or use the text you already have."
        )
        return ToolResult(text, region=region, over_budget=True)
    fitted = fit_for_tesseract(prepare_for_ocr(_source_crop(scene, region), turn, bool(enhance)))
    cost = ocr_cost(fitted)  # the same figure (tested); what was read is what is charged
    try:
        text = read_text(fitted, fitted=True)
    except OcrUnavailableError as exc:
        message = f"OCR is not installed on this host ({exc})"
        return ToolResult(f"ocr could not run: {message}. This is not your mistake.",
                          system_error=message)  # fmt: skip
    except OcrError as exc:
        raise ToolError(f"OCR is unavailable: {exc}") from None
    body = text if text else "(no text found)"
    return ToolResult(f"OCR of {_fmt_box(region)}{note}:\n{body}", region=region, cost=cost)


def _tokens(text: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    out = []
    for w in words:
        if w in _STOPWORDS:
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


def ground(scene: Scene, query: Any, noise: float = 0.0, seed: int = 0) -> ToolResult:
    if not isinstance(query, str) or not _tokens(query):
        raise ToolError("query must describe an object, e.g. 'blue circle' or 'bar Mar'.")
    wanted = _tokens(query)[:12]
    matches = [o for o in scene.objects if set(wanted) <= set(_tokens(o.label))]
    if noise > 0 and matches:
        rng = np.random.default_rng([seed, *(ord(c) for c in " ".join(wanted))])
        kept = []
        for obj in matches:
            if rng.random() < noise / 2:
                continue
            w, h = obj.box[2] - obj.box[0], obj.box[3] - obj.box[1]
            jx, jy = rng.normal(0, noise * w, 2), rng.normal(0, noise * h, 2)
            xs = sorted((obj.box[0] + jx[0], obj.box[2] + jx[1]))
            ys = sorted((obj.box[1] + jy[0], obj.box[3] + jy[1]))
            kept.append((obj.label, (xs[0], ys[0], xs[1], ys[1])))
        found = kept
    else:
        found = [(o.label, o.box) for o in matches]
    if not found:
        return ToolResult(f"No region matches {query.strip()[:80]!r}.")
    lines = [
        f"Found {len(found)} region{'s' if len(found) != 1 else ''} matching {query.strip()[:80]!r}:"
    ]
    overlay = Image.fromarray(scene.view.copy())
    pen = ImageDraw.Draw(overlay)
    for i, (label, box) in enumerate(found[:MAX_GROUND_RESULTS], start=1):
        vb = scene.to_view(box)
        lines.append(f"{i}. {label} at {_fmt_box(vb)}")
        pen.rectangle(vb, outline=(255, 0, 255), width=1)
    if len(found) > MAX_GROUND_RESULTS:
        lines.append(f"... and {len(found) - MAX_GROUND_RESULTS} more.")
    return ToolResult("\n".join(lines), np.asarray(overlay, dtype=np.uint8))


def measure(scene: Scene, points: Sequence[Any]) -> ToolResult:
    pts = []
    width, height = scene.view_size
    for i, p in enumerate(points):
        if not isinstance(p, list | tuple) or len(p) != 2:
            raise ToolError(f"points[{i}] must be [x, y].")
        x, y = _finite(p[0], f"points[{i}][0]"), _finite(p[1], f"points[{i}][1]")
        if not (0 <= x <= width and 0 <= y <= height):
            raise ToolError(
                f"points[{i}] = [{x:g}, {y:g}] is outside the image (x 0..{width}, y 0..{height})."
            )
        pts.append((x, y))
    s = scene.scale
    if len(pts) == 2:
        d = math.dist(pts[0], pts[1])
        text = f"Distance: {d:.2f} view px = {d * s:.1f} source px"
        if scene.units_per_px:
            text += f" = {d * s * scene.units_per_px:.2f} units (by the scale bar)"
        return ToolResult(text + ".")
    (ax, ay), (bx, by), (cx, cy) = pts
    v1, v2 = (ax - bx, ay - by), (cx - bx, cy - by)
    n1, n2 = math.hypot(*v1), math.hypot(*v2)
    if n1 == 0 or n2 == 0:
        raise ToolError("the middle point coincides with another one; no angle is defined.")
    cos = max(-1.0, min(1.0, (v1[0] * v2[0] + v1[1] * v2[1]) / (n1 * n2)))
    return ToolResult(f"Angle at [{bx:g}, {by:g}]: {math.degrees(math.acos(cos)):.2f} degrees.")


_NAMED_COLORS = {
    "black": (0, 0, 0),
    "white": (255, 255, 255),
    "gray": (128, 128, 128),
    "red": (220, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 80, 220),
    "yellow": (240, 210, 40),
    "orange": (245, 140, 30),
    "purple": (140, 60, 180),
    "cyan": (40, 190, 210),
    "pink": (240, 130, 180),
    "brown": (140, 90, 40),
}


def nearest_color_name(rgb: Sequence[float]) -> str:
    """The name of the closest of a dozen reference colours."""
    return min(
        _NAMED_COLORS, key=lambda n: sum((a - b) ** 2 for a, b in zip(rgb, _NAMED_COLORS[n]))
    )


def color_stats(scene: Scene, box: Sequence[Any]) -> ToolResult:
    region, note = view_box(scene, box)
    crop = _source_crop(scene, region)
    if crop.width * crop.height > 65536:
        crop = crop.resize(
            (max(1, min(256, crop.width)), max(1, min(256, crop.height))), Image.Resampling.NEAREST
        )
    pixels = np.asarray(crop, dtype=np.float64).reshape(-1, 3)
    mean = pixels.mean(axis=0)
    names = list(_NAMED_COLORS)
    refs = np.array([_NAMED_COLORS[n] for n in names], dtype=np.float64)
    nearest = ((pixels[:, None, :] - refs[None]) ** 2).sum(axis=2).argmin(axis=1)
    counts = np.bincount(nearest, minlength=len(names))
    top = [(names[i], counts[i] / len(pixels)) for i in np.argsort(-counts)[:4] if counts[i] > 0]
    shares = ", ".join(f"{n} {100 * f:.1f}%" for n, f in top)
    text = (
        f"Colours of {_fmt_box(region)}{note}: mean RGB ({mean[0]:.0f}, {mean[1]:.0f}, {mean[2]:.0f}); "
        f"main colours: {shares}."
    )
    return ToolResult(text, region=region)


def rotate(scene: Scene, box: Sequence[Any], angle: Any) -> ToolResult:
    region, note = view_box(scene, box)
    turn = _finite(angle, "angle") % 360.0
    crop = _source_crop(scene, region)
    out = crop.rotate(
        turn, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=(255, 255, 255)
    )
    out = _fit(out, _default_side(out))
    return ToolResult(
        f"Region {_fmt_box(region)}{note} rotated {turn:g} degrees counter-clockwise: {out.width}x{out.height} px.",
        np.asarray(out, dtype=np.uint8),
        region=region,
    )


def enhance(
    scene: Scene, box: Sequence[Any], contrast: Any = 2.0, sharpen: Any = False, invert: Any = False
) -> ToolResult:
    region, note = view_box(scene, box)
    factor = _finite(contrast if contrast is not None else 2.0, "contrast")
    if not 0.5 <= factor <= 8:
        raise ToolError(f"contrast must be in 0.5..8, got {factor:g}.")
    crop = _source_crop(scene, region)
    out = ImageOps.autocontrast(crop, cutoff=1)
    out = ImageEnhance.Contrast(out).enhance(factor)
    if sharpen:
        out = out.filter(ImageFilter.SHARPEN)
    if invert:
        out = ImageOps.invert(out)
    out = _fit(out, _default_side(out))
    return ToolResult(
        f"Region {_fmt_box(region)}{note} enhanced (contrast x{factor:g}): {out.width}x{out.height} px.",
        np.asarray(out, dtype=np.uint8),
        region=region,
    )


def draw(
    scene: Scene, grid: Any = 0, marks: Sequence[Any] = (), lines: Sequence[Any] = ()
) -> ToolResult:
    step = int(_finite(grid if grid is not None else 0, "grid"))
    if step != 0 and step < 10:
        raise ToolError(f"grid must be 0 (none) or at least 10 view pixels, got {step}.")
    # draw at 2x the view so labels stay readable; coordinates are still view pixels
    k = 2
    width, height = scene.view_size
    canvas = Image.fromarray(scene.view).resize((width * k, height * k), Image.Resampling.NEAREST)
    pen = ImageDraw.Draw(canvas)
    from agentgym.simulators.visual.text import draw_text

    if step:
        for x in range(0, width + 1, step):
            pen.line([(x * k, 0), (x * k, height * k)], fill=(0, 170, 255), width=1)
            draw_text(canvas, (x * k + 2, 2), str(x), 14, (0, 110, 200))
        for y in range(0, height + 1, step):
            pen.line([(0, y * k), (width * k, y * k)], fill=(0, 170, 255), width=1)
            draw_text(canvas, (2, y * k + 2), str(y), 14, (0, 110, 200))
    for i, p in enumerate(marks or ()):
        if not isinstance(p, list | tuple) or len(p) != 2:
            raise ToolError(f"marks[{i}] must be [x, y].")
        mx, my = _finite(p[0], f"marks[{i}][0]") * k, _finite(p[1], f"marks[{i}][1]") * k
        pen.line([(mx - 6, my - 6), (mx + 6, my + 6)], fill=(255, 0, 0), width=2)
        pen.line([(mx - 6, my + 6), (mx + 6, my - 6)], fill=(255, 0, 0), width=2)
    for i, seg in enumerate(lines or ()):
        if not isinstance(seg, list | tuple) or len(seg) != 4:
            raise ToolError(f"lines[{i}] must be [x0, y0, x1, y1].")
        coords = [_finite(v, f"lines[{i}][{j}]") * k for j, v in enumerate(seg)]
        if any(abs(c) > 1e6 for c in coords):
            raise ToolError(f"lines[{i}] is far outside the image.")
        pen.line(coords, fill=(255, 0, 0), width=2)
    out = _fit(canvas, max(canvas.width, canvas.height))
    text = f"Annotated view at {out.width}x{out.height} px ({out.width / width:.2f} px per view px)"
    if step:
        text += f", grid every {step} view px, labelled in view px"
    return ToolResult(text + ".", np.asarray(out, dtype=np.uint8))


def calculator(scene: Scene, expression: Any) -> ToolResult:
    try:
        value = calculate(expression)
    except CalcError as exc:
        raise ToolError(str(exc)) from None
    shown = f"{value:.10g}" if isinstance(value, float) else str(value)
    return ToolResult(f"{str(expression).strip()[:200]} = {shown}")


IMPLEMENTATIONS: Mapping[str, Callable[..., ToolResult]] = {
    "zoom": zoom,
    "ocr": ocr,
    "ground": ground,
    "measure": measure,
    "color_stats": color_stats,
    "rotate": rotate,
    "enhance": enhance,
    "draw": draw,
    "calculate": calculator,
}


def run_tool(
    scene: Scene,
    name: str,
    arguments: Mapping[str, Any],
    *,
    noise: float = 0.0,
    seed: int = 0,
    ocr_budget_px: int | None = None,
) -> ToolResult:
    """Run one tool; bad arguments come back as ``ToolResult.error``, never as an exception.

    ``ocr_budget_px`` is the OCR left to spend (pixels; None: unlimited): an ``ocr`` call
    that would read more is not run and says so (``over_budget``).
    """
    fn = IMPLEMENTATIONS.get(name)
    if fn is None:
        return ToolResult(
            "", error=f"unknown tool {name!r}; available: {', '.join(IMPLEMENTATIONS)}."
        )
    kwargs = dict(arguments)
    if name == "ground":
        kwargs.update(noise=noise, seed=seed)
    if name == "ocr":
        kwargs.pop("budget_px", None)  # not the model's to set
        kwargs["budget_px"] = ocr_budget_px
    try:
        return fn(scene, **kwargs)
    except ToolError as exc:
        return ToolResult("", error=f"{name}: {exc}")
    except TypeError as exc:  # an argument the schema allowed but the function does not take
        return ToolResult("", error=f"{name}: bad arguments ({exc}).")
    except Exception as exc:  # a bug must not crash a rollout: report it and log it
        logger.exception("visual tool %s failed on %r", name, dict(arguments))
        return ToolResult("", error=f"{name}: internal tool error ({type(exc).__name__}: {exc}).")
