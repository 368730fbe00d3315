"""Durations as text people read: ``1 hour 30 minutes``, ``1h30m``, ``in 3 days``."""

from __future__ import annotations

from chrono.durations import Duration
from chrono.units import DAY, HOUR, MINUTE, SHORT, WEEK, plural


def format_duration(duration: Duration, max_units: int = 2) -> str:
    """Spell out the largest ``max_units`` non-zero parts: ``2 days 3 hours``.

    Zero is ``0 seconds``; a negative duration is prefixed with ``minus``.
    """
    if max_units < 1:
        raise ValueError("max_units must be at least 1")
    if duration.seconds == 0:
        return "0 seconds"
    parts = [
        f"{count} {plural(unit, count)}" for unit, count in duration.components().items() if count
    ][:max_units]
    text = " ".join(parts)
    return f"minus {text}" if duration.seconds < 0 else text


def format_compact(duration: Duration) -> str:
    """Every non-zero part with one-letter units: ``1w2d3h``; zero is ``0s``."""
    if duration.seconds == 0:
        return "0s"
    text = "".join(
        f"{count}{SHORT[unit]}" for unit, count in duration.components().items() if count
    )
    return "-" + text if duration.seconds < 0 else text


def _rough(seconds: int) -> str:
    """One rounded unit: ``3 days``, ``2 hours``, ``a minute``."""
    for size, name in ((WEEK, "week"), (DAY, "day"), (HOUR, "hour"), (MINUTE, "minute")):
        if seconds >= size:
            count = round(seconds / size)
            return f"a {name}" if count == 1 else f"{count} {name}s"
    return "a few seconds"


def natural_delta(duration: Duration) -> str:
    """How far away a moment is: ``in 3 days``, ``2 hours ago``, or ``now`` (under 10 s)."""
    seconds = duration.seconds
    if abs(seconds) < 10:
        return "now"
    text = _rough(abs(seconds))
    return f"in {text}" if seconds > 0 else f"{text} ago"
