"""Turn configuration text into typed values."""

from __future__ import annotations

import re

TRUE = {"1", "yes", "true", "on"}
FALSE = {"0", "no", "false", "off"}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$", re.IGNORECASE)
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1024,
    "m": 1000**2, "mb": 1000**2, "mib": 1024**2,
    "g": 1000**3, "gb": 1000**3, "gib": 1024**3,
    "t": 1000**4, "tb": 1000**4, "tib": 1024**4,
}  # fmt: skip


def to_bool(text: str) -> bool:
    """``yes``/``no``, ``on``/``off``, ``true``/``false``, ``1``/``0`` (any case)."""
    lowered = text.strip().lower()
    if lowered in TRUE:
        return True
    if lowered in FALSE:
        return False
    raise ValueError(f"not a boolean: {text!r}")


def to_int(text: str) -> int:
    """Decimal, or ``0x``/``0o``/``0b`` prefixed; ``_`` separators allowed."""
    return int(text.strip(), 0)


def to_list(text: str, sep: str = ",") -> list[str]:
    """Items split on ``sep`` (or on newlines for multi-line values), stripped, blanks
    dropped."""
    parts = text.splitlines() if "\n" in text else text.split(sep)
    return [p.strip() for p in parts if p.strip()]


def to_size(text: str) -> int:
    """Bytes in ``10MB``, ``1.5 GiB``, ``512`` (decimal and binary units)."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: {text!r}")
    number, unit = match.groups()
    factor = _SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"unknown size unit {unit!r}")
    return int(float(number) * factor)


CONVERTERS = {
    "str": str,
    "int": to_int,
    "float": float,
    "bool": to_bool,
    "list": to_list,
    "size": to_size,
}
