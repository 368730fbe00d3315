"""Units: a scale (and for temperatures an offset) against the SI base unit of a dimension.

``value_in_si = value * scale + offset``. Units with an offset (degC, degF) cannot be
multiplied or divided; they only convert.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from quantities.dimensions import (
    CURRENT,
    DIMENSIONLESS,
    LENGTH,
    MASS,
    TEMPERATURE,
    TIME,
    Dimension,
)
from quantities.errors import DimensionError, UnitError

PREFIXES = {
    "G": 1e9,
    "M": 1e6,
    "k": 1e3,
    "h": 1e2,
    "c": 1e-2,
    "m": 1e-3,
    "u": 1e-6,
    "n": 1e-9,
}


@dataclass(frozen=True)
class Unit:
    """A named unit. Derived units from arithmetic get a symbol like ``m/s^2``."""

    symbol: str
    dimension: Dimension
    scale: float = 1.0
    offset: float = 0.0
    prefixable: bool = field(default=False, compare=False)

    def __mul__(self, other: Unit) -> Unit:
        self._no_offset(other)
        return Unit(
            f"{self.symbol}*{other.symbol}",
            self.dimension * other.dimension,
            self.scale * other.scale,
        )

    def __truediv__(self, other: Unit) -> Unit:
        self._no_offset(other)
        return Unit(
            f"{self.symbol}/{other.symbol}",
            self.dimension / other.dimension,
            self.scale / other.scale,
        )

    def __pow__(self, power: int) -> Unit:
        self._no_offset(self)
        return Unit(f"{self.symbol}^{power}", self.dimension**power, self.scale**power)

    def _no_offset(self, other: Unit) -> None:
        if self.offset or other.offset:
            raise DimensionError(
                f"cannot combine {self.symbol} and {other.symbol}: "
                "units with an offset only convert"
            )

    def to_si(self, value: float) -> float:
        return value * self.scale + self.offset

    def from_si(self, value: float) -> float:
        return (value - self.offset) / self.scale

    def convertible_to(self, other: Unit) -> bool:
        return self.dimension == other.dimension


class Registry:
    """Named units, with SI prefixes for the units that take them."""

    def __init__(self) -> None:
        self.units: dict[str, Unit] = {}

    def define(self, unit: Unit, *aliases: str) -> Unit:
        for name in (unit.symbol, *aliases):
            if name in self.units:
                raise UnitError(f"unit {name!r} is already defined")
            self.units[name] = unit
        return unit

    def get(self, name: str) -> Unit:
        """The unit ``name``: a defined symbol or alias, or a prefix on a prefixable unit."""
        if name in self.units:
            return self.units[name]
        if len(name) > 1 and name[0] in PREFIXES:
            base = self.units.get(name[1:])
            if base is not None and base.prefixable:
                return Unit(name, base.dimension, base.scale * PREFIXES[name[0]])
        raise UnitError(f"unknown unit {name!r}")

    def __contains__(self, name: str) -> bool:
        try:
            self.get(name)
        except UnitError:
            return False
        return True


def _default_registry() -> Registry:
    reg = Registry()
    one = Unit("1", DIMENSIONLESS)
    reg.define(one)
    reg.define(Unit("percent", DIMENSIONLESS, 0.01), "%")
    m = reg.define(Unit("m", LENGTH, prefixable=True), "metre", "meter")
    reg.define(Unit("in", LENGTH, 0.0254), "inch")
    reg.define(Unit("ft", LENGTH, 0.3048), "foot", "feet")
    reg.define(Unit("yd", LENGTH, 0.9144))
    reg.define(Unit("mi", LENGTH, 1609.344), "mile")
    reg.define(Unit("g", MASS, 1e-3, prefixable=True), "gram")
    reg.define(Unit("lb", MASS, 0.45359237), "pound")
    reg.define(Unit("oz", MASS, 0.028349523125))
    reg.define(Unit("t", MASS, 1000.0), "tonne")
    s = reg.define(Unit("s", TIME, prefixable=True), "second")
    reg.define(Unit("min", TIME, 60.0), "minute")
    reg.define(Unit("h", TIME, 3600.0), "hour")
    reg.define(Unit("day", TIME, 86400.0))
    reg.define(Unit("A", CURRENT, prefixable=True), "ampere")
    reg.define(Unit("K", TEMPERATURE, prefixable=True), "kelvin")
    reg.define(Unit("degC", TEMPERATURE, 1.0, 273.15), "celsius")
    reg.define(Unit("degF", TEMPERATURE, 5 / 9, 273.15 - 32 * 5 / 9), "fahrenheit")
    kg = Unit("kg", MASS)
    newton = kg * m / s**2
    reg.define(Unit("N", newton.dimension, prefixable=True), "newton")
    reg.define(Unit("J", newton.dimension * LENGTH, prefixable=True), "joule")
    reg.define(Unit("W", newton.dimension * LENGTH / TIME, prefixable=True), "watt")
    reg.define(Unit("Pa", newton.dimension / LENGTH**2, prefixable=True), "pascal")
    reg.define(Unit("L", LENGTH**3, 1e-3, prefixable=True), "litre", "liter")
    reg.define(Unit("Hz", DIMENSIONLESS / TIME, prefixable=True), "hertz")
    return reg


REGISTRY = _default_registry()
