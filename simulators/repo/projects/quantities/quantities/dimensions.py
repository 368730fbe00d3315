"""Dimensions: exponents of the base dimensions length, mass, time, current, temperature."""

from __future__ import annotations

from dataclasses import dataclass

BASE = ("L", "M", "T", "I", "K")


@dataclass(frozen=True)
class Dimension:
    """``Dimension((1, 0, -2, 0, 0))`` is an acceleration (L T^-2)."""

    exponents: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)

    @classmethod
    def of(cls, **powers: int) -> Dimension:
        """``Dimension.of(L=1, T=-1)`` is a speed."""
        unknown = set(powers) - set(BASE)
        if unknown:
            raise KeyError(f"unknown base dimensions {sorted(unknown)}")
        return cls(tuple(powers.get(b, 0) for b in BASE))  # type: ignore[arg-type]

    def __mul__(self, other: Dimension) -> Dimension:
        return Dimension(tuple(a + b for a, b in zip(self.exponents, other.exponents)))  # type: ignore[arg-type]

    def __truediv__(self, other: Dimension) -> Dimension:
        return Dimension(tuple(a - b for a, b in zip(self.exponents, other.exponents)))  # type: ignore[arg-type]

    def __pow__(self, power: int) -> Dimension:
        return Dimension(tuple(a * power for a in self.exponents))  # type: ignore[arg-type]

    @property
    def dimensionless(self) -> bool:
        return not any(self.exponents)

    def __str__(self) -> str:
        if self.dimensionless:
            return "1"
        parts = []
        for name, exp in zip(BASE, self.exponents):
            if exp == 1:
                parts.append(name)
            elif exp:
                parts.append(f"{name}^{exp}")
        return " ".join(parts)


DIMENSIONLESS = Dimension()
LENGTH = Dimension.of(L=1)
MASS = Dimension.of(M=1)
TIME = Dimension.of(T=1)
CURRENT = Dimension.of(I=1)
TEMPERATURE = Dimension.of(K=1)
