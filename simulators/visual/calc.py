"""A safe calculator: arithmetic expressions evaluated from their syntax tree, never ``eval``.

Allowed: numbers, ``+ - * / // % **``, parentheses, unary signs, the constants ``pi`` and
``e``, and the functions ``sqrt abs round min max sin cos tan asin acos atan atan2 hypot log
exp floor ceil`` (trigonometry in degrees, since that is how scenes state angles). Anything
else (names, attributes, calls to other functions, huge powers) is rejected with a message.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

MAX_EXPRESSION = 300
MAX_MAGNITUDE = 1e15


class CalcError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def _deg(fn: Callable[[float], float]) -> Callable[[float], float]:
    return lambda x: fn(math.radians(x))


def _adeg(fn: Callable[[float], float]) -> Callable[..., float]:
    return lambda *x: math.degrees(fn(*x))


FUNCTIONS: dict[str, Callable[..., float]] = {
    "sqrt": math.sqrt,
    "abs": abs,
    "round": lambda x, n=0: round(x, int(n)),
    "min": min,
    "max": max,
    "sin": _deg(math.sin),
    "cos": _deg(math.cos),
    "tan": _deg(math.tan),
    "asin": _adeg(math.asin),
    "acos": _adeg(math.acos),
    "atan": _adeg(math.atan),
    "atan2": _adeg(math.atan2),  # type: ignore[arg-type]
    "hypot": math.hypot,
    "log": math.log,
    "exp": math.exp,
    "floor": math.floor,
    "ceil": math.ceil,
}
CONSTANTS = {"pi": math.pi, "e": math.e}

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value) if isinstance(node.value, float) else int(node.value)  # type: ignore[arg-type]
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
            raise CalcError("powers are limited to |base| <= 1e6 and |exponent| <= 64.")
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, complex):
            raise CalcError("the result is not a real number.")
        return result
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn = FUNCTIONS.get(node.func.id)
        if fn is None:
            raise CalcError(f"unknown function {node.func.id!r}; allowed: {', '.join(FUNCTIONS)}.")
        return fn(*[_eval(a) for a in node.args])
    if isinstance(node, ast.Name):
        raise CalcError(f"unknown name {node.id!r}; only pi and e are defined.")
    raise CalcError(f"{type(node).__name__} is not allowed; use numbers, + - * / ** and functions.")


def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression safely.

    >>> calculate("(17 + 25) * 2")
    84
    >>> calculate("sqrt(3**2 + 4**2)")
    5.0
    >>> calculate("__import__('os')")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    CalcError: unknown function '__import__'; allowed: sqrt, abs, ...
    """
    if not isinstance(expression, str) or not expression.strip():
        raise CalcError("give an arithmetic expression, e.g. '(12 + 30) / 2'.")
    if len(expression) > MAX_EXPRESSION:
        raise CalcError(f"the expression is longer than {MAX_EXPRESSION} characters.")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise CalcError(
            f"not a valid expression ({exc.msg if isinstance(exc, SyntaxError) else exc})."
        ) from None
    try:
        value = _eval(tree)
    except CalcError:
        raise
    except ZeroDivisionError:
        raise CalcError("division by zero.") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise CalcError(f"cannot evaluate: {exc}.") from None
    if (isinstance(value, float) and not math.isfinite(value)) or abs(value) > MAX_MAGNITUDE:
        raise CalcError("the result is too large or not finite.")
    return value
