"""Quantities as text: ``3.5 km``, with a chosen number of significant digits."""

from __future__ import annotations

from quantities.quantity import Quantity


def format_number(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, without trailing zeros or exponent for
    ordinary magnitudes (1e-4 .. 1e15)."""
    if digits < 1:
        raise ValueError("digits must be at least 1")
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        exp = int(exponent)
        if -4 <= exp < 15:
            rounded = float(text)
            text = f"{rounded:.{max(0, digits - 1 - exp)}f}"
        else:
            return f"{mantissa}e{exp}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_quantity(quantity: Quantity, digits: int = 4, unit: str | None = None) -> str:
    """``"3.5 km"``; converted to ``unit`` first when given. Dimensionless: the number."""
    if unit is not None:
        quantity = quantity.to(unit)
    number = format_number(quantity.value, digits)
    symbol = quantity.unit.symbol
    if symbol == "1":
        return number
    if symbol in ("percent", "%"):
        return f"{number}%"
    return f"{number} {symbol}"
