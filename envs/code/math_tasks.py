"""Procedurally generated math problems with exact answers and reference programs.

A problem is made from a seed alone (``make_problem(seed, level)``), so task ids are just
seeds. Each comes with its exact answer (a string sympy and ``fractions`` can read) and a
short reference program that prints it, used by the env's oracle. Levels 1-3 grow the
numbers until a calculator, then a program, is needed.

    >>> p = make_problem(7, 2)
    >>> p.topic in TOPICS and p.answer != ""
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

TOPICS = ("arithmetic", "algebra", "combinatorics", "number_theory", "series")


@dataclass(frozen=True)
class MathProblem:
    topic: str
    level: int
    question: str
    answer: str
    program: str
    """Python that prints the answer (the oracle's tool call)."""


def _frac(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _arithmetic(rng: np.random.Generator, level: int) -> MathProblem:
    n = 2 + level
    hi = 10**level
    raw = [(int(rng.integers(1, hi)), int(rng.integers(2, 3 + 4 * level))) for _ in range(n)]
    terms = [Fraction(a, b) for a, b in raw]
    ops = [str(rng.choice(["+", "-", "*"])) for _ in range(n - 1)]
    expr = f"{raw[0][0]}/{raw[0][1]}"
    for op, (a, b) in zip(ops, raw[1:]):
        expr = f"({expr} {op} {a}/{b})"
    value = terms[0]
    for op, t in zip(ops, terms[1:]):
        value = value + t if op == "+" else value - t if op == "-" else value * t
    prog = "from fractions import Fraction\nprint(" + _frac_code(expr) + ")"
    return MathProblem(
        "arithmetic",
        level,
        f"Compute {expr} exactly. Give the answer as an integer or a reduced fraction a/b.",
        _frac(value),
        prog,
    )


def _frac_code(expr: str) -> str:
    import re

    return re.sub(r"(\d+)/(\d+)", r"Fraction(\1, \2)", expr)


def _algebra(rng: np.random.Generator, level: int) -> MathProblem:
    if rng.random() < 0.5:
        a, c = (int(v) for v in rng.choice(np.arange(-9 * level, 9 * level + 1), 2, replace=False))
        b, d = (int(v) for v in rng.integers(-20 * level, 20 * level, size=2))
        if a == c:
            c += 1
        x = Fraction(d - b, a - c)
        q = f"Solve for x: {a}*x + {b} = {c}*x + {d}. Give x exactly."
        prog = f"import sympy as sp\nx = sp.Symbol('x')\nprint(sp.solve(sp.Eq({a}*x + {b}, {c}*x + {d}), x)[0])"
        return MathProblem("algebra", level, q, _frac(x), prog)
    r1, r2 = (int(v) for v in rng.integers(-10 * level, 10 * level + 1, size=2))
    k = int(rng.integers(1, 2 + level))
    b, c = -k * (r1 + r2), k * r1 * r2
    q = (
        f"The equation {k}*x**2 + ({b})*x + ({c}) = 0 has real roots. "
        "What is the sum of the squares of its roots?"
    )
    prog = (
        "import sympy as sp\nx = sp.Symbol('x')\n"
        f"roots = sp.roots({k}*x**2 + ({b})*x + ({c}), x)\n"
        "print(sum(r**2 * m for r, m in roots.items()))"
    )
    return MathProblem("algebra", level, q, str(r1 * r1 + r2 * r2), prog)


def _combinatorics(rng: np.random.Generator, level: int) -> MathProblem:
    kind = int(rng.integers(3))
    if kind == 0:
        n = int(rng.integers(5, 10 + 15 * level))
        k = int(rng.integers(2, n - 1))
        q = f"In how many ways can a committee of {k} be chosen from {n} people?"
        return MathProblem("combinatorics", level, q, str(math.comb(n, k)),
                           f"import math\nprint(math.comb({n}, {k}))")  # fmt: skip
    if kind == 1:
        w, h = (int(v) for v in rng.integers(2, 4 + 4 * level, size=2))
        q = (
            f"How many shortest lattice paths go from (0, 0) to ({w}, {h}) "
            "moving only right or up one unit at a time?"
        )
        return MathProblem("combinatorics", level, q, str(math.comb(w + h, w)),
                           f"import math\nprint(math.comb({w + h}, {w}))")  # fmt: skip
    letters = "ABCDEFG"[: 2 + level]
    counts = [int(v) for v in rng.integers(1, 2 + level, size=len(letters))]
    word = "".join(c * n for c, n in zip(letters, counts))
    total = math.factorial(len(word))
    for n in counts:
        total //= math.factorial(n)
    q = f"How many distinct arrangements of the letters of the string {word!r} are there?"
    prog = (
        "import math\nfrom collections import Counter\n"
        f"w = {word!r}\nt = math.factorial(len(w))\n"
        "for n in Counter(w).values():\n    t //= math.factorial(n)\nprint(t)"
    )
    return MathProblem("combinatorics", level, q, str(total), prog)


def _number_theory(rng: np.random.Generator, level: int) -> MathProblem:
    kind = int(rng.integers(3))
    if kind == 0:
        a, b, m = (
            int(rng.integers(2, 50)),
            int(rng.integers(10, 10 ** (2 + level))),
            int(rng.integers(7, 1000)),
        )
        q = f"What is the remainder when {a}**{b} is divided by {m}?"
        return MathProblem(
            "number_theory", level, q, str(pow(a, b, m)), f"print(pow({a}, {b}, {m}))"
        )
    if kind == 1:
        n = int(rng.integers(50, 10 ** (2 + level)))
        sieve = np.ones(n + 1, dtype=bool)
        sieve[:2] = False
        for p in range(2, math.isqrt(n) + 1):
            if sieve[p]:
                sieve[p * p :: p] = False
        count = int(sieve.sum())
        q = f"How many prime numbers are less than or equal to {n}?"
        prog = (
            f"n = {n}\nsieve = [True] * (n + 1)\nsieve[0] = sieve[1] = False\n"
            "for p in range(2, int(n**0.5) + 1):\n    if sieve[p]:\n"
            "        sieve[p*p::p] = [False] * len(sieve[p*p::p])\nprint(sum(sieve))"
        )
        return MathProblem("number_theory", level, q, str(count), prog)
    a, b = (int(v) * int(rng.integers(1, 12)) for v in rng.integers(2, 10 ** (1 + level), size=2))
    q = f"What is the least common multiple of {a} and {b}?"
    return MathProblem("number_theory", level, q, str(math.lcm(a, b)),
                       f"import math\nprint(math.lcm({a}, {b}))")  # fmt: skip


def _series(rng: np.random.Generator, level: int) -> MathProblem:
    kind = int(rng.integers(3))
    if kind == 0:
        n, p = int(rng.integers(5, 20 * level * level + 10)), int(rng.integers(1, 2 + level))
        q = f"Compute the sum of k**{p} for k = 1, 2, ..., {n}."
        return MathProblem("series", level, q, str(sum(k**p for k in range(1, n + 1))),
                           f"print(sum(k**{p} for k in range(1, {n} + 1)))")  # fmt: skip
    if kind == 1:
        a, r_num, r_den = int(rng.integers(1, 10)), int(rng.integers(1, 4)), int(rng.integers(2, 6))
        n = int(rng.integers(3, 4 + 3 * level))
        r = Fraction(r_num, r_den)
        total = sum((a * r**k for k in range(n)), Fraction(0))
        q = (
            f"A geometric sequence starts at {a} with ratio {r_num}/{r_den}. "
            f"What is the exact sum of its first {n} terms?"
        )
        prog = (
            "from fractions import Fraction\n"
            f"print(sum({a} * Fraction({r_num}, {r_den})**k for k in range({n})))"
        )
        return MathProblem("series", level, q, _frac(total), prog)
    n = int(rng.integers(10, 30 * level + 10))
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    q = f"Let F(0) = 0, F(1) = 1 and F(n) = F(n-1) + F(n-2). What is F({n})?"
    prog = f"a, b = 0, 1\nfor _ in range({n}):\n    a, b = b, a + b\nprint(a)"
    return MathProblem("series", level, q, str(a), prog)


_GENERATORS: dict[str, Callable[[np.random.Generator, int], MathProblem]] = {
    "arithmetic": _arithmetic,
    "algebra": _algebra,
    "combinatorics": _combinatorics,
    "number_theory": _number_theory,
    "series": _series,
}


def make_problem(seed: int, level: int) -> MathProblem:
    """The problem of a seed at a difficulty level (1..3); the topic comes from the seed."""
    rng = np.random.default_rng([int(seed), int(level), 0xC0DE])
    topic = TOPICS[int(rng.integers(len(TOPICS)))]
    return _GENERATORS[topic](rng, int(level))
