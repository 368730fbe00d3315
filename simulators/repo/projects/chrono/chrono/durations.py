"""Durations: a length of time in whole seconds, parsed from compact or spoken text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from chrono.errors import ParseError
from chrono.units import DAY, HOUR, MINUTE, UNIT_SECONDS, canonical_unit

_NUMBER_UNIT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*,?\s*(?:and\s+)?")
_CLOCK = re.compile(r"^(\d+):([0-5]\d)(?::([0-5]\d))?$")


@total_ordering
@dataclass(frozen=True)
class Duration:
    """A length of time, stored as whole seconds (negative for "before")."""

    seconds: int

    @classmethod
    def of(
        cls,
        *,
        weeks: float = 0,
        days: float = 0,
        hours: float = 0,
        minutes: float = 0,
        seconds: float = 0,
    ) -> Duration:
        """Build a duration from parts, rounding the total to the nearest second."""
        total = weeks * 7 * DAY + days * DAY + hours * HOUR + minutes * MINUTE + seconds
        return cls(round(total))

    def total_seconds(self) -> int:
        return self.seconds

    def components(self) -> dict[str, int]:
        """The duration split into weeks, days, hours, minutes and seconds (largest first).

        A negative duration gives the components of its absolute value.
        """
        left = abs(self.seconds)
        parts = {}
        for unit, size in UNIT_SECONDS.items():
            parts[unit], left = divmod(left, size)
        return parts

    def __add__(self, other: object) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self.seconds + other.seconds)

    def __sub__(self, other: object) -> Duration:
        if not isinstance(other, Duration):
            return NotImplemented
        return Duration(self.seconds - other.seconds)

    def __mul__(self, factor: object) -> Duration:
        if not isinstance(factor, int | float) or isinstance(factor, bool):
            return NotImplemented
        return Duration(round(self.seconds * factor))

    __rmul__ = __mul__

    def __neg__(self) -> Duration:
        return Duration(-self.seconds)

    def __abs__(self) -> Duration:
        return Duration(abs(self.seconds))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Duration):
            return NotImplemented
        return self.seconds < other.seconds

    def __bool__(self) -> bool:
        return self.seconds != 0


def _parse_clock(text: str) -> Duration | None:
    """``H:MM`` or ``H:MM:SS``, or None when ``text`` is not a clock reading."""
    match = _CLOCK.match(text)
    if match is None:
        return None
    hours, minutes, seconds = match.groups()
    return Duration.of(hours=int(hours), minutes=int(minutes), seconds=int(seconds or 0))


def parse_duration(text: str) -> Duration:
    """Parse a duration written as ``1h30m``, ``90 minutes``, ``2 days, 3 hours``,
    ``1.5h``, ``1:30`` (hours and minutes) or ``-15m``.

    Raises:
        ParseError: the text is empty, has an unknown unit or a stray character.
    """
    source = text
    text = text.strip()
    if not text:
        raise ParseError("empty duration", source, 0)
    sign = 1
    if text[0] in "+-":
        sign = -1 if text[0] == "-" else 1
        text = text[1:].lstrip()
    clock = _parse_clock(text)
    if clock is not None:
        return clock * sign
    total = 0.0
    pos = 0
    seen: set[str] = set()
    while pos < len(text):
        match = _NUMBER_UNIT.match(text, pos)
        if match is None:
            raise ParseError(f"unexpected text at {text[pos:]!r}", source, pos)
        number, unit_name = match.groups()
        unit = canonical_unit(unit_name)
        if unit is None:
            raise ParseError(f"unknown unit {unit_name!r}", source, pos)
        if unit in seen:
            raise ParseError(f"unit {unit!r} given twice", source, pos)
        seen.add(unit)
        total += float(number) * UNIT_SECONDS[unit]
        pos = match.end()
    if not seen:
        raise ParseError("no duration found", source, 0)
    return Duration(sign * round(total))
