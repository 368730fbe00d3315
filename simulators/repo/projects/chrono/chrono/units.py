"""Time units: their lengths in seconds and the names people write for them."""

SECOND = 1
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR
WEEK = 7 * DAY

#: Canonical unit name -> length in seconds, largest first.
UNIT_SECONDS = {
    "week": WEEK,
    "day": DAY,
    "hour": HOUR,
    "minute": MINUTE,
    "second": SECOND,
}

#: Every spelling chrono accepts -> canonical unit name.
ALIASES = {
    "w": "week",
    "wk": "week",
    "wks": "week",
    "week": "week",
    "weeks": "week",
    "d": "day",
    "day": "day",
    "days": "day",
    "h": "hour",
    "hr": "hour",
    "hrs": "hour",
    "hour": "hour",
    "hours": "hour",
    "m": "minute",
    "min": "minute",
    "mins": "minute",
    "minute": "minute",
    "minutes": "minute",
    "s": "second",
    "sec": "second",
    "secs": "second",
    "second": "second",
    "seconds": "second",
}

#: The one-letter abbreviation used by compact formatting.
SHORT = {"week": "w", "day": "d", "hour": "h", "minute": "m", "second": "s"}


def canonical_unit(name: str) -> str | None:
    """The canonical name of a unit spelling (case-insensitive), or None if unknown."""
    return ALIASES.get(name.strip().lower())


def unit_seconds(name: str) -> int:
    """Seconds in one of the unit ``name`` (any accepted spelling).

    Raises:
        KeyError: ``name`` is not a unit.
    """
    unit = canonical_unit(name)
    if unit is None:
        raise KeyError(name)
    return UNIT_SECONDS[unit]


def plural(unit: str, count: float) -> str:
    """``unit`` with an ``s`` unless ``count`` is exactly one."""
    return unit if count == 1 else unit + "s"
