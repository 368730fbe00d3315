"""Answer checking for math tasks: exact fractions, floats within tolerance, sympy forms.

The model's answer is untrusted text. It is never handed to ``eval``: it is first matched
against a small whitelist (digits, operators, brackets, ``sqrt``, ``pi``, ``E``, ``I``), its
length is capped and large powers are refused before sympy evaluates anything.

    >>> answers_match("3/4", "0.75"), answers_match("3/4", "6/8"), answers_match("3/4", "0.7")
    (True, True, False)
    >>> answers_match("2*sqrt(2)", "sqrt(8)"), answers_match("12", r"\\boxed{12}")
    (True, True)
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_BOXED = re.compile(r"\\boxed\{(.*)\}", re.DOTALL)
_ALLOWED = re.compile(r"^[0-9\s+\-*/^().,a-zA-Z]*$")
_NAMES = {"sqrt", "pi", "E", "I", "e"}
MAX_LEN = 120


def normalize(text: str) -> str:
    """Strip the wrappers answers often come in: ``\\boxed{}``, ``$``, ``x =``, commas."""
    s = str(text).strip()
    m = _BOXED.search(s)
    if m:
        s = m.group(1)
    s = s.strip().strip("$").strip()
    s = re.sub(r"^[a-zA-Z]\s*=\s*", "", s)
    s = s.replace("\\frac{", "(").replace("}{", ")/(").replace("}", ")").replace("{", "(")
    s = s.replace("\\cdot", "*").replace("\\pi", "pi").replace("\\sqrt", "sqrt").replace("^", "**")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)  # 1,000 -> 1000
    return s.rstrip(".").strip()


def _as_fraction(s: str) -> Fraction | None:
    try:
        return Fraction(s.replace(" ", ""))
    except (ValueError, ZeroDivisionError):
        return None


def _sympy_value(s: str):  # type: ignore[no-untyped-def]
    if len(s) > MAX_LEN or not _ALLOWED.match(s):
        return None
    if any(w not in _NAMES for w in re.findall(r"[a-zA-Z]+", s)):
        return None
    import sympy
    from sympy.parsing.sympy_parser import parse_expr, standard_transformations

    try:
        expr = parse_expr(
            s,
            local_dict={
                "sqrt": sympy.sqrt,
                "pi": sympy.pi,
                "E": sympy.E,
                "e": sympy.E,
                "I": sympy.I,
            },
            global_dict={
                "Integer": sympy.Integer,
                "Float": sympy.Float,
                "Rational": sympy.Rational,
                "Symbol": sympy.Symbol,
                "Mul": sympy.Mul,
                "Add": sympy.Add,
                "Pow": sympy.Pow,
                "__builtins__": {},
            },
            transformations=standard_transformations,
            evaluate=False,
        )
    except Exception:
        return None
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow):
            exp = node.exp
            if not exp.is_number or abs(complex(exp.evalf(15))) > 64:
                return None
        if isinstance(node, sympy.Integer) and abs(int(node)) > 10**40:
            return None
    return expr


def answers_match(expected: str, given: str, rel_tol: float = 1e-6) -> bool:
    """True when ``given`` is an equivalent form of ``expected`` (an exact expression)."""
    e, g = normalize(expected), normalize(given)
    if not g:
        return False
    if e == g:
        return True
    fe, fg = _as_fraction(e), _as_fraction(g)
    if fe is not None and fg is not None:
        if fe == fg:
            return True
        if "." in g or "e" in g.lower():  # a decimal approximation of an exact value
            return math.isclose(float(fe), float(fg), rel_tol=rel_tol, abs_tol=1e-9)
        return False
    ve, vg = _sympy_value(e), _sympy_value(g)
    if ve is None or vg is None:
        return False
    try:
        import sympy

        if sympy.simplify(sympy.nsimplify(ve) - sympy.nsimplify(vg)) == 0:
            return True
        ne, ng = complex(ve.evalf(30)), complex(vg.evalf(30))
        return abs(ne - ng) <= max(1e-9, rel_tol * abs(ne))
    except Exception:
        return False
