"""Grading by test programs (assert lines, HumanEval's ``check``) that a solution cannot fake.

A benchmark's tests are code: ``assert f(2) == 4`` lines (MBPP) or a ``check(candidate)``
function full of asserts (HumanEval). Running them in the candidate's process lets the
candidate fake them (return an object equal to everything, patch ``assert``'s helpers,
print "passed", exit early). Here the candidate's code and the test code never share a
process. Three jailed runs (see :mod:`._programs_jail`):

1. **reference** (once per task): the test program runs against the reference solution
   with the function under test traced: every call's arguments are recorded, and the
   program must pass (a task whose reference fails its own tests cannot be graded).
2. **candidate**: the candidate's code runs, then its function is called on each recorded
   call; results come back as data with exact types on the grader's private pipe.
3. **verdicts**: the test program runs again next to the reference solution's helpers, with
   the function under test replaced by a stub that answers each call with the candidate's
   recorded result. No candidate code runs in this process, so each assert's verdict is the
   test's own: a test can only pass on the values the candidate's function returned.

The cost is two jailed runs per grading plus one per task. A test program whose calls
depend on the candidate's earlier answers (rare) calls the stub with arguments the
reference never produced; those calls fail. Exceptions the candidate raised reach the test
as one exception type, so a test that expects a particular exception class fails.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.simulators.sandbox._programs_jail import _AgentgymCodec
from agentgym.simulators.sandbox.pool import ExecResult, SandboxPool

#: The drivers shipped into the jail: appended to the code of every run.
JAIL_SOURCE = Path(__file__).with_name("_programs_jail.py").read_text(encoding="utf-8")
#: Characters of a value shown in a test report.
SHOWN_CHARS = 200


class ProgramError(ValueError):
    """A test program that cannot be used (does not parse, or has no assert)."""


@dataclass(frozen=True)
class Program:
    """A test program with its asserts rewritten to report verdicts (``source``)."""

    source: str
    #: The source of each assert statement, by its number ``k``.
    asserts: tuple[str, ...]


class _Asserts(ast.NodeTransformer):
    def __init__(self) -> None:
        self.found: list[str] = []

    def visit_Assert(self, node: ast.Assert) -> Any:
        self.generic_visit(node)
        self.found.append(ast.unparse(node))
        thunk = ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=node.test,
        )
        call = ast.Call(
            func=ast.Name("_agentgym_assert", ast.Load()),
            args=[ast.Constant(len(self.found) - 1), thunk],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(call), node)


def instrument(program: str) -> Program:
    """``program`` with every ``assert test, msg`` turned into a verdict report.

    >>> print(instrument("assert f(1) == 2, 'one'").source)
    _agentgym_assert(0, lambda: f(1) == 2)
    """
    try:
        tree = ast.parse(program)
    except SyntaxError as exc:
        raise ProgramError(f"the tests do not parse: {exc.msg} (line {exc.lineno})") from None
    found = _Asserts()
    tree = ast.fix_missing_locations(found.visit(tree))
    if not found.found:
        raise ProgramError("the tests hold no assert statement")
    return Program(ast.unparse(tree), tuple(found.found))


@dataclass(frozen=True)
class Verdict:
    """One executed assert: its number, whether it held, the calls made while checking it."""

    k: int
    ok: bool
    calls: tuple[str, ...]


@dataclass(frozen=True)
class Reference:
    """What the reference solution did on a test program (phase 1)."""

    calls: tuple[str, ...]
    #: call key -> ``("ok", encoded value)``, ``("raised", error)`` or a refusal.
    results: dict[str, tuple[str, str]]
    verdicts: tuple[Verdict, ...]
    error: str | None

    def problem(self) -> str | None:
        """Why the reference cannot grade this program (None when it can)."""
        bad = [r for r in self.results.values() if r[0] in ("unreplayable", "unencodable")]
        if bad:
            what = "arguments are" if bad[0][0] == "unreplayable" else "result is"
            return f"a call's {what} not plain data ({bad[0][1]})"
        if self.error is not None:
            return f"the tests stopped with {self.error}"
        if not self.verdicts:
            return "no assert ran"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": list(self.calls),
            "results": {k: list(v) for k, v in self.results.items()},
            "verdicts": [[v.k, v.ok, list(v.calls)] for v in self.verdicts],
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reference:
        return cls(
            calls=tuple(data["calls"]),
            results={k: (str(v[0]), str(v[1])) for k, v in data["results"].items()},
            verdicts=tuple(Verdict(int(k), bool(ok), tuple(c)) for k, ok, c in data["verdicts"]),
            error=data["error"],
        )


def _parse_verdicts(raw: Any) -> tuple[tuple[Verdict, ...], str | None, dict[str, Any]]:
    data = json.loads(raw)
    verdicts = tuple(Verdict(int(k), bool(ok), tuple(c)) for k, ok, c in data["verdicts"])
    return verdicts, data.get("error"), data


def reference_runs(
    pool: SandboxPool, solution: str, entry: str, programs: Sequence[Program], timeout: float
) -> tuple[list[Reference | None], ExecResult]:
    """Phase 1: each program against the reference solution, in one jailed run."""
    calls = [[entry, p.source] for p in programs]
    run, results = pool.grade_raw(
        f"{solution}\n\n{JAIL_SOURCE}", "_agentgym_reference", calls, timeout=timeout
    )
    out: list[Reference | None] = []
    for res in results:
        if res is None or not res.get("ok"):
            out.append(None)
            continue
        verdicts, error, data = _parse_verdicts(res["value"])
        results_map = {k: (str(v[0]), str(v[1])) for k, v in data["results"].items()}
        out.append(Reference(tuple(data["calls"]), results_map, verdicts, error))
    return out, run


@dataclass(frozen=True)
class ProgramReport:
    """A candidate's grade on one program: verdicts, per-assert lines, its run's output."""

    passed: int
    total: int
    lines: tuple[str, ...]
    run: ExecResult

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total


def candidate_results(
    pool: SandboxPool, code: str, entry: str, keys: Sequence[str], timeout: float
) -> tuple[dict[str, tuple[str, str]], ExecResult]:
    """Phase 2: the candidate's function on every recorded call, results as data."""
    calls = [[entry, key] for key in keys]
    run, results = pool.grade_raw(
        f"{code}\n\n{JAIL_SOURCE}", "_agentgym_call", calls, timeout=timeout
    )
    table: dict[str, tuple[str, str]] = {}
    for key, res in zip(keys, results):
        if res is None:
            continue
        if res.get("ok") and isinstance(res.get("value"), str):
            table[key] = ("ok", res["value"])
        else:
            table[key] = ("raised", str(res.get("error", "")))
    return table, run


def grade_program(
    pool: SandboxPool,
    code: str,
    *,
    solution: str,
    entry: str,
    program: Program,
    reference: Reference,
    timeout: float,
    counted: frozenset[int] | None = None,
) -> ProgramReport:
    """Grade ``code`` on ``program`` (phases 2 and 3). ``counted`` keeps only those asserts
    (by number) in the score; None counts every assert the reference ran."""
    table, run = candidate_results(pool, code, entry, reference.calls, timeout)
    payload = json.dumps({k: list(v) for k, v in table.items()}, ensure_ascii=False)
    _, results = pool.grade_raw(
        f"{solution}\n\n{JAIL_SOURCE}",
        "_agentgym_verdicts",
        [[entry, program.source, payload]],
        timeout=timeout,
    )
    got: tuple[Verdict, ...] = ()
    if results and results[0] is not None and results[0].get("ok"):
        got, _, _ = _parse_verdicts(results[0]["value"])
    wanted = [v for v in reference.verdicts if counted is None or v.k in counted]
    seen = [v for v in got if counted is None or v.k in counted]
    passed = sum(1 for a, b in zip(wanted, seen) if a.k == b.k and b.ok)
    lines = tuple(_line(entry, program, v, table) for v in seen[: len(wanted)])
    return ProgramReport(passed, len(wanted), lines, run)


def show_call(entry: str, key: str) -> str:
    """A recorded call as Python source: ``f(1, [2, 3])``."""
    args, kwargs = _AgentgymCodec.decode(key)
    parts = [_short(repr(a)) for a in args] + [f"{k}={_short(repr(v))}" for k, v in kwargs.items()]
    return f"{entry}({', '.join(parts)})"


def show_value(encoded: str) -> str:
    return _short(repr(_AgentgymCodec.decode(encoded)))


def _short(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."


def _line(entry: str, program: Program, verdict: Verdict, table: dict[str, tuple[str, str]]) -> str:
    head = f"{program.asserts[verdict.k]}: {'ok' if verdict.ok else 'failed'}"
    if verdict.ok:
        return head
    notes = []
    for key in dict.fromkeys(verdict.calls):
        found = table.get(key)
        call = show_call(entry, key)
        if found is None:
            notes.append(f"{call} gave no result (the program exited, crashed or timed out)")
        elif found[0] == "ok":
            notes.append(f"{call} returned {show_value(found[1])}")
        else:
            notes.append(f"{call} raised {found[1]}")
    return head + ("; " + "; ".join(notes) if notes else "")
