"""Parse units (``kg*m/s^2``, ``km/h``, ``m**3``) and quantities (``9.81 m/s^2``)."""

from __future__ import annotations

import re

from quantities.errors import UnitError
from quantities.quantity import Quantity
from quantities.registry import REGISTRY, Unit

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*)$")
_FACTOR = re.compile(r"^([A-Za-z%]+)(?:(?:\^|\*\*)(-?\d+))?$")


def _factor(text: str) -> Unit:
    match = _FACTOR.match(text)
    if match is None:
        raise UnitError(f"malformed unit {text!r}")
    unit = REGISTRY.get(match.group(1))
    power = int(match.group(2)) if match.group(2) else 1
    return unit if power == 1 else unit**power


def parse_unit(text: str) -> Unit:
    """A unit expression: factors joined by ``*`` (or ``.``) and ``/``.

    Everything after the first ``/`` divides (``J/kg/K`` is J per kg per K). Powers are
    written ``^2`` or ``**2``.
    """
    text = text.strip().replace("**", "^").replace(" ", "")
    if not text:
        raise UnitError("empty unit")
    numerator, _, denominator = text.partition("/")
    result: Unit | None = None
    for part in re.split(r"[*.]", numerator):
        if part in ("", "1") and result is None and numerator in ("1", ""):
            result = REGISTRY.get("1")
            continue
        factor = _factor(part)
        result = factor if result is None else result * factor
    assert result is not None
    if denominator:
        for part in re.split(r"[*./]", denominator):
            result = result / _factor(part)
    return result


def parse_quantity(text: str) -> Quantity:
    """``"9.81 m/s^2"``, ``"3 km"``, ``"-40 degF"``, ``"12"`` (dimensionless)."""
    match = _NUMBER.match(text)
    if match is None:
        raise UnitError(f"no number at the start of {text!r}")
    number, unit_text = match.groups()
    unit = parse_unit(unit_text) if unit_text.strip() else REGISTRY.get("1")
    return Quantity(float(number), unit)
