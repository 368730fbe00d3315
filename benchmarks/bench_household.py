"""Benchmark of Household-v0: env-side cost per step and per reset, against Sokoban-Tiny.

Both envs replay recorded episodes (the oracle with 30% random admissible commands, so
episodes include detours and invalid-free wandering, from train-split seeds), timed
interleaved round by round (:func:`benchmarks.timing.interleaved`):

* ``reset``: ``env.reset(seed=...)`` alone - task generation, first observation, info;
* ``step``: ``env.step(action)`` alone (the resets between episodes are left out) - parse,
  command, goal check, reward components, the admissible-action list and the state key;
* for Household, the world's own ``World.act`` on the same commands (no parsing, no info):
  the simulator's share of a step; and ``snapshot()`` + ``restore()`` (Tree-GRPO's branch).

The policy's time is never counted: actions are recorded first.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from agentgym.envs.household.tasks import parse_task_id
from agentgym.simulators.household import World, generate_home, generate_task

import agentgym  # noqa: F401  (registers the envs)
from agentgym.parsing import parse_action
from benchmarks.cli import exit_on_help
from benchmarks.timing import interleaved, min_median

HOUSEHOLD = "agentgym/Household-v0"
SOKOBAN = "agentgym/Sokoban-Tiny-v0"
EPSILON = 0.3


def record(env_id: str, episodes: int, seed: int = 0) -> list[tuple[int, list[str]]]:
    """(reset seed, actions) of noisy-oracle episodes."""
    env = gym.make(env_id)
    rng = np.random.default_rng(seed)
    out = []
    for k in range(episodes):
        _, info = env.reset(seed=seed + k)
        actions: list[str] = []
        while True:
            choices = info.get("admissible_actions") or []
            if choices and rng.random() < EPSILON:
                action = choices[int(rng.integers(len(choices)))]
            else:
                action = env.unwrapped.oracle_action()
            actions.append(action)
            _, _, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        out.append((seed + k, actions))
    env.close()
    return out


def _resets(env: gym.Env, episodes: list[tuple[int, list[str]]]) -> Callable[[], None]:
    def unit() -> None:
        for seed, _ in episodes:
            env.reset(seed=seed)

    return unit


def _steps(
    env: gym.Env, episodes: list[tuple[int, list[str]]], branch: bool = False
) -> Callable[[], float]:
    """Every recorded step, resets left out. ``branch``: time ``snapshot()`` + ``restore()``
    before each step instead of the step itself (a Tree-GRPO branch point)."""

    def unit() -> float:
        excluded = 0.0
        for seed, actions in episodes:
            t0 = time.perf_counter()
            env.reset(seed=seed)
            excluded += time.perf_counter() - t0
            base = env.unwrapped
            for a in actions:
                if branch:
                    base.restore(base.snapshot())
                    t0 = time.perf_counter()
                env.step(a)
                if branch:
                    excluded += time.perf_counter() - t0
        return excluded

    return unit


def _world_steps(episodes: list[tuple[int, list[str]]], env: gym.Env) -> Callable[[], float]:
    """The same commands on the bare simulator (worlds rebuilt outside the timing)."""

    commands = []
    for seed, actions in episodes:
        _, info = env.reset(seed=seed)
        layout, slot = parse_task_id(info["task_id"])
        calls = [parse_action(a, env.unwrapped.tools).tool_calls for a in actions]
        commands.append(((layout, slot), [str(c[0].arguments["command"]) for c in calls if c]))

    def unit() -> float:
        excluded = 0.0
        for (layout, slot), cmds in commands:
            t0 = time.perf_counter()
            task = generate_task(generate_home(layout), slot)
            world = World(task.home, task.start_state())
            excluded += time.perf_counter() - t0
            for c in cmds:
                world.act(c)
        return excluded

    return unit


def run(quick: bool = False) -> str:
    episodes, rounds = (20, 3) if quick else (200, 7)
    house_eps = record(HOUSEHOLD, episodes)
    soko_eps = record(SOKOBAN, episodes)
    house, soko = gym.make(HOUSEHOLD), gym.make(SOKOBAN)
    counts = {
        "household": (len(house_eps), sum(len(a) for _, a in house_eps)),
        "sokoban": (len(soko_eps), sum(len(a) for _, a in soko_eps)),
    }
    times = interleaved(
        {
            ("sokoban", "reset"): _resets(soko, soko_eps),
            ("sokoban", "step"): _steps(soko, soko_eps),
            ("household", "reset"): _resets(house, house_eps),
            ("household", "step"): _steps(house, house_eps),
            ("household", "world"): _world_steps(house_eps, gym.make(HOUSEHOLD)),
            ("household", "branch"): _steps(house, house_eps, branch=True),
        },
        rounds,
        rotate=True,
    )

    def per(key: tuple[str, str]) -> str:
        env, what = key
        n_eps, n_steps = counts[env]
        n = n_eps if what == "reset" else n_steps
        lo, med = min_median(times[key])
        return f"{lo / n * 1e6:.0f} / {med / n * 1e6:.0f}"

    lines = [
        "## Household-v0: env-side cost per step and per reset",
        "",
        f"Noisy-oracle episodes (oracle, {EPSILON:.0%} random admissible commands) from "
        f"train-split seeds, replayed with the policy's time left out; {rounds} interleaved "
        f"rounds; microseconds, min / median over rounds. Household: {counts['household'][0]} "
        f"episodes, {counts['household'][1]} steps; Sokoban-Tiny: {counts['sokoban'][0]} "
        f"episodes, {counts['sokoban'][1]} steps.",
        "",
        "| env | reset (µs) | step (µs) |",
        "|---|---|---|",
        f"| `{SOKOBAN}` (baseline) | {per(('sokoban', 'reset'))} | {per(('sokoban', 'step'))} |",
        f"| `{HOUSEHOLD}` | {per(('household', 'reset'))} | {per(('household', 'step'))} |",
        "",
        "Inside a Household step:",
        "",
        "| part | µs per step |",
        "|---|---|",
        f"| the world alone (`World.act`, no parsing or info) | {per(('household', 'world'))} |",
        f"| `snapshot()` + `restore()` (a Tree-GRPO branch point) | "
        f"{per(('household', 'branch'))} |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_household")
    print(run(quick=True))
