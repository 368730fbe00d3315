"""The query tree."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Column:
    name: str


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Star:
    """``*`` in ``SELECT *`` or ``COUNT(*)``."""


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "not"
    operand: Any


@dataclass(frozen=True)
class Binary:
    op: str
    left: Any
    right: Any


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class InList:
    operand: Any
    options: tuple[Any, ...]
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    operand: Any
    negated: bool = False


@dataclass(frozen=True)
class SelectItem:
    expr: Any
    alias: str | None = None


@dataclass(frozen=True)
class OrderItem:
    expr: Any
    descending: bool = False


@dataclass
class Select:
    items: list[SelectItem]
    distinct: bool = False
    where: Any = None
    group_by: list[Any] = field(default_factory=list)
    order_by: list[OrderItem] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
