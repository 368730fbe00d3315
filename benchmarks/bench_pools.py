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
import statistics
import time
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401  (registers the envs)
from agentgym.pools import EnvPool
from benchmarks.cli import exit_on_help
from benchmarks.timing import interleaved, min_median, process_cpu


def _tree_cpu() -> float:
    """CPU seconds (user + system) used so far by this process and all its descendants
    (pool workers, Playwright drivers, every Chromium process), read from /proc."""
    stats: dict[int, tuple[int, float]] = {}  # pid -> (ppid, cpu seconds)
    for entry in os.listdir("/proc"):
        got = process_cpu(entry) if entry.isdigit() else None
        if got is not None:  # (None: not a process, or it ended meanwhile)
            stats[int(entry)] = got
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(children.get(pid, ()))
    return total


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
        cpu: dict[str, list[float]] = {name: [] for name in runs}

        def with_cpu(name: str) -> Any:
            def timed() -> float:
                t0 = time.perf_counter()
                before = _tree_cpu()
                t1 = time.perf_counter()
                runs[name].round()
                t2 = time.perf_counter()
                cpu[name].append(_tree_cpu() - before)
                return (t1 - t0) + (time.perf_counter() - t2)  # the /proc reads, left out

            return timed

        times = interleaved({name: with_cpu(name) for name in runs}, rounds)
        # Every pool stays open through all rounds, so a round's CPU includes what the idle
        # pools (their browsers' timers, workers waiting) burn meanwhile: measure that rate
        # with every pool idle, and take it off each round's figure.
        idle_start, idle_cpu = time.perf_counter(), _tree_cpu()
        time.sleep(2.0 if quick else 5.0)
        idle_rate = (_tree_cpu() - idle_cpu) / (time.perf_counter() - idle_start)
    finally:
        for r in runs.values():
            r.close()
    rates = {}
    cpu_ms = {}  # CPU ms per env step, all processes of the pool together (median round)
    for name, samples in times.items():
        r = runs[name]
        per_round = r.steps * r.n
        fastest, middle = min_median(samples)
        rates[name] = (per_round / fastest, per_round / middle)
        busy = [c - idle_rate * t for c, t in zip(cpu[name], samples, strict=True)]
        cpu_ms[name] = max(statistics.median(busy), 1e-9) / per_round * 1e3
    cores = os.cpu_count() or 1
    lines = [
        "## Env pools: throughput against the number of envs, threads vs processes",
        "",
        f"{rounds} interleaved rounds per row after a warm-up round; a round is "
        f"{web_steps} (web) or {text_steps} (text) batched pool steps, each env's "
        "action its oracle's, fetched with `pool.call` in the same round trip for every "
        f"backend. {cores} CPUs. Speed-up is against the 1-env row of the same family "
        "(best rounds). CPU per step is the user + system time of every process of the pool "
        "(this one, its workers, Playwright drivers and Chromium processes, from /proc) over "
        "the round, per env step (median round), less what all the pools burn while idle "
        f"({idle_rate:.2f} CPUs, measured with every pool idle, times the round's length); "
        "the cap is what that CPU cost allows on "
        f"{cores} cores if nothing else ran: {cores} s of CPU per second over the CPU per step.",
        "",
        "| configuration | steps/s (best round) | steps/s (median round) | vs 1 env "
        "| CPU ms per step | cap on all cores, steps/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, (best, med) in rates.items():
        one = "web (Chromium), 1 env" if name.startswith("web") else "text (WebShopText), 1 env"
        lines.append(
            f"| {name} | {best:,.0f} | {med:,.0f} | {best / rates[one][0]:.2f}x "
            f"| {cpu_ms[name]:.1f} | {cores * 1e3 / cpu_ms[name]:,.0f} |"
        )
    web1, web4 = "web (Chromium), 1 env", "web (Chromium), 4 envs, processes (a browser each)"
    txt1, txt4 = "text (WebShopText), 1 env", "text (WebShopText), 4 envs, processes"
    verdicts = []
    for one, four, what in ((web1, web4, "browser"), (txt1, txt4, "text")):
        cap = cores * 1e3 / cpu_ms[four]
        got = rates[four][0] / rates[one][0]
        verdicts.append(
            f"{what} envs: 4 processes reach {got:.2f}x one env (aim 1.8x); their CPU cost "
            f"({cpu_ms[four]:.1f} ms per step) caps {cores} cores at {cap:,.0f} steps/s, "
            f"{cap / rates[one][0]:.1f}x the 1-env rate"
        )
    lines += [
        "",
        "**What is left, and the floor.** "
        + "; ".join(verdicts)
        + f". The load average in the footer counts the other jobs that shared the {cores} "
        "cores during the run: when it is above the core count, part of the cap went to them, "
        "and a configuration whose steps are CPU-bound cannot scale past what is left. A "
        "ratio below the cap with idle cores is the pool's own serialisation (one driver, "
        "the GIL, round trips).",
    ]
    lines += [
        "",
        "The thread backend shares one Chromium, one Playwright driver and one Python "
        "interpreter (GIL) between its envs; the process backend runs a worker per env "
        "(`EnvPool(..., backend='process')`), each with its own interpreter and, for browser "
        "envs, its own Chromium (about 380 MiB each).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_pools")
    start = time.perf_counter()
    print(run(quick=True))
    print(f"took {time.perf_counter() - start:.0f} s")
