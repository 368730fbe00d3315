"""Tiny envs for testing the base class and the conformance checks (not registered)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentgym.core import AgentEnv, ResetOutcome, StepOutcome
from agentgym.parsing import ParsedAction, Tool, render_tool_call
from agentgym.tasks import seeded_splits

ADD = Tool(
    "add",
    "Add a number to the counter.",
    {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": -3, "maximum": 3}},
        "required": ["n"],
        "additionalProperties": False,
    },
)


class CounterEnv(AgentEnv):
    """Reach the target number by adding -3..3 to a counter; replay-based snapshots."""

    metadata = {"family": "test", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.5,
        "outcome": 1.0,
        "progress": 0.1,
    }
    default_max_turns: ClassVar[int | None] = 8

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._splits = seeded_splits("counter", train=50, test=10)
        self.value = 0
        self.target = 0

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    @property
    def tools(self) -> Sequence[Tool]:
        return (ADD,)

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self.target = int(task_id.rsplit("-", 1)[1]) % 7 + 1
        self.value = int(self.np_random.integers(-2, 3))
        return ResetOutcome(
            text=f"Counter at {self.value}; reach {self.target}.",
            instruction=f"Reach {self.target}.",
            system_prompt="Call add.",
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        if not action.valid or len(action.tool_calls) != 1:
            return StepOutcome(
                text=f"Invalid: {action.error_text() or 'one call please'}", action_valid=False
            )
        before = abs(self.target - self.value)
        self.value += action.tool_calls[0].arguments["n"]
        after = abs(self.target - self.value)
        done = self.value == self.target
        return StepOutcome(
            text=f"Counter at {self.value}.",
            components={"progress": float(before - after), "outcome": float(done)},
            terminated=done,
            success=done,
        )

    def state_key(self) -> str:
        return f"{self.target}:{self.value}"

    def admissible_actions(self) -> list[str]:
        return [render_tool_call("add", {"n": n}) for n in (-1, 1, 2)]

    def oracle_action(self) -> str:
        return render_tool_call("add", {"n": max(-3, min(3, self.target - self.value))})


class NativeCounterEnv(CounterEnv):
    """The same with a native snapshot."""

    def _native_snapshot(self) -> Any:
        return (self.target, self.value)

    def _native_restore(self, native: Any) -> None:
        self.target, self.value = native


class RaisingEnv(CounterEnv):
    """Breaks the contract: raises on an empty action."""

    def _step(self, action: ParsedAction) -> StepOutcome:
        if action.raw == "":
            raise ValueError("empty")
        return super()._step(action)


class CpuReportingEnv(CounterEnv):
    """Reports the CPUs its process, and a process it starts, may run on (for pinning tests)."""

    def cpus(self) -> dict[str, list[int]]:
        import json
        import os
        import subprocess
        import sys

        child = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return {"worker": sorted(os.sched_getaffinity(0)), "child": json.loads(child)}


class NondeterministicEnv(CounterEnv):
    """Breaks the contract: draws from a generator the seed does not control."""

    _calls = 0

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        out = super()._reset(task_id, options)
        NondeterministicEnv._calls += 1
        out.text += f" (visit {NondeterministicEnv._calls})"
        return out


class LeakyKeyEnv(CounterEnv):
    """Breaks the contract: the state key depends on the instance."""

    def state_key(self) -> str:
        return f"{id(self)}:{self.value}"


class WrongRewardEnv(CounterEnv):
    """Breaks the contract: reward is not the weighted sum of the components it reports."""

    def step(self, action: str):  # type: ignore[override]
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + 1.0, terminated, truncated, info


class LossySnapshotEnv(CounterEnv):
    """Breaks the contract: its native snapshot forgets the counter."""

    def _native_snapshot(self) -> Any:
        return self.target

    def _native_restore(self, native: Any) -> None:
        self.target = native
