"""Env pools: does throughput scale with cores? One env against four, threads against processes.

A trainer steps every active env once per turn (``EnvPool.step`` with all of them), so that is
what is timed: rounds of one batched ``step`` (and, where the episode ends, ``reset``) over the
pool, the action of each env chosen by its oracle in the same round trip for every backend.
Rows are interleaved (every configuration once per round, in turn) and repeated.

* web in Chromium (``WebWidgets-v0``, toggle switches, episodes that never end): the thread
  backend shares one Chromium and one Playwright driver; the process backend gives each
  worker its own.
* text mode (``WebShopText-v0``): pure Python, so threads share one GIL and processes do not.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401  (registers the envs)
from agentgym.vector import EnvPool
from benchmarks.timing import interleaved, min_median

WIDGETS = ("agentgym/WebWidgets-v0", {"kinds": ["toggle-switches"], "max_turns": 10**9})
SHOP_TEXT = ("agentgym/WebShopText-v0", {})


def _make(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    return gym.make(env_id, **kwargs)


class _Run:
    """A pool kept open across rounds; each round steps every env ``steps`` times."""

    def __init__(self, env: tuple[str, dict[str, Any]], n: int, backend: str, steps: int):
        self.n, self.steps = n, steps
        self.pool = EnvPool([functools.partial(_make, *env)] * n, backend=backend)
        self.pool.reset(seeds=list(range(n)))
        self.episode = n
        self.done_steps = 0

    def round(self) -> None:
        for _ in range(self.steps):
            actions = dict(enumerate(self.pool.call("oracle_action")))
            for i, result in self.pool.step(actions).items():
                if result.terminated or result.truncated:
                    self.pool.reset([i], seeds=[self.episode])
                    self.episode += 1
        self.done_steps += self.steps * self.n

    def close(self) -> None:
        self.pool.close()


def run(quick: bool = False) -> str:
    rounds = 3 if quick else 8
    configs = {
        "web (Chromium), 1 env": (WIDGETS, 1, "sync"),
        "web (Chromium), 4 envs, threads (one shared browser)": (WIDGETS, 4, "thread"),
        "web (Chromium), 4 envs, processes (a browser each)": (WIDGETS, 4, "process"),
        "text (WebShopText), 1 env": (SHOP_TEXT, 1, "sync"),
        "text (WebShopText), 4 envs, threads": (SHOP_TEXT, 4, "thread"),
        "text (WebShopText), 4 envs, processes": (SHOP_TEXT, 4, "process"),
    }
    web_steps, text_steps = (10, 40) if quick else (25, 100)
    runs = {
        name: _Run(env, n, backend, web_steps if env is WIDGETS else text_steps)
        for name, (env, n, backend) in configs.items()
    }
    try:
        for r in runs.values():  # warm up: browsers started, pages loaded, imports done
            r.round()
        times = interleaved({name: r.round for name, r in runs.items()}, rounds)
    finally:
        for r in runs.values():
            r.close()
    rates = {}
    for name, samples in times.items():
        r = runs[name]
        per_round = r.steps * r.n
        fastest, middle = min_median(samples)
        rates[name] = (per_round / fastest, per_round / middle)
    lines = [
        "## Env pools: throughput against the number of envs, threads vs processes",
        "",
        f"{rounds} interleaved rounds per row after a warm-up round; a round is "
        f"{web_steps} (web) or {text_steps} (text) batched pool steps, each env's "
        "action its oracle's, fetched with `pool.call` in the same round trip for every "
        f"backend. {os.cpu_count()} CPUs. Speed-up is against the 1-env row of the same family "
        "(best rounds).",
        "",
        "| configuration | steps/s (best round) | steps/s (median round) | vs 1 env |",
        "|---|---:|---:|---:|",
    ]
    for name, (best, med) in rates.items():
        base = rates[
            "web (Chromium), 1 env" if name.startswith("web") else "text (WebShopText), 1 env"
        ][0]
        lines.append(f"| {name} | {best:,.0f} | {med:,.0f} | {best / base:.2f}x |")
    lines += [
        "",
        "The thread backend shares one Chromium, one Playwright driver and one Python "
        "interpreter (GIL) between its envs; the process backend runs a worker per env "
        "(`EnvPool(..., backend='process')`), each with its own interpreter and, for browser "
        "envs, its own Chromium (about 380 MiB each).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    start = time.perf_counter()
    print(run(quick=True))
    print(f"took {time.perf_counter() - start:.0f} s")
