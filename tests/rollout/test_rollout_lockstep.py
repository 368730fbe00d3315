"""The engine's lockstep mode: one policy call per turn for every running episode, in lane
order, whatever order the env threads answer in; and what a cancel or a failing policy does
to it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.agents.scripted import RandomPolicy
from agentgym.episodes import play
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.rollout import (
    CollectionError,
    EpisodeCallbacks,
    LocalEnvSource,
    PoolEnvSource,
    RolloutConfig,
    RolloutEngine,
)
from agentgym.rollout.policy import BatchingPolicy

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


class Jitter(gym.Wrapper):
    """Sleeps a random 0-10 ms before each reset and step, so env threads finish in an
    order that changes from run to run."""

    def __init__(self, env: gym.Env, seed: int):
        super().__init__(env)
        self.rng = np.random.default_rng(seed)

    def reset(self, **kwargs: Any) -> Any:
        time.sleep(self.rng.uniform(0, 0.01))
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        time.sleep(self.rng.uniform(0, 0.01))
        return self.env.step(action)


class BatchLog:
    """A seeded random policy that logs every batch as (task id, messages read) pairs."""

    def __init__(self, seed: int = 0):
        self.random = RandomPolicy(seed)
        self.batches: list[list[tuple[str, int]]] = []

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        self.batches.append([(i.info["task_id"], len(i.messages)) for i in inputs])
        return self.random.act(inputs)


def lockstep_run(jitter_seed: int, episodes: int = 9, lanes: int = 3) -> tuple[BatchLog, Any]:
    policy = BatchLog()
    factories = [lambda i=i: Jitter(gym.make(SOKOBAN), jitter_seed * 100 + i) for i in range(lanes)]
    config = RolloutConfig(group_size=1, max_in_flight=lanes, partial=False, lockstep=True)
    with EnvPool(factories) as pool:
        engine = RolloutEngine(PoolEnvSource(pool), policy, range(episodes), config)
        try:
            collection = engine.collect_sync(episodes)
        finally:
            engine.close()
    return policy, collection


def expected_batch_sizes(lengths: Sequence[int], lanes: int) -> list[int]:
    """Batch sizes of a loop that steps every running episode each turn and starts the
    next episode in a lane as soon as its episode ended."""
    pending, running, sizes = list(lengths), [], []
    while pending or running:
        while pending and len(running) < lanes:
            running.append(pending.pop(0))
        sizes.append(len(running))
        running = [left - 1 for left in running if left > 1]
    return sizes


def test_every_turn_is_one_call_with_every_running_episode_in_lane_order() -> None:
    first, collection = lockstep_run(jitter_seed=1)
    second, _ = lockstep_run(jitter_seed=2)
    lengths = [len(g.members[0].steps) for g in sorted(collection.groups, key=lambda g: g.seed)]
    assert len(set(lengths)) > 1  # episodes end at different turns: lanes get reused
    assert [len(b) for b in first.batches] == expected_batch_sizes(lengths, lanes=3)
    assert first.batches == second.batches  # the threads' order did not leak in


def test_a_failing_policy_stops_the_call_with_its_own_error_and_nothing_is_retried() -> None:
    class Broken:
        def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
            raise ZeroDivisionError("the policy's own bug")

    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    with EnvPool([lambda: gym.make(SOKOBAN)] * 2) as pool:
        engine = RolloutEngine(PoolEnvSource(pool), Broken(), range(4), config)
        began = time.perf_counter()
        try:
            with pytest.raises(CollectionError) as caught:
                engine.collect_sync(4)
            assert isinstance(caught.value.error, ZeroDivisionError)
            waited = caught.value.collection.summary.policy_seconds  # the failed waits count
            assert 0 < waited <= 2 * (time.perf_counter() - began)
            assert caught.value.collection.summary.retries == 0
            assert caught.value.collection.summary.infra_failures == 0
        finally:
            engine.close()
        assert engine.slots_out == 0


def test_play_raises_the_policy_error_itself() -> None:
    class Broken:
        def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
            raise KeyError("no such action")

    with pytest.raises(KeyError, match="no such action"):
        play(SOKOBAN, Broken(), episodes=3, num_envs=2, progress=False)


class ThreadLog:
    """A random policy that notes the thread of every ``act``; inline or not."""

    def __init__(self, inline: bool, fail_at: int | None = None):
        self.acts_inline = inline
        self.random = RandomPolicy(0)
        self.threads: list[str] = []
        self.fail_at = fail_at

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        self.threads.append(threading.current_thread().name)
        if len(self.threads) == self.fail_at:
            raise ZeroDivisionError("the inline policy's own bug")
        return self.random.act(inputs)


@pytest.mark.parametrize("inline", [True, False])
def test_a_policy_that_acts_inline_is_called_on_the_event_loop_and_others_on_their_thread(
    inline: bool,
) -> None:
    policy = ThreadLog(inline)
    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    with EnvPool([lambda: gym.make(SOKOBAN)] * 2) as pool:
        engine = RolloutEngine(PoolEnvSource(pool), policy, range(4), config)
        try:
            loop_thread = threading.current_thread().name  # asyncio.run's loop runs here
            collection = asyncio.run(engine.collect(4))
        finally:
            engine.close()
    assert len(collection.groups) == 4 and policy.threads
    if inline:
        assert set(policy.threads) == {loop_thread}
    else:
        assert loop_thread not in policy.threads
        assert all(name.startswith("lockstep-policy") for name in policy.threads)


def test_an_inline_policy_that_raises_stops_the_call_with_its_error_and_frees_every_env() -> None:
    policy = ThreadLog(inline=True, fail_at=3)
    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    with EnvPool([lambda: gym.make(SOKOBAN)] * 2) as pool:
        engine = RolloutEngine(PoolEnvSource(pool), policy, range(4), config)
        try:
            with pytest.raises(CollectionError) as caught:
                engine.collect_sync(4)
            assert isinstance(caught.value.error, ZeroDivisionError)
            assert caught.value.collection.summary.infra_failures == 0
        finally:
            engine.close()
        assert engine.slots_out == 0
    assert len(policy.threads) == 3  # nothing was asked after the error


def test_the_random_policy_acts_inline_and_the_oracle_does_not() -> None:
    """The random policy only reads its inputs; the oracle asks the env (a browser page,
    a solver), which must not run on the engine's event loop."""
    from agentgym.agents.scripted import OraclePolicy

    assert RandomPolicy.acts_inline is True
    assert getattr(OraclePolicy, "acts_inline", False) is False


def test_a_policy_that_answers_fewer_inputs_than_it_was_given_is_named() -> None:
    class Short:
        def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
            return [Generation(text="")] * (len(inputs) - 1)

    with pytest.raises(InvalidConfigError, match=r"Short\.act returned 1 generations for 2"):
        play(SOKOBAN, Short(), episodes=2, num_envs=2, progress=False)


def test_lockstep_refuses_an_async_policy() -> None:
    config = RolloutConfig(group_size=1, max_in_flight=1, lockstep=True)
    refused = pytest.raises(InvalidConfigError, match="lockstep needs a batched synchronous")
    with EnvPool([lambda: gym.make(SOKOBAN)]) as pool, refused:
        RolloutEngine(PoolEnvSource(pool), BatchingPolicy(RandomPolicy()), range(2), config)


def test_a_call_cancelled_during_a_turn_loses_and_repeats_no_episode() -> None:
    class Gated(BatchLog):
        def __init__(self) -> None:
            super().__init__()
            self.entered = threading.Event()
            self.gate = threading.Event()

        def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
            if len(self.batches) == 2:  # the third turn waits until the test lets it go
                self.entered.set()
                assert self.gate.wait(60)
            return super().act(inputs)

    policy = Gated()
    config = RolloutConfig(group_size=1, max_in_flight=3, partial=False, lockstep=True)
    with EnvPool([lambda: gym.make(SOKOBAN)] * 3) as pool:
        engine = RolloutEngine(PoolEnvSource(pool), policy, range(6), config)
        try:

            async def cancel_in_turn_three() -> None:
                call = asyncio.ensure_future(engine.collect(6))
                deadline = time.monotonic() + 60
                while not policy.entered.is_set():
                    assert time.monotonic() < deadline, "the third turn never started"
                    await asyncio.sleep(0.01)
                call.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await call
                policy.gate.set()

            asyncio.run(cancel_in_turn_three())
            assert engine.carried  # the episodes of the cancelled turn wait for the next call
            collection = engine.collect_sync(6)
        finally:
            policy.gate.set()
            engine.close()
        assert engine.slots_out == 0
    seeds = sorted(g.seed for g in collection.groups)
    assert seeds == list(range(6))  # each task handed back once
    assert all(g.members[0].status == "done" for g in collection.groups)


@pytest.mark.parametrize("room", [1, 4])
def test_a_lockstep_call_that_is_not_partial_starts_exactly_its_target(room: int) -> None:
    """More seeds than the call's target: lockstep starts episodes one by one as envs free
    up, and still starts no group past the target (the rest stay for a later call)."""
    config = RolloutConfig(group_size=2, max_in_flight=room, partial=False, lockstep=True)
    source = LocalEnvSource("agentgym/Sokoban-Tiny-v0", {"max_turns": 3})
    engine = RolloutEngine(source, RandomPolicy(0), iter(range(10)), config)
    collection = engine.run_to_end(3)
    assert [g.seed for g in collection.groups] == [0, 1, 2]
    assert all(len(g.members) == 2 and g.usable for g in collection.groups)


def test_lockstep_draws_a_seed_only_when_an_env_is_free_for_it() -> None:
    """A lockstep call takes the next seed from the caller's iterator only when an
    episode of it can start at once: with room for two one-member groups, the first
    turns play seeds 0 and 1 and the third is drawn only when one of them ended (a seed
    drawn early would sit in an open group, taken from a stream that another consumer
    may share)."""
    drawn: list[int] = []
    seen_at_step: list[int] = []

    def seeds() -> Iterator[int]:
        for seed in range(4):
            drawn.append(seed)
            yield seed

    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    source = LocalEnvSource("agentgym/Sokoban-Tiny-v0", {"max_turns": 3})
    callbacks = EpisodeCallbacks(on_step=lambda event: seen_at_step.append(len(drawn)))
    engine = RolloutEngine(source, RandomPolicy(0), seeds(), config, callbacks)
    collection = engine.run_to_end(4)
    assert [g.seed for g in collection.groups] == [0, 1, 2, 3]
    assert seen_at_step[:2] == [2, 2]  # both first steps: nothing drawn beyond seeds 0, 1
    assert max(seen_at_step) == 4


def test_requests_left_from_an_earlier_loop_are_never_sent_and_block_no_turn() -> None:
    """A partial lockstep call stops after its first finished episode: the other three
    had asked for their next turn on that call's event loop (``collect_sync``: one loop per
    call). The source then has room for two; the next call, on a new loop, resumes two
    of them, which ask again. The requests of the closed loop count as asked for nobody
    and are never sent: every input the policy reads in the second call is stepped."""
    inputs: list[int] = []

    class Counting(RandomPolicy):
        def act(self, items: Sequence[PolicyInput]) -> list[Generation]:
            inputs.append(len(items))
            return super().act(items)

    config = RolloutConfig(group_size=1, max_in_flight=4, partial=True, lockstep=True)
    source = LocalEnvSource("agentgym/Sokoban-Tiny-v0", {"max_turns": 6})
    engine = RolloutEngine(source, Counting(0), iter(range(100)), config)
    try:
        first = engine.collect_sync(1)
        carried = [ep for ep in engine.carried if ep.pending is not None]
        assert len(first.usable_groups) == 1 and len(carried) == 3
        source.capacity = 2  # envs were retired meanwhile: two of the three may run
        inputs.clear()
        second = engine.collect_sync(1)
        assert second.summary.usable_groups == 1
        assert sum(inputs) == second.summary.env_steps and max(inputs) <= 2
        source.capacity = None
        third = engine.collect_sync(2)
        assert third.summary.usable_groups >= 2
    finally:
        engine.close()


def test_requests_kept_across_two_calls_on_one_loop_are_asked_once_and_answered_to_their_own_episode() -> (
    None
):
    """Two partial lockstep calls on one event loop: the episodes the first call paused
    while they asked keep their requests; the second call sends those (nobody asks again)
    and each episode records the answer the policy gave to its own input."""
    asked_for: dict[int, str] = {}  # generation id -> the task of the input it answered

    class Tagging(RandomPolicy):
        def act(self, items: Sequence[PolicyInput]) -> list[Generation]:
            gens = super().act(items)
            for item, gen in zip(items, gens):
                gen.meta["id"] = len(asked_for)
                asked_for[gen.meta["id"]] = item.info["task_id"]
            return gens

    config = RolloutConfig(group_size=1, max_in_flight=4, partial=True, lockstep=True)
    source = LocalEnvSource(SOKOBAN, {"max_turns": 6})
    engine = RolloutEngine(source, Tagging(0), iter(range(100)), config)

    async def two_calls() -> tuple[Any, Any, int]:
        first = await engine.collect(1)
        paused_asking = sum(ep.pending is not None for ep in engine.carried)
        second = await engine.collect(1)
        return first, second, paused_asking

    try:
        first, second, paused_asking = asyncio.run(two_calls())
        episodes = [*first.episodes, *second.episodes, *engine.carried]
    finally:
        engine.close()
    assert paused_asking == 3
    assert second.summary.resumed_requests == 3
    steps = [(ep.task_id, s.generation.meta["id"]) for ep in episodes for s in ep.steps]
    assert len({gen_id for _, gen_id in steps}) == len(steps)  # no answer recorded twice
    assert all(asked_for[gen_id] == task for task, gen_id in steps)
    # every answer reached its episode: recorded, or kept with a request answered after
    # the second call paused the episode
    kept = sum(ep.pending is not None and ep.pending[0].done() for ep in engine.carried)
    assert len(asked_for) == len(steps) + kept


@pytest.mark.parametrize("policy_fails", [False, True])
def test_a_turn_answered_after_its_call_was_cancelled_is_taken_by_the_next_call_on_the_loop(
    policy_fails: bool,
) -> None:
    """The collect call is cancelled while its turn is with the policy; the answer (or the
    policy's error) comes while the episodes are paused, reaches every request of the turn,
    and the next call on the same loop takes it as it is: the policy is not asked for that
    turn again, and every episode ends (or the call raises the policy's error)."""
    gate, entered = threading.Event(), threading.Event()

    class Gated(BatchLog):
        def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
            if len(self.batches) == 2:  # the third turn waits until the test lets it go
                entered.set()
                assert gate.wait(60)
                if policy_fails:
                    raise RuntimeError("policy down at the third turn")
            return super().act(inputs)

    policy = Gated()
    config = RolloutConfig(group_size=1, max_in_flight=3, partial=False, lockstep=True)
    engine = RolloutEngine(LocalEnvSource(SOKOBAN), policy, range(6), config)

    async def cancel_then_go_on() -> tuple[Any, list[asyncio.Future[Generation]]]:
        call = asyncio.ensure_future(engine.collect(6))
        deadline = time.monotonic() + 60
        while not entered.is_set():
            assert time.monotonic() < deadline, "the third turn never started"
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        gate.set()
        requests = [ep.pending[0] for ep in engine.carried if ep.pending is not None]
        while not all(r.done() for r in requests):
            assert time.monotonic() < deadline, "the turn's answer never came to every request"
            await asyncio.sleep(0.01)
        if policy_fails:
            with pytest.raises(Exception, match="policy down at the third turn"):
                await engine.collect(6)
            return None, requests
        return await engine.collect(6), requests

    try:
        collection, requests = asyncio.run(cancel_then_go_on())
    finally:
        gate.set()
        engine.close()
    assert len(requests) == 3 and not any(r.cancelled() for r in requests)  # they outlived
    if policy_fails:  # the cancelled call
        assert all(isinstance(r.exception(), RuntimeError) for r in requests)
        return
    assert collection.summary.resumed_requests == 3
    assert sorted(g.seed for g in collection.groups) == list(range(6))
    assert all(g.members[0].status == "done" for g in collection.groups)
    asked = sum(len(batch) for batch in policy.batches)
    assert asked == sum(len(g.members[0].steps) for g in collection.groups)  # none twice


class SlowSteps(gym.Wrapper):
    """Each step takes ``step_s`` of wall time (the reset is instant)."""

    def __init__(self, env: gym.Env, step_s: float):
        super().__init__(env)
        self.step_s = step_s

    def step(self, action: Any) -> Any:
        time.sleep(self.step_s)
        return self.env.step(action)


def test_a_steps_time_is_the_envs_and_its_answers_wait_the_policys() -> None:
    """Lockstep sends each step with its answer; the step's ``env_ms`` is the env's time
    (here a one-second step) and ``policy_ms`` only the wait for the answer (an instant
    policy), in the events and in the call's totals alike."""
    step_s = 1.0
    events: list[Any] = []
    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    source = LocalEnvSource(
        SOKOBAN, factory=lambda: SlowSteps(gym.make(SOKOBAN, max_turns=2), step_s)
    )
    callbacks = EpisodeCallbacks(on_step=events.append)
    engine = RolloutEngine(source, RandomPolicy(0), range(2), config, callbacks)
    began = time.monotonic()
    try:
        collection = engine.collect_sync(2)
    finally:
        engine.close()
    wall = time.monotonic() - began
    assert len(events) == collection.summary.env_steps == 4
    assert all(e.env_ms >= step_s * 1e3 for e in events)
    assert all(e.policy_ms < step_s * 1e3 for e in events)  # no step's time counted twice
    summary = collection.summary
    assert summary.env_seconds >= 4 * step_s and summary.policy_seconds < 4 * step_s
    assert summary.env_seconds <= 2 * wall  # two lanes: no more env time than they had
    # the events carry the very intervals the totals add up (the totals' env time also
    # has the two resets, instant here)
    assert sum(e.policy_ms for e in events) == pytest.approx(summary.policy_seconds * 1e3)
    assert sum(e.env_ms for e in events) == pytest.approx(summary.env_seconds * 1e3, abs=100)


def test_an_answer_to_a_waiting_episode_goes_to_its_step_not_to_its_task() -> None:
    """With ``step_when_answered`` set (the engine's driver sets it), the policy's answer
    for an episode whose task waits is handed to it with the task's waiter, unanswered (the
    env step settles it); an episode whose task stopped waiting only gets its request
    answered, for the next call to take."""
    from agentgym.rollout.lockstep import LockstepBatches
    from agentgym.rollout.records import Episode

    handed: list[tuple[Any, str, asyncio.Future[Any]]] = []
    batches = LockstepBatches(RandomPolicy(0))
    batches.step_when_answered = lambda ep, gen, waiter: handed.append((ep, gen.text, waiter))
    eps = [Episode(group_id="g", traj_id=k, seed=k, member=0, index=k) for k in range(2)]
    item = PolicyInput(
        messages=[{"role": "user", "content": "go"}], info={"admissible_actions": ["left", "up"]}
    )

    async def one_turn() -> tuple[list[Any], list[Any]]:
        requests = [batches.act(ep, item) for ep in eps]
        waiters = [batches.waiter(r) for r in requests]
        waiters[1].cancel()  # the second episode's task was cancelled meanwhile
        batches.flush_if_all_asked(eps)
        await asyncio.wait_for(asyncio.gather(*requests), 60)
        return requests, waiters

    try:
        requests, waiters = asyncio.run(one_turn())
    finally:
        batches.close()
    assert [(ep, waiter) for ep, _, waiter in handed] == [(eps[0], waiters[0])]
    assert not waiters[0].done()  # left for the env step to settle
    assert handed[0][1] == requests[0].result().text
    assert requests[1].result().text in ("left", "up")  # answered, for the next call


def test_an_episodes_task_wakes_at_its_end_not_at_every_step(monkeypatch) -> None:
    """A lockstep step that leaves the task nothing to do is recorded, and the next action
    asked for, where the step lands: the task's one wait spans its whole episode."""
    from agentgym.rollout.driver import EpisodeDriver

    turns = []
    real_turn = EpisodeDriver._turn

    async def counted(self, call, ep):
        turns.append(ep.traj_id)
        return await real_turn(self, call, ep)

    monkeypatch.setattr(EpisodeDriver, "_turn", counted)
    events: list[Any] = []
    config = RolloutConfig(group_size=1, max_in_flight=3, partial=False, lockstep=True)
    source = LocalEnvSource(SOKOBAN, factory=lambda: gym.make(SOKOBAN, max_turns=6))
    engine = RolloutEngine(
        source, RandomPolicy(0), range(6), config, EpisodeCallbacks(on_step=events.append)
    )
    try:
        collection = engine.collect_sync(6)
    finally:
        engine.close()
    episodes = [g.members[0] for g in collection.groups]
    steps = sum(len(ep.steps) for ep in episodes)
    assert all(ep.status == "done" for ep in episodes) and steps > 2 * len(episodes)
    assert sorted(turns) == sorted(ep.traj_id for ep in episodes)  # one wake-up each
    assert len(events) == steps == collection.summary.env_steps
    for ep in episodes:  # every step recorded in order, with the call that asked for it
        assert [s.step for s in ep.steps] == list(range(len(ep.steps)))
        assert ep.step_collects == [0] * len(ep.steps) and len(ep.chat.turns) == len(ep.steps)


def test_an_on_step_callback_that_raises_between_steps_stops_the_call_and_frees_every_env() -> None:
    """The callback runs where the step landed (no task of its own around it): its error
    still stops the call, is raised as the call's error, and no env is left lent."""
    seen: list[Any] = []

    def on_step(event: Any) -> None:
        seen.append(event)
        if len(seen) == 5:
            raise LookupError("the recorder's disk is full")

    config = RolloutConfig(group_size=1, max_in_flight=2, partial=False, lockstep=True)
    with EnvPool([lambda: gym.make(SOKOBAN, max_turns=20)] * 2) as pool:
        engine = RolloutEngine(
            PoolEnvSource(pool),
            RandomPolicy(0),
            range(4),
            config,
            EpisodeCallbacks(on_step=on_step),
        )
        try:
            with pytest.raises(CollectionError) as caught:
                engine.collect_sync(4)
        finally:
            engine.close()
        assert isinstance(caught.value.error, LookupError)
        assert engine.slots_out == 0
    assert 5 <= len(seen) <= 5 + 2  # at most the rest of that turn's steps landed after it
