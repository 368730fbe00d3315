"""Answer matching for the visual family: exact text, exact integers, numbers with tolerance."""

from __future__ import annotations

import math
import re

_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+")


def normalise_text(text: str) -> str:
    """Lower case, no spaces, quotes or trailing punctuation (so 'XK4 - 92Q.' == 'xk4-92q')."""
    text = text.strip().lower()
    text = re.sub(r"[\s\"'`]", "", text)
    return text.rstrip(".!")


def parse_number(text: str) -> float | None:
    """The first number in ``text`` (thousands commas allowed), or None."""
    match = _NUMBER.search(text.replace(" ", ""))
    if match is None:
        return None
    try:
        return float(match.group(0).replace(",", ""))
    except ValueError:
        return None


def parse_clock(text: str) -> tuple[int, int] | None:
    """``(hour % 12, minute)`` of a time written ``H:MM`` (or ``HH:MM``), or None."""
    match = re.search(r"(\d{1,2})\s*[:.h]\s*(\d{2})", text)
    if match is None:
        return None
    hour, minute = int(match.group(1)), int(match.group(2))
    if not (0 <= hour <= 24 and 0 <= minute < 60):
        return None
    return hour % 12, minute


def is_correct(given: str, truth: str, answer_type: str, tolerance: float = 0.0) -> bool:
    """Whether ``given`` matches ``truth`` under the task's answer type.

    >>> is_correct(" xk4-92q ", "XK4-92Q", "text")
    True
    >>> is_correct("1,204", "1204", "int"), is_correct("12.5", "12", "int")
    (True, False)
    >>> is_correct("3.49 cm", "3.5", "number", 0.1)
    True
    >>> is_correct("12:05", "0:05", "clock"), is_correct("4:50", "4:55", "clock")
    (True, False)
    """
    if answer_type == "clock":
        given_time, true_time = parse_clock(given), parse_clock(truth)
        return given_time is not None and given_time == true_time
    if answer_type == "text":
        return normalise_text(given) == normalise_text(truth)
    value = parse_number(given)
    if value is None or not math.isfinite(value):
        return False
    if answer_type == "int":
        return value == float(truth)
    return abs(value - float(truth)) <= tolerance + 1e-9
