"""The rollout engine's fault semantics, each an invariant (issue 38).

* A cancelled ``collect`` stops what it started before it raises: its episodes pause (a
  second cancel cuts env calls short: those attempts end ``interrupted`` and are played
  again), the next call drives each of them once, and the groups it had finished come
  back with the next call.
* Every finished group is handed back exactly once: a refused request (HTTP 400) or a
  raising callback stops the call with a ``CollectionError`` that carries them.
* A run of infrastructure failures with no finished episode stops the call with a
  ``FailureRunError`` instead of using up the task seeds; every seed drawn is in a group
  handed back or still in the engine.
* No more env slots are out than the source's live capacity.
* ``close()`` frees every env the source made.

The envs are real Sokoban-Tiny envs under :class:`tests.rollout.faulty.GuardedEnv`, which
reports any step after termination and any two calls at once on one env.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import threading
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.http import PolicyRequestError
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.rollout import (
    AsyncHTTPPolicy,
    CollectionError,
    EpisodeCallbacks,
    FailureRunError,
    LocalEnvSource,
    PoolEnvSource,
    RolloutConfig,
    RolloutEngine,
)
from agentgym.rollout.records import Episode, Group
from tests.fake_llm_server import ScriptedChatPolicy
from tests.rollout.faulty import (
    EnvAudit,
    EnvFaults,
    FaultyLLMServer,
    GuardedEnv,
    make_counted,
)
from tests.rollout.held_group import HoldOneTask, collect_with_held_group
from tests.rollout.test_rollout_counting import Active, drawing
from tests.rollout.test_rollout_engine import GatedPolicy, engine_results, lockstep

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
DEADLINE_S = 60.0


def guarded_source(audit: EnvAudit, faults: EnvFaults | None = None) -> LocalEnvSource:
    return LocalEnvSource(SOKOBAN, factory=lambda: GuardedEnv(gym.make(SOKOBAN), audit, faults))


def task_ids(seeds: list[int]) -> dict[int, str]:
    env = gym.make(SOKOBAN)
    try:
        return {s: env.reset(seed=s)[1]["task_id"] for s in seeds}
    finally:
        env.close()


async def until(condition: Any, what: str) -> None:
    """Poll ``condition()`` on the event loop until it holds (generous deadline)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not condition():
        assert loop.time() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.01)


def hang_once_on_seed_1() -> EnvFaults:
    """Faults under which the first step of seed 1's first attempt hangs (until released)."""
    hung: set[int] = set()

    def rule(seed: int | None, turn: int) -> str | None:
        if seed == 1 and turn == 1 and not hung:
            hung.add(1)
            return "hang"
        return None

    return EnvFaults(rule)


async def cut_short_then_collect(
    engine: RolloutEngine,
    collecting: asyncio.Task[Any],
    faults: EnvFaults,
    *gates: threading.Event,
) -> Any:
    """The second cancel of a stopping call (which cuts its env calls short), then the
    hung env call and ``gates`` released, then the next call's collection."""
    collecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await collecting
    faults.release.set()  # the env call ends after its episode gave it up
    for gate in gates:
        gate.set()
    return await engine.collect(2)


def run_releasing(main: Any, engine: RolloutEngine, faults: EnvFaults) -> Any:
    """``asyncio.run(main)``; then, whatever happened, no hung env call and no engine left."""
    try:
        return asyncio.run(main)
    finally:
        faults.release.set()
        engine.close()


def seeds_of(groups: list[Group]) -> list[int]:
    return sorted(g.seed for g in groups)


def test_a_cancelled_collect_pauses_its_episodes_and_the_next_call_drives_each_once() -> None:
    seeds, k = list(range(6)), 2
    tasks = task_ids(seeds)
    quick = [0, 1]
    held = {tasks[s] for s in seeds if s not in quick} - {tasks[s] for s in quick}
    policy, audit = GatedPolicy(held), EnvAudit()
    streamed: list[int] = []
    engine = RolloutEngine(
        guarded_source(audit), policy, seeds, RolloutConfig(group_size=k, max_in_flight=12)
    )

    async def cancel_then_collect() -> Any:
        collecting = asyncio.create_task(
            engine.collect(6, on_group=lambda g: streamed.append(g.seed))
        )
        await until(lambda: len(streamed) == 2 and policy.waiting == 8, "quick groups done")
        collecting.cancel()  # a timeout, a shutdown
        with pytest.raises(asyncio.CancelledError):
            await collecting
        # stopped before it raised: every unfinished episode paused, no task drives it
        assert len(engine.carried) == 8
        assert all(ep.status == "paused" and ep.driver is None for ep in engine.carried)
        policy.gate.set()
        return await engine.collect(6)

    try:
        second = asyncio.run(cancel_then_collect())
    finally:
        engine.close()
    # the groups the cancelled call finished come back with the next call, once
    assert sorted(streamed) == quick and second.summary.delivered_late == 2
    assert seeds_of(second.groups) == seeds and second.summary.carried_in == 8
    assert audit.violations == []
    assert engine_results(second.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)


def test_a_second_cancel_cuts_the_env_call_short_and_that_attempt_is_played_again() -> None:
    seeds, k = [0, 1], 2
    tasks = task_ids(seeds)
    audit = EnvAudit()
    faults = hang_once_on_seed_1()
    policy = GatedPolicy({tasks[1]} - {tasks[0]})  # the other member waits for its model
    engine = RolloutEngine(
        guarded_source(audit, faults),
        policy,
        seeds,
        RolloutConfig(group_size=k, max_in_flight=4, partial=False),
    )

    async def cancel_twice_then_collect() -> Any:
        collecting = asyncio.create_task(engine.collect(2))
        await asyncio.to_thread(faults.entered.wait, DEADLINE_S)
        await until(lambda: policy.waiting == 1, "the other member waits for its model")
        collecting.cancel()  # soft stop: waits for the hung step...
        other = next(ep for ep in engine.carried if ep.seed == 1 and ep.phase == "policy")
        await until(lambda: other.status == "paused", "the stop has begun")
        return await cut_short_then_collect(engine, collecting, faults, policy.gate)

    collection = run_releasing(cancel_twice_then_collect(), engine, faults)
    assert collection.summary.causes == {"interrupted": 1} and collection.summary.retries == 1
    group = next(g for g in collection.groups if g.seed == 1)
    (cut,) = group.retired
    assert cut.status == "infra_failure" and cut.cause.startswith("interrupted: ")
    assert group.usable and collection.summary.usable_groups == 2  # no retry was used up
    assert audit.violations == []
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)
    assert audit.closed == audit.made  # the interrupted env was retired and closed


def test_in_lockstep_a_stop_waits_for_the_steps_sent_with_the_answer_and_a_second_cancel_cuts_them() -> (
    None
):
    """Lockstep sends a turn's env steps the moment the policy answers, before any
    episode's task runs again: a soft stop finds those episodes inside their steps and
    waits for them (it pauses only episodes waiting for the policy); a second cancel
    interrupts the turn (its batch is answered as a whole), and both attempts are played
    again in full by the next call."""
    seeds = [0, 1]
    audit = EnvAudit()
    faults = hang_once_on_seed_1()
    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    engine = RolloutEngine(guarded_source(audit, faults), ScriptedChatPolicy(), seeds, config)

    async def cancel_twice_then_collect() -> Any:
        collecting = asyncio.create_task(engine.collect(2))
        await asyncio.to_thread(faults.entered.wait, DEADLINE_S)
        running = sorted(engine.carried, key=lambda ep: ep.seed)
        # both answers were taken and both steps sent (the turn is answered as a whole)
        assert [(ep.phase, ep.pending) for ep in running] == [("step", None)] * 2
        collecting.cancel()  # soft stop: the turn's steps are waited for...
        for _ in range(20):  # the stop cancels what waits for the policy in its first pass
            await asyncio.sleep(0)
        assert not collecting.done() and [ep.phase for ep in running] == ["step"] * 2
        return await cut_short_then_collect(engine, collecting, faults)

    collection = run_releasing(cancel_twice_then_collect(), engine, faults)
    assert collection.summary.causes == {"interrupted": 2} and collection.summary.retries == 2
    for group in collection.groups:
        (cut,) = group.retired
        assert cut.status == "infra_failure" and cut.cause.startswith("interrupted: ")
    assert audit.violations == []
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, 1)
    assert audit.closed == audit.made  # the interrupted env was retired and closed


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_episodes_of_an_event_loop_closed_midway_are_taken_over_once() -> None:
    """A loop closed under a running collect (its tasks never finish): the next call, on a
    new loop, takes its episodes over instead of waiting for tasks that will never run."""
    seeds, k = [0, 1], 2
    tasks = task_ids(seeds)
    policy, audit = GatedPolicy({tasks[1]} - {tasks[0]}), EnvAudit()
    config = RolloutConfig(group_size=k, max_in_flight=4, partial=False)
    engine = RolloutEngine(guarded_source(audit), policy, seeds, config)
    loop = asyncio.new_event_loop()
    try:
        collecting = loop.create_task(engine.collect(2))
        loop.run_until_complete(until(lambda: policy.waiting == 2, "seed 1 waits"))
        assert not collecting.done()
    finally:
        loop.close()  # its tasks are dropped, unfinished
    policy.gate = asyncio.Event()
    policy.gate.set()
    try:
        collection = engine.collect_sync(2)
    finally:
        engine.close()
    # group 0 finished under the lost loop (handed back now) or finishes now: once either way
    assert seeds_of(collection.groups) == seeds and collection.summary.carried_in >= 2
    assert audit.violations == [] and audit.made == audit.closed
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)


def test_a_refused_request_hands_back_the_finished_groups_on_the_error() -> None:
    """HTTP 400 (a prompt over the context length) in one episode of the third group, once
    the first two groups are finished: the call raises, carrying those two groups."""
    seeds, k = [0, 1, 2], 2
    doomed = gym.make(SOKOBAN).reset(seed=2)[0]["text"]
    released = threading.Event()
    refused: list[int] = []
    lock = threading.Lock()

    def refuse_once(body: dict) -> bool:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        if first != doomed or len(body["messages"]) < 3:
            return False
        assert released.wait(DEADLINE_S), "the other groups never finished"
        with lock:
            refused.append(1)
            return len(refused) == 1

    streamed: list[Group] = []

    def on_group(group: Group) -> None:
        streamed.append(group)
        if len(streamed) == 2:
            released.set()

    with FaultyLLMServer(refuse=refuse_once) as server:
        policy = AsyncHTTPPolicy(server.url, "fake", retries=0, tool_messages="text")
        config = RolloutConfig(group_size=k, max_in_flight=6, partial=False)
        engine = RolloutEngine(LocalEnvSource(SOKOBAN), policy, seeds, config)
        try:
            with pytest.raises(CollectionError, match="maximum context length") as raised:
                engine.collect_sync(3, on_group=on_group)
            rest = engine.collect_sync(1, on_group=on_group) if len(streamed) < 3 else None
        finally:
            engine.close()
    rest_groups = rest.groups if rest is not None else []
    error = raised.value
    assert isinstance(error.__cause__, PolicyRequestError) and error.status == 400
    assert server.refused == 1
    # every group handed back once: on the error (what ended before the call stopped,
    # the two finished ones first), or by the next call
    got = error.collection.groups + rest_groups
    assert [g.seed for g in got] == [g.seed for g in streamed] and seeds_of(got) == seeds
    assert seeds_of(error.collection.groups[:2]) == [0, 1]
    assert error.collection.summary.usable_groups == 2
    # the refused episode is reported with its cause and never retried
    last = got[-1]
    (failed,) = last.failures
    assert last.seed == 2 and not last.usable and failed.status == "failed"
    assert failed.cause.startswith("policy_refused: PolicyRequestError: ")
    assert "answered HTTP 400" in failed.cause
    assert len(last.retired) == 0
    assert engine_results(got) == {
        key: v
        for key, v in lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k).items()
        if key != (2, failed.member)
    }


def test_a_raising_callback_stops_the_call_with_the_groups_it_released() -> None:
    def on_group(group: Group) -> None:
        if group.seed == 1:
            raise ValueError("disk full")

    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN),
        ScriptedChatPolicy(),
        [0, 1, 2, 3],
        RolloutConfig(group_size=1, max_in_flight=1, partial=False),
    )
    try:
        with pytest.raises(CollectionError, match="disk full") as raised:
            engine.collect_sync(4, on_group=on_group)
        rest = engine.collect_sync(4)
    finally:
        engine.close()
    assert isinstance(raised.value.__cause__, ValueError)
    assert [g.seed for g in raised.value.collection.groups] == [0, 1]
    assert [g.seed for g in rest.groups] == [2, 3]


class BrokenReset(gym.Wrapper):
    """A simulator that is down (every reset fails) while ``down`` is set."""

    down = threading.Event()

    def reset(self, **kwargs: Any) -> Any:
        if BrokenReset.down.is_set():
            raise ConnectionError("simulator unreachable")
        return self.env.reset(**kwargs)


def test_an_outage_stops_the_call_and_uses_up_no_seed() -> None:
    """A source that is down: the run of failures stops the call (no finished episode, so
    nothing handed back), every failed attempt is reported with its cause, and its group
    stays in the engine; once the source is back, the next call plays those same seeds."""
    drawn: list[int] = []
    reported: list[Episode] = []
    source = LocalEnvSource(SOKOBAN, factory=lambda: BrokenReset(Active(gym.make(SOKOBAN))))
    config = RolloutConfig(group_size=2, max_in_flight=4, partial=False)
    assert config.failure_limit == 16
    Active.now = Active.most = 0
    engine = RolloutEngine(
        source,
        ScriptedChatPolicy(),
        drawing(iter(range(500)), drawn),
        config,
        EpisodeCallbacks(on_episode=reported.append),
    )
    BrokenReset.down.set()
    try:
        with pytest.raises(FailureRunError, match="16 infrastructure failures in a row") as raised:
            engine.collect_sync(4)
        in_outage = list(drawn)
        BrokenReset.down.clear()  # the simulator is back
        after = engine.collect_sync(1)
    finally:
        BrokenReset.down.clear()
        engine.close()
    error = raised.value
    assert "env_error 16" in str(error) and "simulator unreachable" in str(error)
    failed = [ep for ep in reported if ep.status != "done"]
    assert error.collection.groups == [] and len(failed) == error.collection.summary.infra_failures
    assert len(failed) >= 16  # and those of env calls that ended while the call stopped
    # 2 groups were running; 2 more started one at a time once nothing ran
    assert in_outage == [0, 1, 2, 3]
    assert all(ep.in_outage for ep in failed)
    assert all("ConnectionError: simulator unreachable" in ep.cause for ep in failed)
    # the same seeds are played again (with one new group), each whole, with the
    # outage's attempts on record
    assert sorted(g.seed for g in after.groups) == [0, 1, 2, 3, 4] and drawn == [0, 1, 2, 3, 4]
    assert after.summary.usable_groups == 5
    assert Active.most == 4  # 8 episodes to play again, but never more than 4 at once
    assert sorted(ep.traj_id for g in after.groups for ep in g.retired) == sorted(
        ep.traj_id for ep in failed
    )


class DownFrom(gym.Wrapper):
    """Resets of seeds from ``first`` on fail (their simulator is down)."""

    def __init__(self, env: gym.Env, first: int):
        super().__init__(env)
        self.first = first

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        if seed is not None and seed >= self.first:
            raise ConnectionError("simulator unreachable")
        return self.env.reset(seed=seed, options=options)


def test_no_new_seed_is_drawn_while_a_run_of_failures_lasts() -> None:
    """Seed 0 plays (held at its second turn), seeds 1-3 fail at once: while seed 0 still
    runs, no new seed is drawn. Seed 0 finishing ends the run: the three failures were
    ordinary ones, and their groups are handed back excluded."""
    drawn: list[int] = []
    failed: list[Episode] = []
    policy = GatedPolicy({task_ids([0])[0]})
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN, factory=lambda: DownFrom(gym.make(SOKOBAN), 1)),
        policy,
        drawing(iter(range(100)), drawn),
        RolloutConfig(group_size=1, max_in_flight=4, episode_retries=0),
        EpisodeCallbacks(on_episode=lambda ep: failed.append(ep) if ep.cause else None),
    )

    async def run() -> Any:
        collecting = asyncio.create_task(engine.collect(1))
        await until(lambda: len(failed) == 3 and policy.waiting == 1, "1-3 failed, 0 waits")
        assert drawn == [0, 1, 2, 3]  # nothing new while seed 0 runs
        policy.gate.set()
        return await collecting

    try:
        collection = asyncio.run(run())
    finally:
        engine.close()
    assert drawn[:4] == [0, 1, 2, 3] and collection.summary.causes == {"env_error": 3}
    assert sorted(g.seed for g in collection.groups)[:4] == [0, 1, 2, 3]
    assert not any(ep.in_outage for ep in failed)
    assert [g.usable for g in sorted(collection.groups, key=lambda g: g.seed)][:4] == [
        True,
        False,
        False,
        False,
    ]


def test_an_endless_seed_stream_over_a_failing_source_still_returns() -> None:
    source = LocalEnvSource(SOKOBAN, factory=lambda: BrokenReset(gym.make(SOKOBAN)))
    config = RolloutConfig(group_size=1, max_in_flight=2, episode_retries=0, failure_run_limit=5)
    engine = RolloutEngine(source, ScriptedChatPolicy(), itertools.count(), config)
    BrokenReset.down.set()
    try:
        with pytest.raises(FailureRunError, match="5 infrastructure failures in a row"):
            engine.collect_sync(1)
    finally:
        BrokenReset.down.clear()
        engine.close()


def test_a_finished_episode_ends_the_run_of_failures() -> None:
    """Failures that alternate with finished episodes are no run: the call goes on."""
    audit = EnvAudit()
    faults = EnvFaults(lambda seed, turn: "raise" if seed is not None and seed % 2 else None)
    config = RolloutConfig(group_size=1, max_in_flight=1, episode_retries=0, failure_run_limit=2)
    engine = RolloutEngine(guarded_source(audit, faults), ScriptedChatPolicy(), range(8), config)
    try:
        collection = engine.collect_sync(4)
    finally:
        engine.close()
    assert collection.summary.causes == {"env_error": 3}
    assert seeds_of(collection.usable_groups) == [0, 2, 4, 6]
    with pytest.raises(InvalidConfigError, match="failure_run_limit"):
        RolloutConfig(failure_run_limit=0)


class ShrinkingSource(LocalEnvSource):
    """A source that retires every env given back unhealthy (as a pool that cannot
    replace one does) and records any acquire beyond its capacity."""

    def __init__(self, capacity: int, audit: EnvAudit, faults: EnvFaults):
        super().__init__(SOKOBAN, factory=lambda: GuardedEnv(gym.make(SOKOBAN), audit, faults))
        self._capacity, self.lent, self.most_lent = capacity, 0, 0
        self.over: list[int] = []
        self._count = threading.Lock()

    @property  # type: ignore[override]
    def capacity(self) -> int | None:
        return self._capacity

    @capacity.setter
    def capacity(self, value: int | None) -> None:  # LocalEnvSource sets it to None
        pass

    def acquire(self) -> Any:
        with self._count:
            self.lent += 1
            self.most_lent = max(self.most_lent, self.lent)
            if self.lent > self._capacity:
                self.over.append(self.lent)
        return super().acquire()

    def release(self, slot: Any, *, healthy: bool) -> None:
        super().release(slot, healthy=healthy)
        with self._count:
            self.lent -= 1
            if not healthy:
                self._capacity -= 1


def test_slots_out_never_exceed_the_live_capacity() -> None:
    audit = EnvAudit()
    crashed: set[int] = set()

    def crash_first_attempt(seed: int | None, turn: int) -> str | None:
        if seed in (1, 2) and seed not in crashed:
            crashed.add(seed)
            return "raise"
        return None

    source = ShrinkingSource(4, audit, EnvFaults(crash_first_attempt))
    config = RolloutConfig(group_size=2, max_in_flight=4, partial=False)
    engine = RolloutEngine(source, ScriptedChatPolicy(), range(6), config)
    try:
        collection = engine.collect_sync(6)
    finally:
        engine.close()
    assert source.capacity == 2 and source.over == [] and source.most_lent == 4
    assert collection.summary.causes == {"env_error": 2}
    assert collection.summary.usable_groups == 6 and audit.violations == []


def test_a_source_with_no_live_env_left_stops_the_call() -> None:
    audit = EnvAudit()
    source = ShrinkingSource(2, audit, EnvFaults(lambda seed, turn: "raise"))
    config = RolloutConfig(group_size=1, max_in_flight=2, episode_retries=5)
    ended: list[Episode] = []
    callbacks = EpisodeCallbacks(on_episode=ended.append)
    engine = RolloutEngine(source, ScriptedChatPolicy(), range(100), config, callbacks)
    try:
        with pytest.raises(FailureRunError, match="no live env left"):
            engine.collect_sync(1)
        assert source.over == [] and source.capacity == 0
        # the attempts that ran failed on their envs; the retries that found no env left
        # to lend pause where they were (no slot, no reset), never reported as ended
        assert [ep.status for ep in ended] == ["infra_failure"] * 2
        assert all(ep.cause.startswith("env_error") for ep in ended)
    finally:
        engine.close()
    # a source with nothing left when a call starts: the call draws no seed at all
    drawn: list[int] = []
    empty = ShrinkingSource(2, audit, EnvFaults(lambda seed, turn: None))
    engine = RolloutEngine(empty, ScriptedChatPolicy(), drawing(iter(range(9)), drawn), config)
    empty._capacity = 0  # every env retired since
    try:
        with pytest.raises(FailureRunError, match="no live env left"):
            engine.collect_sync(1)
    finally:
        engine.close()
    assert drawn == [] and empty.over == []


def test_killed_pool_workers_are_replaced_and_later_collections_are_whole() -> None:
    """Workers of a process pool killed between calls and in the middle of an episode:
    the first are replaced at their next reset, the second fails its own episode (played
    again on a new worker); no index is retired and every later collection is whole."""
    k, held_seed = 2, 3
    policy = HoldOneTask(gym.make(SOKOBAN).reset(seed=held_seed)[0]["text"], k)
    config = RolloutConfig(group_size=k, max_in_flight=4, partial=False)
    with EnvPool([functools.partial(gym.make, SOKOBAN)] * 4, backend="process") as pool:
        source = PoolEnvSource(pool)
        engine = RolloutEngine(source, policy, range(8), config)

        def kill(index: int) -> None:
            pool._remote[index]._proc.kill()
            pool._remote[index]._proc.join()

        async def kill_a_held_members_worker() -> None:
            kill(next(ep for ep in engine.carried if ep.seed == held_seed).slot.index)

        try:
            first = engine.collect_sync(2)
            kill(0)
            kill(1)
            second = collect_with_held_group(engine, 2, policy, kill_a_held_members_worker)
            third = engine.collect_sync(2)
            alive = [remote._proc.is_alive() for remote in pool._remote]
        finally:
            engine.close()
    assert [c.summary.usable_groups for c in (first, second, third)] == [2, 2, 2]
    assert first.summary.causes == third.summary.causes == {}
    assert second.summary.causes == {"env_error": 1} and second.summary.retries == 1
    (failed,) = next(g for g in second.groups if g.seed == held_seed).retired
    assert "env_error" in failed.cause and failed.steps  # it died mid-episode
    assert source.capacity == 4 and source.retired == [] and source.restarted == 1
    assert alive == [True] * 4 and pool.restarts >= 1
    assert engine_results(first.groups + second.groups + third.groups) == lockstep(
        SOKOBAN, ScriptedChatPolicy(), list(range(6)), k
    )


def test_a_pool_env_whose_restart_fails_is_restarted_again_before_it_is_retired(
    tmp_path: Any,
) -> None:
    """A worker lost while it starts (killed, crashed) costs one more start, not the
    index (the pool soak lost its indices one by one this way until no env was left):
    only an index whose every one of ``restart_attempts`` restarts fails is retired."""
    (tmp_path / "once").mkdir()
    (tmp_path / "always").mkdir()
    once = functools.partial(make_counted, SOKOBAN, str(tmp_path / "once"), (2, 3))
    with EnvPool([once, once], backend="process") as pool:
        pool.reset([0, 1], seeds=[0, 1])  # both first makes done: the restart's is the 3rd
        source = PoolEnvSource(pool)
        slot = source.acquire()
        source.release(slot, healthy=False)  # its first restart fails, the second holds
        assert source.capacity == 2 and source.retired == [] and source.restarted == 1
        assert len(source.restart_errors) == 1
        slot = source.acquire()  # the index given back first comes out first
        assert slot.index == 0 and source.acquire().index == 1
        assert slot.reset(5)[0]["text"] == gym.make(SOKOBAN).reset(seed=5)[0]["text"]
    assert sorted(os.listdir(tmp_path / "once")) == [f"make-{n}" for n in range(4)]
    always = functools.partial(make_counted, SOKOBAN, str(tmp_path / "always"), (1, 99))
    with EnvPool([always], backend="process") as pool:
        pool.reset([0], seeds=[0])
        source = PoolEnvSource(pool, restart_attempts=2)
        source.release(source.acquire(), healthy=False)
        assert source.capacity == 0 and source.retired == [0] and source.restarted == 0
    assert sorted(os.listdir(tmp_path / "always")) == ["make-0", "make-1", "make-2"]
    with pytest.raises(InvalidConfigError, match="restart_attempts"):
        PoolEnvSource(pool, restart_attempts=0)


def test_close_frees_every_env_the_source_made() -> None:
    """Envs of carried episodes, healthy spares and failed envs (whose teardown is slow)
    are all closed once ``close()`` returns."""
    seeds, k = list(range(4)), 2
    tasks = task_ids(seeds)
    audit = EnvAudit()
    faults = EnvFaults(lambda seed, turn: "raise" if seed == 0 and turn == 1 else None, close_s=1)
    policy = GatedPolicy({tasks[s] for s in (2, 3)} - {tasks[s] for s in (0, 1)})
    config = RolloutConfig(group_size=k, max_in_flight=8, episode_retries=0)
    engine = RolloutEngine(guarded_source(audit, faults), policy, seeds, config)
    collection = engine.collect_sync(1)
    assert len(engine.carried) == 4 and engine.slots_out >= 4
    engine.close()
    assert collection.summary.causes == {"env_error": 2} and faults.raised == 2
    assert audit.made == audit.closed and audit.violations == []
    assert engine.slots_out == 0


class _CloseCount(gym.Wrapper):
    """Counts every ``close()`` call it gets (a second one is a double close)."""

    def __init__(self, env: gym.Env, calls: list[int]):
        super().__init__(env)
        self.calls = calls

    def close(self) -> None:
        self.calls.append(1)
        super().close()


def test_an_env_made_while_its_source_closes_is_closed_once_and_never_lent() -> None:
    """``LocalEnvSource.close()`` closes what it made so far; an env whose making was under
    way then (a browser starting, in a worker thread of a closing engine) used to be lent
    all the same and closed by nobody. Now it is closed and the acquire fails; an env lent
    before the close and given back after it is closed exactly once."""
    from agentgym.rollout import SourceClosedError

    calls: list[int] = []
    made = itertools.count()
    entered, go_on = threading.Event(), threading.Event()

    def factory() -> gym.Env:
        if next(made) == 1:  # the second env is made slowly: the close comes meanwhile
            entered.set()
            go_on.wait(DEADLINE_S)
        return _CloseCount(gym.make(SOKOBAN), calls)

    source = LocalEnvSource(SOKOBAN, factory=factory)
    lent = source.acquire()  # the first env, lent before the close
    got: dict[str, Any] = {}

    def acquire() -> None:
        try:
            got["slot"] = source.acquire()
        except Exception as exc:
            got["error"] = exc

    thread = threading.Thread(target=acquire)
    thread.start()
    assert entered.wait(DEADLINE_S)
    source.close()  # closes the lent env
    assert len(calls) == 1
    go_on.set()
    thread.join(DEADLINE_S)
    assert isinstance(got.get("error"), SourceClosedError), got
    assert len(calls) == 2  # the env made during the close: closed, not lent
    source.release(lent, healthy=False)  # given back late: not closed a second time
    assert len(calls) == 2
    with pytest.raises(SourceClosedError):
        source.acquire()


def test_every_attempt_reports_its_end_once_to_the_callbacks() -> None:
    audit = EnvAudit()
    faults = EnvFaults(lambda seed, turn: "raise" if seed == 1 and turn == 2 else None)
    ended: list[int] = []
    engine = RolloutEngine(
        guarded_source(audit, faults),
        ScriptedChatPolicy(),
        range(3),
        RolloutConfig(group_size=2, max_in_flight=6, partial=False),
        EpisodeCallbacks(on_episode=lambda ep: ended.append(ep.traj_id)),
    )
    try:
        collection = engine.collect_sync(3)
    finally:
        engine.close()
    attempts = [ep for g in collection.groups for ep in g.attempts]
    assert sorted(ended) == sorted(ep.traj_id for ep in attempts)
    assert len(attempts) == 6 + 2  # seed 1: both members failed, were retried, failed again
    assert [len(g.failures) for g in sorted(collection.groups, key=lambda g: g.seed)] == [0, 4, 0]
    for ep in attempts:
        assert (ep.status == "done") == (ep.cause is None)
        assert ep.status != "done" or ep.steps[-1].done
        assert all(not s.done for s in ep.steps[:-1]) and ep.slot is None
