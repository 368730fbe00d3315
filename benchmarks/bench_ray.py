"""Env steps/s through the Ray pool vs the local pool, and scaling over 1..8 Ray actors.

Both pools run the same env (agentgym/Sokoban-Tiny-v0) with the same action stream: every
round steps all envs at once ({index: action} for all), and envs whose episode ended are
reset (resets not counted as steps). Two loads:

* ``cpu``: Sokoban as is (~tens of microseconds per step): shows the per-step overhead of
  the Ray round trip.
* ``io``: Sokoban plus 20 ms of waiting per step (what a browser, sandbox or HTTP user
  costs without using CPU): shows what spreading envs over actors buys.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

ENV_ID = "agentgym/Sokoban-Tiny-v0"
IO_DELAY_S = 0.02


class Latency(gym.Wrapper):
    """Adds a fixed wait to every step (an I/O-bound env without the I/O)."""

    def __init__(self, env: gym.Env, delay_s: float):
        super().__init__(env)
        self.delay_s = delay_s

    def step(self, action: Any) -> Any:
        time.sleep(self.delay_s)
        return self.env.step(action)


def make_cpu() -> gym.Env:
    import agentgym  # noqa: F401

    return gym.make(ENV_ID)


def make_io() -> gym.Env:
    import agentgym  # noqa: F401

    return Latency(gym.make(ENV_ID), IO_DELAY_S)


def _moves() -> list[str]:
    from agentgym.parsing import render_tool_call

    return [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]


def _measure(pool: Any, rounds: int) -> float:
    """Steps per second over ``rounds`` rounds of stepping every env."""
    moves = _moves()
    n = pool.num_envs
    pool.reset(seeds=list(range(n)))
    pool.step({i: moves[0] for i in range(n)})  # warm-up round
    steps = 0
    start = time.perf_counter()
    for r in range(rounds):
        results = pool.step({i: moves[(r + i) % 4] for i in range(n)})
        steps += len(results)
        done = [i for i, x in results.items() if x.terminated or x.truncated]
        if done:
            pool.reset(done, seeds=[r * n + i for i in done])
    return steps / (time.perf_counter() - start)


def _row(name: str, envs: int, actors: str, sps: float, base: float | None) -> str:
    per_step = 1e6 / sps
    rel = f"{sps / base:.2f}x" if base else "1.00x"
    return f"| {name} | {envs} | {actors} | {sps:,.0f} | {per_step:,.0f} | {rel} |"


def run(quick: bool = False) -> str:
    import ray

    from agentgym.distributed import RayEnvPool, ensure_ray
    from agentgym.vector import EnvPool

    ensure_ray(num_cpus=2)
    rounds_cpu = 60 if quick else 300
    rounds_io = 10 if quick else 40
    n = 8
    lines = [
        "## Ray env pool vs local pool",
        "",
        "Machine: 2-core CPU, no GPU, shared with other jobs while measured (figures are "
        "indicative). Env: `agentgym/Sokoban-Tiny-v0`; every round steps all envs with "
        "`pool.step({i: action})`; finished episodes are reset. Baseline: the local "
        "`agentgym.vector.EnvPool` (threads, and sync) on the same env and actions. Ray: "
        "`agentgym.distributed.RayEnvPool` on a local Ray (2 CPUs, actors at 0.25 CPU). "
        f"`io` adds {IO_DELAY_S * 1000:.0f} ms of waiting to each step (an I/O-bound env).",
        "",
        "| pool | envs | actors x slots | env steps/s | us per step | vs baseline |",
        "|---|---|---|---|---|---|",
    ]
    results: dict[str, float] = {}

    def local(factory: Callable[[], gym.Env], backend: str, rounds: int) -> float:
        with EnvPool([factory] * n, backend=backend) as pool:
            return _measure(pool, rounds)

    def remote(factory: Callable[[], gym.Env], actors: int, rounds: int, **kw: Any) -> float:
        with RayEnvPool([factory] * n, envs_per_actor=n // actors, num_cpus=0.25, **kw) as pool:
            return _measure(pool, rounds)

    for load, factory, rounds in (("cpu", make_cpu, rounds_cpu), ("io", make_io, rounds_io)):
        base = results[f"{load}-thread"] = local(factory, "thread", rounds)
        lines.append(_row(f"local thread ({load})", n, "-", base, None))
        if load == "cpu":
            sync = local(factory, "sync", rounds)
            lines.append(_row(f"local sync ({load})", n, "-", sync, base))
        for actors in (1, 2, 4, 8):
            sps = remote(factory, actors, rounds)
            lines.append(_row(f"Ray ({load})", n, f"{actors} x {n // actors}", sps, base))
        if load == "io":
            sps = remote(factory, 1, rounds, async_actor=True)
            lines.append(_row(f"Ray async actor ({load})", n, f"1 x {n}", sps, base))
    ray.shutdown()
    lines += [
        "",
        "Reading: on the CPU-cheap env the Ray round trip (serialising the action and the "
        "result, scheduling the actor task) dominates, so the local pool is faster; Ray pays "
        "off when envs are heavy, need isolation, or outgrow one machine. With I/O-bound "
        "steps, more actors (or one async actor whose slots overlap) step envs in parallel, "
        "as the local thread pool does. On 2 shared cores the scaling of CPU-bound envs "
        "beyond 2 actors is flat by construction.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(quick=True))
