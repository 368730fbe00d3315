"""Money as integer cents: parsing and formatting without floating point."""

from __future__ import annotations

import re

from ledger.errors import ValidationError

_MONEY = re.compile(r"^(-)?\$?(\d{1,3}(?:,\d{3})*|\d+)(?:\.(\d{1,2}))?$")


def parse_money(text: str) -> int:
    """``"12.5"`` -> 1250 cents. Accepts a leading ``$``, thousands commas and a minus.

    Raises:
        ValidationError: not an amount of money (three decimals, letters, ...).
    """
    match = _MONEY.match(text.strip())
    if match is None:
        raise ValidationError(f"not an amount of money: {text!r}")
    sign, whole, frac = match.groups()
    cents = int(whole.replace(",", "")) * 100 + int((frac or "0").ljust(2, "0"))
    return -cents if sign else cents


def format_money(cents: int, symbol: str = "") -> str:
    """1234567 -> ``"12,345.67"`` (with ``symbol`` before the digits, after any minus)."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{frac:02d}"


def split_evenly(cents: int, parts: int) -> list[int]:
    """Split an amount into ``parts`` shares that differ by at most one cent and sum to it;
    the first shares get the extra cents."""
    if parts <= 0:
        raise ValidationError("parts must be positive")
    base, extra = divmod(cents, parts)
    return [base + 1 if i < extra else base for i in range(parts)]
