"""Relative date expressions: ``today``, ``in 3 days``, ``2 weeks ago``, ``next friday``."""

from __future__ import annotations

import datetime as dt
import re

from chrono.calendar import add_months, end_of_month
from chrono.errors import ParseError

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_FIXED = {"today": 0, "tomorrow": 1, "yesterday": -1}
_AMOUNT = re.compile(r"^(?:in\s+)?(\d+|a|an|one)\s+(day|week|month|year)s?(\s+ago)?$")
_WEEKDAY = re.compile(r"^(next|last|this)\s+([a-z]+)$")
_WORDS = {"a": 1, "an": 1, "one": 1}


def _shift(base: dt.date, count: int, unit: str) -> dt.date:
    if unit == "day":
        return base + dt.timedelta(days=count)
    if unit == "week":
        return base + dt.timedelta(weeks=count)
    if unit == "month":
        return add_months(base, count)
    return add_months(base, 12 * count)


def _weekday(base: dt.date, which: str, name: str, text: str) -> dt.date:
    if name not in WEEKDAYS:
        raise ParseError(f"unknown weekday {name!r}", text, len(which) + 1)
    target = WEEKDAYS.index(name)
    ahead = (target - base.weekday()) % 7
    if which == "next":
        return base + dt.timedelta(days=ahead or 7)
    if which == "last":
        behind = (base.weekday() - target) % 7
        return base - dt.timedelta(days=behind or 7)
    return base + dt.timedelta(days=ahead)  # "this": the coming one, today included


def parse_relative(text: str, base: dt.date) -> dt.date:
    """The date ``text`` names, counted from ``base``.

    Understands ``today``/``tomorrow``/``yesterday``, ``in N days|weeks|months|years``,
    ``N days ago`` (also ``a week ago``), ``next|last|this <weekday>`` and ``end of month``.

    Raises:
        ParseError: anything else.
    """
    source = text
    text = " ".join(text.lower().split())
    if text in _FIXED:
        return base + dt.timedelta(days=_FIXED[text])
    if text == "end of month":
        return end_of_month(base)
    match = _AMOUNT.match(text)
    if match:
        amount, unit, ago = match.groups()
        count = _WORDS[amount] if amount in _WORDS else int(amount)
        if ago and text.startswith("in "):
            raise ParseError("'in' and 'ago' together", source, 0)
        return _shift(base, -count if ago else count, unit)
    match = _WEEKDAY.match(text)
    if match:
        return _weekday(base, match.group(1), match.group(2), source)
    raise ParseError(f"not a relative date: {source!r}", source, 0)
