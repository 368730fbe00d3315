"""``Quantity``: a number with a unit, and arithmetic that keeps track of units."""

from __future__ import annotations

import math
from functools import total_ordering

from quantities.errors import DimensionError
from quantities.registry import REGISTRY, Unit

#: Relative tolerance of quantity equality (conversions go through floating point).
REL_TOL = 1e-9


def _unit(unit: Unit | str) -> Unit:
    return REGISTRY.get(unit) if isinstance(unit, str) else unit


@total_ordering
class Quantity:
    """``Quantity(3, "km")``. Adding or comparing needs equal dimensions; the result of an
    addition is in the left operand's unit."""

    __slots__ = ("unit", "value")

    def __init__(self, value: float, unit: Unit | str = "1"):
        self.value = float(value)
        self.unit = _unit(unit)

    def to(self, unit: Unit | str) -> Quantity:
        """The same quantity in another unit of the same dimension."""
        target = _unit(unit)
        if not self.unit.convertible_to(target):
            raise DimensionError(
                f"cannot convert {self.unit.symbol} ({self.unit.dimension}) to "
                f"{target.symbol} ({target.dimension})"
            )
        return Quantity(target.from_si(self.unit.to_si(self.value)), target)

    def si_value(self) -> float:
        return self.unit.to_si(self.value)

    @property
    def dimension(self):
        return self.unit.dimension

    def _same_dimension(self, other: Quantity, what: str) -> None:
        if self.unit.dimension != other.unit.dimension:
            raise DimensionError(
                f"cannot {what} {self.unit.symbol} and {other.unit.symbol}: "
                f"{self.unit.dimension} vs {other.unit.dimension}"
            )

    def __add__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        self._same_dimension(other, "add")
        return Quantity(self.value + other.to(self.unit).value, self.unit)

    def __sub__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        self._same_dimension(other, "subtract")
        return Quantity(self.value - other.to(self.unit).value, self.unit)

    def __mul__(self, other: object) -> Quantity:
        if isinstance(other, int | float):
            return Quantity(self.value * other, self.unit)
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.value * other.value, self.unit * other.unit)

    def __rmul__(self, other: object) -> Quantity:
        if isinstance(other, int | float):
            return Quantity(other * self.value, self.unit)
        return NotImplemented

    def __truediv__(self, other: object) -> Quantity:
        if isinstance(other, int | float):
            return Quantity(self.value / other, self.unit)
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.value / other.value, self.unit / other.unit)

    def __pow__(self, power: int) -> Quantity:
        return Quantity(self.value**power, self.unit**power)

    def __neg__(self) -> Quantity:
        return Quantity(-self.value, self.unit)

    def __abs__(self) -> Quantity:
        return Quantity(abs(self.value), self.unit)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        if self.unit.dimension != other.unit.dimension:
            return False
        return math.isclose(self.si_value(), other.si_value(), rel_tol=REL_TOL, abs_tol=1e-12)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        self._same_dimension(other, "compare")
        return self.si_value() < other.si_value() and self != other

    def __hash__(self) -> int:
        return hash((self.unit.dimension, round(self.si_value(), 9)))

    def __repr__(self) -> str:
        return f"Quantity({self.value!r}, {self.unit.symbol!r})"
