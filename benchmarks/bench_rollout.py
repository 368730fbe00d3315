"""Rollouts: the lockstep loop against the asynchronous engine, with and without partial
rollouts (APRIL), on a model server whose latency is long-tailed.

The model server is the fake OpenAI-compatible one of ``tests/fake_llm_server.py``: every
reply takes a lognormal latency with p50 200 ms and p99 2 s (10x; shorter than most real
generations), and the "model" picks a tool call from a hash of the chat, so every mode plays
the same episodes. GRPO groups of 4. The server answers from threads of the benchmark's own
process (a py-spy profile at 256 in flight puts them at 3-9% of that process's CPU time).
All three modes send their requests through the same `agentgym.rollout.AsyncHTTPPolicy`
client and keep the same number of episodes in flight (64 or 256):

* **lockstep** — `agentgym.rollout.groups.group_rollouts` (the trainer's loop): each turn
  every active env waits for the whole batch of replies, then all envs step together;
  ``in flight / 4`` groups per call.
* **async** — `agentgym.rollout.RolloutEngine` with ``partial=False``: each env
  steps as soon as its own reply arrives; the same groups per call, every one run to the end.
* **async + partial** — the engine with ``partial=True``: the same episodes in flight, half
  as many groups per call (2x over-provisioning); a call stops at its target and the
  unfinished episodes carry over into the next call. Measured in steady state: two warm-up
  calls first (untimed: they fill the engine with carried episodes and grow the env set to
  its working size), then at least four consecutive timed calls (twice as many as the other
  modes make, when that is more).
  Each timed call starts with the episodes the previous call carried out, and its time
  counts the work it does on them; the work the first timed call inherits from the warm-up
  is about the work the last timed call leaves behind, so the window is neither credited
  nor charged for the carried episodes.

Each mode runs the same number of groups in total (several calls). The three modes of a row
run interleaved, round after round (each round in a rotated order, see
``benchmarks/timing.py``), on the same warm server; groups per second pools the rounds
(groups / seconds) and the range gives the lowest and highest round. Columns: complete groups
per second; policy-server idle fraction (1 - request-seconds served / (episodes in flight x
wall time)); env idle fraction (share of env-slot time an env spent neither in its own
reset/step nor waiting for its own reply: the barrier's waste and the empty tail); and the
share of the released episodes' tokens generated in an earlier call (carried over).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.pools import EnvPool
from agentgym.rollout import AsyncHTTPPolicy, LocalEnvSource, RolloutConfig, RolloutEngine
from agentgym.rollout.groups import group_rollouts
from tests.fake_llm_server import FakeLLMServer, LognormalLatency

ENVS = ("agentgym/Sokoban-Tiny-v0", "agentgym/WebShopText-v0", "agentgym/CodeMath-L1-v0")
GROUP = 4
P50_S = 0.2
PARTIAL_WARMUP_CALLS = 2
"""Untimed calls before async + partial is timed (steady state, see the module docstring)."""
PARTIAL_TIMED_CALLS = 4
"""At least this many consecutive timed async + partial calls per round."""


class EnvClock:
    """Seconds spent inside env reset/step calls, summed over envs (thread-safe)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._lock = threading.Lock()

    def add(self, dt: float) -> None:
        with self._lock:
            self.seconds += dt


class TimedEnv(gym.Wrapper):
    """Adds the time of each reset and step to an :class:`EnvClock`."""

    def __init__(self, env: gym.Env, clock: EnvClock):
        super().__init__(env)
        self.clock = clock

    def reset(self, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.env.reset(**kwargs)
        finally:
            self.clock.add(time.perf_counter() - t0)

    def step(self, action: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.env.step(action)
        finally:
            self.clock.add(time.perf_counter() - t0)


class LockstepHTTP:
    """A batched sync policy over the async client: one turn's requests all sent at once,
    the call returning when the last reply is in (the lockstep loop's barrier)."""

    def __init__(self, policy: AsyncHTTPPolicy):
        self.policy = policy
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        async def all_of() -> list[Generation]:
            return list(await asyncio.gather(*(self.policy.act(i) for i in inputs)))

        return asyncio.run_coroutine_threadsafe(all_of(), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


@dataclass
class Row:
    groups: int = 0
    seconds: float = 0.0
    served_s: float = 0.0
    env_s: float = 0.0
    tokens: int = 0
    carried: int = 0


def _lockstep(env_id: str, url: str, server: FakeLLMServer, n: int, calls: int) -> Row:
    clock = EnvClock()
    policy = LockstepHTTP(AsyncHTTPPolicy(url, "fake", max_connections=n, tool_messages="text"))
    seeds = itertools.count()
    row = Row()
    with EnvPool([lambda: TimedEnv(gym.make(env_id), clock)] * n, max_workers=min(n, 64)) as pool:
        pool.reset(seeds=list(range(n)))  # warm every env (sandboxes start) before timing
        for _ in range(calls):
            clock.seconds = 0.0
            server.reset_counters()
            t0 = time.perf_counter()
            batch = group_rollouts(
                pool, policy, [next(seeds) for _ in range(n // GROUP)], group_size=GROUP
            )
            row.seconds += time.perf_counter() - t0
            row.groups += n // GROUP
            row.served_s += server.busy_s
            row.env_s += clock.seconds
            row.tokens += batch.tokens
    policy.close()
    return row


def _engine(env_id: str, url: str, server: FakeLLMServer, n: int, calls: int, partial: bool) -> Row:
    clock = EnvClock()
    source = LocalEnvSource(env_id, factory=lambda: TimedEnv(gym.make(env_id), clock))
    warm = [source.acquire() for _ in range(n)]
    for i, slot in enumerate(warm):
        slot.reset(i)
    for slot in warm:
        source.release(slot, healthy=True)
    target = n // GROUP // (2 if partial else 1)
    warmup = PARTIAL_WARMUP_CALLS if partial else 0
    engine = RolloutEngine(
        source,
        AsyncHTTPPolicy(url, "fake", max_connections=n, tool_messages="text"),
        itertools.count(),
        RolloutConfig(group_size=GROUP, max_in_flight=n, partial=partial),
    )
    row = Row()

    async def run() -> None:
        timed = max(PARTIAL_TIMED_CALLS, 2 * calls) if partial else calls
        for version in range(warmup + timed):
            clock.seconds = 0.0
            server.reset_counters()
            collection = await engine.collect(target, policy_version=version)
            if version < warmup:
                continue
            s = collection.summary
            row.seconds += s.seconds
            row.groups += s.usable_groups
            row.served_s += server.busy_s
            row.env_s += clock.seconds
            row.tokens += s.tokens
            row.carried += s.carried_tokens

    asyncio.run(run())
    engine.close()
    return row


def _pooled(rows: list[Row]) -> Row:
    return Row(*(sum(getattr(r, f) for r in rows) for f in Row.__dataclass_fields__))


def _line(env_id: str, n: int, mode: str, rounds: list[Row], base: float) -> str:
    row = _pooled(rounds)
    slot_s = n * row.seconds
    gps = row.groups / row.seconds
    each = [r.groups / r.seconds for r in rounds]
    server_idle = max(0.0, 1 - row.served_s / slot_s)
    env_idle = max(0.0, 1 - (row.env_s + row.served_s) / slot_s)
    carried = row.carried / row.tokens if row.tokens else 0.0
    name = env_id.split("/")[-1]
    return (
        f"| {name} | {n} | {mode} | {row.groups} | {gps:.2f} | {min(each):.2f}-{max(each):.2f} "
        f"| {gps / base:.2f}x "
        f"| {server_idle:.0%} | {env_idle:.0%} | {carried:.0%} |"
    )


MODES = ("lockstep", "async", "async + partial")


def _rounds(env_id: str, n: int, server: FakeLLMServer, calls: int, rounds: int) -> dict:
    """Each mode's rows, one per round, the modes interleaved in a rotated order."""
    url = server.url
    fns = {
        "lockstep": lambda: _lockstep(env_id, url, server, n, calls),
        "async": lambda: _engine(env_id, url, server, n, calls, partial=False),
        "async + partial": lambda: _engine(env_id, url, server, n, calls, partial=True),
    }
    out: dict[str, list[Row]] = {mode: [] for mode in MODES}
    for r in range(rounds):
        shift = r % len(MODES)
        for mode in MODES[shift:] + MODES[:shift]:
            out[mode].append(fns[mode]())
    return out


def run(
    quick: bool = False,
    envs: Sequence[str] = ENVS,
    sizes: Sequence[int] = (64, 256),
    calls: int | None = None,
    rounds: int | None = None,
) -> str:
    calls = calls or 1
    rounds = rounds or (1 if quick else 2)
    lines = [
        "## Rollouts: lockstep vs asynchronous vs asynchronous + partial (APRIL)",
        "",
        (__doc__ or "").split("\n\n", 1)[1].strip(),
        "",
        f"Per round: {calls} lockstep calls of in-flight/4 groups, {calls} async calls of the "
        f"same size, {PARTIAL_WARMUP_CALLS} warm-up + "
        f"{max(PARTIAL_TIMED_CALLS, 2 * calls)} consecutive timed async + partial calls of "
        f"half that size; {rounds} rounds per row.",
        "",
        "| env | in flight | mode | groups | groups/s | range over rounds | vs lockstep "
        "| policy-server idle | env idle | tokens carried over |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    with FakeLLMServer(latency=LognormalLatency(P50_S, seed=0)) as server:
        for env_id in envs:
            for n in sizes:
                rows = _rounds(env_id, n, server, calls, rounds)
                lock = _pooled(rows["lockstep"])
                base = lock.groups / lock.seconds
                for mode in MODES:
                    lines.append(_line(env_id, n, mode, rows[mode], base))
                partial = _pooled(rows["async + partial"])
                ratios.append(partial.groups / partial.seconds / base)
                print(lines[-3:], flush=True)
    lines += [
        "",
        f"Async + partial vs lockstep, complete groups per second: {min(ratios):.2f}x to "
        f"{max(ratios):.2f}x over the {len(ratios)} rows (target: at least 1.2x).",
    ]
    return "\n".join(lines) + "\n"


def soak(episodes: int = 10_000, sources: Sequence[str] = ("local", "pool", "serve")) -> str:
    """The fault-injection soak (``tests/rollout/soak.py``) at full scale, one run per env
    source: episodes handed back, failures by cause, wall and CPU time, machine load, and
    every broken invariant (there must be none)."""
    from tests.rollout import soak as harness

    lines = [
        "## Rollout engine under faults (soak)",
        "",
        (harness.__doc__ or "").split("\n\n", 2)[1].strip(),
        "",
    ]
    for source in sources:
        spec = dataclasses.replace(harness.spec_for(source, episodes), progress_s=60.0)
        report = harness.run_soak(spec)
        lines.append(f"* {report.summary()}")
        lines += [f"  * problem: {p}" for p in report.problems()[:20]]
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(
        description="a smoke run of one section (the full run: python -m benchmarks rollout); "
        "--soak runs the fault-injection soak instead"
    )
    p.add_argument("--envs", nargs="*", default=list(ENVS))
    p.add_argument("--sizes", nargs="*", type=int, default=[64])
    p.add_argument("--calls", type=int, default=1)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--soak", action="store_true", help="run the fault-injection soak")
    p.add_argument("--episodes", type=int, default=10_000, help="episodes per soak run")
    p.add_argument("--sources", nargs="*", default=["local", "pool", "serve"])
    a = p.parse_args()
    if a.soak:
        print(soak(a.episodes, a.sources))
    else:
        print(run(envs=a.envs, sizes=a.sizes, calls=a.calls, rounds=a.rounds))
