"""quantities: physical quantities with units."""

from quantities.errors import DimensionError, UnitError
from quantities.formatting import format_quantity
from quantities.parse import parse_quantity, parse_unit
from quantities.quantity import Quantity
from quantities.registry import REGISTRY, Unit

__all__ = [
    "REGISTRY",
    "DimensionError",
    "Quantity",
    "Unit",
    "UnitError",
    "format_quantity",
    "parse_quantity",
    "parse_unit",
]
