"""Core overheads: the contract's cost per step, the wrapper stack, and Sokoban throughput.

Baselines measured in the same run, interleaved with the rows they anchor:
* Gymnasium's FrozenLake through ``gym.make``: what a minimal Gymnasium step costs;
* Sokoban's world mechanics alone (``simulators.grid.sokoban.move`` + render), against which
  the full ``AgentEnv.step`` (parse, validate, reward components, info) is compared;
* the bare env, against which the ``gym.make`` default wrappers and agentgym's wrapper stack
  (ChatHistory + LimitTurns + ReweightReward) are compared.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from agentgym.simulators.grid.sokoban import DIRECTIONS, generate_level, move, render
from agentgym.wrappers import ChatHistory, LimitTurns, Record, ReweightReward

import agentgym  # noqa: F401  (registers the envs)
from agentgym.parsing import parse_action, render_tool_call
from benchmarks.timing import interleaved, min_median

ENV_ID = "agentgym/Sokoban-Small-v0"
ACTIONS = [render_tool_call("move", {"direction": d}) for d in DIRECTIONS]


def _chunk(fn: Callable[[int], float | None], steps: int) -> Callable[[], float]:
    """One timed unit: ``steps`` calls of ``fn(i)``, ``i`` running on across units.

    Returns the seconds ``fn`` reported as not part of the measurement (resets).
    """
    counter = [0]

    def unit() -> float:
        base = counter[0]
        excluded = 0.0
        for i in range(base, base + steps):
            excluded += fn(i) or 0.0
        counter[0] = base + steps
        return excluded

    return unit


def _env_loop(env: gym.Env) -> Callable[[int], float]:
    """Step a Sokoban env through the four moves as tool calls."""
    return _env_loop_with(env, lambda i: ACTIONS[(i * 7 + i // 3) % 4])


def _env_loop_with(env: gym.Env, action_of: Callable[[int], Any]) -> Callable[[int], float]:
    """Step ``env`` with ``action_of(i)``; returns the seconds spent in resets (not timed)."""
    env.reset(seed=0)
    episode = [0]

    def step(i: int) -> float:
        _, _, terminated, truncated, _ = env.step(action_of(i))
        if not (terminated or truncated):
            return 0.0
        start = time.perf_counter()
        episode[0] += 1
        env.reset(seed=episode[0])
        return time.perf_counter() - start

    return step


def _frozenlake_loop() -> Callable[[int], float]:
    """Gymnasium's own FrozenLake through ``gym.make``: the cost of a minimal Gymnasium step."""
    return _env_loop_with(gym.make("FrozenLake-v1"), lambda i: (i * 7 + i // 3) % 4)


def run(quick: bool = False) -> str:
    steps = 500 if quick else 2_000  # steps per timed unit
    rounds = 3 if quick else 10
    rng = np.random.default_rng(0)
    level, state, _ = generate_level(rng, 6, 6, 1, min_solution=4, pull_steps=60)
    names = list(DIRECTIONS)
    current = [state]

    def mechanics(i: int) -> None:
        current[0] = move(level, current[0], names[(i * 7 + i // 3) % 4]).state
        render(level, current[0])

    def parser(i: int) -> None:
        parse_action(ACTIONS[i % 4], ())

    tmp = tempfile.mkdtemp(prefix="bench_core_")
    bare = gym.make(ENV_ID).unwrapped
    made = gym.make(ENV_ID)
    stack = ReweightReward(
        LimitTurns(ChatHistory(gym.make(ENV_ID), history_turns=4), 100), {"step": 0.05}
    )
    recorded = Record(gym.make(ENV_ID), os.path.join(tmp, "core.agtr"))
    loops = {
        "Gymnasium FrozenLake-v1 via gym.make (baseline: a minimal Gymnasium step)": (
            _frozenlake_loop()
        ),
        "world mechanics only (baseline: move + render)": mechanics,
        "parse_action of one tool call (no schema)": parser,
        "bare AgentEnv.step": _env_loop(bare),
        "gym.make (+ Gymnasium's checker/order wrappers)": _env_loop(made),
        "+ ChatHistory + LimitTurns + ReweightReward": _env_loop(stack),
        "gym.make + Record (every step written to .agtr)": _env_loop(recorded),
    }
    times = interleaved({k: _chunk(fn, steps) for k, fn in loops.items()}, rounds)
    recorded.close()
    shutil.rmtree(tmp, ignore_errors=True)
    per_step = {k: [t / steps * 1e6 for t in v] for k, v in times.items()}  # µs per step
    bare_us = min(per_step["bare AgentEnv.step"])
    made_us = min(per_step["gym.make (+ Gymnasium's checker/order wrappers)"])
    lake_us = min(per_step[next(iter(per_step))])
    lines = [
        "## Core: contract and wrapper overhead (Sokoban-Small)",
        "",
        f"{rounds} interleaved rounds (every row once per round, in turn) of {steps} steps each, "
        "one process on a 2-core CPU (no GPU); min and median µs per step over the rounds. "
        "Env rows cycle through the four moves and time the steps alone: the resets between "
        "episodes are left out (their latency is the last table). The env step parses and "
        "validates the call against its JSON schema, applies the move, renders the grid and "
        "builds the info dict (reward components, state key, admissible actions). "
        "Deltas compare minimums: wrapper rows against the bare env, Record against gym.make.",
        "",
        "| what | µs/step min | µs/step median | vs bare env | vs FrozenLake |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, samples in per_step.items():
        lo, med = min_median(samples)
        if name.startswith("gym.make + Record"):
            rel = f"+{(lo / made_us - 1) * 100:.1f}% vs gym.make"
        elif name.startswith(("Gymnasium", "world", "parse")):
            rel = "—"
        else:
            rel = f"{lo - bare_us:+.1f} µs"
        lines.append(f"| {name} | {lo:.1f} | {med:.1f} | {rel} | {lo / lake_us:.1f}x |")

    lines += [
        "",
        "Reset latency (level generation by reverse play + BFS check), 200 seeds:",
        "",
        "| env | mean ms | p99 ms |",
        "|---|---:|---:|",
    ]
    for size in ("Tiny", "Small", "Medium", "Large"):
        env = gym.make(f"agentgym/Sokoban-{size}-v0").unwrapped
        times = []
        for seed in range(50 if quick else 200):
            start = time.perf_counter()
            env.reset(seed=seed)
            times.append((time.perf_counter() - start) * 1000)
        lines.append(
            f"| Sokoban-{size}-v0 | {np.mean(times):.2f} | {np.percentile(times, 99):.2f} |"
        )
    return "\n".join(lines)
