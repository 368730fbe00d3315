"""Write a Python function against unit tests: run code, run the public tests, submit.

=================  ===========================================================
id                 ``agentgym/CodeTests-v0``
data               112 shipped tasks (default), or your HumanEval or MBPP file
                   (``tasks=``; see docs/own-data.md)
action             ``python``, ``run_tests`` and ``submit`` tool calls
observation        text: the task at reset, then each tool's output or test report
turn budget        10 turns, then truncated
reward range       about -0.2 .. 1.1 per step
=================  ===========================================================

Observations
    At reset: what the function must do, its name, and the public tests (calls and
    expected results). ``python`` shows the code's output (stateful session, capped at 4,000
    characters); ``run_tests`` shows, per public test, ok / wrong result (with the value
    returned) / the exception raised; ``submit`` shows how many hidden tests passed.

Actions
    ``<tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call>`` runs code in
    the episode's session. ``run_tests`` and ``submit`` take ``{"code": "<full solution
    source>"}``: the code is run fresh in the jail and the function is called on each test;
    return values travel back on a private channel and are compared *outside* the jail, so
    ``sys.exit(0)``, patched ``unittest``/``assert``, objects whose ``__eq__`` is always true,
    printing "PASSED" or killing the runner all count as failures. ``submit`` ends the
    episode.

Rewards (component: default weight)
    * ``format`` (0.1): -1 for a turn that does not parse or calls no tool, else 0.
    * ``tool`` (0.1): +1 when every ``python``/``run_tests`` call of the turn ran without
      error, -1 otherwise (0 for turns without those calls).
    * ``outcome`` (1.0): on ``submit``, the fraction of hidden tests passed (success = all).

Tasks
    112 tasks shipped in ``tasks.jsonl`` (written for this project; rebuild with
    ``python -m agentgym.envs.code.build_tasks``), each with 3 public and 10 hidden tests
    and a reference solution; 90 train, 22 test.

Your own data
    ``gym.make("agentgym/CodeTests-v0", tasks=PATH)`` reads HumanEval's JSONL (``.gz``
    too) or MBPP's (full or sanitized). Public tests: HumanEval's doctest examples (those
    the canonical solution satisfies), MBPP's first assert. ``submit`` is graded on
    HumanEval's ``check`` / every MBPP assert: each assert that runs is one test. Grading
    stays out of band (:mod:`agentgym.simulators.sandbox.programs`): the tests run against
    the reference solution once to record the calls they make; the submission's function
    is called on those calls in its own jailed run; the tests then run again, in a run
    without the submission's code, on the values it returned. Tasks whose reference fails
    its own tests are skipped and counted (``env.unwrapped.data.skipped``). Task ids are
    the file's ``task_id``; the file is one split, the one named by ``split=``.
    ``info["data"]`` names the file and its SHA-256; ``tasks_sha256=`` makes the env
    refuse another file.

Version History
    * v0: first release.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.code.base import PYTHON_TOOL, SessionEnv, describe
from agentgym.envs.code.filetasks import GradedTask, TaskSet, load_task_set
from agentgym.simulators.sandbox import ExecResult, SandboxPool, values_equal
from agentgym.simulators.sandbox.programs import grade_program

from agentgym.core import BaseOptions, ResetOutcome, StepOutcome
from agentgym.error import InvalidConfigError
from agentgym.parsing import ParsedAction, Tool, render_tool_call

TASKS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tasks.jsonl")

_CODE_SCHEMA = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The full solution source."}},
    "required": ["code"],
    "additionalProperties": False,
}
RUN_TESTS_TOOL = Tool(
    "run_tests",
    "Run your full solution source fresh against the public tests and see which pass.",
    _CODE_SCHEMA,
)
SUBMIT_TOOL = Tool(
    "submit",
    "Submit your final full solution source; it is graded on hidden tests and the episode ends.",
    _CODE_SCHEMA,
)

SYSTEM_PROMPT = (
    "You write Python functions. Tools: python (a persistent session to experiment in), "
    "run_tests (check a full solution against the public tests) and submit (final answer, "
    "graded on hidden tests; ends the episode). Example:\n"
    + render_tool_call("submit", {"code": "def f(x):\n    return x"})
)


@functools.lru_cache(maxsize=1)
def load_tasks() -> dict[str, dict[str, Any]]:
    """Every shipped task by id."""
    with open(TASKS_FILE) as fh:
        tasks = [json.loads(line) for line in fh if line.strip()]
    return {t["id"]: t for t in tasks}


def _show(value: Any) -> str:
    """Render a plain (possibly tagged) value the way Python would print it."""
    if isinstance(value, dict) and "__dict__" in value:
        return "{" + ", ".join(f"{_show(k)}: {_show(v)}" for k, v in value["__dict__"]) + "}"
    if isinstance(value, dict) and "__set__" in value:
        return "{" + ", ".join(_show(v) for v in value["__set__"]) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


class CodeTestsEnv(SessionEnv):
    """Programming against hidden unit tests; see the module docstring for the card."""

    default_max_turns: ClassVar[int | None] = 10

    def __init__(
        self,
        *,
        pool: SandboxPool | None = None,
        cell_timeout: float = 10.0,
        test_timeout: float = 10.0,
        tasks: str | None = None,
        tasks_sha256: str | None = None,
        cache_dir: str | None = None,
        **base: Unpack[BaseOptions],
    ):
        super().__init__(pool=pool, cell_timeout=cell_timeout, **base)
        self.test_timeout = float(test_timeout)
        self._task: dict[str, Any] | None = None
        #: A user's HumanEval/MBPP tasks (``tasks=``); None for the shipped set.
        self.data: TaskSet | None = None
        self._graded: GradedTask | None = None
        if tasks is not None:
            self.data = load_task_set(
                tasks, self.pool, timeout=self.test_timeout, cache_dir=cache_dir
            )
            if tasks_sha256 is not None and tasks_sha256.lower() != self.data.sha256:
                raise InvalidConfigError(
                    f"tasks={tasks!r} has sha256 {self.data.sha256}, but tasks_sha256="
                    f"{tasks_sha256!r} was asked for (a recording names the file its episodes "
                    "were played on): this is a different file. Pass the original file, or "
                    "drop the digest to use this one."
                )
            # a file is one task set: the split it was opened as (the other names hold nothing)
            object.__setattr__(self, "splits", (self.split,))
            self._ids = {self.split: tuple(self.data.tasks)}
            return
        if tasks_sha256 is not None:
            raise InvalidConfigError("tasks_sha256= goes with tasks= (a task file).")
        shipped = load_tasks()
        self._ids = {
            s: tuple(sorted(t for t, task in shipped.items() if task["split"] == s))
            for s in ("train", "test")
        }

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._ids.get(split or self.split, ())

    def data_digests(self) -> dict[str, str]:
        """The keyword arguments that pin the task file (``tasks_sha256=...``): passed back
        to the env, they make it refuse a different file. Empty for the shipped tasks."""
        return {} if self.data is None else {"tasks_sha256": self.data.sha256}

    @property
    def tools(self) -> Sequence[Tool]:
        return (PYTHON_TOOL, RUN_TESTS_TOOL, SUBMIT_TOOL)

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        if self.data is not None:
            return self._reset_file(task_id)
        self._task = load_tasks()[task_id]
        self._new_session()
        fn = self._task["entry_point"]
        examples = "\n".join(
            f"  {fn}({', '.join(_show(a) for a in t['args'])}) == {_show(t['expected'])}"
            for t in self._task["public_tests"]
        )
        instruction = f"Write a Python function `{fn}`. {self._task['prompt']}"
        text = (
            f"{instruction}\nPublic tests:\n{examples}\n"
            f"Your submission is graded on {len(self._task['hidden_tests'])} hidden tests."
        )
        return ResetOutcome(text=text, instruction=instruction, system_prompt=SYSTEM_PROMPT)

    def _reset_file(self, task_id: str) -> ResetOutcome:
        assert self.data is not None
        graded = self._graded = self.data.tasks[task_id]
        self._new_session()
        task = graded.task
        if task.format == "humaneval":
            instruction = (
                f"Complete the Python function `{task.entry_point}` below and submit its full "
                f"source (imports and helper functions included):\n{task.instruction.rstrip()}"
            )
        else:
            instruction = f"{task.instruction.strip()} Name the function `{task.entry_point}`."
        shown = graded.shown_tests()
        tests = "\n".join(f"  {t}" for t in shown) if shown else "  (none)"
        text = (
            f"{instruction}\nPublic tests:\n{tests}\nYour submission is graded on "
            f"{graded.hidden_total} hidden test assertions."
        )
        info = {"data": self.data.source()}
        return ResetOutcome(
            text=text, instruction=instruction, system_prompt=SYSTEM_PROMPT, info=info
        )

    def _grade_file(self, code: str, hidden: bool) -> tuple[list[bool], list[str], ExecResult]:
        """Grade ``code`` on the task's public or hidden test program, out of band."""
        g = self._graded
        assert g is not None
        program, ref = (g.hidden, g.hidden_ref) if hidden else (g.public, g.public_ref)
        if program is None or ref is None:
            return [], ["(this task has no public tests)"], ExecResult(status="ok")
        report = grade_program(
            self.pool,
            code,
            solution=g.task.solution,
            entry=g.task.entry_point,
            program=program,
            reference=ref,
            timeout=self.test_timeout,
            counted=None if hidden else g.public_kept,
        )
        passed = [True] * report.passed + [False] * (report.total - report.passed)
        return passed, list(report.lines), report.run

    def _run_suite(self, code: str, hidden: bool) -> tuple[list[bool], list[str], Any]:
        """The public or hidden tests of the current task, shipped or from a user's file."""
        if self.data is not None:
            return self._grade_file(code, hidden)
        assert self._task is not None
        return self._grade(code, self._task["hidden_tests" if hidden else "public_tests"])

    def _grade(self, code: str, tests: list[dict[str, Any]]) -> tuple[list[bool], list[str], Any]:
        assert self._task is not None
        fn = self._task["entry_point"]
        run, results = self.pool.grade_raw(
            code, fn, [t["args"] for t in tests], timeout=self.test_timeout
        )
        passed, lines = [], []
        for test, res in zip(tests, results):
            call = f"{fn}({', '.join(_show(a) for a in test['args'])})"
            if res is None:
                ok, line = False, f"{call}: no result (the program exited, crashed or timed out)"
            elif not res["ok"]:
                ok, line = False, f"{call} raised {res['error']}"
            else:
                ok = values_equal(res["value"], test["expected"])
                line = f"{call}: ok" if ok else f"{call} returned {_show(res['value'])}"
                if not ok:
                    line += f", expected {_show(test['expected'])}"
            passed.append(ok)
            lines.append(line)
        return passed, lines, run

    def _step(self, action: ParsedAction) -> StepOutcome:
        assert self._task is not None or self._graded is not None
        parts: list[str] = []
        if not action.valid:
            parts.append("Invalid action: " + action.error_text())
        if not action.tool_calls:
            problem = (
                "expected a python, run_tests or submit tool call. Example: "
                + render_tool_call("run_tests", {"code": "def f(x):\n    return x"})
            )
            if action.valid:
                parts.append("Invalid action: " + problem)
            return StepOutcome(
                text="\n".join(parts), action_valid=False, error=action.error_text() or problem
            )
        tool_ok: bool | None = None
        for call in action.tool_calls[:4]:
            code = str(call.arguments.get("code", ""))
            if call.name == "python":
                result = self.run_cell(code)
                tool_ok = (tool_ok is not False) and result.ok
                parts.append("[python]\n" + describe(result))
            elif call.name == "run_tests":
                passed, lines, run = self._run_suite(code, hidden=False)
                tool_ok = (tool_ok is not False) and run.status == "ok"
                report = "\n".join(lines)
                extra = "" if run.status == "ok" else f"\n(run status: {run.status})"
                out = run.text()[:1000]
                parts.append(
                    f"[run_tests] {sum(passed)}/{len(passed)} public tests passed\n{report}{extra}"
                    + (f"\nOutput:\n{out}" if out.strip() else "")
                )
            elif call.name == "submit":
                passed, _, run = self._run_suite(code, hidden=True)
                frac = sum(passed) / len(passed)
                parts.append(f"[submit] {sum(passed)}/{len(passed)} hidden tests passed.")
                comps = {"outcome": frac}
                if tool_ok is not None:
                    comps["tool"] = 1.0 if tool_ok else -1.0
                return StepOutcome(
                    text="\n".join(parts),
                    components=comps,
                    terminated=True,
                    success=all(passed),
                    info={"hidden_passed": sum(passed), "hidden_total": len(passed)},
                )
        comps = {} if tool_ok is None else {"tool": 1.0 if tool_ok else -1.0}
        return StepOutcome(text="\n".join(parts), components=comps)

    def state_key(self) -> str:
        if (self._task is None and self._graded is None) or self._task_id is None:
            return ""
        return self.key_of(self._task_id, self.session_digest())

    def oracle_action(self) -> str:
        """Submit the reference solution."""
        if self.data is not None:
            assert self._graded is not None
            return render_tool_call("submit", {"code": self._graded.task.solution})
        assert self._task is not None
        return render_tool_call("submit", {"code": self._task["solution"]})

    def _restore_extra(self, task_id: str, extra: Any) -> None:
        if self.data is not None:
            self._graded = self.data.tasks[task_id]
            return
        self._task = load_tasks()[task_id]
