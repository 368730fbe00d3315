"""Fault-injection soak of the rollout engine: many episodes through ``collect`` while
everything around it fails, then a check of every invariant.

Faults: calls cancelled at random moments (some twice, so env calls are cut short), the
model server answering HTTP 500, dropping connections, stalling past the client's timeout
and refusing a prompt (HTTP 400, which stops a call); env steps that raise or hang past
``env_timeout_s``; pool worker processes killed (``source="pool"``); and the ``agentgym
serve`` server restarted under its sessions (``source="serve"``).

Checks (:meth:`SoakReport.problems`): every seed drawn is handed back in exactly one group;
every attempt in those groups was reported once to ``on_episode``, is either done (whole:
its last step and only that one ends it) or failed with a cause; no step after an episode
ended and never two calls at once on one env; every env the source made is closed, no
session is left on the server and no worker process outlives the pool.

Used by ``tests/rollout/test_rollout_soak.py`` (a few hundred episodes) and by
``python -m benchmarks.bench_rollout --soak`` (ten thousand).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.pools import EnvPool
from agentgym.rollout import (
    AsyncHTTPPolicy,
    Collection,
    CollectionError,
    EpisodeCallbacks,
    FailureRunError,
    LocalEnvSource,
    PoolEnvSource,
    RolloutConfig,
    RolloutEngine,
)
from agentgym.rollout.faults import cause_kind
from agentgym.rollout.records import Episode, Group
from tests.fake_llm_server import FailFirstAttempts
from tests.rollout.faulty import (
    EnvAudit,
    EnvFaults,
    FaultyLLMServer,
    GuardedEnv,
    RandomSteps,
    make_guarded,
)

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
BACKOFF_S = 1.0
"""How long the soak's caller waits after a FailureRunError before its next call."""
STALL_S = 300.0
"""A collect call that sees no episode end for this long is stuck (a worker restart may
take minutes on an overloaded machine: ``EnvPool.restart`` waits up to 300 s)."""


@dataclass
class SoakSpec:
    """How big the soak is and how often each fault strikes."""

    episodes: int = 400
    group_size: int = 4
    in_flight: int = 32
    source: str = "local"
    """``local`` (envs in this process), ``pool`` (an EnvPool of worker processes) or
    ``serve`` (sessions of an ``agentgym serve`` server)."""
    workers: int = 8
    env_crash: float = 0.005
    """Chance that an env step raises."""
    env_hang: float = 0.001
    """Chance that an env step hangs for ``hang_s`` (past ``env_timeout_s``)."""
    http_fail: float = 0.03
    """Share of request bodies answered 500 or dropped the first time (then cured)."""
    http_400: float = 0.0005
    """Chance that a request is refused with HTTP 400 (context length): stops the call."""
    stall: float = 0.002
    """Chance that a request is held past the client's timeout."""
    cancel: float = 0.25
    """Share of calls cancelled at a random moment (a fifth of those cancelled twice)."""
    kill_every_s: float = 1.5
    """Mean seconds between killed pool workers (``pool``)."""
    restart_every_s: float = 8.0
    """Mean seconds between server restarts (``serve``)."""
    env_timeout_s: float = 2.0
    hang_s: float = 4.0
    request_timeout_s: float = 1.0
    seed: int = 0
    progress_s: float = 0.0
    """Every this many seconds, a progress line on stderr (0: none), so that a long run
    that stops moving can be told from a slow one."""


@dataclass
class SoakReport:
    """What the soak saw; :meth:`problems` lists every broken invariant."""

    spec: SoakSpec
    groups: dict[int, Group] = field(default_factory=dict)
    twice: list[int] = field(default_factory=list)
    reports: Counter[int] = field(default_factory=Counter)
    drawn: list[int] = field(default_factory=list)
    exhausted: bool = False
    calls: int = 0
    cancelled: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    stalled: list[str] = field(default_factory=list)
    killed_workers: int = 0
    env_restarts: int = 0
    """Pool envs replaced by a new worker (after a kill, a crash or a hang)."""
    retired: list[int] = field(default_factory=list)
    """Pool indices given up (every restart attempt failed: each new worker was killed
    while it started); the soak goes on with fewer envs, and fails if none is left."""
    server_restarts: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)

    def deliver(self, groups: list[Group]) -> None:
        for group in groups:
            if group.seed in self.groups:
                self.twice.append(group.seed)
            self.groups[group.seed] = group

    @property
    def done(self) -> bool:
        return self.exhausted and len(self.groups) == len(self.drawn)

    @property
    def episodes(self) -> int:
        return sum(ep.status == "done" for g in self.groups.values() for ep in g.members)

    def attempts(self) -> list[Episode]:
        return [ep for g in self.groups.values() for ep in g.attempts]

    def problems(self) -> list[str]:
        out = [f"group of seed {s} handed back twice" for s in self.twice]
        if not self.done:
            out.append(f"{len(self.drawn) - len(self.groups)} drawn seeds never handed back")
        for ep in self.attempts():
            out += [f"traj {ep.traj_id}: {p}" for p in episode_problems(ep)]
            if self.reports[ep.traj_id] != 1:
                out.append(f"traj {ep.traj_id} reported {self.reports[ep.traj_id]} times")
        return out + self.violations + self.leftovers + self.stalled

    def summary(self) -> str:
        attempts = self.attempts()
        failed = len([ep for ep in attempts if ep.status != "done"])
        return (
            f"{self.spec.source}: {self.episodes} episodes returned whole in "
            f"{len(self.groups)} groups ({sum(g.usable for g in self.groups.values())} "
            f"usable); {failed} failed attempts by cause {dict(sorted(self.causes.items()))}; "
            f"{self.calls} calls, {self.cancelled} cancelled, errors "
            f"{dict(sorted(self.errors.items()))}; {self.killed_workers} workers killed, "
            f"{self.env_restarts} pool envs restarted, {len(self.retired)} retired; "
            f"{self.server_restarts} server restarts; {self.wall_s:.1f} s wall, "
            f"{self.cpu_s:.1f} s CPU, load {self.load[0]:.1f} -> {self.load[1]:.1f}; "
            f"{len(self.problems())} problems"
        )


def episode_problems(ep: Episode) -> list[str]:
    """What is wrong with one attempt of a handed-back group (nothing, when it is whole or
    failed with a cause)."""
    if ep.status == "done":
        if not ep.steps or not ep.steps[-1].done:
            return ["done but its last step does not end it"]
        if any(s.done for s in ep.steps[:-1]) or [s.step for s in ep.steps] != list(
            range(len(ep.steps))
        ):
            return ["a step after its end, or steps out of order"]
        return []
    if ep.status in ("infra_failure", "failed"):
        return [] if ep.cause else ["failed without a cause"]
    return [f"handed back while {ep.status}"]


def _seeds(report: SoakReport, count: int) -> Iterator[int]:
    for seed in range(count):
        report.drawn.append(seed)
        yield seed
    report.exhausted = True


class _Server:
    """The model server with the spec's faults."""

    def __init__(self, spec: SoakSpec, rng: random.Random):
        self.rng, self.spec = rng, spec
        fail = (
            FailFirstAttempts(every=max(1, round(1 / spec.http_fail))) if spec.http_fail else None
        )
        self.fake = FaultyLLMServer(
            fault=fail,
            refuse=lambda body: self._draw(spec.http_400),
            stall=lambda body: self._draw(spec.stall),
            stall_s=spec.request_timeout_s * 3,
        )

    def _draw(self, p: float) -> bool:
        return p > 0 and self.rng.random() < p


def _source(spec: SoakSpec, audit: EnvAudit, stack: contextlib.ExitStack) -> tuple[Any, Any]:
    """The env source of the spec, and the pool or server under it (None for local)."""
    if spec.source == "local":
        faults = EnvFaults(
            RandomSteps(spec.env_crash, spec.env_hang, spec.seed), hang_s=spec.hang_s
        )
        factory = functools.partial(_local_env, audit, faults)
        return LocalEnvSource(SOKOBAN, factory=factory), None
    if spec.source == "pool":
        fns = [
            functools.partial(make_guarded, SOKOBAN, spec.env_crash, spec.env_hang, spec.hang_s, i)
            for i in range(spec.workers)
        ]
        pool = stack.enter_context(EnvPool(fns, backend="process"))
        return PoolEnvSource(pool), pool
    from tests.rollout.serve_process import ServeProcess

    server = stack.enter_context(ServeProcess(SOKOBAN, max_sessions=spec.in_flight))
    return server.source(), server


def _local_env(audit: EnvAudit, faults: EnvFaults) -> gym.Env:
    return GuardedEnv(gym.make(SOKOBAN), audit, faults)


async def _one_call(engine: RolloutEngine, report: SoakReport, rng: random.Random) -> None:
    """One collect call of a random size, maybe cancelled (once, or twice) after a random
    number of episode ends; whatever it hands back (result or error) is delivered."""
    spec = report.spec
    report.calls += 1
    target = rng.randint(1, max(1, spec.in_flight // spec.group_size))
    task = asyncio.create_task(engine.collect(target, policy_version=report.calls // 3))
    result: Collection | None = None
    try:
        if spec.cancel and report.calls % max(1, round(1 / spec.cancel)) == 1:
            await _cancel_later(task, report, rng, target * spec.group_size)
        result = await _watched(task, report)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise  # the soak itself is being cancelled
    except FailureRunError as exc:
        report.errors["FailureRunError"] += 1
        report.deliver(exc.collection.groups)
        if engine.source.capacity == 0:  # every env retired: no call can go on, stop here
            report.stalled.append(f"call {report.calls}: no live env left ({exc})")
            return
        await asyncio.sleep(BACKOFF_S)  # as a trainer would: the source or server is down
    except CollectionError as exc:
        report.errors[type(exc.error).__name__] += 1
        report.deliver(exc.collection.groups)
    if result is not None:
        report.deliver(result.groups)


async def _watched(task: asyncio.Task[Collection], report: SoakReport) -> Collection:
    """The call's result; a call that sees no episode end for ``STALL_S`` is stuck (a
    deadlock): it is reported as a problem, cancelled, and the soak stops."""
    seen, since = sum(report.reports.values()), time.monotonic()
    while not task.done():
        await asyncio.wait({task}, timeout=1.0)
        now = sum(report.reports.values())
        if now != seen:
            seen, since = now, time.monotonic()
        elif time.monotonic() - since > STALL_S and not task.done():
            report.stalled.append(f"call {report.calls} saw no episode end for {STALL_S} s")
            task.cancel()
            await asyncio.wait({task})
    return task.result()


async def _cancel_later(
    task: asyncio.Task[Any], report: SoakReport, rng: random.Random, episodes: int
) -> None:
    """Cancel ``task`` once it has seen a random number of episode ends (below what it
    needs, so it usually still runs); a fifth of the time cancel it again while it stops."""
    ends = sum(report.reports.values()) + rng.randrange(episodes)
    while not task.done() and sum(report.reports.values()) < ends:
        await asyncio.sleep(0.005)  # polling the soak's own counter
    if task.done():
        return
    report.cancelled += 1
    task.cancel()
    if rng.random() < 0.2:
        await asyncio.sleep(rng.uniform(0.0, 0.05))
        task.cancel()


async def _chaos(
    spec: SoakSpec, target: Any, report: SoakReport, rng: random.Random, stop: asyncio.Event
) -> None:
    """Kill pool workers or restart the server at random moments until ``stop`` is set
    (a restart under way is finished first)."""
    every = spec.kill_every_s if spec.source == "pool" else spec.restart_every_s
    delay = rng.uniform(0.5, 1.5)  # the first one early: even a short soak has it
    while not await _stopped(stop, delay):
        if spec.source == "pool":
            remote = target._remote[rng.randrange(len(target._remote))]
            remote._proc.kill()
            report.killed_workers += 1
        else:
            await asyncio.to_thread(target.restart)
            report.server_restarts += 1
        delay = rng.expovariate(1 / every)


async def _stopped(stop: asyncio.Event, within_s: float) -> bool:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), within_s)
    return stop.is_set()


async def _progress(engine: RolloutEngine, report: SoakReport, stop: asyncio.Event) -> None:
    """A line on stderr every ``progress_s`` until ``stop`` is set."""
    t0 = time.monotonic()
    while not await _stopped(stop, report.spec.progress_s):
        print(
            f"[soak {report.spec.source} {time.monotonic() - t0:.0f} s] groups "
            f"{len(report.groups)}/{len(report.drawn)} drawn, attempts ended "
            f"{sum(report.reports.values())}, calls {report.calls}, errors "
            f"{dict(report.errors)}, in flight {len(engine._tasks)}, slots out "
            f"{engine.slots_out} of {engine.source.capacity}, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
            flush=True,
        )


async def _drive(engine: RolloutEngine, report: SoakReport, target: Any, seed: int) -> None:
    rng, stop = random.Random(seed), asyncio.Event()
    chaos = None
    if target is not None:
        chaos = asyncio.create_task(
            _chaos(report.spec, target, report, random.Random(seed + 1), stop)
        )
    done = asyncio.Event()  # the progress lines go on while the last calls run
    progress = (
        asyncio.create_task(_progress(engine, report, done)) if report.spec.progress_s else None
    )
    try:
        deadline = time.monotonic() + 60 + report.spec.episodes  # a soak that hangs fails
        while not report.done and not report.stalled and time.monotonic() < deadline:
            await _one_call(engine, report, rng)
        stop.set()
        if chaos is not None:  # the last calls run without faults around them
            await chaos
        while not report.done and not report.stalled and time.monotonic() < deadline:
            report.calls += 1
            with contextlib.suppress(CollectionError):
                report.deliver((await engine.collect(1)).groups)
    finally:
        stop.set()
        if chaos is not None and not chaos.done():
            await chaos
        done.set()
        if progress is not None:
            await progress
        await engine.policy.aclose()  # type: ignore[attr-defined]


def run_soak(spec: SoakSpec) -> SoakReport:
    """Run the soak of ``spec`` and return its report (see the module docstring)."""
    report = SoakReport(spec)
    audit = EnvAudit()
    t0, c0, l0 = time.perf_counter(), time.process_time(), os.getloadavg()[0]
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(_Server(spec, random.Random(spec.seed + 2)).fake)
        source, target = _source(spec, audit, stack)
        policy = AsyncHTTPPolicy(
            server.url,
            "fake",
            retries=2,
            backoff_s=0.01,
            timeout=spec.request_timeout_s,
            tool_messages="text",
            max_connections=spec.in_flight,
        )
        config = RolloutConfig(
            group_size=spec.group_size,
            max_in_flight=spec.in_flight,
            env_timeout_s=spec.env_timeout_s,
            episode_retries=1,
        )
        callbacks = EpisodeCallbacks(on_episode=lambda ep: report.reports.update([ep.traj_id]))
        seeds = _seeds(report, max(1, spec.episodes // spec.group_size))
        engine = RolloutEngine(source, policy, seeds, config, callbacks)
        try:
            asyncio.run(_drive(engine, report, target, spec.seed))
        finally:
            engine.close()
        if engine.slots_out:  # every slot back with the source
            report.leftovers.append(f"{engine.slots_out} env slots still out after close()")
        if isinstance(source, PoolEnvSource):
            report.env_restarts, report.retired = source.restarted, list(source.retired)
            if source._lent:
                report.leftovers.append(f"pool indices {sorted(source._lent)} still lent")
        _check_leftovers(spec, report, audit, target, source)
    report.wall_s = time.perf_counter() - t0
    report.cpu_s = time.process_time() - c0
    report.load = (l0, os.getloadavg()[0])
    report.causes.update(cause_kind(ep.cause) for ep in report.attempts() if ep.cause)
    report.violations += audit.violations
    report.violations += [
        f"traj {ep.traj_id}: {ep.cause}"
        for ep in report.attempts()
        if "contract breach" in (ep.cause or "")
    ]
    return report


def _check_leftovers(
    spec: SoakSpec, report: SoakReport, audit: EnvAudit, target: Any, source: Any
) -> None:
    """After the engine closed: every env closed, no session on the server, no worker
    process of the pool beyond its live ones."""
    if spec.source == "local" and audit.made != audit.closed:
        report.leftovers.append(f"{audit.made - audit.closed} of {audit.made} envs never closed")
    if spec.source == "serve":  # a session given up on is closed by a background thread
        deadline = time.monotonic() + 30
        while (left := target.active_sessions()) and time.monotonic() < deadline:
            time.sleep(0.1)
        if left:
            report.leftovers.append(
                f"{left} sessions left on the server 30 s after close(): "
                + ", ".join(_left_sessions(target, source))
            )
    if spec.source == "pool":
        target.close()
        alive = [r._proc.pid for r in target._remote if r._proc.is_alive()]
        if alive:
            report.leftovers.append(f"worker processes {alive} outlived the pool")


def _left_sessions(server: Any, source: Any) -> list[str]:
    """The ids the source opened that the server still holds, each with its step count
    (what to look at when a session outlived its close)."""
    import httpx

    left = []
    for k in range(next(source._ids)):
        episode_id = f"{source._prefix}{k}"
        state = httpx.get(server.url + "/state", params={"episode_id": episode_id}, timeout=10)
        if state.status_code == 200:
            left.append(f"{episode_id} (step {state.json().get('step_count')})")
    return left


def spec_for(source: str, episodes: int, in_flight: int = 32, seed: int = 0) -> SoakSpec:
    """The soak's settings for ``source``. Worker processes take seconds to start on a
    loaded machine, so a pool's env calls get a longer timeout (a reset on a replaced
    worker waits for it) and its workers are killed less often."""
    if source == "pool":
        return SoakSpec(
            episodes=episodes,
            source=source,
            in_flight=min(in_flight, SoakSpec.workers),
            env_timeout_s=15.0,
            hang_s=20.0,
            kill_every_s=6.0,
            seed=seed,
        )
    return SoakSpec(episodes=episodes, source=source, in_flight=in_flight, seed=seed)


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--episodes", type=int, default=SoakSpec.episodes)
    p.add_argument("--source", default="local", choices=["local", "pool", "serve"])
    p.add_argument("--in-flight", type=int, default=SoakSpec.in_flight)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    report = run_soak(spec_for(a.source, a.episodes, a.in_flight, a.seed))
    print(report.summary())
    for problem in report.problems()[:20]:
        print("  ", problem)


if __name__ == "__main__":
    main()
