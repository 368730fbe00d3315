"""Evaluating expressions against the render context (scopes for loops and ``set``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tmpl.errors import TemplateError, UndefinedError
from tmpl.expressions import Attr, BoolOp, Compare, Filter, Item, Literal, Name, Not

_MISSING = object()


class Context:
    """A stack of scopes; lookups go innermost first."""

    def __init__(
        self,
        data: Mapping[str, Any],
        filters: Mapping[str, Callable[..., Any]],
        strict: bool = False,
    ):
        self.scopes: list[dict[str, Any]] = [dict(data)]
        self.filters = filters
        self.strict = strict

    def push(self, values: dict[str, Any]) -> None:
        self.scopes.append(values)

    def pop(self) -> None:
        self.scopes.pop()

    def set(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.undefined(name)

    def undefined(self, what: str) -> Any:
        if self.strict:
            raise UndefinedError(f"{what!r} is undefined")
        return None

    def evaluate(self, node: Any) -> Any:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Name):
            return self.lookup(node.name)
        if isinstance(node, Attr):
            return self.get_attr(self.evaluate(node.target), node.name)
        if isinstance(node, Item):
            return self.get_item(self.evaluate(node.target), self.evaluate(node.key))
        if isinstance(node, Filter):
            return self.apply_filter(node)
        if isinstance(node, Not):
            return not self.evaluate(node.operand)
        if isinstance(node, BoolOp):
            left = self.evaluate(node.left)
            if node.op == "and":
                return self.evaluate(node.right) if left else left
            return left if left else self.evaluate(node.right)
        if isinstance(node, Compare):
            return compare(node.op, self.evaluate(node.left), self.evaluate(node.right))
        raise TemplateError(f"cannot evaluate {node!r}")

    def get_attr(self, value: Any, name: str) -> Any:
        """``a.b``: a mapping key first, then an attribute (never a private one)."""
        if value is None:
            return self.undefined(name)
        if isinstance(value, Mapping) and name in value:
            return value[name]
        if not name.startswith("_"):
            found = getattr(value, name, _MISSING)
            if found is not _MISSING:
                return found
        return self.undefined(name)

    def get_item(self, value: Any, key: Any) -> Any:
        try:
            return value[key]
        except (KeyError, IndexError, TypeError):
            return self.undefined(repr(key))

    def apply_filter(self, node: Filter) -> Any:
        fn = self.filters.get(node.name)
        if fn is None:
            raise TemplateError(f"unknown filter {node.name!r}")
        args = [self.evaluate(arg) for arg in node.args]
        return fn(self.evaluate(node.target), *args)


def compare(op: str, left: Any, right: Any) -> bool:
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    if op == "in":
        return left in right if right is not None else False
    if left is None or right is None:
        return False
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right
