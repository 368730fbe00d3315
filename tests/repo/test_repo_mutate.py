"""The bug injector: each operator's edits on small modules, and applying edits strictly."""

from __future__ import annotations

import ast

import pytest
from agentgym.simulators.repo.mutate import (
    Edit,
    MutationError,
    apply_edits,
    enclosing_function,
    find_edits,
)

R = ("missing_return", "return ", "")  # every ``return value`` below also gives this edit

# (source, every edit the operators find in it as (kind, old, new))
OPERATORS = [
    ("def f(a, b):\n    return a < b\n", {("comparison", "<", "<="), R}),
    ("def f(a, b):\n    return a is not b\n", {("comparison", "is not", "is"), R}),
    ("def f(a, b):\n    return a not in b\n", {("comparison", "not in", "in"), R}),
    ("def f(a, b):\n    return a // b\n", {("operator", "//", "/"), R}),
    ("def f(a):\n    a += 2\n    return a\n", {("operator", "+=", "-="), ("off_by_one", "2", "1"),
     ("off_by_one", "2", "3"), ("constant", "2", "20"), R}),
    ("def f(a, b):\n    return a and b\n", {("boolean", "and", "or"), R}),
    ("def f():\n    return True\n", {("boolean", "True", "False"), R}),
    ("def f(x):\n    return x[1:]\n", {("off_by_one", "1", "2"), ("off_by_one", "1", "0"), R}),
    ("def f(x):\n    return x[0]\n", {("off_by_one", "0", "1"), R}),
    ("def f(x):\n    return x * 60\n", {("constant", "60", "600"), ("off_by_one", "60", "59"),
     ("off_by_one", "60", "61"), ("operator", "*", "/"), R}),
    ("def f(x):\n    return x * 0.5\n", {("constant", "0.5", "5.0"), ("operator", "*", "/"), R}),
    ("def f(x):\n    return x * 1.0\n", {("operator", "*", "/"), R}),
    ("def f(x):\n    return not x\n", {("negation", "not ", ""), R}),
    ("def f(x):\n    return -x\n", {("negation", "-", ""), R}),
    ("def f(x):\n    if x.ok:\n        g()\n    h()\n",
     {("negation", "x.ok", "not x.ok"), ("removed_branch", "    if x.ok:\n        g()\n", "")}),
    ("def f(x):\n    if x > y:\n        g()\n    h()\n",
     {("negation", "x > y", "not (x > y)"), ("comparison", ">", ">="),
      ("removed_branch", "    if x > y:\n        g()\n", "")}),
    ("def f(x):\n    if x:\n        return None\n    return\n",
     {("negation", "x", "not x"), ("removed_branch", "    if x:\n        return None\n", "")}),
    ("def f(a, b, c):\n    g(*a, b)\n    g(a, b, *c)\n", {("swapped_arguments", "a, b", "b, a")}),
    ("def f(x, n=3, flag=False):\n    return x\n", {("wrong_default", "3", "4"),
     ("wrong_default", "3", "2"), ("wrong_default", "False", "True"), R}),
    ("def f(a, b):\n    return min(a, b)\n", {("min_max", "min", "max"),
     ("swapped_arguments", "a, b", "b, a"), R}),
    ("def f(a, b):\n    return g.h(a)\n", {R}),
]  # fmt: skip


@pytest.mark.parametrize(("source", "expected"), OPERATORS)
def test_each_operator_finds_its_edits(source, expected):
    edits = find_edits("m.py", source)
    assert {(e.kind, e.old, e.new) for e in edits} == expected
    for edit in edits:  # every edit leaves valid Python
        ast.parse(apply_edits({"m.py": source}, [edit])["m.py"])


def test_no_edits_in_docstrings_or_fstrings():
    source = 'def f(x):\n    """Returns x < 1 and 2 + 2."""\n    return f"{x + 1}"\n'
    assert [e.kind for e in find_edits("m.py", source)] == ["missing_return"]


def test_a_removed_branch_never_empties_a_block():
    assert not [
        e
        for e in find_edits("m.py", "def f(x):\n    if x:\n        g()\n")
        if e.kind == "removed_branch"
    ]


def test_elif_and_if_else_are_not_removed():
    source = "def f(x):\n    if x:\n        a()\n    elif x > 2:\n        b()\n    else:\n        c()\n    d()\n"
    assert not [e for e in find_edits("m.py", source) if e.kind == "removed_branch"]


def test_columns_count_characters_not_bytes():
    source = 'def f(x):\n    s = "é"; return x < 2\n'
    (edit,) = [e for e in find_edits("m.py", source) if e.kind == "comparison"]
    assert (
        apply_edits({"m.py": source}, [edit])["m.py"] == 'def f(x):\n    s = "é"; return x <= 2\n'
    )


def test_apply_edits_refuses_a_changed_span():
    edit = Edit("m.py", 1, 4, 1, 5, "<", "<=", "comparison")
    with pytest.raises(MutationError):
        apply_edits({"m.py": "a = 1 > 2\n"}, [edit])


def test_apply_edits_refuses_overlaps_and_unknown_files():
    a = Edit("m.py", 1, 0, 1, 5, "a = 1", "a = 2", "x")
    b = Edit("m.py", 1, 4, 1, 5, "1", "3", "x")
    with pytest.raises(MutationError):
        apply_edits({"m.py": "a = 1\n"}, [a, b])
    with pytest.raises(MutationError):
        apply_edits({"m.py": "a = 1\n"}, [Edit("n.py", 1, 0, 1, 1, "a", "b", "x")])


def test_several_edits_in_one_file_apply_together():
    source = "def f(a, b):\n    return a < b and a + 1\n"
    edits = [e for e in find_edits("m.py", source) if e.kind in ("comparison", "operator")]
    assert (
        apply_edits({"m.py": source}, edits)["m.py"]
        == "def f(a, b):\n    return a <= b and a - 1\n"
    )


def test_edits_round_trip_through_json():
    for edit in find_edits("m.py", OPERATORS[4][0]):
        assert Edit.from_json(edit.to_json()) == edit


def test_enclosing_function():
    tree = ast.parse("X = 1\n\n@dec\ndef f():\n    def g():\n        return 1\n    return g\n")
    assert enclosing_function(tree, 1) is None
    assert enclosing_function(tree, 3) == (3, 7)  # a decorator's line is the function's
    assert enclosing_function(tree, 4) == (3, 7)
    assert enclosing_function(tree, 6) == (5, 6)


def test_overlaps():
    a = Edit("m.py", 1, 0, 1, 5, "a = 1", "a = 2", "x")
    assert a.overlaps(Edit("m.py", 1, 4, 1, 6, "1\n", "", "x"))
    touching = Edit("m.py", 1, 5, 1, 6, "\n", "", "x")
    assert not a.overlaps(touching) and not touching.overlaps(a)  # touching is not overlapping
    assert not a.overlaps(Edit("n.py", 1, 0, 1, 5, "a = 1", "", "x"))
    assert not Edit("m.py", 2, 0, 2, 1, "b", "c", "x").overlaps(a)
