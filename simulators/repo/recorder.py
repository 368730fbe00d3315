"""A pytest plugin that records each test's outcome on a private pipe (and a runner for it).

This file is standalone (standard library and pytest only): the builder imports it on the
host, and the grader copies its *text* into a fresh jailed run, where agentgym itself is not
importable. There it runs as ``python -I -S recorder.py CONFIG``: no site hooks, no user site,
no working-directory imports; pytest is imported from the interpreter's own site-packages
*before* the project folder is put on ``sys.path``, so a ``pytest.py`` (or any module) the
agent wrote cannot stand in for the real one.

Outcomes travel as lines ``TOKEN\\tNODEID\\tOUTCOME`` on a file descriptor the grader passed
in, never on stdout or stderr, so nothing the code under test prints is ever read. A test
counts as passed only when a ``passed`` line for its exact id arrives; a run that exits early
(``sys.exit`` or ``os._exit`` in an import, a crash, a timeout) leaves its tests unreported,
which is failure.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import sys
from typing import Any

#: Seconds one test may run before it is failed (SIGALRM), so one hang costs one test.
PER_TEST_TIMEOUT = 10.0


class TestTimeout(Exception):
    """Raised in a test that ran past the per-test time limit."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise TestTimeout(f"test ran for more than {PER_TEST_TIMEOUT:g} s")


class Recorder:
    """Records ``passed`` / ``failed`` / ``skipped`` per node id; with ``facts=True`` also
    what the failing line of each failing test saw (for issue texts)."""

    def __init__(
        self,
        fd: int | None = None,
        token: str = "",
        *,
        facts: bool = False,
        per_test_timeout: float = PER_TEST_TIMEOUT,
        wanted: set[str] | None = None,
    ):
        self.fd = fd
        self.wanted = wanted
        self.token = token
        self.want_facts = facts
        self.per_test_timeout = per_test_timeout
        self.outcomes: dict[str, str] = {}
        self.facts: dict[str, dict[str, Any]] = {}
        self._failed: set[str] = set()

    # pytest hooks ---------------------------------------------------------------------
    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list) -> None:
        """Keep only the wanted tests: an id that names no test then simply never passes,
        instead of pytest refusing the whole run."""
        if self.wanted is None:
            return
        kept = [item for item in items if item.nodeid in self.wanted]
        dropped = [item for item in items if item.nodeid not in self.wanted]
        items[:] = kept
        if dropped:
            config.hook.pytest_deselected(items=dropped)

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
        if self.per_test_timeout > 0:
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.per_test_timeout)
        return None

    def pytest_runtest_logreport(self, report: Any) -> None:
        nodeid = report.nodeid
        if report.failed:
            self._failed.add(nodeid)
        if report.when == "teardown":
            signal.setitimer(signal.ITIMER_REAL, 0)
            if nodeid in self._failed:
                outcome = "failed"
            elif report.passed and self.outcomes.get(nodeid) == "passed-call":
                outcome = "passed"
            else:
                outcome = "skipped"
            self.outcomes[nodeid] = outcome
            self._emit(nodeid, outcome)
        elif report.when == "call" and report.passed and nodeid not in self._failed:
            self.outcomes[nodeid] = "passed-call"

    def pytest_exception_interact(self, node: Any, call: Any, report: Any) -> None:
        if self.want_facts and call.when == "call" and hasattr(node, "obj"):
            try:
                self.facts[report.nodeid] = describe_failure(node, call.excinfo)
            except Exception as exc:  # a fact we cannot read is left out, never fatal
                self.facts[report.nodeid] = {"kind": "unknown", "actual": repr(exc)[:200]}

    def _emit(self, nodeid: str, outcome: str) -> None:
        if self.fd is None:
            return
        line = f"{self.token}\t{nodeid}\t{outcome}\n".encode("utf-8", "backslashreplace")
        try:
            os.write(self.fd, line)
        except OSError:
            self.fd = None


# ---- what a failing line saw (issue texts) ------------------------------------------------


def _short_repr(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _exception_text(exc: BaseException) -> str:
    message = str(exc).splitlines()[0] if str(exc) else ""
    name = type(exc).__name__
    return f"{name}: {message}"[:300] if message else name


def _statement_at(tree: ast.AST, line: int) -> tuple[ast.stmt | None, ast.With | None]:
    """The innermost statement of a test function holding ``line``, and the ``with`` block
    around it, if any."""
    best: ast.stmt | None = None
    with_block: ast.With | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if best is None or node.lineno >= best.lineno:
                if isinstance(node, ast.With):
                    with_block = node
                best = node
    return best, with_block


def _evaluate(node: ast.expr, frame: Any) -> Any:
    code = compile(ast.Expression(node), "<reproducer>", "eval")
    return eval(code, frame.f_globals, dict(frame.f_locals))


def describe_failure(item: Any, excinfo: Any) -> dict[str, Any]:
    """What the failing statement of ``item`` observed, as plain data:
    ``{"line", "kind", "actual", "expected", "params"}``.

    Kinds: ``value`` (``assert A == B`` with A != B: ``actual`` is repr(A), ``expected``
    repr(B)), ``truth`` (another ``assert``: ``actual`` is the asserted value), ``raises``
    (the line raised: ``actual`` is the exception), ``no_raise`` (``pytest.raises`` saw no
    exception: ``actual`` is the call's value, ``expected`` the exception's name).
    """
    code = item.obj.__code__
    frame, line = None, None
    tb = excinfo.tb
    while tb is not None:
        if tb.tb_frame.f_code is code:
            frame, line = tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next
    if frame is None or line is None:
        return {"kind": "unknown", "actual": _exception_text(excinfo.value)}
    with open(code.co_filename, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    stmt, with_block = _statement_at(tree, line)
    exc = excinfo.value
    fact: dict[str, Any] = {"line": line, "expected": None}
    params = getattr(getattr(item, "callspec", None), "params", None)
    if params:
        fact["params"] = {k: _short_repr(v, 200) for k, v in params.items()}
    if isinstance(stmt, ast.With) and type(exc).__name__ == "Failed":
        body = stmt.body[-1]
        fact["line"] = body.lineno
        fact["kind"] = "no_raise"
        expected = stmt.items[0].context_expr
        if isinstance(expected, ast.Call) and expected.args:
            fact["expected"] = ast.unparse(expected.args[0])
        value = _evaluate(body.value, frame) if isinstance(body, ast.Expr) else None
        fact["actual"] = _short_repr(value)
        return fact
    if isinstance(stmt, ast.Assert) and isinstance(exc, AssertionError):
        test = stmt.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            fact["kind"] = "value"
            fact["actual"] = _short_repr(_evaluate(test.left, frame))
            fact["expected"] = _short_repr(_evaluate(test.comparators[0], frame))
            return fact
        fact["kind"] = "truth"
        fact["actual"] = _short_repr(_evaluate(test, frame))
        return fact
    fact["kind"] = "raises"
    fact["actual"] = _exception_text(exc)
    if with_block is not None and stmt is not with_block:
        expected = with_block.items[0].context_expr
        if isinstance(expected, ast.Call) and expected.args:
            fact["expected"] = ast.unparse(expected.args[0])
    return fact


# ---- the jailed runner -------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """``recorder.py CONFIG_JSON``: run pytest on the listed tests, outcomes on ``fd``."""
    config = json.loads(argv[1])
    for path in config["sys_path"]:
        if path not in sys.path:
            sys.path.append(path)
    import _pytest.config  # noqa: F401  - the plugin machinery, also loaded up front
    import pytest  # from site-packages, before the project folder is importable

    sys.path.insert(0, config["root"])
    tests = list(config["tests"])
    recorder = Recorder(
        config["fd"], config["token"], per_test_timeout=config["per_test"], wanted=set(tests)
    )
    files = sorted({test.split("::", 1)[0] for test in tests})
    args = ["-q", "-p", "no:cacheprovider", "-c", config["ini"], "--rootdir", config["root"]]
    code = pytest.main([*args, "--", *files], plugins=[recorder])
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
