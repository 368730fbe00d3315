"""Errors of the units library."""


class UnitError(ValueError):
    """An unknown unit name or a malformed unit expression."""


class DimensionError(TypeError):
    """An operation between quantities whose dimensions do not allow it (metres + seconds)."""
