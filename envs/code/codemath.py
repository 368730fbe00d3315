"""Math with a Python tool (rStar2-Agent style): run code, read its output, answer.

=================  ===========================================================
id                 ``agentgym/CodeMath-v0`` (mixed levels), ``agentgym/CodeMath-L{1,2,3}-v0``
action             ``python`` tool calls (``{"code": str}``) and/or ``<answer>...</answer>``
observation        text: the problem at reset, then each tool call's output
turn budget        8 turns, then truncated
reward range       about -0.2 .. 1.1 per step
=================  ===========================================================

Observations
    At reset: the problem and how to answer. After a turn with tool calls: the stdout and
    stderr of each call (capped at 4,000 characters, with a note when cut), and a note when
    the code timed out or hit a limit. The code runs in a jailed, stateful session
    (:mod:`agentgym.simulators.sandbox`): variables persist across calls.

Actions
    ``<tool_call>{"name": "python", "arguments": {"code": "print(2**10)"}}</tool_call>``
    (up to 4 per turn) and/or ``<answer>1024</answer>``, which ends the episode. Answers may
    be integers, fractions ``a/b``, decimals (within 1e-6 relative) or any sympy-readable
    equivalent form (``2*sqrt(2)``, ``\\frac{3}{4}``, ``\\boxed{...}``).

Rewards (component: default weight)
    * ``format`` (0.1): -1 for a turn that does not parse or holds neither a call nor an
      answer, else 0.
    * ``tool`` (0.1): per turn with calls, +1 if every call ran without error, -1 if any
      failed (exception, timeout, limit).
    * ``outcome`` (1.0): 1 for a correct answer (the episode then terminates), 0 otherwise.

Tasks
    Procedural problems from a seed (arithmetic, algebra, combinatorics, number theory,
    series) at levels 1-3; task ``codemath-L<level>-<seed>``; train seeds 0..99,999, test
    seeds 100,000..100,999. ``CodeMath-v0`` mixes the three levels.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.code.answers import answers_match
from agentgym.envs.code.base import PYTHON_TOOL, SessionEnv, describe
from agentgym.envs.code.math_tasks import MathProblem, make_problem
from agentgym.simulators.sandbox import SandboxPool

from agentgym.core import BaseOptions, ResetOutcome, StepOutcome
from agentgym.error import InvalidConfigError
from agentgym.parsing import ParsedAction, Tool, render_answer, render_tool_call
from agentgym.tasks import SeededTaskSet

SYSTEM_PROMPT = (
    "You solve math problems. You may run Python in a persistent session with the python "
    "tool, for example:\n"
    + render_tool_call("python", {"code": "print(3 * 7)"})
    + "\nWhen you are sure, give the final answer exactly once as <answer>...</answer>; "
    "giving an answer ends the episode."
)

MAX_CALLS = 4


class LevelTaskSet(SeededTaskSet):
    """Seeded ids ``codemath-L<level>-<seed>`` for seeds ``start .. start + size - 1``.

    The level of a seed is ``levels[seed % len(levels)]``, so a mixed set interleaves levels.

        >>> ids = LevelTaskSet((1, 2), start=0, size=4)
        >>> list(ids), "codemath-L2-1" in ids, "codemath-L1-1" in ids
        (['codemath-L1-0', 'codemath-L2-1', 'codemath-L1-2', 'codemath-L2-3'], True, False)
    """

    def __init__(self, levels: Sequence[int], start: int, size: int):
        super().__init__("codemath", start, size)
        self.levels = tuple(levels)

    def task_id_of(self, seed: int) -> str:
        return f"codemath-L{self.levels[seed % len(self.levels)]}-{seed}"


def parse_task_id(task_id: object) -> tuple[int, int] | None:
    """``codemath-L2-17`` -> (2, 17); None for anything else."""
    if not isinstance(task_id, str) or not task_id.startswith("codemath-L"):
        return None
    parts = task_id.split("-")
    if len(parts) != 3 or not parts[1][1:].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1][1:]), int(parts[2])


class CodeMathEnv(SessionEnv):
    """Math problems with a stateful Python tool; see the module docstring for the card."""

    default_max_turns: ClassVar[int | None] = 8
    answers_in_text: ClassVar[bool] = True

    def __init__(
        self,
        *,
        levels: Sequence[int] = (1, 2, 3),
        pool: SandboxPool | None = None,
        cell_timeout: float = 10.0,
        **base: Unpack[BaseOptions],
    ):
        if not levels or any(lv not in (1, 2, 3) for lv in levels):
            raise InvalidConfigError(
                f"levels must be a non-empty subset of (1, 2, 3), got {levels!r}."
            )
        super().__init__(pool=pool, cell_timeout=cell_timeout, **base)
        self.levels = tuple(int(lv) for lv in levels)
        self._splits = {
            "train": LevelTaskSet(self.levels, 0, 100_000),
            "test": LevelTaskSet(self.levels, 100_000, 1_000),
        }
        self._problem: MathProblem | None = None
        self._tool_used = False

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    @property
    def tools(self) -> Sequence[Tool]:
        return (PYTHON_TOOL,)

    def _load(self, task_id: str) -> None:
        parsed = parse_task_id(task_id)
        assert parsed is not None
        self._problem = make_problem(parsed[1], parsed[0])

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self._load(task_id)
        assert self._problem is not None
        self._new_session()
        self._tool_used = False
        text = (
            f"{self._problem.question}\n"
            "Use the python tool if it helps, then reply with <answer>...</answer>."
        )
        return ResetOutcome(
            text=text, instruction=self._problem.question, system_prompt=SYSTEM_PROMPT
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        assert self._problem is not None
        parts: list[str] = []
        comps: dict[str, float] = {}
        if not action.valid:
            parts.append("Invalid action: " + action.error_text())
        calls = [c for c in action.tool_calls if c.name == "python"]
        if len(calls) > MAX_CALLS:
            parts.append(f"Only the first {MAX_CALLS} tool calls of a turn are run.")
            calls = calls[:MAX_CALLS]
        if calls:
            all_ok = True
            for i, call in enumerate(calls, 1):
                result = self.run_cell(str(call.arguments.get("code", "")))
                all_ok &= result.ok
                head = f"[python call {i}]\n" if len(calls) > 1 else ""
                parts.append(head + describe(result))
            comps["tool"] = 1.0 if all_ok else -1.0
            self._tool_used = True
        if action.answer is not None:
            correct = answers_match(self._problem.answer, action.answer)
            parts.append("Answer received: " + ("correct." if correct else "incorrect."))
            comps["outcome"] = 1.0 if correct else 0.0
            return StepOutcome(
                text="\n".join(parts),
                components=comps,
                terminated=True,
                success=correct,
            )
        if not calls and action.valid:
            problem = "expected a python tool call or an <answer>. Example: " + render_tool_call(
                "python", {"code": "print(1 + 1)"}
            )
            return StepOutcome(text="Invalid action: " + problem, action_valid=False, error=problem)
        return StepOutcome(text="\n".join(parts), components=comps)

    def state_key(self) -> str:
        if self._problem is None or self._task_id is None:
            return ""
        return self.key_of(self._task_id, self.session_digest())

    def oracle_action(self) -> str:
        """Run the reference program first, then answer with the exact value."""
        assert self._problem is not None
        if not self._tool_used:
            return render_tool_call("python", {"code": self._problem.program})
        return render_answer(self._problem.answer)

    def _extra_state(self) -> Any:
        return self._tool_used

    def _restore_extra(self, task_id: str, extra: Any) -> None:
        self._load(task_id)
        self._tool_used = bool(extra)
