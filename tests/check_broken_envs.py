"""Envs that each break exactly one conformance rule (for tests/test_check_rules.py).

Not registered at import time: registering would add them to every registry-driven test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from agentgym.core import AgentEnv, ResetOutcome, StepOutcome
from agentgym.parsing import ParsedAction
from agentgym.tasks import seeded_splits
from tests.fake_envs import CounterEnv


class TurnKeyEnv(CounterEnv):
    """state-key-history-free: the key counts turns, so a rejected turn moves it."""

    def state_key(self) -> str:
        return f"{self.target}:{self.value}:turn{self.turn}"


class ConstantKeyEnv(CounterEnv):
    """state-key-varies: one key for every state."""

    def state_key(self) -> str:
        return "state"


class SameSplitsEnv(CounterEnv):
    """splits-disjoint: the test split is the train split."""

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits["train"]


class AliasSplitsEnv(CounterEnv):
    """Correct: ``test`` is another name for ``test_unseen``; ``test_seen`` is its own set."""

    splits = ("train", "test", "test_seen", "test_unseen")

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        split = split or self.split
        start = {"train": 0, "test_seen": 50, "test": 60, "test_unseen": 60}[split]
        return seeded_splits("counter", train=start, test=10)["test"]


class OverlappingHeldOutEnv(AliasSplitsEnv):
    """splits-disjoint: ``test_seen`` and ``test_unseen`` share half their tasks."""

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        split = split or self.split
        start = {"train": 0, "test_seen": 50, "test": 55, "test_unseen": 55}[split]
        return seeded_splits("counter", train=start, test=10)["test"]


class NoSystemPromptEnv(CounterEnv):
    """system-prompt: reset sends no system prompt."""

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        out = super()._reset(task_id, options)
        out.system_prompt = ""
        return out


class SumEnv(AgentEnv):
    """A correct one-question env that ends with an <answer>: what is a + b?"""

    metadata = {"family": "test", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {"format": 0.1, "outcome": 1.0}
    default_max_turns: ClassVar[int | None] = 3
    answers_in_text = True
    TASKS = seeded_splits("sum", train=50, test=10)

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self.TASKS[split or self.split]

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self.a, self.b = (int(x) for x in self.np_random.integers(100, 1000, size=2))
        self.answered = False
        text = self.question()
        return ResetOutcome(text=text, instruction=text, system_prompt="Answer in <answer>.")

    def question(self) -> str:
        return f"What is {self.a} + {self.b}? Reply <answer>N</answer>."

    def _step(self, action: ParsedAction) -> StepOutcome:
        if action.answer is None:
            return StepOutcome(text="Reply with <answer>N</answer>.", action_valid=False)
        self.answered = True
        right = action.answer.strip() == self.expected()
        return StepOutcome(
            text="Right." if right else "Wrong.",
            components={"outcome": float(right)},
            terminated=True,
            success=right,
        )

    def state_key(self) -> str:
        return f"{self.a}+{self.b}:{self.answered}"

    def expected(self) -> str:
        return str(self.a + self.b)

    def oracle_action(self) -> str:
        return f"<answer>{self.expected()}</answer>"


class LeakyAnswerEnv(SumEnv):
    """answer-hidden: the question prints its own answer."""

    def question(self) -> str:
        return f"What is {self.a} + {self.b}? (It is {self.a + self.b}.)"


class ChoiceEnv(SumEnv):
    """Correct: the answer is a letter among listed choices (every task lists A and B)."""

    def question(self) -> str:
        right, wrong = self.a + self.b, self.a + self.b + 1
        first, second = (right, wrong) if self.expected() == "A" else (wrong, right)
        return f"What is {self.a} + {self.b}? A) {first} B) {second}. Reply with the letter."

    def expected(self) -> str:
        return "A" if self.a % 2 else "B"


class RaisesInStepEnv(CounterEnv):
    """Raises on a valid call (the fuzz rule should point at the raise below)."""

    def _step(self, action: ParsedAction) -> StepOutcome:
        if action.valid and action.tool_calls:
            return {"oops": 1}["missing"]  # RAISES-HERE
        return super()._step(action)


class RaisesTypeErrorInResetEnv(CounterEnv):
    """Raises a TypeError in reset, which Gymnasium's checker rewraps as a signature hint."""

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        return len(5)  # type: ignore[arg-type]  # RESET-RAISES-HERE


class TwoBrokenRulesEnv(SameSplitsEnv, ConstantKeyEnv):
    """Breaks splits-disjoint and state-key-varies at once."""
