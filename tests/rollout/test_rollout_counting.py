"""The rollout engine's counting rules, at their boundaries (issue 38).

When a call stops (``partial``: at its target of usable groups; otherwise once exactly
``target_groups`` groups it started have ended), how many groups it starts at once (room
for ``max_in_flight`` episodes, at most the source's live capacity), which carried
episodes are too stale to continue (their FIRST step more than ``max_staleness`` versions
old), how many retries a member gets, and what the summary counts.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.pools import EnvPool
from agentgym.rollout import (
    EpisodeCallbacks,
    LocalEnvSource,
    PoolEnvSource,
    RolloutConfig,
    RolloutEngine,
)
from agentgym.rollout.records import Episode, Group
from agentgym.rollout.steps import Chat, StepRecord
from tests.fake_llm_server import ScriptedChatPolicy
from tests.rollout.test_rollout_engine import GatedPolicy, engine_results, lockstep

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


def task_ids(seeds: list[int]) -> dict[int, str]:
    env = gym.make(SOKOBAN)
    try:
        return {s: env.reset(seed=s)[1]["task_id"] for s in seeds}
    finally:
        env.close()


def drawing(seeds: Iterator[int], drawn: list[int]) -> Iterator[int]:
    for seed in seeds:
        drawn.append(seed)
        yield seed


class Active(gym.Wrapper):
    """Counts the episodes running at once over all envs (reset -> end)."""

    lock = threading.Lock()
    now = most = 0

    def reset(self, **kwargs: Any) -> Any:
        with Active.lock:
            Active.now += 1
            Active.most = max(Active.most, Active.now)
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        out = self.env.step(action)
        if out[2] or out[3]:
            with Active.lock:
                Active.now -= 1
        return out


class HoldOneMember:
    """The scripted model; the first member of each ``held`` task to ask at its second turn
    waits until ``gate`` opens, the other goes on: its group ends half finished. Episodes
    of the ``last`` task wait at their second turn until ``others`` is set."""

    def __init__(self, held: set[str], last: str):
        self.held, self.last, self.inner = held, last, ScriptedChatPolicy()
        self.gate, self.others = asyncio.Event(), asyncio.Event()
        self.taken: set[str] = set()

    async def act(self, item: PolicyInput) -> Generation:
        task = item.info["task_id"]
        if len(item.messages) > 2 and task == self.last:
            await self.others.wait()
        if task in self.held and len(item.messages) > 2 and task not in self.taken:
            self.taken.add(task)
            await self.gate.wait()
        return self.inner.act([item])[0]


def test_failure_limit_is_twice_the_episodes_in_flight_and_at_least_16() -> None:
    assert RolloutConfig(group_size=2, max_in_flight=4).failure_limit == 16
    assert RolloutConfig(group_size=2, max_in_flight=8).failure_limit == 16
    assert RolloutConfig(group_size=2, max_in_flight=12).failure_limit == 24
    assert RolloutConfig(max_in_flight=64, failure_run_limit=5).failure_limit == 5


def _with_versions(*versions: int | None) -> Episode:
    ep = Episode("g", 0, 0, 0)
    ep.steps = [
        StepRecord("g", 0, t, "", Generation("a"), 0.0, True, False, policy_version=v)
        for t, v in enumerate(versions)
    ]
    return ep


@pytest.mark.parametrize(
    ("limit", "now", "versions", "stale"),
    [
        (None, 100, (0,), False),  # no limit: never stale
        (2, 100, (), False),  # no step yet: nothing to be stale
        (2, 100, (None,), False),  # a step without a version
        (2, 2, (0,), False),  # exactly max_staleness old: still fresh
        (2, 3, (0,), True),  # one more: stale
        (2, 3, (2,), False),  # the age is now - first (not now + first)
        (2, 6, (0, 5), True),  # the FIRST step decides
        (0, 1, (0,), True),
        (0, 0, (0,), False),
    ],
)
def test_staleness_is_the_age_of_the_first_step(
    limit: int | None, now: int, versions: tuple, stale: bool
) -> None:
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN), ScriptedChatPolicy(), [], RolloutConfig(max_staleness=limit)
    )
    engine.policy_version = now
    try:
        assert engine._is_stale(_with_versions(*versions)) is stale
    finally:
        engine.close()


def test_a_partial_call_fills_its_room_and_stops_at_its_target() -> None:
    seeds, drawn = list(range(40)), []
    tasks = task_ids(seeds[:4])
    policy = GatedPolicy({tasks[s] for s in (1, 2, 3)} - {tasks[0]})
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN),
        policy,
        drawing(iter(seeds), drawn),
        RolloutConfig(group_size=2, max_in_flight=8),
    )

    async def calls() -> tuple[Any, Any, set[int]]:
        first = await engine.collect(1)
        policy.gate.set()
        second = await engine.collect(3)
        return first, second, {ep.seed for ep in engine.carried}

    try:
        first, second, still_carried = asyncio.run(calls())
    finally:
        engine.close()
    # room for 4 groups of 2: all started at once; the call stopped at its first group
    assert drawn[:4] == [0, 1, 2, 3] and [g.seed for g in first.groups] == [0]
    assert first.summary.carried_out == 6 and second.summary.carried_in == 6
    # the carried groups go on in the next call: each released by it or still under way
    # (a group started in that call, with shorter episodes, may end before one of them)
    released = {g.seed for g in second.groups}
    assert {1, 2, 3} <= released | still_carried and 0 not in released
    assert second.summary.usable_groups >= 3


def test_a_call_that_is_not_partial_starts_exactly_its_target_within_its_room() -> None:
    drawn: list[int] = []
    Active.now = Active.most = 0
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN, factory=lambda: Active(gym.make(SOKOBAN))),
        ScriptedChatPolicy(),
        drawing(iter(range(20)), drawn),
        RolloutConfig(group_size=2, max_in_flight=4, partial=False),
    )
    try:
        collection = engine.collect_sync(5)
    finally:
        engine.close()
    assert sorted(g.seed for g in collection.groups) == [0, 1, 2, 3, 4] and drawn == [0, 1, 2, 3, 4]
    assert engine.carried == [] and collection.summary.carried_out == 0
    assert Active.most == 4  # never more episodes at once than max_in_flight


@pytest.mark.parametrize("max_staleness", [None, 0])
def test_carried_episodes_resume_or_restart_and_finished_members_stay_finished(
    max_staleness: int | None,
) -> None:
    seeds, k = [0, 1, 2, 3], 2
    tasks = task_ids(seeds)
    held = {tasks[s] for s in (1, 2, 3)} - {tasks[0]}
    policy = HoldOneMember(held, tasks[0])
    finished: list[Episode] = []

    def on_episode(ep: Episode) -> None:  # group 0 ends once the others' free members did
        finished.append(ep)
        if sum(e.task_id in held for e in finished) == 3:
            policy.others.set()

    config = RolloutConfig(group_size=k, max_in_flight=8, max_staleness=max_staleness)
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN), policy, seeds, config, EpisodeCallbacks(on_episode=on_episode)
    )

    async def calls() -> tuple[Any, Any]:
        first = await engine.collect(1, policy_version=0)
        policy.gate.set()
        return first, await engine.collect(3, policy_version=1)

    try:
        first, second = asyncio.run(calls())
    finally:
        engine.close()
    assert [g.seed for g in first.groups] == [0] and first.summary.carried_out == 3
    assert second.summary.carried_in == 3
    assert second.summary.restarted_stale == (3 if max_staleness == 0 else 0)
    assert sorted(g.seed for g in second.groups) == [1, 2, 3]
    assert all(len(g.members) == k and g.usable for g in second.groups)
    assert engine_results(first.groups + second.groups) == lockstep(
        SOKOBAN, ScriptedChatPolicy(), seeds, k
    )


class CrashSeed(gym.Wrapper):
    def __init__(self, env: gym.Env, bad: int):
        super().__init__(env)
        self.bad, self.now = bad, None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        self.now = seed
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        if self.now == self.bad:
            raise RuntimeError("simulator crashed")
        return self.env.step(action)


@pytest.mark.parametrize("retries", [0, 1, 2])
def test_each_member_gets_its_own_retries_and_the_summary_counts_them(retries: int) -> None:
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN, factory=lambda: CrashSeed(gym.make(SOKOBAN), 1)),
        ScriptedChatPolicy(),
        [0, 1, 2],
        RolloutConfig(group_size=2, max_in_flight=6, partial=False, episode_retries=retries),
    )
    try:
        collection = engine.collect_sync(3)
    finally:
        engine.close()
    s = collection.summary
    bad = next(g for g in collection.groups if g.seed == 1)
    for member in (0, 1):
        attempts = [a for a in bad.attempts if a.member == member]
        assert sorted(a.attempt for a in attempts) == list(range(retries + 1))
        assert all(a.status == "infra_failure" for a in attempts)
    assert (s.infra_failures, s.retries) == (2 * (retries + 1), 2 * retries)
    assert s.causes == {"env_error": 2 * (retries + 1)}
    assert (s.groups, s.usable_groups, s.excluded_groups) == (3, 2, 1)
    assert s.episodes_finished == 4 and s.tokens > 0 and s.carried_tokens == 0
    assert s.tokens == sum(ep.tokens for g in collection.groups for ep in g.members)


def test_a_source_with_room_for_one_episode_plays_them_one_by_one() -> None:
    with EnvPool([lambda: gym.make(SOKOBAN)], backend="sync") as pool:
        engine = RolloutEngine(
            PoolEnvSource(pool),
            ScriptedChatPolicy(),
            [0, 1, 2],
            RolloutConfig(group_size=1, max_in_flight=1, partial=False),
        )
        try:
            collection = engine.collect_sync(3)
        finally:
            engine.close()
    assert [g.seed for g in collection.groups] == [0, 1, 2]
    assert collection.summary.usable_groups == 3


def test_carried_episodes_holding_an_env_start_before_those_waiting_for_one() -> None:
    """Two carried episodes hold the only two envs; two earlier groups wait for an env
    (their attempts paused before they got one). Started first, the waiting ones would
    fill the room and wait forever for the envs the others hold."""
    with EnvPool([lambda: gym.make(SOKOBAN)] * 2, backend="sync") as pool:
        source = PoolEnvSource(pool)
        config = RolloutConfig(group_size=1, max_in_flight=2, partial=False)
        engine = RolloutEngine(source, ScriptedChatPolicy(), [], config)
        for seed in range(4):  # as a cancelled call leaves them
            ep = engine._new_episode(str(seed), seed, 0, seed)
            ep.status = "paused"
            if seed >= 2:  # reset on an env it holds, its first turn to come
                assert engine._slots.try_take()
                ep.slot = source.acquire()
                obs, ep.info = ep.slot.reset(seed)
                ep.task_id, ep.chat = ep.info["task_id"], Chat.after_reset(obs, ep.info)
            engine._open.append(Group(str(seed), seed, [ep]))

        async def collect() -> Any:
            return await asyncio.wait_for(engine.collect(1), 60)  # a deadlock times out

        try:
            collection = asyncio.run(collect())
        finally:
            engine.close()
    assert sorted(g.seed for g in collection.groups) == [0, 1, 2, 3]
    assert collection.summary.usable_groups == 4 and collection.summary.carried_in == 4
    assert engine_results(collection.groups) == lockstep(
        SOKOBAN, ScriptedChatPolicy(), [0, 1, 2, 3], 1
    )


@pytest.mark.parametrize("lockstep", [False, True], ids=["async", "lockstep"])
def test_a_local_source_makes_no_more_envs_than_episodes_run_at_once(lockstep: bool) -> None:
    """An episode's healthy env is back in the source before the episode that replaces it
    asks for one. Before, it went back through a thread, the replacement's request often
    came first, and 4 lanes made 6-8 envs over 120 episodes (a browser or a sandbox
    session each, for envs that need one)."""
    from agentgym.agents.scripted import RandomPolicy

    source = LocalEnvSource(SOKOBAN)
    config = RolloutConfig(group_size=1, max_in_flight=4, partial=False, lockstep=lockstep)
    engine = RolloutEngine(source, RandomPolicy(0), range(120), config)
    try:
        collection = engine.collect_sync(120)
    finally:
        engine.close()
    assert collection.summary.episodes_finished == 120
    assert source.made == 4
