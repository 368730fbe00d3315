"""Calendar arithmetic: leap years, month lengths, month steps, ISO weeks, business days."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap_year(year: int) -> bool:
    """Gregorian leap years: every fourth year, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    """Days in ``month`` (1-12) of ``year``."""
    if not 1 <= month <= 12:
        raise ValueError(f"month must be 1..12, got {month}")
    if month == 2 and is_leap_year(year):
        return 29
    return _MONTH_DAYS[month - 1]


def add_months(day: dt.date, months: int) -> dt.date:
    """``day`` moved by whole months; the day of month is clamped to the new month's end
    (January 31st plus one month is the last day of February)."""
    index = day.year * 12 + (day.month - 1) + months
    year, month0 = divmod(index, 12)
    month = month0 + 1
    return dt.date(year, month, min(day.day, days_in_month(year, month)))


def end_of_month(day: dt.date) -> dt.date:
    """The last day of ``day``'s month."""
    return day.replace(day=days_in_month(day.year, day.month))


def iso_week(day: dt.date) -> tuple[int, int]:
    """The ISO (year, week number) ``day`` falls in."""
    year, week, _ = day.isocalendar()
    return year, week


def is_business_day(day: dt.date, holidays: Iterable[dt.date] = ()) -> bool:
    """Monday to Friday, and not one of ``holidays``."""
    return day.weekday() < 5 and day not in set(holidays)


def add_business_days(day: dt.date, count: int, holidays: Iterable[dt.date] = ()) -> dt.date:
    """The date ``count`` business days after ``day`` (before it when ``count`` < 0).

    Weekends and ``holidays`` are skipped; ``count == 0`` returns ``day`` itself.
    """
    off = set(holidays)
    step = 1 if count >= 0 else -1
    left = abs(count)
    current = day
    while left > 0:
        current += dt.timedelta(days=step)
        if is_business_day(current, off):
            left -= 1
    return current


def business_days_between(start: dt.date, end: dt.date, holidays: Iterable[dt.date] = ()) -> int:
    """Business days in the half-open range [start, end); negative when end < start."""
    if end < start:
        return -business_days_between(end, start, holidays)
    off = set(holidays)
    count = 0
    current = start
    while current < end:
        if is_business_day(current, off):
            count += 1
        current += dt.timedelta(days=1)
    return count
