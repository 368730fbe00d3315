"""Function guessing: the user holds a hidden integer function and answers probes.

The agent must find ``f(target)`` without asking for it directly. Each ``talk`` message
may probe one integer ``x`` (``"What is f(3)?"``); the user answers ``f(3) = 11``. Asking
for the target itself, or for several inputs at once, earns nothing. The hidden function
comes from four families with small integer coefficients, so three or four well-chosen
probes pin it down; ``search`` lists the families.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from agentgym.simulators.users.core import Decision, Dialogue, Opening, ScriptedUser, ToolResult
from agentgym.simulators.users.text import numbers
from agentgym.simulators.users.wording import WordingBackend

FAMILIES = (
    "linear: f(x) = a*x + b",
    "quadratic: f(x) = a*x^2 + b*x + c",
    "absolute: f(x) = a*|x - b| + c",
    "modular: f(x) = (a*x + b) mod m",
)

#: Probes must lie in this range.
PROBE_RANGE = 1000


def make_function(rng: np.random.Generator) -> tuple[str, Callable[[int], int]]:
    """A random hidden function and its formula text."""
    kind = int(rng.integers(4))
    a = int(rng.integers(1, 6)) * (1 if rng.random() < 0.7 else -1)
    b = int(rng.integers(-9, 10))
    c = int(rng.integers(-9, 10))
    if kind == 0:
        return f"{a}*x + {b}", lambda x: a * x + b
    if kind == 1:
        return f"{a}*x^2 + {b}*x + {c}", lambda x: a * x * x + b * x + c
    if kind == 2:
        return f"{a}*|x - {b}| + {c}", lambda x: a * abs(x - b) + c
    m = int(rng.integers(5, 12))
    return f"({abs(a)}*x + {b}) mod {m}", lambda x: (abs(a) * x + b) % m


class FunctionUser(ScriptedUser):
    """Evaluates the hidden function at one probed integer per message."""

    max_useful_probes = 4

    def __init__(
        self,
        fn: Callable[[int], int],
        target: int,
        *,
        wording: WordingBackend | None = None,
        patience: int = 8,
    ):
        super().__init__(
            "Someone holding a secret function; answers one input at a time.",
            wording=wording,
            patience=patience,
        )
        self.fn = fn
        self.target = target
        self.probes: dict[int, int] = {}

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.probes = {}

    def _decide(self, message: str, toks: list[str]) -> Decision:
        nums = [n for n in numbers(message) if n == int(n)]
        xs = list(dict.fromkeys(int(n) for n in nums))
        if not xs:
            return Decision(
                "Give me one whole number and I'll tell you f of it.", flags=("no_topic",)
            )
        if len(xs) > 1:
            return Decision(
                "One number at a time, please.", scores={"penalty": -1.0}, flags=("stuffing",)
            )
        x = xs[0]
        if x == self.target:
            return Decision(
                f"Nice try - working out f({x}) is your job.",
                scores={"penalty": -0.25},
                flags=("target",),
            )
        if abs(x) > PROBE_RANGE:
            return Decision(
                f"Keep it between -{PROBE_RANGE} and {PROBE_RANGE}, please.",
                flags=("out_of_range",),
            )
        if x in self.probes:
            return Decision(
                f"As I said, f({x}) = {self.probes[x]}.",
                scores={"penalty": -0.25},
                flags=("repeat",),
            )
        y = self.fn(x)
        self.probes[x] = y
        gain = 1.0 / self.max_useful_probes if len(self.probes) <= self.max_useful_probes else 0.0
        text = self.choose(
            (f"f({x}) = {y}.", f"For {x} I get {y}: f({x}) = {y}.", f"f({x}) is {y}.")
        )
        return Decision(text, revealed=(f"x={x}",), scores={"info": gain})

    def hidden_values(self) -> tuple[str, ...]:
        return (str(self.fn(self.target)),)

    def released_values(self) -> tuple[str, ...]:
        return tuple(str(y) for y in self.probes.values())

    def state(self) -> Any:
        return {"stopped": self.stopped, "probes": sorted(self.probes.items())}


class FunctionDialogue(Dialogue):
    """Find f(target) of a hidden function by probing other inputs."""

    search_help = "search(query): list the kinds of functions the secret may be."
    answer_help = "answer(answer): the integer value f(target). Ends the episode."

    def start(self, task_seed: int, user_seed: int) -> Opening:
        rng = np.random.default_rng(task_seed)
        self.formula, fn = make_function(rng)
        self.target = int(rng.integers(11, 40))
        self.user = FunctionUser(fn, self.target, wording=self.wording, patience=10)
        self.user.reset(seed=user_seed)
        self.fn = fn
        self.searched = False
        self.given: str | None = None
        self.success = self.done = False
        text = (
            f"I have a secret function f of a whole number. What is f({self.target})? "
            "You can ask me f of any other number, one at a time."
        )
        instruction = (
            f"Find f({self.target}) for the user's secret function by asking for f "
            "at other inputs, then answer with the number."
        )
        return Opening(instruction, text)

    def search(self, query: str) -> ToolResult:
        first = not self.searched
        self.searched = True
        return ToolResult(
            "The secret function is one of: " + "; ".join(FAMILIES) + ".",
            scores={"search": 1.0 if first else 0.0},
        )

    def answer(self, answer: str) -> ToolResult:
        vals = numbers(answer)
        want = self.fn(self.target)
        self.given = answer.strip()[:40]
        self.success = len(vals) >= 1 and abs(vals[-1] - want) < 1e-9
        self.done = True
        self.user.stopped = True
        text = (
            f"User: Correct, f({self.target}) = {want}!"
            if self.success
            else "User: No, that's wrong. Better luck next time."
        )
        return ToolResult(
            text, scores={"outcome": 1.0 if self.success else 0.0}, stop=True, success=self.success
        )

    def oracle(self) -> tuple[str, dict[str, Any]]:
        user = self.user
        assert isinstance(user, FunctionUser)
        for x in (1, 2, 3):
            if x not in user.probes:
                return "talk", {"message": f"What is f({x})?"}
        return "answer", {"answer": str(self.fn(self.target))}

    def user_profile(self) -> str:
        return f"Your secret function is f(x) = {self.formula}; the target is {self.target}."

    def state(self) -> Any:
        return {**self.user.state(), "searched": self.searched, "given": self.given}
