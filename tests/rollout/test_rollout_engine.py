"""The asynchronous rollout engine against a fake model server with long-tailed latency.

Every test compares with the lockstep loop (``agentgym.rollout.groups.group_rollouts``, which
steps all envs together and calls the policy once per turn) for the same seeds and the
same deterministic model (:func:`tests.fake_llm_server.scripted_reply`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import Generation, PolicyInput
from agentgym.agents.scripted import OraclePolicy
from agentgym.pools import EnvPool
from agentgym.rollout import (
    AsyncHTTPPolicy,
    BatchingPolicy,
    LocalEnvSource,
    PoolEnvSource,
    RolloutConfig,
    RolloutEngine,
    training_arrays,
)
from agentgym.rollout.groups import group_rollouts
from tests.fake_llm_server import (
    FailFirstAttempts,
    FakeLLMServer,
    LognormalLatency,
    ScriptedChatPolicy,
)

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


def lockstep(env_id: str, policy: Any, seeds: Sequence[int], group_size: int) -> dict:
    """(seed, member) -> (actions, rewards) of the lockstep loop."""
    n = len(seeds) * group_size
    with EnvPool([lambda: gym.make(env_id)] * n) as pool:
        batch = group_rollouts(pool, policy, seeds, group_size=group_size, history_turns=1)
    out = {}
    for k, traj in enumerate(batch.trajectories):
        out[(traj.seed, k % group_size)] = (
            [s.generation.text for s in traj.steps],
            [s.reward for s in traj.steps],
        )
    return out


def engine_results(groups: Sequence[Any]) -> dict:
    return {
        (g.seed, ep.member): ([s.generation.text for s in ep.steps], [s.reward for s in ep.steps])
        for g in groups
        for ep in g.members
        if ep.status == "done"
    }


def test_lognormal_latency_p99_is_ten_times_p50() -> None:
    import numpy as np

    lat = LognormalLatency(0.01, seed=3)
    assert lat.quantile(0.99) == pytest.approx(0.1)
    draws = np.array([lat() for _ in range(20000)])
    p50, p99 = np.quantile(draws, [0.5, 0.99])
    assert p50 == pytest.approx(0.01, rel=0.05)
    assert p99 / p50 == pytest.approx(10.0, rel=0.15)


def test_async_http_equals_lockstep_despite_latency_500s_and_dropped_connections() -> None:
    seeds, k = list(range(6)), 2
    fault = FailFirstAttempts(every=3, kinds=("500", "drop"))
    with FakeLLMServer(latency=LognormalLatency(0.002, seed=1), fault=fault) as server:
        policy = AsyncHTTPPolicy(
            server.url, "fake", retries=3, backoff_s=0.001, tool_messages="text"
        )
        engine = RolloutEngine(
            LocalEnvSource(SOKOBAN),
            policy,
            seeds,
            RolloutConfig(group_size=k, max_in_flight=12, partial=False),
        )
        collection = engine.collect_sync(len(seeds))
        engine.close()
    # the faults happened and were all cured by retries
    assert server.errors_500 > 0 and server.dropped > 0
    assert policy.retried == server.errors_500 + server.dropped
    summary = collection.summary
    assert summary.infra_failures == 0 and summary.usable_groups == len(seeds)
    assert sorted(g.seed for g in collection.groups) == seeds
    assert all(len(g.members) == k for g in collection.groups)
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)
    # every step knows its policy version and its group
    rows = collection.to_batch().steps
    assert {r.policy_version for r in rows} == {0}
    assert summary.env_steps == len(rows)


@pytest.mark.parametrize("env_id", [SOKOBAN, "agentgym/WebShopText-v0"])
def test_sync_oracle_over_an_env_pool_equals_lockstep(env_id: str) -> None:
    seeds, k = [3, 4, 5], 2
    with EnvPool([lambda: gym.make(env_id)] * 6) as pool:
        policy = BatchingPolicy(OraclePolicy())
        engine = RolloutEngine(
            PoolEnvSource(pool), policy, seeds, RolloutConfig(group_size=k, max_in_flight=6)
        )
        collection = engine.collect_sync(3)
    assert engine_results(collection.groups) == lockstep(env_id, OraclePolicy(), seeds, k)
    assert all(ep.success for ep in collection.episodes)
    assert max(policy.batch_sizes) > 1  # episodes that were ready together went together


class GatedPolicy:
    """The scripted model, but episodes of ``held`` tasks wait at their second turn until
    ``gate`` opens: they are still unfinished when the other groups are done."""

    def __init__(self, held: set[str]):
        self.held = held
        self.gate = asyncio.Event()
        self.waiting = 0
        self.inner = ScriptedChatPolicy()

    async def act(self, item: PolicyInput) -> Generation:
        if item.info["task_id"] in self.held and len(item.messages) > 2:
            if not self.gate.is_set():
                self.waiting += 1
            await self.gate.wait()
        return self.inner.act([item])[0]


@pytest.mark.parametrize("abort_requests", [False, True])
def test_partial_rollouts_carry_unfinished_episodes_into_the_next_call(
    abort_requests: bool,
) -> None:
    seeds, k = list(range(6)), 2
    tasks = {s: gym.make(SOKOBAN).reset(seed=s)[1]["task_id"] for s in seeds}
    quick = [0, 1]
    held = {tasks[s] for s in seeds if s not in quick}
    assert not held & {tasks[s] for s in quick}
    policy = GatedPolicy(held)
    config = RolloutConfig(group_size=k, max_in_flight=12, abort_requests=abort_requests)
    engine = RolloutEngine(LocalEnvSource(SOKOBAN), policy, seeds, config)

    async def two_calls() -> tuple[Any, Any]:
        first = await engine.collect(2, policy_version=0)
        policy.gate.set()
        second = await engine.collect(4, policy_version=1)
        return first, second

    first, second = asyncio.run(two_calls())
    # the first call released exactly the quick groups and paused every other episode
    assert sorted(g.seed for g in first.groups) == quick
    assert first.summary.carried_out == 8 == second.summary.carried_in == policy.waiting
    assert sorted(g.seed for g in second.groups) == [2, 3, 4, 5]
    assert engine.carried == []
    # the carried episodes kept their first step (version 0); the held request was either
    # cancelled and asked again under version 1, or kept and answered as asked (version 0)
    kept = 1 if abort_requests else 2
    assert first.summary.aborted_requests == (8 if abort_requests else 0)
    assert second.summary.resumed_requests == (0 if abort_requests else 8)
    for ep in second.episodes:
        versions = [s.policy_version for s in ep.steps]
        assert set(versions[:kept]) == {0} and set(versions[kept:]) == {1}, versions
        assert ep.step_collects[:kept] == [0] * kept and set(ep.step_collects[kept:]) == {1}
    assert 0 < second.summary.carried_token_share < 1
    assert second.summary.carried_tokens == sum(
        sum(ep.step_tokens[:kept]) for ep in second.episodes
    )
    # nothing lost, nothing changed: the same results as the lockstep loop
    got = engine_results(first.groups + second.groups)
    assert got == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)
    engine.close()


def test_stale_carried_episodes_start_over() -> None:
    seeds, k = [0, 1, 2], 2
    tasks = {s: gym.make(SOKOBAN).reset(seed=s)[1]["task_id"] for s in seeds}
    policy = GatedPolicy({tasks[1], tasks[2]} - {tasks[0]})
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN),
        policy,
        seeds,
        RolloutConfig(group_size=k, max_in_flight=6, max_staleness=1),
    )

    async def calls() -> Any:
        await engine.collect(1, policy_version=0)
        policy.gate.set()
        return await engine.collect(2, policy_version=2)

    second = asyncio.run(calls())
    assert second.summary.restarted_stale == 4
    assert all({s.policy_version for s in ep.steps} == {2} for ep in second.episodes)
    # Sokoban charges its step component -1 per step: nothing summed before the restart
    assert all(ep.components["step"] == -len(ep.steps) for ep in second.episodes)
    assert second.summary.carried_tokens == 0
    engine.close()


class FlakyEnv(gym.Wrapper):
    """Fails on demand: ``crash`` seeds raise in every step; the first episode of a
    ``hang`` seed to step blocks until ``release`` is set (the engine times it out)."""

    def __init__(self, env: gym.Env, crash: set[int], hang: set[int], state: dict[str, Any]):
        super().__init__(env)
        self.crash, self.hang, self.state = crash, hang, state
        self.seed_now: int | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        self.seed_now = seed
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        if self.seed_now in self.crash:
            raise RuntimeError("simulator crashed")
        if self.seed_now in self.hang:
            with self.state["lock"]:
                first = self.seed_now not in self.state["hung"]
                self.state["hung"].add(self.seed_now)
            if first:
                self.state["release"].wait(30)
        return self.env.step(action)


def test_env_failures_are_retried_marked_and_excluded_from_advantages() -> None:
    seeds, k = [0, 1, 2, 3], 2
    state: dict[str, Any] = {"lock": threading.Lock(), "hung": set(), "release": threading.Event()}
    source = LocalEnvSource(SOKOBAN, factory=lambda: FlakyEnv(gym.make(SOKOBAN), {1}, {2}, state))
    engine = RolloutEngine(
        source,
        ScriptedChatPolicy(),
        seeds,
        RolloutConfig(group_size=k, max_in_flight=8, partial=False, env_timeout_s=0.5),
    )
    streamed: list[int] = []
    try:
        collection = engine.collect_sync(4, on_group=lambda g: streamed.append(g.seed))
    finally:
        state["release"].set()
        engine.close()
    summary = collection.summary
    assert streamed == [g.seed for g in collection.groups]  # each group handed over on release
    # seed 1: both members fail, are retried once, fail again; seed 2: one timeout, cured
    assert summary.infra_failures == 5 and summary.retries == 3
    assert summary.causes == {"env_error": 4, "env_timeout": 1}
    assert (summary.groups, summary.usable_groups, summary.excluded_groups) == (4, 3, 1)
    bad = next(g for g in collection.groups if g.seed == 1)
    assert not bad.usable and len(bad.failures) == 4 and len(bad.members) == k
    assert all("simulator crashed" in (ep.cause or "") for ep in bad.failures)
    hung = next(g for g in collection.groups if g.seed == 2)
    assert hung.usable and [ep.cause for ep in hung.retired] == [
        "env_timeout: no answer within 0.5 s"
    ]
    # finished episodes are all kept and match the lockstep loop
    reference = lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)
    assert engine_results(collection.groups) == {
        key: v for key, v in reference.items() if key[0] != 1
    }
    # advantages never see the failed group, and never score a failure as zero
    arrays = training_arrays(collection)
    assert set(arrays.group_ids) == {"0", "2", "3"}
    assert len(arrays.scores) == 6
    assert arrays.grpo_advantages().shape == arrays.rewards.shape
    assert [t.group_id for t in collection.to_batch().trajectories].count("1") == 0


def test_policy_errors_after_retries_end_the_episode_as_infra_failure() -> None:
    seeds, k = [0, 1, 2], 2
    doomed = gym.make(SOKOBAN).reset(seed=1)[0]["text"]

    def fault(body: dict) -> str | None:
        first_obs = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return "500" if first_obs == doomed else None

    with FakeLLMServer(fault=fault) as server:
        policy = AsyncHTTPPolicy(
            server.url, "fake", retries=2, backoff_s=0.001, tool_messages="text"
        )
        engine = RolloutEngine(
            LocalEnvSource(SOKOBAN),
            policy,
            seeds,
            RolloutConfig(group_size=k, max_in_flight=6, partial=False, episode_retries=1),
        )
        collection = engine.collect_sync(3)
        engine.close()
    summary = collection.summary
    # 2 members x 2 attempts, each attempt 1 request + 2 retries
    assert summary.causes == {"policy_error": 4} and server.errors_500 == 12
    bad = next(g for g in collection.groups if g.seed == 1)
    assert not bad.usable and all("HTTP 500" in (ep.cause or "") for ep in bad.failures)
    assert summary.usable_groups == 2 and summary.episodes_finished == 4
    assert set(training_arrays(collection).group_ids) == {"0", "2"}
    kept = training_arrays(collection, exclude="episode")
    assert set(kept.episode_group_ids) == {"0", "2"}  # no finished member in group 1 either


def test_seeds_running_out_end_the_collection_with_what_finished() -> None:
    engine = RolloutEngine(
        LocalEnvSource(SOKOBAN),
        ScriptedChatPolicy(),
        [7],
        RolloutConfig(group_size=2, max_in_flight=4),
    )
    collection = engine.collect_sync(5)
    assert [g.seed for g in collection.groups] == [7] and collection.summary.usable_groups == 1
    assert engine.collect_sync(1).groups == []
    engine.close()


def test_config_mistakes_are_explained() -> None:
    from agentgym.error import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="max_in_flight"):
        RolloutConfig(group_size=8, max_in_flight=4)
    with (
        EnvPool([lambda: gym.make(SOKOBAN)] * 2) as pool,
        pytest.raises(InvalidConfigError, match="only 2 envs"),
    ):
        RolloutEngine(PoolEnvSource(pool), OraclePolicy(), [0], RolloutConfig(2, 4))


@pytest.mark.parametrize(
    "module", ["agentgym.rollout.policy", "agentgym.rollout.training", "tests.fake_llm_server"]
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
