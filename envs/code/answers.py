"""Answer checking for math tasks: exact fractions, decimals within tolerance, sympy forms.

The model's answer is untrusted text, checked on the host (outside the sandbox), so every step
here is bounded whatever the string:

* an answer longer than :data:`MAX_ANSWER_CHARS` is wrong without being read further;
* normalisation is linear (no backtracking regex over the answer);
* numbers are read by a strict ASCII pattern with at most :data:`MAX_DIGITS` digits and an
  exponent of at most :data:`MAX_EXPONENT`, then compared as exact fractions (no ``float``,
  so ``1e400`` cannot overflow and ``1e10000000`` is never expanded);
* sympy sees only a whitelisted expression of at most :data:`MAX_LEN` characters whose
  integers and powers stay under :data:`MAX_BITS` bits, and it only evaluates numerically
  (no ``simplify``). The text is never handed to ``eval``.

    >>> answers_match("3/4", "0.75"), answers_match("3/4", "6/8"), answers_match("3/4", "0.7")
    (True, True, False)
    >>> answers_match("2*sqrt(2)", "sqrt(8)"), answers_match("12", r"\\boxed{12}")
    (True, True)
    >>> answers_match("5", "1e400"), answers_match("5", "((9**64)**64)**64")
    (False, False)
    >>> answers_match("12", "1.2e1"), answers_match("4", "2**(1+1)"), answers_match("1/3", "0.333")
    (True, True, False)
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

#: Answers longer than this are not parsed (no exact answer in the task sets comes close).
MAX_ANSWER_CHARS = 4096
#: Longest normalised expression handed to sympy.
MAX_LEN = 120
#: Most digits in a plain number's mantissa (the longest task answer has 21).
MAX_DIGITS = 400
#: Largest ``|e|`` in scientific notation read as an exact number.
MAX_EXPONENT = 400
#: Largest size, in bits, of any integer or power sympy is allowed to build.
MAX_BITS = 4096

_ALLOWED = re.compile(r"^[0-9\s+\-*/^().,a-zA-Z]*$")
_NAMES = {"sqrt", "pi", "E", "I", "e"}
_DECIMAL = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,6}))?")
_RATIO = re.compile(r"([+-]?[0-9]{1,400})/([+-]?[0-9]{1,400})")
_SCI_EXPONENT = re.compile(r"[0-9.][eE]\s*[+-]?\s*([0-9]+)")
_BOXED = "\\boxed{"


def normalize(text: str) -> str:
    """Strip the wrappers answers often come in: ``\\boxed{}``, ``$``, ``x =``, commas.

    Linear in the length of ``text``: ``\\boxed{`` is found with ``str.find`` and its body
    runs to the last ``}`` (a greedy regex here was quadratic on repeated ``\\boxed{``).

    >>> normalize(r"$\\boxed{\\frac{3}{4}}$"), normalize("x = 1,000.")
    ('(3)/(4)', '1000')
    """
    s = str(text).strip()
    start = s.find(_BOXED)
    end = s.rfind("}")
    if start >= 0 and end >= start + len(_BOXED):
        s = s[start + len(_BOXED) : end]
    s = s.strip().strip("$").strip()
    s = re.sub(r"^[a-zA-Z]\s*=\s*", "", s)
    s = s.replace("\\frac{", "(").replace("}{", ")/(").replace("}", ")").replace("{", "(")
    s = s.replace("\\cdot", "*").replace("\\pi", "pi").replace("\\sqrt", "sqrt").replace("^", "**")
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)  # 1,000 -> 1000
    return s.rstrip(".").strip()


def as_fraction(s: str) -> Fraction | None:
    """The exact value of a plain number (``-12``, ``0.75``, ``3/4``, ``1.5e3``), or None.

    Refuses (None) what would be costly to build exactly: more than :data:`MAX_DIGITS`
    digits or an exponent beyond :data:`MAX_EXPONENT`.

    >>> as_fraction("1.5e3"), as_fraction("-6/8"), as_fraction("1e400") is not None
    (Fraction(1500, 1), Fraction(-3, 4), True)
    >>> as_fraction("1e10000000"), as_fraction("1/0"), as_fraction("٣")
    (None, None, None)
    """
    s = s.replace(" ", "")
    if len(s) > 2 * MAX_DIGITS + 8:
        return None
    ratio = _RATIO.fullmatch(s)
    if ratio is not None:
        num, den = int(ratio.group(1)), int(ratio.group(2))
        return Fraction(num, den) if den else None
    m = _DECIMAL.fullmatch(s)
    if m is None:
        return None
    sign, whole, frac, exp = m.group(1), m.group(2), m.group(3) or "", m.group(4) or "0"
    if (not whole and not frac) or len(whole) + len(frac) > MAX_DIGITS:
        return None
    power = int(exp) - len(frac)
    if abs(int(exp)) > MAX_EXPONENT:
        return None
    value = Fraction(int(whole + frac)) * Fraction(10) ** power
    return -value if sign == "-" else value


def _bits(node: Any) -> float:
    """An upper bound on the bits of the numbers ``node`` builds (inf when unbounded)."""
    import sympy

    if isinstance(node, sympy.Integer):
        return max(1, int(node).bit_length())
    if isinstance(node, sympy.Rational):
        return _bits(sympy.Integer(node.p)) + _bits(sympy.Integer(node.q))
    if isinstance(node, sympy.Float):
        return max(64, abs(int(node._mpf_[2])) + int(node._mpf_[3]))
    if isinstance(node, sympy.Pow):
        if not node.exp.is_number or _bits(node.exp) > 64:
            return float("inf")
        size = abs(complex(node.exp.evalf(15)))
        if not size <= 64:  # also refuses nan
            return float("inf")
        return _bits(node.base) * max(1.0, size) + _bits(node.exp)
    if isinstance(node, sympy.Mul):
        return sum(_bits(a) for a in node.args)
    if node.args:
        return max(_bits(a) for a in node.args) + len(node.args)
    return 2.0


def _sympy_value(s: str) -> Any:
    if len(s) > MAX_LEN or not _ALLOWED.match(s):
        return None
    if any(w not in _NAMES for w in re.findall(r"[a-zA-Z]+", s)):
        return None
    if any(int(x) > MAX_EXPONENT for x in _SCI_EXPONENT.findall(s)):
        return None  # sympy would expand 1e999999 exactly (over a minute)
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
        if _bits(expr) > MAX_BITS:
            return None
    except Exception:  # malformed or too deep: not an answer we can read
        return None
    return expr


def _close(expected: Fraction, given: Fraction, rel_tol: float) -> bool:
    tol = max(Fraction(1, 10**9), Fraction(rel_tol) * abs(expected))
    return abs(expected - given) <= tol


def answers_match(expected: str, given: str, rel_tol: float = 1e-6) -> bool:
    """True when ``given`` is an equivalent form of ``expected`` (an exact expression).

    Never raises; bounded work for any ``given`` (see the module docstring).
    """
    if len(given) > MAX_ANSWER_CHARS:
        return False
    e, g = normalize(expected), normalize(given)
    if not g:
        return False
    if e == g:
        return True
    fe, fg = as_fraction(e), as_fraction(g)
    if fe is not None and fg is not None:
        if fe == fg:
            return True
        if "." in g or "e" in g.lower():  # a decimal approximation of an exact value
            return _close(fe, fg, rel_tol)
        return False
    ve, vg = _sympy_value(e), _sympy_value(g)
    if ve is None or vg is None:
        return False
    try:
        ne, ng = ve.evalf(30), vg.evalf(30)
        return bool(abs(ne - ng) <= max(1e-9, rel_tol * abs(ne)))
    except Exception:  # nan/zoo comparisons and the like: not equal
        return False
