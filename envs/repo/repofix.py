"""Fix a reported bug in a multi-file Python repository, graded by hidden tests.

=================  ===========================================================
id                 ``agentgym/RepoFix-v0``
world              a Python project (390-790 lines, 7-10 modules, 41-82 tests) in a
                   jailed sandbox session, a git repository at ``~``; a bug was injected
                   (one to three edits) and an issue describes what it breaks
tasks              4,490 injected bugs (3,440 ``train``, 1,050 ``test``, from disjoint
                   projects), or SWE-bench-format instances from your files
                   (``instances=``, ``repos=``)
action             ``bash``, ``view``, ``str_replace``, ``create`` and ``submit`` tool calls
                   (up to 8 per turn)
observation        text: the issue at reset, then each tool's output
turn budget        30 turns, then graded and truncated
reward range       -0.1 .. 1.1 per step (default weights)
=================  ===========================================================

Observations
    At reset: the repository's name and the issue (a reproducer script, what happens and
    what should happen). The issue never names a file or a line. After each call, its
    output: ``bash`` shows stdout and stderr together (16,000 bytes at most, head and tail,
    with a note of what was cut), the exit code when not zero, and a note when the command
    hit its time limit. Absolute paths of the work directory show as ``~``.

Actions
    ``bash`` runs a command with bash in the repository (the working directory persists
    between calls; ``pytest``, ``python`` and ``git`` are there; no network). ``view``
    shows a file with line numbers (``view_range`` for a part) or lists a directory two
    levels deep. ``str_replace`` replaces the one occurrence of ``old_str`` in a file (an
    error when it is missing or not unique). ``create`` writes a new file. ``submit`` ends
    the episode. The visible tests are the project's suite minus the tests that check the
    fix; those stay on the host.

Rewards (component: default weight)
    * ``format`` (0.1): -1 for a turn that does not parse or calls no tool, else 0.
    * ``tests`` (0.1): at the end, the fraction of the graded tests (FAIL_TO_PASS and
      PASS_TO_PASS) that pass.
    * ``outcome`` (1.0): at the end, 1 when every FAIL_TO_PASS test passes and every
      PASS_TO_PASS test still passes, else 0.

    Grading runs on ``submit`` or when the turn budget runs out, against a copy of the final
    files in a fresh sandbox run, with the host's copy of the tests (see
    ``agentgym.simulators.repo.grading``). ``success`` is ``outcome`` on ``submit``.
    ``info["diff"]`` holds the final diff against the starting repository.

Tasks
    Ids ``<project>-<digest>``; ``train`` draws from six projects (dates and durations, a
    CSV query language, graph algorithms, an SQLite inventory ledger, a URL router, a
    template engine), ``test`` from two others (a config-file parser, units and
    quantities). 2,147 tasks have one edit, 1,568 two and 775 three; each was kept only when
    some tests fail and the others still pass (checked when the table was built by
    ``python -m agentgym.simulators.repo.build``).

Version History
    * v0: first release.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from agentgym.simulators.repo import RepoTask, grade, load_instances, load_table
from agentgym.simulators.repo.grading import GradeResult
from agentgym.simulators.repo.workspace import Dump, Workspace
from agentgym.simulators.sandbox import SandboxPool, default_pool

from agentgym.core import AgentEnv, ResetOutcome, StepOutcome
from agentgym.env_options import BaseOptions
from agentgym.parsing import ParsedAction, Tool, ToolCall, render_tool_call, render_tool_calls

#: Tool calls acted on per turn (the rest are reported as skipped).
MAX_CALLS = 8

BASH = Tool(
    "bash",
    "Run a bash command in the repository and see its output (stdout and stderr). The "
    "working directory persists between calls; pytest, python and git are available; there "
    "is no network.",
    {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "maximum": 300,
                "description": "Seconds before the command is stopped (default 60).",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)
VIEW = Tool(
    "view",
    "Show a file with line numbers, or list a directory two levels deep.",
    {
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "A path relative to the repository, ~/..., or absolute.",
            },
            "view_range": {
                "type": "array",
                "items": {"type": "integer"},
                "minItems": 2,
                "maxItems": 2,
                "description": "[first, last] line to show; last -1 means the end.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)
STR_REPLACE = Tool(
    "str_replace",
    "Replace the one occurrence of old_str in a file with new_str (old_str must appear "
    "exactly once; include surrounding lines to make it unique).",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to edit."},
            "old_str": {"type": "string", "description": "The exact text to replace."},
            "new_str": {"type": "string", "description": "The text to put in its place."},
        },
        "required": ["path", "old_str", "new_str"],
        "additionalProperties": False,
    },
)
CREATE = Tool(
    "create",
    "Create a new file with the given text (refuses a file that exists).",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The new file's path."},
            "file_text": {"type": "string", "description": "Its whole content."},
        },
        "required": ["path", "file_text"],
        "additionalProperties": False,
    },
)
SUBMIT = Tool(
    "submit",
    "Submit the repository as it is now: hidden tests grade it and the episode ends.",
    {"type": "object", "properties": {}, "additionalProperties": False},
)
TOOLS = (BASH, VIEW, STR_REPLACE, CREATE, SUBMIT)

SYSTEM_PROMPT = (
    "You are a software engineer fixing a bug in a Python repository. The repository is "
    "checked out in your home directory (~), where your shell starts. Read the issue, find the cause, change the code (not the tests) so that the "
    "issue is fixed and nothing else breaks, then call submit. Hidden tests grade the result. "
    'Call tools with <tool_call>{"name": ..., "arguments": {...}}</tool_call>; several '
    "calls in one turn run in order. Example:\n"
    + render_tool_call("bash", {"command": "ls && python -m pytest -q"})
)


class RepoFixEnv(AgentEnv):
    """Fix a bug in a repository; see the module docstring for the card."""

    metadata = {"family": "repo", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "tests": 0.1,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 30

    def __init__(
        self,
        *,
        instances: str | os.PathLike | None = None,
        repos: str | os.PathLike | None = None,
        pool: SandboxPool | None = None,
        git: bool = True,
        grade_timeout: float = 120.0,
        **base: Unpack[BaseOptions],
    ):
        """``instances``/``repos``: SWE-bench-format instances and their snapshots (both or
        neither); ``pool``: the sandbox pool (default: the process-wide one); ``git``: commit
        the starting repository to a git repository in the sandbox; ``grade_timeout``: seconds
        one grading run may take. The base options (``split``, ``max_turns``...) are
        :class:`agentgym.env_options.EnvOptions`."""
        super().__init__(**base)
        self._pool = pool
        self.git = bool(git)
        self.grade_timeout = float(grade_timeout)
        self._instances: dict[str, RepoTask] | None = None
        if instances is not None or repos is not None:
            self._instances = {t.id: t for t in load_instances(instances, repos)}
            # a file is one task set: the split it was opened as (the other names hold none)
            object.__setattr__(self, "splits", (self.split,))
        self._task: RepoTask | None = None
        self._ws: Workspace | None = None
        self._final_key = ""
        self._last_grade: GradeResult | None = None

    # ---- tasks -----------------------------------------------------------------------
    def task_ids(self, split: str | None = None) -> Sequence[str]:
        split = split or self.split
        if self._instances is not None:
            return tuple(self._instances) if split == self.split else ()
        return load_table().ids(split)

    def task(self, task_id: str) -> RepoTask:
        """The full task (privileged: its hidden tests and gold patch are inside)."""
        if self._instances is not None:
            return self._instances[task_id]
        return load_table().task(task_id)

    @property
    def tools(self) -> Sequence[Tool]:
        return TOOLS

    @property
    def pool(self) -> SandboxPool:
        if self._pool is None:
            self._pool = default_pool()
        return self._pool

    @property
    def workspace(self) -> Workspace | None:
        """The episode's sandboxed repository (None once the episode is over)."""
        return self._ws

    # ---- episode ---------------------------------------------------------------------
    def _drop_workspace(self) -> None:
        if self._ws is not None:
            self._ws.close()
            self._ws = None

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self._drop_workspace()
        self._task = self.task(task_id)
        self._last_grade = None
        self._ws = Workspace.open(self.pool, self._task.starting_files, git=self.git)
        self._final_key = ""
        where = (
            "your home directory ~, a git repository" if self._ws.git else "your home directory ~"
        )
        instruction = (
            f"Fix the issue below in the repository `{self._task.repo}` ({where}). Change the "
            "code, not the tests; hidden tests check the fix. Call submit when you are done."
            f"\n\n<issue>\n{self._task.problem_statement}\n</issue>"
        )
        return ResetOutcome(
            text=instruction,
            instruction=instruction,
            system_prompt=SYSTEM_PROMPT,
            info={"repo": self._task.repo},
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        if self._ws is None or self._task is None:
            return StepOutcome(
                text="The episode is over.", action_valid=False, error="no workspace"
            )
        parts: list[str] = []
        calls = list(action.tool_calls)
        if not calls:
            problem = action.error_text() or (
                "expected a tool call (bash, view, str_replace, create or submit). Example: "
                + render_tool_call("view", {"path": "."})
            )
            if self._out_of_turns():  # the budget ends here: graded all the same
                ended = self._finish([f"Invalid action: {problem}"], submitted=False)
                ended.action_valid, ended.error = False, problem
                return ended
            return StepOutcome(text=f"Invalid action: {problem}", action_valid=False, error=problem)
        for call in calls[:MAX_CALLS]:
            if call.name == "submit":
                return self._finish(parts, submitted=True)
            parts.append(f"[{call.name}]\n{self._run_tool(call)}")
        if len(calls) > MAX_CALLS:
            parts.append(
                f"[{len(calls) - MAX_CALLS} more calls skipped: at most {MAX_CALLS} per turn]"
            )
        if self._out_of_turns():
            return self._finish(parts, submitted=False)
        return StepOutcome(text="\n".join(parts))

    def _out_of_turns(self) -> bool:
        return self.max_turns is not None and self.turn >= self.max_turns

    def _run_tool(self, call: ToolCall) -> str:
        ws = self._ws
        assert ws is not None
        args = call.arguments
        if call.name == "bash":
            return ws.bash(str(args["command"]), timeout=float(args.get("timeout", 60))).text
        if call.name == "view":
            window = args.get("view_range")
            start, end = (int(window[0]), int(window[1])) if window else (None, None)
            return ws.view(str(args["path"]), start, end).text
        if call.name == "str_replace":
            return ws.str_replace(
                str(args["path"]), str(args["old_str"]), str(args["new_str"])
            ).text
        return ws.create(str(args["path"]), str(args["file_text"])).text

    def _finish(self, parts: list[str], *, submitted: bool) -> StepOutcome:
        """Grade the final files, end the episode and free the session."""
        task, ws = self._task, self._ws
        assert task is not None and ws is not None
        self._final_key = self.state_key()
        dump = ws.dump()
        self._drop_workspace()
        result = grade(self.pool, task, dump.files, timeout=self.grade_timeout)
        self._last_grade = result
        f2p, p2p = result.f2p_passed, result.p2p_passed
        head = (
            "Submitted." if submitted else "The turn budget is used up; the repository was graded."
        )
        parts.append(
            f"{head} Hidden tests: {f2p} of {len(task.fail_to_pass)} tests for the issue pass; "
            f"{p2p} of {len(task.pass_to_pass)} other tests pass."
        )
        info = {
            "diff": final_diff(task, dump),
            "resolved": result.resolved,
            "fail_to_pass_passed": f2p,
            "pass_to_pass_passed": p2p,
            "grading_status": result.status,
            "files_left_out": dump.skipped,
        }
        if dump.error:  # the session was lost: an infrastructure failure, not the agent's
            info["dump_error"] = dump.error
        return StepOutcome(
            text="\n".join(parts),
            components={"outcome": float(result.resolved), "tests": result.fraction},
            terminated=submitted,
            truncated=not submitted,
            success=result.resolved,
            info=info,
        )

    # ---- state ----------------------------------------------------------------------
    def state_key(self) -> str:
        if self._task is None:
            return ""
        if self._ws is None:
            return self._final_key
        return f"{self._task.id}|{self._ws.state()}|{self._ws.cwd}"

    def _native_snapshot(self) -> Any:
        fork = self._ws.fork() if self._ws is not None else None
        return (self._task, fork, self._final_key, self._last_grade)

    def _native_restore(self, native: Any) -> None:
        task, fork, final_key, last_grade = native
        self._drop_workspace()
        self._task, self._final_key, self._last_grade = task, final_key, last_grade
        self._ws = fork.fork() if fork is not None else None

    # ---- reference policy -------------------------------------------------------------
    def oracle_action(self) -> str:
        """Edit the repository into the fixed one (``str_replace`` with unique context,
        from whatever state it is in), then submit."""
        if self._ws is None or self._task is None:
            return render_tool_call("submit", {})
        now = self._ws.dump().files
        calls = oracle_calls(now, self._task.reference_files, self._task)
        if len(calls) >= MAX_CALLS:
            return render_tool_calls(calls[: MAX_CALLS - 1])
        return render_tool_calls([*calls, ToolCall("submit", {})])

    def close(self) -> None:
        self._drop_workspace()
        super().close()


def final_diff(task: RepoTask, dump: Dump) -> str:
    """The agent's change against the starting repository, as a patch."""
    now = {p: d.decode("utf-8", "replace") for p, d in dump.files.items()}
    out: list[str] = []
    for path in sorted(set(task.starting_files) | set(now)):
        old, new = task.starting_files.get(path), now.get(path)
        if old == new:
            continue
        out.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                f"a/{path}" if old is not None else "/dev/null",
                f"b/{path}" if new is not None else "/dev/null",
            )
        )
    return "".join(line if line.endswith("\n") else line + "\n" for line in out)


def _unique_edit(current: str, target: str) -> tuple[str, str]:
    """One ``(old, new)`` replacement that brings ``current`` closer to ``target``; ``old``
    occurs once in ``current`` (context lines are added until it does)."""
    a, b = current.splitlines(keepends=True), target.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    _, i1, i2, j1, j2 = next(op for op in ops if op[0] != "equal")
    lo, hi = i1, i2
    while True:
        old = "".join(a[lo:hi])
        new = "".join(a[lo:i1]) + "".join(b[j1:j2]) + "".join(a[i2:hi])
        if (old and current.count(old) == 1) or (lo == 0 and hi == len(a)):
            return old, new
        lo, hi = max(0, lo - 1), min(len(a), hi + 1)


def oracle_calls(
    now: Mapping[str, bytes], reference: Mapping[str, str], task: RepoTask
) -> list[ToolCall]:
    """Tool calls that turn the files ``now`` into ``reference`` outside the hidden tests."""
    hidden = set(task.hidden_files)
    calls: list[ToolCall] = []
    for path in sorted(reference):
        if path in hidden or any(path.startswith(d + "/") for d in task.hidden_dirs):
            continue
        target = reference[path]
        if path not in now:
            calls.append(ToolCall("create", {"path": path, "file_text": target}))
            continue
        current = now[path].decode("utf-8", "replace")
        for _ in range(50):
            if current == target or len(calls) >= MAX_CALLS:
                break
            old, new = _unique_edit(current, target)
            if not old:
                break
            calls.append(ToolCall("str_replace", {"path": path, "old_str": old, "new_str": new}))
            current = current.replace(old, new, 1)
    return calls
