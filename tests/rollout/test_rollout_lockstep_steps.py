"""Lockstep mode's env calls go out a turn at a time (:class:`TurnEnvCalls`): one hand-off
to the worker threads and one answer for the whole turn, under one timer. Each call still
gets its own outcome: a call that raised gets its exception, and when the timer fires
only the calls that had not returned time out, so an env that hangs fails its own
attempt (which is played again) while the rest of its turn goes on.

The engine tests use real Sokoban-Tiny envs under :class:`tests.rollout.faulty.GuardedEnv`
(which reports a step after termination or two calls at once on one env)."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.pools import EnvPool
from agentgym.rollout import LocalEnvSource, PoolEnvSource, RolloutConfig, RolloutEngine
from agentgym.rollout.engine import EpisodeCallbacks
from agentgym.rollout.lockstep import TurnEnvCalls
from tests.fake_llm_server import ScriptedChatPolicy
from tests.rollout.faulty import EnvAudit, EnvFaults, FailOnce, GuardedEnv
from tests.rollout.test_rollout_engine import engine_results, lockstep

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
DEADLINE_S = 60.0
TIMEOUT_S = 3.0
"""env_timeout_s of the hang tests: long for a Sokoban step (tens of microseconds), short
enough to keep the tests quick."""


class Gate:
    """An env call that blocks until released: ``entered`` is set once it runs, and it
    returns ``value`` once ``release`` is set (a test sets it in a ``finally`` as well, so
    a failing test never leaves a thread waiting)."""

    def __init__(self, value: Any):
        self.value = value
        self.entered, self.release = threading.Event(), threading.Event()

    def __call__(self) -> Any:
        self.entered.set()
        assert self.release.wait(DEADLINE_S)
        return self.value


def test_a_batch_answers_each_call_with_its_own_outcome_and_times_out_only_the_unreturned() -> None:
    returned = threading.Event()
    release = threading.Event()

    def quick() -> str:
        return "stepped"

    def crash() -> str:
        raise ValueError("env crashed")

    def hang() -> str:
        assert returned.wait(DEADLINE_S)  # the others are back before this one hangs
        release.wait(DEADLINE_S)
        return "too late"

    def note_return() -> str:
        returned.set()
        return "also stepped"

    async def one_turn() -> list[Any]:
        calls = TurnEnvCalls(TIMEOUT_S, threads=4)
        try:
            futures = [calls.call(f) for f in (quick, crash, hang, note_return)]
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
            assert calls.sizes == [4]  # one hand-off for the whole turn
            return outcomes
        finally:
            calls.close()

    try:
        outcomes = asyncio.run(one_turn())
    finally:
        release.set()
    assert outcomes[0] == "stepped" and outcomes[3] == "also stepped"
    assert isinstance(outcomes[1], ValueError) and str(outcomes[1]) == "env crashed"
    assert isinstance(outcomes[2], TimeoutError)


def test_an_env_that_raises_stopiteration_fails_alone() -> None:
    """StopIteration cannot be set on an asyncio future: it arrives as a RuntimeError that
    names it, and the other calls of the batch are answered all the same."""

    def exhausted() -> str:
        raise StopIteration("no more moves")

    async def one_turn() -> list[Any]:
        calls = TurnEnvCalls(3600.0, threads=2)
        try:
            futures = [calls.call(exhausted), calls.call(abs, -5)]
            await asyncio.wait_for(asyncio.wait(futures), DEADLINE_S)
            return [futures[0].exception(), futures[1].result()]
        finally:
            calls.close()

    failed, other = asyncio.run(one_turn())  # raised, not returned as a result
    assert isinstance(failed, RuntimeError) and str(failed) == "StopIteration: no more moves"
    assert other == 5


def test_a_turn_of_two_calls_gets_a_helper_when_its_first_call_hangs() -> None:
    """The first call waits until the second has returned: only a helper thread, recruited
    after ``recruit_after_s``, can run the second."""
    second_done = threading.Event()

    def first() -> str:
        assert second_done.wait(DEADLINE_S)
        return "first"

    def second() -> str:
        second_done.set()
        return "second"

    async def one_turn() -> list[Any]:
        calls = TurnEnvCalls(DEADLINE_S, threads=4, recruit_after_s=0.01)
        try:
            futures = [calls.call(first), calls.call(second)]
            return list(await asyncio.wait_for(asyncio.gather(*futures), 2 * DEADLINE_S))
        finally:
            calls.close()

    try:
        assert asyncio.run(one_turn()) == ["first", "second"]
    finally:
        second_done.set()


class _Marker:
    """An argument of an env call (an episode's landing, in the engine)."""


def test_an_idle_env_thread_holds_nothing_of_the_turn_it_ran() -> None:
    """Once a turn is answered, its threads (the first and a recruited helper) wait for the
    next turn holding no part of it: not its calls' arguments, which in the engine are the
    episodes. (They held their last job until the next one came: finished episodes of the
    last turn stayed alive, one turn per thread.)"""
    second_done = threading.Event()
    seen: list[Any] = []

    def first(marker: _Marker) -> str:
        assert second_done.wait(DEADLINE_S)  # a helper runs the second call
        return "first"

    def second(marker: _Marker) -> str:
        second_done.set()
        return "second"

    async def one_turn() -> None:
        calls = TurnEnvCalls(DEADLINE_S, threads=4, recruit_after_s=0.01)
        try:
            markers = [_Marker(), _Marker()]
            seen.extend(weakref.ref(m) for m in markers)
            futures = [calls.call(first, markers[0]), calls.call(second, markers[1])]
            assert await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S) == [
                "first",
                "second",
            ]
            assert calls.workers.threads == 2
            del markers, futures
            deadline = time.monotonic() + DEADLINE_S
            while any(ref() is not None for ref in seen) and time.monotonic() < deadline:
                gc.collect()  # (a thread may not have gone back to its queue yet)
                await asyncio.sleep(0.01)
            assert [ref() for ref in seen] == [None, None]
        finally:
            calls.close()

    asyncio.run(one_turn())


def test_a_turn_gets_helpers_only_when_no_call_returned_since_the_last_look() -> None:
    """Quick calls that keep returning hold the GIL anyway: a helper would only contend
    for it. The recruiter (driven by hand here; its timer is an hour) first sees a call
    returned and waits for another look; at that look nothing returned (the second call
    hangs), so the third call gets a helper and returns while the second still hangs."""
    stuck = Gate("second")

    async def turn() -> list[Any]:
        calls = TurnEnvCalls(3600.0, threads=4, recruit_after_s=3600.0)
        try:
            futures = [calls.call(abs, -1), calls.call(stuck), calls.call(abs, -3)]
            batch = calls._queued
            assert batch is not None
            loop = asyncio.get_running_loop()
            assert await loop.run_in_executor(None, stuck.entered.wait, DEADLINE_S)
            batch._recruit(3600.0)  # the first call returned since the start: no helper yet
            assert calls.workers.threads == 1 and not futures[2].done()
            assert len(batch._todo) == 1  # the third call still waits for a thread
            batch._recruit(3600.0)  # nothing returned since: a helper for the third call
            deadline = time.monotonic() + DEADLINE_S
            while batch._outcomes[2] is None:  # futures are answered at the batch's end
                assert time.monotonic() < deadline, "no helper ran the third call"
                await asyncio.sleep(0.001)
            assert batch._outcomes[1] is None and calls.workers.threads == 2
            stuck.release.set()
            return list(await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S))
        finally:
            calls.close()

    try:
        assert asyncio.run(turn()) == [1, "second", 3]
    finally:
        stuck.release.set()


def test_an_episode_cancelled_while_its_batch_is_out_leaves_the_others_their_outcomes() -> None:
    """A hard cancel lands while the batch is out: that episode's future is cancelled,
    and the rest of the batch is still answered when its last call returns."""
    slow = Gate("stepped")

    async def cancel_one() -> list[Any]:
        calls = TurnEnvCalls(3600.0, threads=4)
        try:
            futures = [calls.call(slow), calls.call(abs, -3), calls.call(slow)]
            await asyncio.to_thread(slow.entered.wait, DEADLINE_S)
            futures[0].cancel()
            slow.release.set()
            await asyncio.wait_for(asyncio.wait(futures[1:]), DEADLINE_S)
            return [f.cancelled() or f.result() for f in futures]
        finally:
            calls.close()

    try:
        assert asyncio.run(cancel_one()) == [True, 3, "stepped"]
    finally:
        slow.release.set()


def test_a_batch_is_answered_when_its_last_call_returns_not_at_its_timer() -> None:
    async def turns() -> list[list[int]]:
        calls = TurnEnvCalls(3600.0, threads=2)  # a wait for the timer would never end
        try:
            out = []
            for turn in range(3):
                futures = [calls.call(pow, turn, k) for k in range(5)]
                out.append(await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S))
            assert calls.sizes == [5, 5, 5]
            return out
        finally:
            calls.close()

    assert asyncio.run(turns()) == [[1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [1, 2, 4, 8, 16]]


def test_a_call_that_does_not_return_soon_gets_the_rest_of_its_turn_helpers() -> None:
    """A turn starts on one thread; when it is not done after ``recruit_after_s``, the
    calls not started yet get threads of their own: three calls that wait for each other
    all return, after turns of one call each made a single thread (a thread is started
    whenever every thread is busy)."""
    meet = threading.Barrier(3, timeout=DEADLINE_S)

    async def turns() -> list[Any]:
        calls = TurnEnvCalls(DEADLINE_S, threads=8)
        try:
            singles = [await calls.call(abs, -k) for k in range(5)]  # one turn each
            together = await asyncio.gather(*(calls.call(meet.wait) for _ in range(3)))
            return [singles, sorted(together)]
        finally:
            calls.close()

    assert asyncio.run(turns()) == [[0, 1, 2, 3, 4], [0, 1, 2]]  # all three met


def test_calls_that_keep_the_cpu_busy_run_in_turn_on_one_thread() -> None:
    """Hand-offs cost more than a grid step: a turn of quick calls runs on one thread,
    one call after another in the order they were asked for (no helper is recruited
    before ``recruit_after_s``, an hour here; and a call counts as waiting only beyond an
    hour, so a preempted thread cannot make the turns fan out)."""
    ran: list[tuple[int, int]] = []

    def step(k: int) -> int:
        ran.append((k, threading.get_ident()))
        return k

    async def turns() -> list[int]:
        calls = TurnEnvCalls(DEADLINE_S, threads=8, recruit_after_s=3600.0, waiting_call_s=3600.0)
        try:
            out = []
            for _ in range(3):
                out += await asyncio.gather(*(calls.call(step, k) for k in range(6)))
            assert calls.workers.threads == 1 and not calls.fan_out
            return out
        finally:
            calls.close()

    assert asyncio.run(turns()) == list(range(6)) * 3
    assert [k for k, _ in ran] == list(range(6)) * 3
    assert len({ident for _, ident in ran}) == 1


def test_a_turn_whose_call_waited_sends_the_next_turn_out_a_thread_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls that wait (a browser's I/O, a worker process) gain from threads of their own:
    after a turn whose one call slept, the next turn's three calls run at once, without the
    recruiting timer (an hour here), so three calls that wait for each other all return;
    the threads that then find nothing left to run go back to waiting, none crashes."""
    crashes: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    meet = threading.Barrier(3, timeout=DEADLINE_S)

    def nap() -> str:
        threading.Event().wait(0.01)  # waits without the CPU
        return "rested"

    async def turns() -> list[Any]:
        calls = TurnEnvCalls(DEADLINE_S, threads=8, recruit_after_s=3600.0)
        try:
            first = await calls.call(nap)
            assert calls.fan_out
            second = await asyncio.wait_for(
                asyncio.gather(*(calls.call(meet.wait) for _ in range(3))), DEADLINE_S
            )
            return [first, sorted(second)]
        finally:
            calls.close()

    try:
        assert asyncio.run(turns()) == ["rested", [0, 1, 2]]
    finally:
        meet.abort()
    assert crashes == []


def test_the_wait_that_fans_out_is_the_mean_per_call_not_the_turns_total() -> None:
    """Eight calls that each wait 50 ms (0.4 s in all) stay on one thread under a limit
    of one second per call; a call that waits one and a half sends the next turn out."""

    def nap(seconds: float) -> float:
        threading.Event().wait(seconds)
        return seconds

    async def turns() -> list[bool]:
        calls = TurnEnvCalls(DEADLINE_S, threads=8, recruit_after_s=3600.0, waiting_call_s=1.0)
        try:
            await asyncio.gather(*(calls.call(nap, 0.05) for _ in range(8)))
            after_short = calls.fan_out
            await calls.call(nap, 1.5)
            return [after_short, calls.fan_out]
        finally:
            calls.close()

    assert asyncio.run(turns()) == [False, True]


def test_calls_beyond_the_thread_limit_wait_for_a_free_thread() -> None:
    """Two threads at most: the third call starts only once one of the first two ends."""
    started = [threading.Event() for _ in range(3)]
    release = threading.Event()

    def call(k: int) -> int:
        started[k].set()
        assert release.wait(DEADLINE_S)
        return k

    async def run() -> tuple[list[int], int, bool]:
        calls = TurnEnvCalls(DEADLINE_S, threads=2)
        try:
            futures = [calls.call(call, k) for k in range(3)]
            await asyncio.to_thread(
                lambda: started[0].wait(DEADLINE_S) and started[1].wait(DEADLINE_S)
            )
            third_started_early = started[2].is_set()
            release.set()
            return list(await asyncio.gather(*futures)), calls.workers.threads, third_started_early
        finally:
            calls.close()

    try:
        results, threads, third_started_early = asyncio.run(run())
    finally:
        release.set()
    assert results == [0, 1, 2] and threads == 2 and not third_started_early


def test_a_call_after_close_fails_with_its_cause_instead_of_waiting_for_the_timer() -> None:
    calls = TurnEnvCalls(3600.0, threads=1)
    calls.close()

    async def late() -> BaseException:
        future = calls.call(abs, -1)
        with pytest.raises(RuntimeError) as raised:
            await asyncio.wait_for(future, DEADLINE_S)
        return raised.value

    assert "closed" in str(asyncio.run(late()))
    assert calls.workers.threads == 0  # nothing was started for it


def test_a_call_that_returns_after_its_event_loop_closed_leaves_its_thread_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop of a batch is gone (closed under a running collect) when its last call
    returns: the thread drops the answer quietly and serves the next loop's calls."""
    crashes: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    stuck = Gate("late")
    calls = TurnEnvCalls(DEADLINE_S, threads=1)
    try:
        lost = asyncio.new_event_loop()
        try:

            async def start() -> None:
                calls.call(stuck)
                await asyncio.to_thread(stuck.entered.wait, DEADLINE_S)

            lost.run_until_complete(start())
        finally:
            lost.close()
        stuck.release.set()  # the answer goes to a closed loop

        async def next_turn() -> list[int]:
            return list(await asyncio.gather(*(calls.call(abs, -k) for k in range(3))))

        assert asyncio.run(next_turn()) == [0, 1, 2]  # the one thread still serves
    finally:
        stuck.release.set()
        calls.close()
    assert crashes == [] and calls.workers.threads == 1


def guarded_engine(
    audit: EnvAudit,
    faults: EnvFaults,
    seeds: list[int],
    lanes: int,
    callbacks: EpisodeCallbacks | None = None,
) -> RolloutEngine:
    source = LocalEnvSource(SOKOBAN, factory=lambda: GuardedEnv(gym.make(SOKOBAN), audit, faults))
    config = RolloutConfig(
        group_size=1,
        max_in_flight=lanes,
        partial=False,
        lockstep=True,
        history_turns=1,
        env_timeout_s=TIMEOUT_S,
    )
    return RolloutEngine(source, ScriptedChatPolicy(), seeds, config, callbacks)


@pytest.mark.parametrize("fault", ["hang", "raise"])
def test_a_failing_step_ends_only_its_own_attempt_and_the_rest_of_its_turn_goes_on(
    fault: str,
) -> None:
    seeds, audit = [0, 1, 2, 3], EnvAudit()
    once = FailOnce(2, 2, fault)
    faults = EnvFaults(once, hang_s=DEADLINE_S)
    engine = guarded_engine(audit, faults, seeds, lanes=4)
    try:
        collection = engine.collect_sync(len(seeds))
    finally:
        faults.release.set()
        engine.close()
    cause = "env_timeout" if fault == "hang" else "env_error"
    summary = collection.summary
    assert once.fired == [2] and summary.causes == {cause: 1} and summary.retries == 1
    by_seed = {g.seed: g for g in collection.groups}
    (cut,) = by_seed[2].retired
    assert cut.status == "infra_failure" and cut.cause.startswith(cause)
    if fault == "raise":
        assert "injected env crash (seed 2, turn 2)" in cut.cause
    assert len(cut.steps) == 1  # its first step was kept; the second one failed
    assert all(g.usable and not g.retired for s, g in by_seed.items() if s != 2)
    assert all(g.members[0].status == "done" for g in collection.groups)
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, 1)
    assert audit.violations == []


def test_an_env_error_reported_by_the_pool_fails_only_its_episode_in_a_turn() -> None:
    """Through a pool (which turns an env's exception into ``info["env_error"]``)."""
    seeds, audit = [0, 1, 2, 3], EnvAudit()
    once = FailOnce(1, 1, "raise")
    faults = EnvFaults(once)
    config = RolloutConfig(
        group_size=1, max_in_flight=4, partial=False, lockstep=True, history_turns=1
    )
    with EnvPool([lambda: GuardedEnv(gym.make(SOKOBAN), audit, faults)] * 4) as pool:
        engine = RolloutEngine(PoolEnvSource(pool), ScriptedChatPolicy(), seeds, config)
        try:
            collection = engine.collect_sync(len(seeds))
        finally:
            engine.close()
    assert once.fired == [1]
    assert collection.summary.causes == {"env_error": 1} and collection.summary.retries == 1
    by_seed = {g.seed: g for g in collection.groups}
    (cut,) = by_seed[1].retired
    assert cut.cause.startswith("env_error: RuntimeError: injected env crash (seed 1, turn 1)")
    assert all(not g.retired for s, g in by_seed.items() if s != 1)
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, 1)
    assert audit.violations == []


def lockstep_env_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lockstep-env" and t.is_alive()]


def test_close_ends_the_lockstep_env_threads() -> None:
    before = set(lockstep_env_threads())
    audit = EnvAudit()
    engine = guarded_engine(audit, EnvFaults(lambda seed, turn: None), [0, 1, 2], lanes=3)
    try:
        collection = engine.collect_sync(3)
        ours = set(lockstep_env_threads()) - before
        assert ours  # the env calls ran on the engine's own lockstep threads
        assert all(t.daemon for t in ours)  # one stuck in an env never blocks the exit
    finally:
        engine.close()
    assert all(g.members[0].status == "done" for g in collection.groups)
    for thread in ours:
        thread.join(DEADLINE_S)
        assert not thread.is_alive(), "a lockstep env thread outlived engine.close()"
    assert audit.made == audit.closed


def test_a_closed_pool_fails_the_unstarted_calls_and_leaves_the_running_one_its_outcome() -> None:
    """The workers close while a turn runs: the helper that would have taken the second
    call cannot start, so that call fails with the cause; the first call, still running,
    keeps its own outcome (the batch is not answered before it returns)."""
    first = Gate("first")

    async def turn() -> list[Any]:
        calls = TurnEnvCalls(3600.0, threads=4, recruit_after_s=3600.0)
        futures = [calls.call(first), calls.call(abs, -2)]
        batch = calls._queued
        assert batch is not None
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, first.entered.wait, DEADLINE_S)
        calls.close()
        batch._recruit(3600.0)  # what the recruit timer does: a helper for the unstarted call
        await asyncio.sleep(0)  # an answer sent early would arrive now
        first.release.set()
        return await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), DEADLINE_S)

    try:
        outcomes = asyncio.run(turn())
    finally:
        first.release.set()
    assert outcomes[0] == "first"
    assert isinstance(outcomes[1], RuntimeError) and "closed" in str(outcomes[1])


def test_finished_lockstep_episodes_are_freed_without_the_garbage_collector() -> None:
    """An episode that ends in lockstep mode wakes its task with its last step (the step's
    landing, its waiter's result, which held that waiter: a reference cycle). The task
    drops the waiter once it has the step, so a finished episode - its chat, steps and
    generations - is freed when the last reference to it goes, not at the collector's next
    full pass (whose cost grew with every trajectory a run had left behind: 24,800 objects
    after 256 30-turn episodes). With the collector off, at most the episodes of the run's
    last turn (kept with the engine, itself a cycle: one lane each) are left once the run's
    results are dropped."""
    from agentgym.agents.scripted import RandomPolicy
    from agentgym.rollout.groups import group_rollouts
    from agentgym.rollout.records import Episode

    with EnvPool([lambda: gym.make(SOKOBAN, max_turns=6)] * 4) as pool:
        gc.collect()
        gc.disable()
        try:
            batch = group_rollouts(pool, RandomPolicy(0), list(range(6)), group_size=4)
            played = len(batch.trajectories)
            del batch
            left = sum(isinstance(o, Episode) for o in gc.get_objects())
        finally:
            gc.enable()
    assert played == 24
    assert left <= 4, f"{left} finished episodes of 24 wait for the garbage collector"


def test_a_hung_step_that_returns_after_its_timer_lands_no_step_twice() -> None:
    """A turn whose timer fired is answered again when its hung call returns at last; the
    steps of that turn that had landed must not land again. Their episodes went on (each
    landing's waiter now waits for a later step), so a landing counts as done once it has
    landed, not while its waiter is done. The hung call is let go from ``on_step`` of the
    first step the timer's answer lands, and the callback returns only once it has stopped
    hanging: the turn's second answer then comes while the other episodes are mid-way
    through their ten steps."""
    seeds, audit = [0, 1, 2, 3], EnvAudit()
    once = FailOnce(2, 2, "hang")
    faults = EnvFaults(once, hang_s=DEADLINE_S)

    def on_step(event: Any) -> None:
        if faults.entered.is_set() and not faults.release.is_set():
            faults.release.set()
            assert faults.returned.wait(DEADLINE_S)

    engine = guarded_engine(
        audit, faults, seeds, lanes=4, callbacks=EpisodeCallbacks(on_step=on_step)
    )
    try:
        collection = engine.collect_sync(len(seeds))
    finally:
        faults.release.set()
        engine.close()
    assert once.fired == [2] and faults.returned.is_set()
    assert collection.summary.causes == {"env_timeout": 1}
    for g in collection.groups:
        for ep in g.members:
            assert [s.step for s in ep.steps] == list(range(len(ep.steps))), (g.seed, ep.status)
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, 1)
    assert audit.violations == []
