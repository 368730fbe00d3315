"""Issue texts: what a user would report, written from what a failing test saw.

An issue describes behaviour, never code locations: a short reproducer script (the failing
test's set-up and the call that misbehaves, with the names it needs from the test module),
then what happened and what should have happened. It never names the test, the file or the
line of the bug. The facts come from :func:`.recorder.describe_failure`, run when the task
table was built; the reproducer is re-read from the project's test sources, so the table
stores a few words per task instead of the text.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.simulators.repo.projects import Project

#: Longest reproducer expression shown inline in a title.
_TITLE_EXPR = 60


def split_test_id(test_id: str) -> tuple[str, str, str]:
    """``tests/test_a.py::test_b[x-1]`` -> (``tests/test_a.py``, ``test_b``, ``x-1``)."""
    path, _, rest = test_id.partition("::")
    name, _, params = rest.partition("[")
    return path, name, params.rstrip("]")


def _names(nodes: Sequence[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _literal(text: str) -> ast.expr | None:
    """The expression a parameter's repr stands for, when it is one we can inline."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    try:
        ast.literal_eval(node)
    except ValueError:
        if not text.startswith(("datetime.", "Decimal(")):
            return None
    return node


class _Inline(ast.NodeTransformer):
    def __init__(self, values: Mapping[str, ast.expr]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return self.values[node.id]
        return node


def _context_lines(module: ast.Module, source: str, used: set[str]) -> tuple[list[str], list[str]]:
    """Import lines and module-level definitions the snippet needs (transitively), in order."""
    defs: dict[str, ast.stmt] = {}
    for stmt in module.body:
        if isinstance(stmt, ast.FunctionDef | ast.ClassDef) and not stmt.name.startswith("test_"):
            defs[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        defs[node.id] = stmt
    needed: set[str] = set()
    todo = list(used)
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        if name in defs:
            todo.extend(_names([defs[name]]) - needed)
    imports, bodies = [], []
    for stmt in module.body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            kept = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) in needed]
            if kept:
                clone = (
                    ast.ImportFrom(stmt.module, kept, stmt.level)
                    if isinstance(stmt, ast.ImportFrom)
                    else ast.Import(kept)
                )
                imports.append(ast.unparse(clone))
        elif any(defs.get(n) is stmt for n in needed) and stmt not in bodies:
            bodies.append(stmt)
    return imports, [ast.get_source_segment(source, b) or ast.unparse(b) for b in bodies]


def _call_name(expr: ast.AST) -> str:
    """The name of the first call in ``expr`` (``parse_duration``, ``ledger.ship``)."""
    calls = [n for n in ast.walk(expr) if isinstance(n, ast.Call)]
    if not calls:
        return ast.unparse(expr)[:40]
    func = calls[-1].func if isinstance(expr, ast.Attribute) else calls[0].func
    for call in calls:
        if isinstance(call.func, ast.Name | ast.Attribute):
            func = call.func
            break
    if isinstance(func, ast.Attribute):
        inner = func.value
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name):
            return f"{inner.func.id}.{func.attr}"
        if isinstance(inner, ast.Name):
            return f"{inner.id}.{func.attr}"
        return func.attr
    return ast.unparse(func)


def _expected_source(node: ast.expr) -> str:
    """How a test's expected value reads in an issue (``pytest.approx(x)`` is about x)."""
    if (isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.approx"
            and node.args):  # fmt: skip
        return f"about `{ast.unparse(node.args[0])}`"
    return f"`{ast.unparse(node)}`"


def _final(stmt: ast.stmt, fact: Mapping[str, Any]) -> tuple[ast.AST, str]:
    """The expression to show last, and the sentence saying what happened."""
    kind = fact.get("kind")
    actual, expected = fact.get("actual"), fact.get("expected")
    if isinstance(stmt, ast.Assert):
        test = stmt.test
        eq = test if isinstance(test, ast.Compare) and len(test.ops) == 1 else None
        eq = eq if eq is not None and isinstance(eq.ops[0], ast.Eq) else None
        shown: ast.AST = eq.left if eq is not None else test
        if kind == "value":
            return shown, f"The last line gives `{actual}`, but it should give `{expected}`."
        if kind == "raises":
            want = _expected_source(eq.comparators[0]) if eq is not None else "a true value"
            return shown, f"The last line raises `{actual}`; it should give {want}."
        return test, f"The last line is `{actual}`, but it should be true."
    shown = stmt.value if isinstance(stmt, ast.Expr) else stmt
    if kind == "no_raise":
        return shown, (
            f"The last line returns `{actual}` instead of raising `{expected}`: this input "
            "should be rejected."
        )
    if kind == "raises" and expected:
        return shown, f"The last line raises `{actual}`; it should raise `{expected}`."
    if kind == "raises":
        return shown, f"The last line raises `{actual}`; it should run without an error."
    return shown, f"The last line misbehaves: {actual}."


def _title(kind: str, shown: ast.AST, fact: Mapping[str, Any]) -> str:
    name = _call_name(shown)
    expr = ast.unparse(shown)
    if kind == "value" and len(expr) <= _TITLE_EXPR:
        return f"`{expr}` returns `{str(fact.get('actual'))[:40]}`"
    if kind == "value":
        return f"`{name}` returns a wrong value"
    if kind == "raises":
        exc = str(fact.get("actual", "an error")).split(":")[0]
        return f"`{name}` raises `{exc}`"
    if kind == "no_raise":
        return f"`{name}` accepts invalid input instead of raising `{fact.get('expected')}`"
    return f"Wrong result from `{name}`"


def _case(project: Project, test_id: str, fact: Mapping[str, Any]) -> tuple[str, str]:
    """(title, markdown) for one failing test."""
    path, name, _ = split_test_id(test_id)
    source = project.files[path]
    module = ast.parse(source)
    func = next(s for s in module.body if isinstance(s, ast.FunctionDef) and s.name == name)
    line = int(fact.get("line") or func.body[-1].lineno)
    setup: list[ast.stmt] = []
    final: ast.stmt = func.body[-1]
    for stmt in func.body:
        if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            if isinstance(stmt, ast.With) and stmt.body[0].lineno <= line:
                inner = [s for s in stmt.body if s.lineno <= line]
                setup += inner[:-1]
                final = inner[-1]
            else:
                final = stmt
            break
        setup.append(stmt)
    values = {}
    for key, text in (fact.get("params") or {}).items():
        node = _literal(text)
        if node is not None:
            values[key] = node
    inline = _Inline(values)
    setup = [inline.visit(s) for s in setup]
    final = inline.visit(final)
    shown, outcome = _final(final, fact)
    body_lines = [ast.unparse(s) for s in setup] + [ast.unparse(shown)]
    used = _names([*setup, shown])
    imports, defs = _context_lines(module, source, used)
    blocks = [b for b in ("\n".join(imports), "\n\n".join(defs), "\n".join(body_lines)) if b]
    snippet = "\n\n".join(blocks)
    title = _title(str(fact.get("kind")), shown, fact)
    return title, f"```python\n{snippet}\n```\n\n{outcome}"


_OPENINGS = (
    "Running this snippet against the current code:",
    "Here is a short script that shows the problem:",
    "I hit this with the following code:",
)


def compose_issue(
    project: Project, task_id: str, tests: Sequence[str], facts: Sequence[Mapping[str, Any]]
) -> str:
    """The issue text of a task: a title, a reproducer and the observed and expected
    behaviour, for its first one or two failing tests."""
    cases = [_case(project, tests[int(f["test"])], f) for f in facts[:2]]
    if not cases:
        return f"Something is wrong in {project.name}: some behaviour changed."
    pick = int(hashlib.sha1(task_id.encode()).hexdigest(), 16) % len(_OPENINGS)
    title, first = cases[0]
    parts = [title, _OPENINGS[pick], first]  # a title line, then the body (as SWE-bench's)
    if len(cases) > 1 and cases[1][1] != first:
        parts += ["It is not the only case; this one is wrong too:", cases[1][1]]
    return "\n\n".join(parts)
