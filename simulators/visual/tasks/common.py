"""Shared pieces of the task generators: canvas sizes, difficulty and the no-tool share."""

from __future__ import annotations

import numpy as np
from PIL import Image

DIFFICULTIES = ("easy", "medium", "hard")

#: View size (what the agent sees at reset), in pixels.
VIEW_SIZE = (640, 480)
#: Source pixels per view pixel, by difficulty.
SCALES = {"easy": 3, "medium": 3, "hard": 4}
#: Share of tasks whose detail is legible in the view, so no tool is needed.
LEGIBLE_SHARE = 0.25
#: Text height (px) legible in the view; tiny text is this small in the view.
VIEW_LEGIBLE_TEXT = 14

#: Letters and digits that OCR does not confuse with one another (no O/0, I/1, S/5, B/8, Z/2).
CODE_ALPHABET = "ACDEFGHJKLMNPQRTUVWXY3479"

WORDS = [
    "harbor",
    "lantern",
    "meadow",
    "copper",
    "violet",
    "summit",
    "orchard",
    "falcon",
    "glacier",
    "canyon",
    "ember",
    "willow",
    "quartz",
    "tundra",
    "marble",
    "velvet",
    "cobalt",
    "thunder",
    "saffron",
    "juniper",
    "pepper",
    "walnut",
    "cricket",
    "monarch",
    "prairie",
    "cascade",
    "timber",
    "granite",
    "lagoon",
    "beacon",
]


def canvas(
    difficulty: str, color: tuple[int, int, int] = (255, 255, 255)
) -> tuple[Image.Image, int]:
    """A blank source image for ``difficulty`` and its scale factor."""
    scale = SCALES[difficulty]
    return Image.new("RGB", (VIEW_SIZE[0] * scale, VIEW_SIZE[1] * scale), color), scale


def is_legible(rng: np.random.Generator) -> bool:
    """Draw whether this task is one of the no-tool share."""
    return bool(rng.random() < LEGIBLE_SHARE)


def tiny_text(scale: int) -> int:
    """A source text size OCR reads well but the view shrinks to about 5 px."""
    return 16 if scale <= 3 else 19


def legible_text(scale: int) -> int:
    """A source text size that stays legible in the view."""
    return VIEW_LEGIBLE_TEXT * scale


def code(rng: np.random.Generator, n: int = 3) -> str:
    """A code like ``XK4-92Q`` from the unambiguous alphabet."""
    picks = rng.integers(0, len(CODE_ALPHABET), size=2 * n)
    letters = "".join(CODE_ALPHABET[int(i)] for i in picks)
    return f"{letters[:n]}-{letters[n:]}"
