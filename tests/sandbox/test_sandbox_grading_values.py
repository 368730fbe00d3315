"""Unit-test grading's comparison rules on both sides of each tolerance, and the per-test
verdicts and messages of one graded run.
"""

from __future__ import annotations

import pytest
from agentgym.simulators.sandbox import SandboxPool
from agentgym.simulators.sandbox.grading import (
    GradeReport,
    TestCase,
    _plain_expected,
    grade,
    values_equal,
)
from agentgym.simulators.sandbox.pool import ExecResult


@pytest.mark.parametrize(
    ("got", "expected", "want"),
    [
        (1.0 + 1e-7, 1.0, True),  # relative 1e-7 < 1e-6
        (1.0 + 1e-5, 1.0, False),
        (1e-10, 0.0, True),  # absolute floor 1e-9
        (1e-8, 0.0, False),
        (2, 2.0, True),
        (3, 2, False),
        (True, 1, False),  # bool is not int
        (1, True, False),
        (True, True, True),
        (False, True, False),
        ([1, 2.0000001], [1, 2], True),
        ([1, 2], [1, 2, 3], False),
        ([1, 3], [1, 2], False),
        ({"a": 1.0}, {"a": 1}, True),
        ({"a": 1}, {"b": 1}, False),
        ({"a": 1}, {"a": 2}, False),
        ("1", 1, False),
        ("x", "x", True),
        (None, None, True),
        (None, 0, False),
    ],
)
def test_values_equal_at_each_tolerance(got, expected, want):
    assert values_equal(got, expected) is want


def test_dicts_and_sets_compare_in_the_jails_tagged_form():
    assert _plain_expected({"k": (1, 2)}) == {"__dict__": [["k", [1, 2]]]}
    assert _plain_expected({3, 1}) == {"__set__": [1, 3]}
    got = {"__dict__": [[2, "b"], [1, "a"]]}
    assert values_equal(got, _plain_expected({1: "a", 2: "b"}))
    assert not values_equal(got, _plain_expected({1: "a", 2: "c"}))
    assert not values_equal(got, _plain_expected({1: "a", 3: "b"}))
    assert not values_equal({"__dict__": [[1, "a"]]}, _plain_expected({1: "a", 2: "b"}))


def test_report_fraction_and_all_passed():
    run = ExecResult(status="ok")
    assert GradeReport((True, False, True, True), ("",) * 4, run).fraction == 0.75
    assert GradeReport((), (), run).fraction == 0.0
    assert GradeReport((), (), run).all_passed is False
    assert GradeReport((True, True), ("", ""), run).all_passed is True
    assert GradeReport((True, False), ("", ""), run).all_passed is False


@pytest.mark.sandbox
def test_one_graded_run_gives_each_test_its_verdict(pool: SandboxPool):
    code = "def f(x):\n    if x == 2:\n        raise ValueError('two')\n    return x * 10\n"
    tests = [TestCase((1,), 10), TestCase((2,), 20), TestCase((3,), 31)]
    report = grade(pool, code, "f", tests)
    assert report.passed == (True, False, False)
    assert report.messages[0] == "f(1): ok"
    assert report.messages[1].startswith("f(2) raised") and "two" in report.messages[1]
    assert report.messages[2] == "f(3): wrong result"
    assert report.fraction == pytest.approx(1 / 3) and not report.all_passed
    dead = grade(pool, "import os\nos._exit(3)\n", "f", [TestCase((1,), 1)])
    assert dead.passed == (False,)
    assert dead.messages == ("f(1): no result (the program exited, crashed or timed out)",)
