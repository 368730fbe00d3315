"""Core overheads: the contract's cost per step, the wrapper stack, and Sokoban throughput.

Baselines measured in the same run:
* Sokoban's world mechanics alone (``simulators.grid.sokoban.move`` + render), against which
  the full ``AgentEnv.step`` (parse, validate, reward components, info) is compared;
* the bare env, against which the ``gym.make`` default wrappers and agentgym's wrapper stack
  (ChatHistory + LimitTurns + ReweightReward) are compared.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from agentgym.simulators.grid.sokoban import DIRECTIONS, generate_level, move, render
from agentgym.wrappers import ChatHistory, LimitTurns, ReweightReward

import agentgym  # noqa: F401  (registers the envs)
from agentgym.parsing import parse_action, render_tool_call

ENV_ID = "agentgym/Sokoban-Small-v0"
ACTIONS = [render_tool_call("move", {"direction": d}) for d in DIRECTIONS]


def _rate(fn: Callable[[int], None], steps: int, repeats: int = 3) -> float:
    """Best-of-``repeats`` steps per second of ``fn(i)`` over ``steps`` calls."""
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(steps):
            fn(i)
        best = max(best, steps / (time.perf_counter() - start))
    return best


def _env_loop(env: gym.Env) -> Callable[[int], None]:
    env.reset(seed=0)
    episode = [0]

    def step(i: int) -> None:
        _, _, terminated, truncated, _ = env.step(ACTIONS[(i * 7 + i // 3) % 4])
        if terminated or truncated:
            episode[0] += 1
            env.reset(seed=episode[0])

    return step


def run(quick: bool = False) -> str:
    steps = 2_000 if quick else 20_000
    rng = np.random.default_rng(0)
    level, state, _ = generate_level(rng, 6, 6, 1, min_solution=4, pull_steps=60)
    names = list(DIRECTIONS)
    current = [state]

    def mechanics(i: int) -> None:
        current[0] = move(level, current[0], names[(i * 7 + i // 3) % 4]).state
        render(level, current[0])

    def parser(i: int) -> None:
        parse_action(ACTIONS[i % 4], ())

    bare = gym.make(ENV_ID).unwrapped
    made = gym.make(ENV_ID)
    stack = ReweightReward(
        LimitTurns(ChatHistory(gym.make(ENV_ID), history_turns=4), 100), {"step": 0.05}
    )
    rates = {
        "world mechanics only (baseline: move + render)": _rate(mechanics, steps),
        "parse_action of one tool call (no schema)": _rate(parser, steps),
        "bare AgentEnv.step": _rate(_env_loop(bare), steps),
        "gym.make (+ Gymnasium's checker/order wrappers)": _rate(_env_loop(made), steps),
        "+ ChatHistory + LimitTurns + ReweightReward": _rate(_env_loop(stack), steps),
    }
    bare_rate = rates["bare AgentEnv.step"]
    lines = [
        "## Core: contract and wrapper overhead (Sokoban-Small)",
        "",
        f"{steps} steps per measurement, best of 3, one process on a 2-core CPU (no GPU). "
        "Overhead is per step relative to the bare env. Env rows cycle through the four moves "
        "and include the resets that end each episode (at most 15 turns), which the "
        "mechanics-only baseline does not; the env step also validates the call against its "
        "JSON schema and builds the info dict.",
        "",
        "| what | steps/s | µs/step | vs bare env |",
        "|---|---:|---:|---:|",
    ]
    for name, rate in rates.items():
        delta = (1e6 / rate) - (1e6 / bare_rate)
        rel = "—" if name.startswith(("world", "parse")) else f"{delta:+.1f} µs"
        lines.append(f"| {name} | {rate:,.0f} | {1e6 / rate:.1f} | {rel} |")

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
