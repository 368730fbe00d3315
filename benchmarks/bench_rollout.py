"""Rollouts: the lockstep loop against the asynchronous engine, with and without partial
rollouts (APRIL), on a model server whose latency is long-tailed.

The model server is the fake OpenAI-compatible one of ``tests/fake_llm_server.py``: every
reply takes a lognormal latency with p50 200 ms and p99 2 s (10x; shorter than most real
generations, long enough that the client's CPU does not set the pace at 64 in flight), and
the "model" picks a tool call from a hash of the chat, so every mode plays the same
episodes. GRPO groups of 4.
All three modes send their requests through the same :class:`~agentgym.rollout.AsyncHTTPPolicy`
client and keep the same number of episodes in flight (64 or 256):

* **lockstep** — :func:`agentgym.rl.rollouts.group_rollouts` (the trainer's loop): each turn
  every active env waits for the whole batch of replies, then all envs step together;
  ``in flight / 4`` groups per call.
* **async** — :class:`~agentgym.rollout.RolloutEngine` with ``partial=False``: each env
  steps as soon as its own reply arrives; the same groups per call, every one run to the end.
* **async + partial** — the engine with ``partial=True``: the same episodes in flight, half
  as many groups per call (2x over-provisioning); a call stops at its target and the
  unfinished episodes carry over into the next call. Timed from a cold start, and the work
  left in the episodes still carried at the end is not counted: a conservative figure,
  closer to the steady state the more calls a row makes.

Each mode runs the same number of groups in total (several calls). Columns: complete groups
per second; policy-server idle fraction (1 - request-seconds served / (episodes in flight x
wall time)); env idle fraction (share of env-slot time an env spent neither in its own
reset/step nor waiting for its own reply: the barrier's waste and the empty tail); and the
share of the released episodes' tokens generated in an earlier call (carried over).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.rl.rollouts import group_rollouts
from agentgym.rollout import AsyncHTTPPolicy, LocalEnvSource, RolloutConfig, RolloutEngine
from agentgym.vector import EnvPool
from tests.fake_llm_server import FakeLLMServer, LognormalLatency

ENVS = ("agentgym/Sokoban-Tiny-v0", "agentgym/WebShopText-v0", "agentgym/CodeMath-L1-v0")
GROUP = 4
P50_S = 0.2


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
    engine = RolloutEngine(
        source,
        AsyncHTTPPolicy(url, "fake", max_connections=n, tool_messages="text"),
        itertools.count(),
        RolloutConfig(group_size=GROUP, max_in_flight=n, partial=partial),
    )
    row = Row()

    async def run() -> None:
        for version in range(calls * (2 if partial else 1)):
            clock.seconds = 0.0
            server.reset_counters()
            collection = await engine.collect(target, policy_version=version)
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


def _line(env_id: str, n: int, mode: str, row: Row, base: float) -> str:
    slot_s = n * row.seconds
    gps = row.groups / row.seconds
    server_idle = max(0.0, 1 - row.served_s / slot_s)
    env_idle = max(0.0, 1 - (row.env_s + row.served_s) / slot_s)
    carried = row.carried / row.tokens if row.tokens else 0.0
    name = env_id.split("/")[-1]
    return (
        f"| {name} | {n} | {mode} | {row.groups} | {gps:.2f} | {gps / base:.2f}x "
        f"| {server_idle:.0%} | {env_idle:.0%} | {carried:.0%} |"
    )


def run(quick: bool = False) -> str:
    calls = 1 if quick else 3
    lines = [
        "## Rollouts: lockstep vs asynchronous vs asynchronous + partial (APRIL)",
        "",
        (__doc__ or "").split("\n\n", 1)[1].strip(),
        "",
        f"{calls} lockstep calls of in-flight/4 groups per row; the same groups in total for "
        "every mode.",
        "",
        "| env | in flight | mode | groups | groups/s | vs lockstep | policy-server idle "
        "| env idle | tokens carried over |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    with FakeLLMServer(latency=LognormalLatency(P50_S, seed=0)) as server:
        for env_id in ENVS:
            for n in (64, 256):
                lock = _lockstep(env_id, server.url, server, n, calls)
                base = lock.groups / lock.seconds
                lines.append(_line(env_id, n, "lockstep", lock, base))
                for mode, partial in (("async", False), ("async + partial", True)):
                    row = _engine(env_id, server.url, server, n, calls, partial)
                    lines.append(_line(env_id, n, mode, row, base))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(run(quick=True))
