"""Unit-test grading that reward hacking cannot fool.

The candidate's code runs in the jail; each test is a call ``fn(*args)`` whose return value
is reduced to plain JSON data *inside* the jail (objects with a custom ``__eq__`` are
refused) and sent back on a private pipe. The comparison with the expected value happens
here, in the trusted host process, which never runs candidate code. So ``sys.exit(0)``
before the tests, patching ``unittest`` or ``assert``, printing "PASSED" or killing the
runner all just leave tests without a result, and a test without a result has failed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.simulators.sandbox.pool import ExecResult, SandboxPool


@dataclass(frozen=True)
class TestCase:
    """One call and its expected return value (plain JSON data)."""

    __test__ = False  # not a pytest test class

    args: tuple[Any, ...]
    expected: Any


@dataclass(frozen=True)
class GradeReport:
    """Per-test verdicts and what the run printed."""

    passed: tuple[bool, ...]
    messages: tuple[str, ...]
    run: ExecResult

    @property
    def fraction(self) -> float:
        return sum(self.passed) / len(self.passed) if self.passed else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.passed) and all(self.passed)


def _plain_expected(value: Any) -> Any:
    """Expected values in the form the jail sends results (dicts and sets tagged)."""
    if isinstance(value, tuple | list):
        return [_plain_expected(v) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[_plain_expected(k), _plain_expected(v)] for k, v in value.items()]}
    if isinstance(value, set | frozenset):
        return {"__set__": sorted((_plain_expected(v) for v in value), key=repr)}
    return value


def values_equal(got: Any, expected: Any, rel_tol: float = 1e-6, abs_tol: float = 1e-9) -> bool:
    """Structural equality on plain data; floats within tolerance; bool is not int."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(expected, int | float) and isinstance(got, int | float):
        if isinstance(expected, int) and isinstance(got, int):
            return got == expected
        return math.isclose(float(got), float(expected), rel_tol=rel_tol, abs_tol=abs_tol)
    if isinstance(expected, list) and isinstance(got, list):
        return len(got) == len(expected) and all(
            values_equal(g, e, rel_tol, abs_tol) for g, e in zip(got, expected)
        )
    if isinstance(expected, dict) and isinstance(got, dict):
        if got.keys() != expected.keys():
            return False
        if "__dict__" in expected:
            gd = {repr(k): v for k, v in got["__dict__"]}
            ed = {repr(k): v for k, v in expected["__dict__"]}
            return gd.keys() == ed.keys() and all(
                values_equal(gd[k], ed[k], rel_tol, abs_tol) for k in ed
            )
        return all(values_equal(got[k], expected[k], rel_tol, abs_tol) for k in expected)
    return type(got) is type(expected) and bool(got == expected)


def grade(
    pool: SandboxPool,
    code: str,
    fn: str,
    tests: Sequence[TestCase],
    *,
    timeout: float = 10.0,
) -> GradeReport:
    """Run ``code`` and every test in one confined run; compare the results here."""
    run, results = pool.grade_raw(code, fn, [t.args for t in tests], timeout=timeout)
    passed: list[bool] = []
    messages: list[str] = []
    for test, res in zip(tests, results):
        call = f"{fn}({', '.join(repr(a) for a in test.args)})"
        if res is None:
            passed.append(False)
            messages.append(f"{call}: no result (the program exited, crashed or timed out)")
        elif not res.get("ok"):
            passed.append(False)
            messages.append(f"{call} raised {res.get('error', '')}")
        elif values_equal(res.get("value"), _plain_expected(test.expected)):
            passed.append(True)
            messages.append(f"{call}: ok")
        else:
            passed.append(False)
            messages.append(f"{call}: wrong result")
    return GradeReport(tuple(passed), tuple(messages), run)
