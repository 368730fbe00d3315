"""Scalar functions and aggregates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from csvq.errors import QueryError


def _round(value: Any, digits: Any = 0) -> Any:
    if value is None:
        return None
    result = round(float(value), int(digits))
    return int(result) if int(digits) == 0 else result


def _substr(value: Any, start: Any, length: Any = None) -> Any:
    """SQL SUBSTR: ``start`` counts from 1."""
    if value is None:
        return None
    begin = max(int(start) - 1, 0)
    text = str(value)
    return text[begin:] if length is None else text[begin : begin + int(length)]


def _coalesce(*values: Any) -> Any:
    for value in values:
        if value is not None:
            return value
    return None


SCALAR: dict[str, Callable[..., Any]] = {
    "upper": lambda v: None if v is None else str(v).upper(),
    "lower": lambda v: None if v is None else str(v).lower(),
    "length": lambda v: None if v is None else len(str(v)),
    "abs": lambda v: None if v is None else abs(v),
    "round": _round,
    "substr": _substr,
    "coalesce": _coalesce,
}


def _count(values: list[Any]) -> int:
    return sum(1 for v in values if v is not None)


def _sum(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _avg(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _min(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _max(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return max(present) if present else None


AGGREGATES: dict[str, Callable[[list[Any]], Any]] = {
    "count": _count,
    "sum": _sum,
    "avg": _avg,
    "min": _min,
    "max": _max,
}


def scalar(name: str) -> Callable[..., Any]:
    try:
        return SCALAR[name]
    except KeyError:
        raise QueryError(f"unknown function {name.upper()}") from None
