"""Evaluate expressions over one row, or over a group of rows for aggregates.

NULL (None) follows SQL: arithmetic and comparisons with NULL give NULL, which filters treat
as false; ``NULL AND false`` is false and ``NULL OR true`` is true.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from csvq.errors import QueryError
from csvq.functions import AGGREGATES, scalar
from csvq.syntax import Binary, Call, Column, Const, InList, IsNull, Star, Unary


def like_pattern(pattern: str) -> re.Pattern[str]:
    """SQL LIKE as a regular expression: ``%`` any run, ``_`` one character, no case."""
    out = []
    for ch in pattern:
        if ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("^" + "".join(out) + "$", re.IGNORECASE | re.DOTALL)


def _arith(op: str, a: Any, b: Any) -> Any:
    if a is None or b is None:
        return None
    if op == "+":
        if isinstance(a, str) or isinstance(b, str):
            return f"{a}{b}"
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        return None  # division by zero is NULL, as in SQLite
    if op == "/":
        return a // b if isinstance(a, int) and isinstance(b, int) else a / b
    return a % b


def _compare(op: str, a: Any, b: Any) -> bool | None:
    if a is None or b is None:
        return None
    try:
        if op == "=":
            return a == b
        if op == "<>":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        return a >= b
    except TypeError:
        raise QueryError(f"cannot compare {a!r} and {b!r}") from None


def contains_aggregate(node: Any) -> bool:
    if isinstance(node, Call):
        return node.name in AGGREGATES or any(contains_aggregate(a) for a in node.args)
    if isinstance(node, Binary):
        return contains_aggregate(node.left) or contains_aggregate(node.right)
    if isinstance(node, Unary | IsNull):
        return contains_aggregate(node.operand)
    if isinstance(node, InList):
        return contains_aggregate(node.operand)
    return False


class Evaluator:
    """Evaluates against ``row`` (column -> value, lower-case keys); aggregates read
    ``group`` (the rows of the current group)."""

    def __init__(
        self,
        row: Mapping[str, Any],
        group: list[Mapping[str, Any]] | None = None,
        aliases: Mapping[str, Any] | None = None,
    ):
        self.row = row
        self.group = group
        self.aliases = aliases or {}

    def eval(self, node: Any) -> Any:
        if isinstance(node, Const):
            return node.value
        if isinstance(node, Column):
            return self.column(node.name)
        if isinstance(node, Unary):
            value = self.eval(node.operand)
            if node.op == "-":
                return None if value is None else -value
            return None if value is None else not value
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, IsNull):
            is_null = self.eval(node.operand) is None
            return not is_null if node.negated else is_null
        if isinstance(node, InList):
            value = self.eval(node.operand)
            if value is None:
                return None
            found = any(value == self.eval(option) for option in node.options)
            return not found if node.negated else found
        if isinstance(node, Call):
            return self.call(node)
        raise QueryError(f"cannot evaluate {node!r}")

    def column(self, name: str) -> Any:
        key = name.lower()
        if key in self.row:
            return self.row[key]
        if key in self.aliases:
            return self.aliases[key]
        raise QueryError(f"unknown column {name!r}")

    def binary(self, node: Binary) -> Any:
        if node.op == "and":
            left = self.eval(node.left)
            if left is False:
                return False
            right = self.eval(node.right)
            if right is False:
                return False
            return None if left is None or right is None else bool(left and right)
        if node.op == "or":
            left = self.eval(node.left)
            if left:
                return True
            right = self.eval(node.right)
            if right:
                return True
            return None if left is None or right is None else False
        left, right = self.eval(node.left), self.eval(node.right)
        if node.op == "like":
            if left is None or right is None:
                return None
            return like_pattern(str(right)).match(str(left)) is not None
        if node.op in ("+", "-", "*", "/", "%"):
            return _arith(node.op, left, right)
        return _compare(node.op, left, right)

    def call(self, node: Call) -> Any:
        if node.name in AGGREGATES:
            if self.group is None:
                raise QueryError(f"{node.name.upper()}() needs a group (use GROUP BY)")
            if node.args and isinstance(node.args[0], Star):
                if node.name != "count":
                    raise QueryError(f"{node.name.upper()}(*) is not allowed")
                return len(self.group)
            if len(node.args) != 1:
                raise QueryError(f"{node.name.upper()}() takes one argument")
            values = [Evaluator(r).eval(node.args[0]) for r in self.group]
            return AGGREGATES[node.name](values)
        fn = scalar(node.name)
        try:
            return fn(*[self.eval(a) for a in node.args])
        except TypeError as exc:
            raise QueryError(f"bad call to {node.name.upper()}: {exc}") from None
