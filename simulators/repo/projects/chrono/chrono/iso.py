"""ISO 8601: calendar dates, ordinal dates, week dates and durations."""

from __future__ import annotations

import datetime as dt
import re

from chrono.calendar import days_in_month, is_leap_year
from chrono.durations import Duration
from chrono.errors import ParseError
from chrono.units import DAY, HOUR, MINUTE, WEEK

_DATE = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})$")
_ORDINAL = re.compile(r"^(\d{4})-?(\d{3})$")
_WEEK = re.compile(r"^(\d{4})-?W(\d{2})-?([1-7])$")
_DURATION = re.compile(
    r"^(-)?P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)


def _calendar_date(year: int, month: int, day: int, text: str) -> dt.date:
    if not 1 <= month <= 12:
        raise ParseError(f"month {month} out of range", text, 5)
    if not 1 <= day <= days_in_month(year, month):
        raise ParseError(f"day {day} out of range for {year}-{month:02d}", text, 8)
    return dt.date(year, month, day)


def _ordinal_date(year: int, ordinal: int, text: str) -> dt.date:
    last = 366 if is_leap_year(year) else 365
    if not 1 <= ordinal <= last:
        raise ParseError(f"day of year {ordinal} out of range", text, 5)
    return dt.date(year, 1, 1) + dt.timedelta(days=ordinal - 1)


def _week_date(year: int, week: int, weekday: int, text: str) -> dt.date:
    # ISO week 1 is the week holding the year's first Thursday.
    jan4 = dt.date(year, 1, 4)
    week1_monday = jan4 - dt.timedelta(days=jan4.isoweekday() - 1)
    weeks_in_year = 53 if dt.date(year, 12, 28).isocalendar()[1] == 53 else 52
    if not 1 <= week <= weeks_in_year:
        raise ParseError(f"week {week} out of range", text, 6)
    return week1_monday + dt.timedelta(weeks=week - 1, days=weekday - 1)


def parse_iso_date(text: str) -> dt.date:
    """Parse ``2024-03-15``, ``20240315``, ``2024-075`` (ordinal) or ``2024-W11-5`` (week).

    Raises:
        ParseError: not an ISO date, or a field out of range.
    """
    text = text.strip()
    match = _DATE.match(text)
    if match:
        year, month, day = (int(g) for g in match.groups())
        return _calendar_date(year, month, day, text)
    match = _ORDINAL.match(text)
    if match:
        return _ordinal_date(int(match.group(1)), int(match.group(2)), text)
    match = _WEEK.match(text)
    if match:
        year, week, weekday = (int(g) for g in match.groups())
        return _week_date(year, week, weekday, text)
    raise ParseError(f"not an ISO 8601 date: {text!r}", text, 0)


def parse_iso_duration(text: str) -> Duration:
    """Parse an ISO 8601 duration such as ``P3DT4H5M``, ``PT90S`` or ``P2W``.

    Years and months are refused: their length depends on the calendar.
    """
    text = text.strip().upper()
    match = _DURATION.match(text)
    if match is None or text in ("P", "-P") or text.endswith("T"):
        raise ParseError(f"not an ISO 8601 duration: {text!r}", text, 0)
    negative, weeks, days, hours, minutes, seconds = match.groups()
    total = (
        int(weeks or 0) * WEEK
        + int(days or 0) * DAY
        + int(hours or 0) * HOUR
        + int(minutes or 0) * MINUTE
        + float(seconds or 0)
    )
    result = Duration(round(total))
    return -result if negative else result


def format_iso_duration(duration: Duration) -> str:
    """The ISO 8601 form of ``duration`` (days, hours, minutes, seconds; ``PT0S`` for zero)."""
    if duration.seconds == 0:
        return "PT0S"
    sign = "-" if duration.seconds < 0 else ""
    days, rest = divmod(abs(duration.seconds), DAY)
    hours, rest = divmod(rest, HOUR)
    minutes, seconds = divmod(rest, MINUTE)
    out = f"{sign}P"
    if days:
        out += f"{days}D"
    if hours or minutes or seconds:
        out += "T"
        if hours:
            out += f"{hours}H"
        if minutes:
            out += f"{minutes}M"
        if seconds:
            out += f"{seconds}S"
    return out
